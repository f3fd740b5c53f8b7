"""The four memory tools: schemas and descriptions (golden), result lines, errors the model can
read, patch retry, save anchoring, scope isolation, and random arguments that never break a tool."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harnesses import open_kind
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmemory import Entry, MemStore, SqliteStore, Store, check_entry, lost_updates
from agentmemory.manifest import Manifest
from agentmemory.render import render
from agentmemory.tools import (
    DEFAULT_SEARCH_BYTES,
    DEFAULT_SEARCH_LIMIT,
    PATCH_ATTEMPTS,
    Tool,
    ToolConfigError,
    ToolResult,
    check_tool_scopes,
    tools,
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "tools"
STORE_KINDS = ["mem", "sqlite", "file"]


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    st_ = open_kind(request.param, tmp_path)
    yield st_
    st_.close()


def by_name(ts: list[Tool]) -> dict[str, Tool]:
    return {t.name: t for t in ts}


def ok(result: ToolResult) -> str:
    assert not result.is_error, result.text
    return result.text


def err(result: ToolResult) -> str:
    assert result.is_error, result.text
    assert result.record is None
    return result.text


# --------------------------------------------------------------------------------------------
# Golden schemas and descriptions


GOLDEN_CASES: dict[str, dict[str, Any]] = {
    "user-project-rules": {"scopes": ["user", "project"], "read_scopes": ["rules"]},
    "one-scope": {"scopes": ["user"]},
}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_schemas_and_descriptions_match_golden(case: str, update_golden: bool) -> None:
    ts = tools(MemStore(), **GOLDEN_CASES[case])
    for t in ts:
        text = (
            json.dumps(
                {
                    "name": t.name,
                    "description": t.description,
                    "annotations": t.annotations,
                    "input_schema": t.input_schema,
                },
                indent=2,
                ensure_ascii=False,
            )
            + "\n"
        )
        path = GOLDEN / f"{case}.{t.name}.json"
        if update_golden:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert path.read_text(encoding="utf-8") == text, f"{path.name} differs; review the diff"


def test_tools_come_in_order_with_the_scope_rules_of_the_schemas() -> None:
    ts = tools(MemStore(), ["user", "project"], read_scopes=["rules"])
    assert [t.name for t in ts] == ["memory_save", "memory_patch", "memory_forget", "memory_search"]
    save, patch, forget, search = ts
    for writer in (save, patch, forget):
        schema = writer.input_schema
        assert schema["properties"]["scope"]["enum"] == ["user", "project"]
        assert "scope" in schema["required"]
        assert schema["additionalProperties"] is False
        assert 'a write to it is refused with "scope rules is read-only"' in writer.description
    assert search.input_schema["properties"]["scopes"]["items"]["enum"] == [
        "user",
        "project",
        "rules",
    ]
    one = by_name(tools(MemStore(), ["user"]))["memory_save"].input_schema
    assert one["properties"]["scope"]["enum"] == ["user"]
    assert "scope" not in one["required"]


def test_search_description_says_meaning_and_words_not_every_word() -> None:
    search = by_name(tools(MemStore(), ["user"]))["memory_search"]
    assert "every word must appear" not in search.description.lower()
    assert "need not contain every word" in search.description
    assert f"up to {DEFAULT_SEARCH_LIMIT} entries" in search.description
    assert f"at most {DEFAULT_SEARCH_BYTES} bytes of content" in search.description


def test_annotations_use_the_mcp_names() -> None:
    ann = {t.name: t.annotations for t in tools(MemStore(), ["user"])}
    for a in ann.values():
        assert set(a) == {
            "title",
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        }
        assert a["openWorldHint"] is False
    assert ann["memory_search"]["readOnlyHint"] is True
    assert [n for n, a in ann.items() if a["readOnlyHint"]] == ["memory_search"]
    assert ann["memory_save"]["destructiveHint"] is True
    assert ann["memory_forget"]["destructiveHint"] is True
    assert ann["memory_patch"]["destructiveHint"] is False


def test_schema_and_annotations_are_copies() -> None:
    save = tools(MemStore(), ["user"])[0]
    save.input_schema["properties"].clear()
    save.annotations["title"] = "changed"
    assert "content" in save.input_schema["properties"]
    assert save.annotations["title"] == "Save memory entry"


# --------------------------------------------------------------------------------------------
# Configuration errors


@pytest.mark.parametrize(
    ("scopes", "read_scopes", "message"),
    [
        ([], [], "no scopes"),
        (["User"], [], 'scope "User" is not kebab-case'),
        (["user", "user"], [], 'scope "user" is given twice'),
        (["user"], ["Rules"], 'read scope "Rules" is not kebab-case'),
        (["user"], ["rules", "rules"], 'read scope "rules" is given twice'),
        (["user"], ["user"], 'scope "user" is both writable and read-only'),
        ("user", [], "pass a list"),
    ],
)
def test_bad_configuration_raises_value_error(
    scopes: Any, read_scopes: list[str], message: str
) -> None:
    with pytest.raises(ToolConfigError, match=message) as info:
        tools(MemStore(), scopes, read_scopes=read_scopes)
    assert isinstance(info.value, ValueError)
    with pytest.raises(ToolConfigError, match=message):  # checked alone, before any store
        check_tool_scopes(scopes, read_scopes)


def test_checked_tool_scopes_are_the_writable_and_the_read_only() -> None:
    assert check_tool_scopes(["user", "project"], ["rules"]) == (("user", "project"), ("rules",))


def test_bad_search_bounds_raise() -> None:
    with pytest.raises(ValueError, match="search_limit is 0"):
        tools(MemStore(), ["user"], search_limit=0)
    with pytest.raises(ValueError, match="search_bytes is -1"):
        tools(MemStore(), ["user"], search_bytes=-1)


# --------------------------------------------------------------------------------------------
# memory_save


def test_save_keeps_replaces_and_clears_meta(store: Store) -> None:
    save = tools(store, ["user", "project"])[0]
    steps = [
        ({"content": "a", "meta": {"description": "d"}}, "created; meta set (description)"),
        ({"content": "bb"}, "replaced 1 bytes; meta kept (description)"),
        ({"content": "ccc", "meta": {"type": "t"}}, "replaced 2 bytes; meta replaced (type)"),
        ({"content": "dddd", "meta": {}}, "replaced 3 bytes; meta cleared"),
        ({"content": "eeeee", "meta": None}, "replaced 4 bytes; no meta"),
    ]
    for args, tail in steps:
        content = args["content"]
        r = save({"scope": "user", "name": "style", **args})
        assert ok(r) == f"Saved user/style ({len(content)} of 4096 bytes, {sha(content)}): {tail}"
        assert r.record is not None and r.record.entry.content == content
    assert store.get("user", "style").meta is None
    assert ok(save({"scope": "project", "name": "x", "content": "y"})).endswith("created; no meta")


def test_save_accepts_a_json_string_and_returns_the_journal_record(store: Store) -> None:
    save = tools(store, ["user"])[0]
    r = save('{"name": "tz", "content": "Europe/London"}')
    assert ok(r).startswith("Saved user/tz (13 of 4096 bytes, ")
    assert r.record == next(iter(store.journal()))
    assert r.record.prev == "" and r.record.replaced == ""
    r2 = save(b'{"name": "tz", "content": "Europe/Paris"}')
    assert r2.record is not None and r2.record.prev == sha("Europe/London")


def test_save_errors_pass_through_with_sizes(tmp_path: Path) -> None:
    st_ = MemStore(max_entry_bytes=256)
    save = tools(st_, ["user"])[0]
    assert err(save({"name": "big", "content": "x" * 257})) == (
        "agentmemory: entry user/big is 257 bytes, over the 256 byte limit; split it or trim it"
    )
    ok(save({"name": "big", "content": "x" * 26}))
    assert err(save({"name": "big", "content": "x" * 300})).endswith(
        "is 300 bytes, over the 256 byte limit; it holds 26 bytes now; split it or trim it"
    )
    assert 'name "Not Kebab" is not kebab-case' in err(save({"name": "Not Kebab", "content": "x"}))
    assert 'meta key "Type" is not kebab-case' in err(
        save({"name": "a", "content": "x", "meta": {"Type": "t"}})
    )
    assert "has no content" in err(save({"name": "a", "content": ""}))
    assert [c.seq for c in st_.journal()] == [1]


# --------------------------------------------------------------------------------------------
# Bad arguments: every one an error the model can read, nothing written


@pytest.mark.parametrize(
    ("tool", "args", "text"),
    [
        ("memory_save", '{"scope": "user", ', "invalid arguments: not valid JSON: "),
        ("memory_save", "[1, 2]", "invalid arguments: expected a JSON object of named arguments"),
        (
            "memory_save",
            {"name": "a", "content": "x"},
            'invalid arguments: missing required property "scope"',
        ),
        (
            "memory_save",
            {"scope": "secret", "name": "a", "content": "x"},
            'invalid arguments: scope: expected one of ["user", "project"], got "secret"',
        ),
        (
            "memory_save",
            {"scope": "user", "name": "a", "content": "x", "when": "now"},
            'invalid arguments: unexpected property "when"; the properties are scope, name, '
            "content, meta",
        ),
        (
            "memory_save",
            {"scope": "user", "name": "a", "content": 5},
            "invalid arguments: content: expected a string, got 5 (an integer)",
        ),
        (
            "memory_save",
            {"scope": "user", "name": "a", "content": "x", "meta": {"k": 1}},
            "invalid arguments: meta.k: expected a string, got 1 (an integer)",
        ),
        (
            "memory_save",
            {"scope": "rules", "name": "a", "content": "x"},
            "scope rules is read-only",
        ),
        (
            "memory_patch",
            {"scope": "user", "name": "a", "old_text": "x"},
            'invalid arguments: missing required property "new_text"',
        ),
        (
            "memory_patch",
            {"scope": "user", "name": "Bad_Name", "old_text": "x", "new_text": "y"},
            'agentmemory: invalid entry: name "Bad_Name" is not kebab-case',
        ),
        ("memory_forget", {"scope": "rules", "name": "a"}, "scope rules is read-only"),
        (
            "memory_forget",
            {"scope": "user", "name": "nope"},
            "agentmemory: no such entry: user/nope",
        ),
        ("memory_search", {"query": "   "}, "query is empty; give one or more words"),
        ("memory_search", {"query": ""}, "query is empty; give one or more words"),
        (
            "memory_search",
            {"query": "x", "scopes": ["user", "x"]},
            'invalid arguments: scopes[1]: expected one of ["user", "project", "rules"], got "x"',
        ),
        (
            "memory_search",
            {"query": "x", "limit": True},
            "invalid arguments: limit: expected an integer, got true (a boolean)",
        ),
        ("memory_search", {}, 'invalid arguments: missing required property "query"'),
    ],
)
def test_bad_arguments_are_error_results(tool: str, args: Any, text: str) -> None:
    st_ = MemStore()
    ok(tools(st_, ["user", "project"])[0]({"scope": "user", "name": "a", "content": "x x"}))
    t = by_name(tools(st_, ["user", "project"], read_scopes=["rules"]))[tool]
    assert err(t(args)).startswith(text)
    assert len(list(st_.journal())) == 1


# --------------------------------------------------------------------------------------------
# memory_patch


def test_patch_replaces_the_one_occurrence_and_keeps_meta(store: Store) -> None:
    save, patch, _, _ = tools(store, ["user"])
    ok(
        save(
            {"name": "editor", "content": "Uses Neovim.\nDark theme.", "meta": {"description": "d"}}
        )
    )
    r = patch({"name": "editor", "old_text": "Dark", "new_text": "Light"})
    new = "Uses Neovim.\nLight theme."
    assert ok(r) == f"Patched user/editor ({len(new)} of 4096 bytes, {sha(new)})"
    assert r.record is not None and store.get("user", "editor") == r.record.entry
    assert store.get("user", "editor").meta == {"description": "d"}
    assert r.record is not None and r.record.prev == sha("Uses Neovim.\nDark theme.")


def test_patch_refuses_absent_repeated_and_empty_anchors(store: Store) -> None:
    save, patch, _, _ = tools(store, ["user"])
    ok(save({"name": "n", "content": "a b a"}))
    assert err(patch({"name": "n", "old_text": "z", "new_text": "y"})) == (
        "old_text does not appear in user/n; read the entry with memory_search and copy the text "
        "exactly"
    )
    assert err(patch({"name": "n", "old_text": "a", "new_text": "y"})) == (
        "old_text appears 2 times in user/n; include more of the surrounding text so it appears once"
    )
    assert err(patch({"name": "n", "old_text": "", "new_text": "y"})).startswith(
        "old_text is empty"
    )
    assert "has no content" in err(patch({"name": "n", "old_text": "a b a", "new_text": ""}))
    assert err(patch({"name": "gone", "old_text": "a", "new_text": "b"})) == (
        "agentmemory: no such entry: user/gone; memory_save creates an entry"
    )
    assert len(list(store.journal())) == 1


class RacingStore(MemStore):
    """A MemStore where another session writes the entry right after each of the first
    ``races`` reads of it, as a concurrent writer would."""

    def __init__(self, races: int) -> None:
        super().__init__()
        self.races = races

    def get(self, scope: str, name: str) -> Entry:
        e = super().get(scope, name)
        if self.races > 0:
            self.races -= 1
            self.put(e.copy(content=e.content + " +other"), session="other")
        return e


def test_patch_retries_on_conflict_and_keeps_the_other_change() -> None:
    st_ = RacingStore(races=0)
    save, patch, _, _ = tools(st_, ["user"])
    ok(save({"name": "n", "content": "alpha beta"}))
    st_.races = PATCH_ATTEMPTS - 1
    r = patch({"name": "n", "old_text": "alpha", "new_text": "gamma"})
    assert ok(r).startswith("Patched user/n")
    assert st_.get("user", "n").content == "gamma beta +other +other +other"
    assert lost_updates(st_) == []


def test_patch_gives_up_after_four_conflicts() -> None:
    st_ = RacingStore(races=0)
    save, patch, _, _ = tools(st_, ["user"])
    ok(save({"name": "n", "content": "alpha"}))
    st_.races = PATCH_ATTEMPTS
    text = err(patch({"name": "n", "old_text": "alpha", "new_text": "beta"}))
    assert text.startswith("agentmemory: entry user/n has hash sha256:")
    assert text.endswith(" after 4 attempts; another session keeps changing it, try again")
    assert all(c.session == "other" for c in list(st_.journal())[1:])


# --------------------------------------------------------------------------------------------
# memory_save anchored to the rendered block


def test_save_is_built_on_what_the_block_showed(store: Store) -> None:
    seen: list[Manifest] = []

    def rendered() -> Manifest:
        return seen[-1]

    def render_now() -> None:
        seen.append(render(store, ["user"], max_total_bytes=400)[1])

    writer = tools(store, ["user"])[0]  # another session, no block
    save = tools(store, ["user"], rendered=rendered)[0]
    ok(writer({"name": "a", "content": "first"}))
    ok(writer({"name": "big", "content": "x" * 300}))  # over the block's budget: omitted
    render_now()
    assert [(e.name, e.hash) for e in seen[-1].entries] == [("a", sha("first"))]

    assert ok(save({"name": "a", "content": "second"})).endswith("; built on the block")
    assert ok(save({"name": "big", "content": "y"})).endswith(
        "; built on the stored entry, which the block did not show"
    )
    assert ok(save({"name": "new", "content": "z"})).endswith("; no meta")

    render_now()
    ok(writer({"name": "a", "content": "third, by another session"}))
    r = save({"name": "a", "content": "fourth"})
    assert ok(r).endswith(
        f"; built on the block's {sha('second')}, but the entry changed to "
        f"{sha('third, by another session')} after the block was rendered and this write "
        "replaced that change; read it with memory_search if the change mattered"
    )
    assert r.record is not None and r.record.prev == sha("second")
    assert [u.change.seq for u in lost_updates(store)] == [r.record.seq]

    render_now()
    store.forget("user", "a")
    assert ok(save({"name": "a", "content": "fifth"})).endswith(
        "; built on the block, but the entry was forgotten after the block was rendered and this "
        "write created it again"
    )


def test_without_a_block_a_save_is_built_on_the_stored_entry(store: Store) -> None:
    save = tools(store, ["user"])[0]
    ok(save({"name": "a", "content": "one"}))
    r = save({"name": "a", "content": "two"})
    assert "built on" not in ok(r)
    assert r.record is not None and r.record.prev == sha("one")


# --------------------------------------------------------------------------------------------
# memory_search


def fill(store: Store, entries: dict[str, str], description: str = "") -> None:
    for key, content in entries.items():
        scope, name = key.split("/")
        meta = {"description": description} if description else None
        store.put(Entry(scope=scope, name=name, content=content, meta=meta))


def test_search_shows_size_description_and_content(store: Store) -> None:
    fill(store, {"user/style": "Long answers."}, description="How to answer")
    fill(store, {"project/build": "Run make."})
    search = tools(store, ["user", "project"])[3]
    assert ok(search({"query": "answers"})) == (
        '1 entry in user, project for "answers", best first.\n\nuser/style (13 bytes): How to answer\n'
        "Long answers.\n"
    )
    assert ok(search({"query": "rust"})) == 'No entries in user, project match "rust".'
    assert ok(search({"query": "make", "scopes": ["user"]})) == 'No entries in user match "make".'


def test_search_limits_entries_and_bytes_and_lists_the_rest(store: Store) -> None:
    fill(store, {"user/long": "go " * 32, "user/short": "go go", "user/mid": "go stop go"})
    search = tools(store, ["user"], search_bytes=64)[3]
    text = ok(search({"query": "go"}))
    assert text.startswith('3 entries in user for "go", best first.\n')
    assert "\nuser/short (5 bytes)\ngo go\n" in text
    assert "\nuser/mid (10 bytes)\ngo stop go\n" in text
    assert text.endswith(
        "\nNot shown, over the 64 byte result limit; search for them by name: user/long (96 bytes)\n"
    )
    assert ok(search({"query": "go", "limit": 1})).startswith(
        '1 entry in user for "go", best first.'
    )
    few = tools(store, ["user"], search_limit=2)[3]
    assert ok(few({"query": "go"})).startswith('2 entries in user for "go", best first.')


def test_search_reads_read_only_scopes(store: Store) -> None:
    fill(store, {"rules/style": "Never use tabs."})
    search = tools(store, ["user"], read_scopes=["rules"])[3]
    assert "rules/style (15 bytes)\nNever use tabs.\n" in ok(search({"query": "tabs"}))


# --------------------------------------------------------------------------------------------
# Scope isolation and random arguments (hypothesis)

SECRET = "classified-payload-7731"
names = st.one_of(
    st.sampled_from(["a", "style", "secret", "x", "other", "../secret", "secret/a", "a-b"]),
    st.text(max_size=12),
)
scope_values = st.one_of(
    st.sampled_from(["user", "project", "rules", "secret", "other", "", "USER", "user/secret"]),
    st.text(max_size=8),
    st.integers(),
    st.none(),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3)
    ),
    max_leaves=8,
)
meta_values = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(["description", "type", "Name", "updated"]), st.text(max_size=10)
    ),
    json_values,
)
arguments = st.fixed_dictionaries(
    {},
    optional={
        "scope": scope_values,
        "scopes": st.one_of(st.lists(scope_values, max_size=4), json_values),
        "name": st.one_of(names, json_values),
        "content": st.one_of(st.text(max_size=40), json_values),
        "meta": meta_values,
        "old_text": st.one_of(st.sampled_from(["a", "public", "secret", ""]), st.text(max_size=5)),
        "new_text": st.one_of(st.text(max_size=8), json_values),
        "query": st.one_of(
            st.sampled_from(["secret", SECRET, "public", "a", " ", "classified"]), st.text()
        ),
        "limit": st.one_of(st.integers(), json_values),
        "extra": json_values,
    },
)
plausible_scope = st.sampled_from(["user", "project", "rules", "secret"])
plausible_name = st.sampled_from(["a", "style", "secret", "Bad"])
plausible = st.one_of(
    st.tuples(
        st.just("memory_save"),
        st.fixed_dictionaries(
            {
                "scope": plausible_scope,
                "name": plausible_name,
                "content": st.text(min_size=1, max_size=70),
            },
            optional={"meta": meta_values},
        ),
    ),
    st.tuples(
        st.just("memory_patch"),
        st.fixed_dictionaries(
            {
                "scope": plausible_scope,
                "name": plausible_name,
                "old_text": st.sampled_from(["a", "public", "note", "x", "\n"]),
                "new_text": st.text(max_size=5),
            }
        ),
    ),
    st.tuples(
        st.just("memory_forget"),
        st.fixed_dictionaries({"scope": plausible_scope, "name": plausible_name}),
    ),
    st.tuples(
        st.just("memory_search"),
        st.fixed_dictionaries(
            {"query": st.sampled_from(["public", "note", SECRET, "a", "secret in"])},
            optional={"scopes": st.lists(scope_values, max_size=3), "limit": st.integers()},
        ),
    ),
)
calls = st.one_of(
    plausible,
    st.tuples(
        st.sampled_from(["memory_save", "memory_patch", "memory_forget", "memory_search"]),
        st.one_of(arguments, arguments.map(json.dumps), st.text(max_size=30), json_values),
    ),
)


def isolated_store(kind: str = "mem", tmp_path: Path | None = None) -> Store:
    """A store with secrets in scopes ``secret`` and ``other`` beside ``user`` and ``rules``."""
    if kind == "chroma":
        from agentmemory import ChromaStore
        from embedders import HashingEmbedder

        assert tmp_path is not None
        st_: Store = ChromaStore.open(tmp_path, embedder=HashingEmbedder(), max_entry_bytes=64)
    elif kind == "sqlite":
        assert tmp_path is not None
        st_ = SqliteStore(tmp_path / "journal.sqlite3", max_entry_bytes=64)
    else:
        st_ = MemStore(max_entry_bytes=64)
    for scope in ("secret", "other"):
        for name in ("a", "style", "secret", "x"):
            st_.put(Entry(scope=scope, name=name, content=f"{SECRET} in {scope}/{name}"))
    st_.put(Entry(scope="user", name="a", content="a public note"))
    st_.put(Entry(scope="rules", name="a", content="a public rule"))
    return st_


def check_calls(store: Store, ts: dict[str, Tool], script: list[tuple[str, Any]]) -> None:
    secret_before = {(s, e.name): e for s in ("secret", "other") for e in store.list(s)}
    seq = len(list(store.journal()))
    for tool, args in script:
        result = ts[tool](args)  # must not raise
        assert isinstance(result, ToolResult)
        assert isinstance(result.text, str) and result.text
        result.text.encode("utf-8")  # sendable
        assert " failed: " not in result.text, result.text  # no unexpected exception inside
        for scope in ("secret", "other"):  # no content of another scope ever comes back
            assert f"{SECRET} in {scope}/" not in result.text, (tool, args, result.text)
        new = list(store.journal(after=seq))
        if result.is_error or tool == "memory_search":
            assert new == [], (tool, args, result.text)
            assert result.record is None
            continue
        assert len(new) == 1 and new[0] == result.record
        c = new[0]
        assert c.seq == seq + 1
        assert c.entry.scope in ("user", "project")
        if c.entry.deleted:
            assert c.prev == c.replaced == c.entry.hash
        else:
            check_entry(c.entry, store.max_entry_bytes)
            assert c.entry.hash == sha(c.entry.content)
        seq = c.seq
    after = {(s, e.name): e for s in ("secret", "other") for e in store.list(s)}
    assert after == secret_before


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=st.lists(calls, min_size=1, max_size=8))
def test_random_arguments_never_raise_and_never_leave_the_scopes(
    script: list[tuple[str, Any]],
) -> None:
    store = isolated_store()
    ts = by_name(tools(store, ["user", "project"], read_scopes=["rules"]))
    check_calls(store, ts, script)
    for e in store.list("rules"):
        assert e.content == "a public rule"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "chroma"])
def test_random_arguments_on_persistent_stores(kind: str, tmp_path: Path) -> None:
    store = isolated_store(kind, tmp_path)
    ts = by_name(tools(store, ["user", "project"], read_scopes=["rules"]))

    @settings(max_examples=40, deadline=None, database=None)
    @given(script=st.lists(calls, min_size=1, max_size=6))
    def run(script: list[tuple[str, Any]]) -> None:
        check_calls(store, ts, script)

    run()
    store.close()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mem", "sqlite", "chroma"])
def test_searches_never_reach_other_scopes(kind: str, tmp_path: Path) -> None:
    store = isolated_store(kind, tmp_path)
    search = by_name(tools(store, ["user", "project"], read_scopes=["rules"]))["memory_search"]
    for args in [
        {"query": SECRET},
        {"query": "secret"},
        {"query": "classified payload"},
        {"query": SECRET, "scopes": ["secret"]},
        {"query": SECRET, "scopes": []},
        {"query": "a", "limit": 100},
        {"query": "a", "limit": 10**12},
    ]:
        text = search(args).text
        assert "classified-payload-7731 in" not in text
        assert "secret/" not in text and "other/" not in text
    assert "\nuser/a (13 bytes)\na public note\n" in ok(search({"query": "public note"}))
    assert "\nrules/a (13 bytes)\na public rule\n" in ok(search({"query": "public rule"}))
    store.close()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mem", "sqlite", "chroma"])
def test_writers_never_reach_other_scopes(kind: str, tmp_path: Path) -> None:
    store = isolated_store(kind, tmp_path)
    save, patch, forget, _ = tools(store, ["user", "project"], read_scopes=["rules"])
    attempts: list[tuple[Tool, dict[str, Any]]] = [
        (save, {"scope": "secret", "name": "a", "content": "x"}),
        (save, {"scope": "user/../secret", "name": "a", "content": "x"}),
        (save, {"scope": "user", "name": "../secret/a", "content": "x"}),
        (save, {"scope": "user", "name": "secret/a", "content": "x"}),
        (save, {"scope": "rules", "name": "a", "content": "x"}),
        (patch, {"scope": "secret", "name": "a", "old_text": "in", "new_text": "x"}),
        (patch, {"scope": "user", "name": "secret/a", "old_text": "in", "new_text": "x"}),
        (forget, {"scope": "other", "name": "a"}),
        (forget, {"scope": "user", "name": "../other/a"}),
        (forget, {"scope": ["secret"], "name": "a"}),
    ]
    for tool, args in attempts:
        err(tool(args))
    assert len(list(store.journal())) == 10
    store.close()


def test_a_tool_never_raises_on_odd_python_values() -> None:
    store = isolated_store()
    odd: list[Any] = [
        {"scope": "user", "name": "a", "content": object()},
        {"scope": "user", "name": ("a",), "content": "x"},
        {"scope": "user", "name": "a", "content": "x", "meta": {1: "x"}},
        {"scope": "user", "name": "a", "content": "x", "meta": {"k": "\ud800"}},
        {"scope": "user", "name": "a\ud800", "content": "x"},
        {"query": "\ud800"},
        {"query": "x", "limit": float("nan")},
        {"query": "x", "limit": 2.0},
        "[" * 100_000,
        b"\xff\xfe",
        12,
    ]
    ts = by_name(tools(store, ["user", "project"]))
    check_calls(store, ts, [(t, a) for a in odd for t in ts])


def test_writes_through_tools_are_attributed_to_the_session(store: Store) -> None:
    from agentmemory import session

    save = tools(store, ["user"])[0]
    with session("sess-1"):
        r = save({"name": "a", "content": "x"})
    assert r.record is not None and r.record.session == "sess-1"


def test_tool_calls_are_reentrant_across_tool_sets(tmp_path: Path) -> None:
    """Two tool sets (two agents) over one store see each other's writes."""
    store = open_kind("sqlite", tmp_path)
    a = by_name(tools(store, ["user"]))
    b = by_name(tools(store, ["user"]))
    ok(a["memory_save"]({"name": "n", "content": "from a"}))
    ok(b["memory_patch"]({"name": "n", "old_text": "a", "new_text": "b"}))
    assert store.get("user", "n").content == "from b"
    store.close()


