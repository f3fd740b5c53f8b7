"""The per-turn part (docs/kinds.md#the-per-turn-part): recall_part on MemStore, SqliteStore,
FileStore and ChromaStore (hashing vectors), with the packaged model on a small conversation, and
through the MCP prompt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from harnesses import open_kind
from mcp import Client

from agentmemory import (
    BudgetError,
    ChromaStore,
    Entry,
    KindPolicy,
    KindRegistry,
    MemStore,
    Store,
    recall_part,
    render,
)
from agentmemory.manifest import OMIT_BUDGET
from agentmemory.recalled import (
    DEFAULT_MIN_COSINE,
    RECALL_ALL_SHOWN,
    RECALL_BELOW_FLOOR,
    RECALLED_PART_ID,
)
from agentmemory.tools.mcp_server import RECALL_PROMPT, MemoryServer
from embedders import HashingEmbedder


@pytest.fixture(params=["chroma", "file", "mem", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    st = open_kind(request.param, tmp_path)
    yield st
    st.close()


def fill(st: Store) -> None:
    st.put(Entry("user", "editor", "Prefers the Vim editor for deploy scripts.", {"type": "user"}))
    st.put(
        Entry(
            "project",
            "deploy",
            "Deploys go out on Fridays with make release.",
            {"type": "project", "description": "Deploy day"},
        )
    )
    st.put(Entry("project", "wiki", "The design notes live in the wiki.", {"type": "reference"}))


def test_a_project_note_is_recalled_for_a_hint_about_it(store: Store) -> None:
    fill(store)
    part, manifest = recall_part(store, ["user", "project"], "When do deploys go out?")
    assert part is not None
    assert part.id == RECALLED_PART_ID
    assert part.text == (
        "## Recalled for this turn\n\n"
        "### project/deploy (44 of 4096 bytes) — Deploy day\n\n"
        "Deploys go out on Fridays with make release."
    )
    (held,) = manifest.entries
    assert (held.scope, held.name, held.bytes) == ("project", "deploy", 44)
    assert held.hash == store.get("project", "deploy").hash
    assert "bm25" in held.legs and held.legs["bm25"].rank >= 1 and held.score > 0
    assert manifest.omitted == () and manifest.reason == ""
    logged = json.loads(manifest.to_json())
    assert logged["entries"][0]["legs"]["bm25"]["rank"] == held.legs["bm25"].rank


def test_always_shown_entries_are_never_repeated(store: Store) -> None:
    fill(store)
    # "deploy" and "scripts" are in the user entry too; it is in the block, not here.
    part, manifest = recall_part(store, ["user", "project"], "deploy scripts")
    assert [e.name for e in manifest.entries] == ["deploy"]
    assert part is not None and "Vim" not in part.text
    block, _ = render(store, ["user", "project"], policy=KindRegistry())
    assert "Vim" in block and "Fridays" not in block


@pytest.mark.slow
@pytest.mark.parametrize("hint", ["", "   ", "what is the", "and then it was"])
def test_a_hint_of_stopwords_recalls_nothing(store: Store, hint: str) -> None:
    fill(store)
    part, manifest = recall_part(store, ["user", "project"], hint)
    assert part is None
    assert manifest.reason == "no-signal" and manifest.entries == ()


def test_an_unrelated_hint_recalls_nothing(store: Store) -> None:
    fill(store)
    part, manifest = recall_part(store, ["user", "project"], "banana bread recipe")
    assert part is None
    assert manifest.entries == ()
    assert manifest.reason == "below-floor"


def test_the_part_is_bounded_and_names_what_did_not_fit(store: Store) -> None:
    for i in range(4):
        store.put(Entry("project", f"note-{i}", f"release checklist step {i} " + "x" * 200))
    bound = 600
    part, manifest = recall_part(store, ["project"], "release checklist", max_bytes=bound)
    assert part is not None
    assert len(part.text.encode()) <= bound
    assert len(manifest.entries) == 2  # 27 + 2 * (2 + 260) bytes fit in 600; a third does not
    assert [e.reason for e in manifest.omitted] == [OMIT_BUDGET, OMIT_BUDGET]
    assert {e.name for e in manifest.entries + manifest.omitted} == {f"note-{i}" for i in range(4)}
    with pytest.raises(BudgetError, match="give 1 or more"):
        recall_part(store, ["project"], "release", max_bytes=0)


@pytest.mark.slow
def test_each_kind_keeps_its_cap_and_the_limit_holds(store: Store) -> None:
    for i in range(6):
        store.put(
            Entry("docs", f"ref-{i}", f"manual page {i} about kernels", {"type": "reference"})
        )
    _, manifest = recall_part(store, ["docs"], "kernels")
    assert len(manifest.entries) == 4  # reference: at most 4
    for i in range(7):
        store.put(Entry("docs", f"note-{i}", f"kernels note {i}", {"type": "project"}))
    _, manifest = recall_part(store, ["docs"], "kernels")
    names = [e.name for e in manifest.entries]
    assert sum(n.startswith("ref-") for n in names) <= 4
    assert sum(n.startswith("note-") for n in names) <= 6  # project: at most 6
    assert len(names) == 8  # the default limit
    reg = KindRegistry()
    reg.set("reference", KindPolicy(always=False, max_entries=1))
    _, manifest = recall_part(store, ["docs"], "kernels", policy=reg, limit=3)
    names = [e.name for e in manifest.entries]
    assert len(names) == 3 and sum(n.startswith("ref-") for n in names) <= 1


def test_out_of_date_entries_are_not_recalled(store: Store) -> None:
    store.put(Entry("project", "old", "Deploys on Monday.", {"valid-until": "2020-01-01"}))
    store.put(Entry("project", "new", "Deploys on Friday.", {"supersedes": "old"}))
    _, manifest = recall_part(store, ["project"], "deploys")
    assert [e.name for e in manifest.entries] == ["new"]
    store.put(Entry("project", "later", "Deploys on Sunday.", {"valid-from": "2999-01-01"}))
    _, manifest = recall_part(store, ["project"], "deploys")
    assert [e.name for e in manifest.entries] == ["new"]
    _, manifest = recall_part(store, ["project"], "deploys", as_of="2999-01-01")
    assert sorted(e.name for e in manifest.entries) == ["later", "new"]  # "old" stays retired


def test_bad_arguments_are_refused(store: Store) -> None:
    with pytest.raises(TypeError, match="pass a list"):
        recall_part(store, "project", "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a KindRegistry"):
        recall_part(store, ["project"], "x", policy={})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit is 0"):
        recall_part(store, ["project"], "x", limit=0)
    with pytest.raises(ValueError, match="not kebab-case"):
        recall_part(store, ["Project"], "x")


def test_the_floor_is_on_the_vector_cosine(tmp_path: Path) -> None:
    # An entry that shares no word with the hint comes back only by the vector leg's cosine:
    # recalled when the floor is under that cosine, not when it is over it.
    with ChromaStore.open(tmp_path / "c", embedder=HashingEmbedder(64)) as st:
        st.put(Entry("project", "deploy", "Deploys go out on Fridays.", {"type": "project"}))
        assert recall_part(st, ["project"], "banana bread")[0] is None
        # "out" and "on" are stopwords, so BM25 sees only "tonight", which the entry lacks; the
        # hashing vectors share "out" and "on".
        hint = "out on tonight"
        assert st.recall(hint, scopes=["project"], mode="bm25") == []
        (hit,) = st.recall(hint, scopes=["project"], mode="vector")
        cosine = hit.legs["vector"].score
        assert 0.1 < cosine < 0.99
        _, under = recall_part(st, ["project"], hint, min_cosine=cosine - 0.005)
        assert [e.name for e in under.entries] == ["deploy"]
        assert under.entries[0].legs["vector"].score == pytest.approx(cosine)
        part, over = recall_part(st, ["project"], hint, min_cosine=cosine + 0.005)
        assert part is None and over.reason == "below-floor"


def test_mcp_prompt_returns_the_part() -> None:
    store = MemStore()
    fill(store)
    server = MemoryServer(store, ["user", "project"], policy=KindRegistry())
    got: dict[str, str] = {}

    async def main() -> None:
        async with Client(server.server) as client:
            listed = await client.list_prompts()
            assert [p.name for p in listed.prompts] == [RECALL_PROMPT]
            assert [a.name for a in listed.prompts[0].arguments or []] == ["hint"]
            r = await client.get_prompt(RECALL_PROMPT, {"hint": "When do deploys go out?"})
            got["hit"] = r.messages[0].content.text  # type: ignore[union-attr]
            r = await client.get_prompt(RECALL_PROMPT, {"hint": "banana bread"})
            got["miss"] = r.messages[0].content.text  # type: ignore[union-attr]
            block = await client.read_resource("memory://block")
            got["block"] = block.contents[0].text  # type: ignore[union-attr]

    anyio.run(main)
    assert got["hit"].startswith("## Recalled for this turn\n\n### project/deploy (44 of 4096")
    assert got["miss"] == "No memory recalled for this turn."
    assert "Vim" in got["block"] and "Recalled when relevant, not shown" in got["block"]


CONVERSATION = [
    Entry("user", "name", "The user is called Priya and works in Lisbon.", {"type": "user"}),
    Entry("user", "tone", "Keep answers short, no bullet lists.", {"type": "feedback"}),
    Entry(
        "project",
        "release",
        "Releases ship on Fridays after the staging smoke tests pass.",
        {"type": "project", "description": "Release schedule"},
    ),
    Entry("project", "db", "The service stores its data in PostgreSQL 16.", {"type": "project"}),
    Entry("project", "style", "Python code is formatted with ruff.", {"type": "reference"}),
]


@pytest.mark.slow
def test_real_model_recalls_a_project_note_for_a_hint_about_it(tmp_path: Path) -> None:
    import embedders

    emb = embedders.get("onnx:all-MiniLM-L6-v2")
    with ChromaStore.open(tmp_path / "c", embedder=emb) as st:
        for e in CONVERSATION:
            st.put(e)
        part, manifest = recall_part(st, ["user", "project"], "When can we deploy to production?")
        assert part is not None, manifest
        assert manifest.entries[0].name == "release"
        assert "bm25" not in manifest.entries[0].legs  # by meaning alone: no word is shared
        assert manifest.entries[0].legs["vector"].score >= DEFAULT_MIN_COSINE
        assert "Priya" not in part.text and "bullet" not in part.text
        for unrelated in ["Any tips for baking sourdough bread?", "thanks, that's all"]:
            part, manifest = recall_part(st, ["user", "project"], unrelated)
            assert part is None, (unrelated, manifest)


def test_entries_the_block_shows_are_not_recalled_and_the_reason_says_so() -> None:
    store = MemStore()
    st = store.put(Entry("project", "build", "Run the garden build with make", {"type": "project"}))
    shown = [("project", "build", st.entry.hash)]
    part, manifest = recall_part(store, ["project"], "the garden build", shown=shown)
    assert part is None and manifest.reason == RECALL_ALL_SHOWN
    part, manifest = recall_part(store, ["project"], "the garden build")  # not shown: recalled
    assert part is not None and [e.name for e in manifest.entries] == ["build"]
    stale = [("project", "build", "sha256:" + "0" * 64)]  # the block held an older content
    part, _ = recall_part(store, ["project"], "the garden build", shown=stale)
    assert part is not None and "with make" in part.text
    part, manifest = recall_part(store, ["project"], "unrelated words entirely", shown=shown)
    assert part is None and manifest.reason == RECALL_BELOW_FLOOR
