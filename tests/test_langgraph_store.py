"""AgentMemoryStore against LangGraph's own InMemoryStore, and LangMem's tools on it
(docs/integrations.md#langgraph). Real stores (sqlite, a Markdown folder, embedded Chroma with a
hashing embedder), the real langgraph and langmem packages; no model."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

from harnesses import open_kind
from langgraph.store.base import InvalidNamespaceError, Item
from langgraph.store.memory import InMemoryStore

from agentmemory import Entry, MemStore, Store
from agentmemory.integrations.langgraph import AgentMemoryStore, MappingError

NAMESPACES = [
    ("memories",),
    ("memories", "u1"),
    ("memories", "user_2"),
    ("docs", "Team A"),
    ("a", "b"),
    ("a-b",),
    ("project_memories", "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d"),
]
"""Plain, hashed and near-colliding namespaces: ``("a", "b")`` and ``("a-b",)`` must not meet."""

KEYS = ["k1", "note-2", "3f2a9c1e-0b7d-4e5f-8a6b-1c2d3e4f5a6b", "Key With Spaces", "under_score"]
WORDS = [
    "harbor", "violet", "granite", "meadow", "lantern", "copper", "willow", "saffron",
    "glacier", "orchid", "tundra", "falcon", "juniper", "quartz", "ember", "cobalt",
]  # fmt: skip
TAGS = ["fact", "pref", "event"]


def _value(rng: random.Random) -> dict[str, Any]:
    return {
        "text": " ".join(rng.sample(WORDS, 3)),
        "n": rng.randint(0, 9),
        "tag": rng.choice(TAGS),
        "extra": {"nested": [rng.randint(0, 3), "x"]},
    }


def _shape(items: list[Any]) -> set[tuple[tuple[str, ...], str, str]]:
    return {(i.namespace, i.key, json.dumps(i.value, sort_keys=True)) for i in items}


def _prefixes() -> list[tuple[str, ...]]:
    out = {ns[:d] for ns in NAMESPACES for d in range(0, len(ns) + 1)}
    return sorted(out)


def _live_namespaces(ref: InMemoryStore, kw: dict[str, Any]) -> list[tuple[str, ...]]:
    """``ref.list_namespaces(**kw)`` without the namespaces whose items were all deleted (the
    InMemoryStore keeps listing those; LangGraph's PostgresStore and ours do not)."""
    wide = {k: v for k, v in kw.items() if k not in ("limit", "offset")}
    found = [ns for ns in ref.list_namespaces(**wide, limit=1000) if ref.search(ns, limit=1)]
    offset, limit = kw.get("offset", 0), kw.get("limit", 100)
    return found[offset : offset + limit]


@pytest.fixture(
    params=["mem", "sqlite", "file", "chroma", pytest.param("postgres", marks=pytest.mark.slow)]
)
def ours(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "postgres":
        from agentmemory.stores.postgres import PostgresStore

        st: Store = PostgresStore(request.getfixturevalue("pg_cluster").create_database())
    else:
        st = open_kind(request.param, tmp_path)
    with AgentMemoryStore(st, index={"fields": ["text"]}, close_store=True) as lg:
        yield lg


def test_a_seeded_random_sequence_gives_the_items_langgraph_gives(ours: AgentMemoryStore) -> None:
    ref = InMemoryStore()
    rng = random.Random(2026)
    live: set[tuple[tuple[str, ...], str]] = set()
    checked = {"get": 0, "search": 0, "query": 0, "namespaces": 0}
    for _ in range(220):
        roll = rng.random()
        ns, key = rng.choice(NAMESPACES), rng.choice(KEYS)
        if roll < 0.40:
            value = _value(rng)
            ref.put(ns, key, value)
            ours.put(ns, key, value)
            live.add((ns, key))
        elif roll < 0.52:
            ref.delete(ns, key)
            ours.delete(ns, key)
            live.discard((ns, key))
        elif roll < 0.67:
            a, b = ref.get(ns, key), ours.get(ns, key)
            assert (a is None) == (b is None), (ns, key)
            if a is not None and b is not None:
                assert (b.namespace, b.key, b.value) == (a.namespace, a.key, a.value)
                assert isinstance(b, Item) and b.created_at <= b.updated_at
            checked["get"] += 1
        elif roll < 0.80:
            prefix = rng.choice(_prefixes())
            filt: dict[str, Any] | None = rng.choice(
                [
                    None,
                    {"tag": rng.choice(TAGS)},
                    {"n": {"$gte": 5}},
                    {"extra": {"nested": [1, "x"]}},
                ]
            )
            a_items = ref.search(prefix, filter=filt, limit=100)
            b_items = ours.search(prefix, filter=filt, limit=100)
            assert _shape(b_items) == _shape(a_items), (prefix, filt)
            checked["search"] += 1
        elif roll < 0.90 and live:
            target = rng.choice(sorted(live))
            word = rng.choice(ref.get(*target).value["text"].split())  # type: ignore[union-attr]
            prefix = target[0][: rng.randint(0, len(target[0]))]
            a_keys = {(i.namespace, i.key) for i in ref.search(prefix, query=word, limit=100)}
            b_hits = ours.search(prefix, query=word, limit=100)
            assert target in a_keys
            assert target in {(i.namespace, i.key) for i in b_hits}, (target, word)
            assert all(i.score is not None for i in b_hits)
            assert all(word in i.value["text"].split() for i in b_hits[:1])
            checked["query"] += 1
        else:
            kw: dict[str, Any] = rng.choice(
                [
                    {},
                    {"prefix": rng.choice(_prefixes()[1:])},
                    {"suffix": (rng.choice(NAMESPACES)[-1],)},
                    {"prefix": ("memories", "*")},
                    {"max_depth": 1},
                    {"limit": 2, "offset": 1},
                ]
            )
            assert ours.list_namespaces(**kw) == _live_namespaces(ref, kw), kw
            checked["namespaces"] += 1
    assert min(checked.values()) >= 10, checked


def test_near_colliding_namespaces_and_unmappable_keys_stay_apart(ours: AgentMemoryStore) -> None:
    ours.put(("a", "b"), "k", {"text": "first"})
    ours.put(("a-b",), "k", {"text": "second"})
    ours.put(("a-b",), "K", {"text": "third"})
    assert ours.get(("a", "b"), "k").value == {"text": "first"}  # type: ignore[union-attr]
    assert ours.get(("a-b",), "k").value == {"text": "second"}  # type: ignore[union-attr]
    assert ours.get(("a-b",), "K").value == {"text": "third"}  # type: ignore[union-attr]
    assert ours.get(("a",), "b") is None
    assert ours.list_namespaces() == [("a", "b"), ("a-b",)]


def test_a_name_held_by_an_entry_not_written_through_langgraph_is_refused(
    ours: AgentMemoryStore,
) -> None:
    ours.store.put(Entry(scope="memories", name="k1", content="Written by memory_save."))
    with pytest.raises(MappingError, match=r"memories/k1, which holds an entry not written"):
        ours.put(("memories",), "k1", {"text": "from langgraph"})
    assert ours.store.get("memories", "k1").content == "Written by memory_save."
    assert ours.get(("memories",), "k1") is None
    assert ours.list_namespaces() == []


def test_what_has_no_entry_form_is_refused_naming_it_and_nothing_is_written(
    ours: AgentMemoryStore,
) -> None:
    with pytest.raises(MappingError, match=r"not JSON"):
        ours.put(("memories",), "k", {"when": object()})
    with pytest.raises(MappingError, match=r"over the store's 4096 byte limit"):
        ours.put(("memories",), "big", {"text": "word " * 2000})
    with pytest.raises(MappingError, match=r"over the 1024 byte limit"):
        ours.put(("memories",), "x" * 1100, {"text": "long key"})
    with pytest.raises(InvalidNamespaceError):
        ours.put(("memories", "a.b"), "k", {"text": "dotted"})
    with pytest.raises(ValueError, match=r"dims, embed not taken"):
        AgentMemoryStore(ours.store, index={"dims": 384, "embed": "x", "fields": ["text"]})
    assert ours.search(("memories",)) == []
    assert ours.list_namespaces() == []


def test_an_item_keeps_its_created_time_across_updates_and_a_delete_is_a_tombstone(
    ours: AgentMemoryStore,
) -> None:
    ours.put(("memories",), "k1", {"text": "harbor violet"})
    first = ours.get(("memories",), "k1")
    ours.put(("memories",), "k1", {"text": "granite meadow"})
    second = ours.get(("memories",), "k1")
    assert first is not None and second is not None
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    assert [h.value for h in ours.search(("memories",), query="harbor")] in (
        [],
        [{"text": "granite meadow"}],  # the vector leg answers every query; never the old text
    )
    ours.delete(("memories",), "k1")
    assert ours.search(("memories",), query="granite") == []
    records = [c for c in ours.store.journal() if c.entry.name == "k1"]
    assert [c.entry.deleted for c in records] == [False, False, True]
    assert {c.tool for c in records} == {"langgraph-store"}


def test_fifty_concurrent_searches_are_all_answered(ours: AgentMemoryStore) -> None:
    async def main() -> list[list[Any]]:
        for i in range(20):
            await ours.aput(("memories", "u1"), f"m{i}", {"text": f"{WORDS[i % 16]} note {i}"})
        return await asyncio.gather(
            *(ours.asearch(("memories",), query=WORDS[i % 16], limit=5) for i in range(50))
        )

    for i, hits in enumerate(asyncio.run(main())):
        assert hits and WORDS[i % 16] in hits[0].value["text"].split()


class _GatedStore(MemStore):
    """A MemStore whose recall waits until the test opens the gate (from the event loop)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def recall(self, query: str, **kw: Any) -> Any:
        if not self.gate.wait(timeout=20):
            raise TimeoutError("the event loop never opened the gate: it was blocked")
        return super().recall(query, **kw)


def test_async_searches_leave_the_event_loop_free() -> None:
    st = _GatedStore()
    lg = AgentMemoryStore(st)
    lg.put(("memories",), "k", {"content": "harbor lantern"})

    async def main() -> list[list[Any]]:
        searches = asyncio.gather(*(lg.asearch(("memories",), query="harbor") for _ in range(5)))
        await asyncio.sleep(0.05)  # runs only if the searches above did not block the loop
        st.gate.set()
        return await searches

    assert all(len(hits) == 1 for hits in asyncio.run(main()))
    lg.close()


def test_langmem_tools_save_with_one_and_find_with_the_other(ours: AgentMemoryStore) -> None:
    langmem = pytest.importorskip("langmem", reason="langmem is not installed")
    lg = AgentMemoryStore(ours.store)  # LangMem's usual index: the whole value
    ns = ("project_memories", "{langgraph_user_id}")
    manage = langmem.create_manage_memory_tool(namespace=ns, store=lg)
    search = langmem.create_search_memory_tool(namespace=ns, store=lg)
    config = {"configurable": {"langgraph_user_id": "user-7"}}
    said = manage.invoke({"content": "The user prefers dark mode in Vim."}, config=config)
    assert said.startswith("created memory ")
    manage.invoke({"content": "The deploy runs on Fridays."}, config=config)
    listing = json.loads(search.invoke({"query": "dark mode"}, config=config))
    assert listing[0]["namespace"] == ["project_memories", "user-7"]
    assert listing[0]["value"] == {"content": "The user prefers dark mode in Vim."}
    key = listing[0]["key"]
    manage.invoke({"action": "delete", "id": key}, config=config)
    assert lg.get(("project_memories", "user-7"), key) is None
    left = json.loads(search.invoke({"query": "dark mode"}, config=config))
    assert [m["value"] for m in left] == [{"content": "The deploy runs on Fridays."}] or not left


@pytest.mark.slow
def test_the_readme_langgraph_agent_runs_as_printed(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## LangGraph and LangChain") :]
    snippet = section[section.index("```python\n") + 10 : section.index("\n```\n")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    out = subprocess.run(
        [sys.executable, "-c", snippet],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["Dark mode, in Vim.", "editor"], out.stdout
    assert (tmp_path / "agent-memory" / "journal.sqlite3").is_file()