# --------------------------------------------------------------------------------------------
# memory_search over a store with vectors (ChromaStore): by meaning and by words


def test_search_description_over_vectors_matches_golden(
    tmp_path: Path, update_golden: bool
) -> None:
    from agentmemory import ChromaStore
    from embedders import HashingEmbedder

    with ChromaStore.open(tmp_path / "store", embedder=HashingEmbedder()) as store:
        search = tools(store, ["user", "project"], read_scopes=["rules"])[3]
    assert "It matches by meaning and by words" in search.description
    text = json.dumps({"description": search.description}, indent=2, ensure_ascii=False) + "\n"
    path = GOLDEN / "vectors.memory_search.json"
    if update_golden:
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{path.name} differs; review the diff"


@pytest.mark.slow
def test_search_finds_by_meaning_with_the_packaged_model(tmp_path: Path) -> None:
    import embedders
    from agentmemory import ChromaStore

    model = embedders.get(embedders.DEFAULT_EMBEDDER)
    with ChromaStore.open(tmp_path / "store", embedder=model) as store:
        save, _, _, search = tools(store, ["user"])
        for name, content in [
            ("ui", "User prefers dark mode in editors"),
            ("said-1", "I said I would call about the invoice tomorrow"),
            ("said-2", "What did I say about lunch? Remember the sushi place"),
            ("said-3", "Do you remember what the plumber said about the sink"),
            ("said-4", "I said the meeting moved to Friday"),
            ("said-5", "Remember to water the plants, I said"),
        ]:
            ok(save({"name": name, "content": content}))
        text = ok(search({"query": "which colour scheme does the user like?", "limit": 3}))
        assert "\nuser/ui (33 bytes)\n" in text
        text = ok(search({"query": "do you remember what I said about dark mode?", "limit": 1}))
        assert text.startswith(
            '1 entry in user for "do you remember what I said about dark mode?", best first.'
        )
        assert "\nuser/ui (33 bytes)\nUser prefers dark mode in editors\n" in text


@pytest.mark.slow
def test_import_agentmemory_leaves_jsonschema_until_a_tool_is_built() -> None:
    code = (
        "import sys, agentmemory; before = 'jsonschema' in sys.modules; "
        "agentmemory.tools(agentmemory.MemStore(), ['user']); "
        "print(before, 'jsonschema' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "True"]


def test_a_write_whose_vector_update_fails_is_reported_as_done(tmp_path: Path) -> None:
    """ChromaStore raises IndexWriteError after the journal commit: the write happened, so the
    tool result is a success with the record, and says search by meaning may miss it."""
    from chroma_store_cases import Fault

    from embedders import HashingEmbedder

    failing = Fault(armed=True).store_type
    with failing.open(tmp_path, embedder=HashingEmbedder()) as store:
        save, patch, forget, _ = tools(store, ["user"])
        results = [
            save({"name": "tz", "content": "Europe/London"}),
            patch({"name": "tz", "old_text": "London", "new_text": "Paris"}),
            forget({"name": "tz"}),
        ]
        for r in results:
            assert not r.is_error, r.text
            assert "the vector index was not updated yet" in r.text
            assert "do not repeat the call" in r.text
        assert [r.record.seq if r.record else None for r in results] == [1, 2, 3]
        contents = [c.entry.content for c in store.journal()]
        assert contents == ["Europe/London", "Europe/Paris", "Europe/Paris"]
        assert store.list("user") == []


def test_a_store_folder_named_with_a_plain_word_leaves_the_model_s_text_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's quick start opens ``open_store("memory")``: hiding the store's location
    from the model must not replace the word inside ``memory_patch`` or ``agentmemory:``; a
    path with a folder in it is still hidden."""
    from agentmemory import ChromaStore, Entry, tools
    from agentmemory.tools.texts import hide_paths
    from embedders import HashingEmbedder

    monkeypatch.chdir(tmp_path)
    with ChromaStore.open("memory", embedder=HashingEmbedder(64)) as st:
        st.put(Entry("user", "editor", "Prefers dark mode in Vim."))
        kit = {t.name: t for t in tools(st, ["user"], duplicates="refuse")}
        got = kit["memory_save"]({"name": "copy", "content": "Prefers dark mode in Vim."})
        assert got.is_error and got.text.startswith("agentmemory: user/copy was not saved")
        assert "edit that entry with memory_patch" in got.text and "<memory store>" not in got.text
    with ChromaStore.open(tmp_path / "deep" / "memory", embedder=HashingEmbedder(64)) as st:
        text = f"store {tmp_path / 'deep' / 'memory'} is locked; agentmemory: memory_patch"
        assert hide_paths(text, st) == "store <memory store> is locked; agentmemory: memory_patch"
