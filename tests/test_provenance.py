"""Provenance (message, tool, reason beside the session) and forget_session
(docs/kinds.md#provenance, docs/kinds.md#forgetting-a-session), on MemStore, SqliteStore,
FileStore and ChromaStore (hashing vectors); a property test over 4 scopes and 3 sessions on
MemStore, SqliteStore and ChromaStore (its vectors too)."""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from harnesses import open_kind
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmemory import (
    Change,
    ChromaStore,
    Entry,
    InvalidEntryError,
    NotFoundError,
    SqliteStore,
    Store,
    current_provenance,
    forget_session,
    provenance,
    session,
    tools,
)
from agentmemory.cli import main
from agentmemory.wire import decode_change, encode_change


@pytest.fixture(params=["chroma", "file", "mem", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    st_ = open_kind(request.param, tmp_path)
    yield st_
    st_.close()


# -- provenance -----------------------------------------------------------------------------


@pytest.mark.slow
def test_provenance_reaches_the_journal(store: Store) -> None:
    with session("sess-1"), provenance(message="msg-7", reason="the user said so"):
        put = store.put(Entry("user", "tone", "Short answers."))
        with provenance(tool="importer", reason="bulk load"):
            inner = store.put(Entry("user", "lang", "English."))
        gone = store.forget("user", "lang")
    plain = store.put(Entry("user", "tz", "UTC"))
    assert (put.session, put.message, put.tool, put.reason) == (
        "sess-1",
        "msg-7",
        "",
        "the user said so",
    )
    assert (inner.message, inner.tool, inner.reason) == ("msg-7", "importer", "bulk load")
    assert (gone.message, gone.tool, gone.reason) == ("msg-7", "", "the user said so")
    assert (plain.session, plain.message, plain.tool, plain.reason) == ("", "", "", "")
    journal = list(store.journal())
    assert [(c.message, c.tool, c.reason) for c in journal] == [
        ("msg-7", "", "the user said so"),
        ("msg-7", "importer", "bulk load"),
        ("msg-7", "", "the user said so"),
        ("", "", ""),
    ]
    assert current_provenance().message == ""


def test_the_tools_name_themselves(store: Store) -> None:
    save, patch, forget, _ = tools(store, ["user"])
    with session("s"), provenance(message="m-1"):
        saved = save({"name": "a", "content": "one two"}).record
        patched = patch({"name": "a", "old_text": "one", "new_text": "three"}).record
        forgot = forget({"name": "a"}).record
    assert saved is not None and patched is not None and forgot is not None
    assert [(c.tool, c.message, c.session) for c in (saved, patched, forgot)] == [
        ("memory_save", "m-1", "s"),
        ("memory_patch", "m-1", "s"),
        ("memory_forget", "m-1", "s"),
    ]
    assert [c.tool for c in store.journal()] == ["memory_save", "memory_patch", "memory_forget"]


def test_the_wire_line_without_provenance_is_unchanged() -> None:
    at = datetime(2026, 9, 20, 10, 0, 3, tzinfo=UTC)
    e = Entry("user", "a", "x", hash="sha256:ab", updated=at)
    plain = Change(seq=1, entry=e, session="s", at=at)
    assert encode_change(plain) == (
        '{"seq":1,"entry":{"scope":"user","name":"a","content":"x","hash":"sha256:ab",'
        '"updated":"2026-09-20T10:00:03Z"},"session":"s","at":"2026-09-20T10:00:03Z"}'
    )
    full = Change(seq=1, entry=e, session="s", at=at, message="m", tool="t", reason="r <b>")
    line = encode_change(full)
    assert line.endswith(
        '"at":"2026-09-20T10:00:03Z","message":"m","tool":"t","reason":"r \\u003cb\\u003e"}'
    )
    assert decode_change(line) == full
    assert decode_change(encode_change(plain)) == plain


def test_provenance_refuses_what_it_cannot_hold() -> None:
    with (
        pytest.raises(TypeError, match="provenance message must be a str"),
        provenance(message=7),  # type: ignore[arg-type]
    ):
        pass
    with pytest.raises(ValueError, match="spans lines"), provenance(reason="a\nb"):
        pass


def test_cli_journal_shows_provenance(tmp_path: Path) -> None:
    with (
        SqliteStore(tmp_path / "store" / "journal.sqlite3") as st_,
        session("sess-9"),
        provenance(message="msg-2", tool="memory_save", reason="asked"),
    ):
        st_.put(Entry("user", "a", "x"))
    r = CliRunner().invoke(main, ["journal", "--path", str(tmp_path / "store")])
    assert r.exit_code == 0, r.stderr
    assert "session sess-9  message msg-2  tool memory_save  reason 'asked'" in r.stdout
    r = CliRunner().invoke(main, ["journal", "--json", "--path", str(tmp_path / "store")])
    assert '"message":"msg-2","tool":"memory_save","reason":"asked"' in r.stdout


def test_sqlite_migration_and_session_index(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "s.sqlite3") as st_:
        with session("a"):
            st_.put(Entry("p", "x", "1"))
        assert st_.last_written_by("a", ["p", "q"]) == ({("p", "x"): st_.get("p", "x").hash}, ["q"])
    conn = sqlite3.connect(tmp_path / "s.sqlite3")
    try:
        steps = [r[0] for r in conn.execute("SELECT name FROM store_schema ORDER BY version")]
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT seq FROM memory_journal WHERE (CASE WHEN json_valid(line)"
            " THEN json_extract(line, '$.session') END) = 'a' AND scope = 'p'"
        ).fetchall()
    finally:
        conn.close()
    assert "m004_journal_session_index" in steps
    assert "memory_journal_session" in " ".join(str(r[-1]) for r in plan)


# -- forget_session -------------------------------------------------------------------------


@pytest.mark.slow
def test_forget_session_removes_only_that_sessions_entries(store: Store) -> None:
    with session("a"):
        store.put(Entry("user", "x", "from a"))
        store.put(Entry("team", "y", "from a"))
        store.put(Entry("user", "shared", "from a"))
    with session("b"):
        store.put(Entry("user", "z", "from b"))
        store.put(Entry("user", "shared", "b changed it"))
    with session("admin"):
        gone = forget_session(store, "a", ["user"])
    assert [(c.entry.key, c.entry.deleted, c.session, c.reason) for c in gone] == [
        ("user/x", True, "admin", "forget_session a")
    ]
    assert [e.name for e in store.list("user")] == ["shared", "z"]
    assert [e.name for e in store.list("team")] == ["y"]  # not an allowed scope
    assert forget_session(store, "a", ["user"]) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("scopes", "words"),
    [
        ([], "needs the scopes"),
        ("user", "as a list"),
        (["user", "nowhere"], 'scope "nowhere" has no journal record'),
        (["User"], "not kebab-case"),
    ],
)
def test_forget_session_refuses_empty_or_unknown_scopes(
    store: Store, scopes: list[str], words: str
) -> None:
    with session("a"):
        store.put(Entry("user", "x", "1"))
    with pytest.raises(InvalidEntryError, match=words):
        forget_session(store, "a", scopes)
    assert store.get("user", "x").content == "1"
    assert len(list(store.journal())) == 1


def test_forget_session_refuses_an_empty_session_id(store: Store) -> None:
    store.put(Entry("user", "x", "unattributed"))
    with pytest.raises(InvalidEntryError, match="empty session id"):
        forget_session(store, "", ["user"])
    assert store.get("user", "x").content == "unattributed"


SCOPES = ["s1", "s2", "s3", "s4"]
SESSIONS = ["a", "b", "c"]

writes = st.lists(
    st.tuples(
        st.sampled_from(SESSIONS),
        st.sampled_from(SCOPES),
        st.sampled_from(["n1", "n2", "n3"]),
        st.booleans(),  # True: forget (when live), False: put
        st.integers(0, 3),
    ),
    min_size=4,
    max_size=40,
)


def check_forget_session_leaves_others_alone(
    st_: Store, ops: list[tuple[str, str, str, bool, int]], target: str, allowed: list[str]
) -> tuple[list[tuple[str, str]], set[tuple[str, str]]]:
    """Run ``ops``, forget ``target``'s entries in ``allowed`` and check what went and what
    stayed; return the forgotten ``(scope, name)`` pairs and the live ones."""
    for scope in SCOPES:  # every scope known to the journal
        st_.put(Entry(scope, "seed", "seed"))
    for sess, scope, name, drop, v in ops:
        with session(sess):
            if drop:
                with contextlib.suppress(NotFoundError):
                    st_.forget(scope, name)
            else:
                st_.put(Entry(scope, name, f"{sess} wrote {v}"))
    before = {(s, e.name): e for s in SCOPES for e in st_.list(s)}
    last: dict[tuple[str, str], str] = {}
    for c in st_.journal():
        last[(c.entry.scope, c.entry.name)] = c.session
    expected = sorted(
        (k for k in before if k[0] in allowed and last[k] == target),
        key=lambda k: (allowed.index(k[0]), k[1]),
    )
    n = len(list(st_.journal()))
    with session("cleaner"):
        gone = forget_session(st_, target, allowed)
    assert [(c.entry.scope, c.entry.name) for c in gone] == expected
    assert all(c.entry.deleted and c.session == "cleaner" for c in gone)
    assert len(list(st_.journal())) == n + len(expected)  # one record per entry
    after = {(s, e.name): e for s in SCOPES for e in st_.list(s)}
    assert set(after) == set(before) - set(expected)
    for k, e in after.items():
        assert e.hash == before[k].hash and e.updated == before[k].updated
    return expected, set(after)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mem", "sqlite"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=writes,
    target=st.sampled_from(SESSIONS),
    allowed=st.lists(st.sampled_from(SCOPES), min_size=1, max_size=4, unique=True),
)
def test_forget_session_leaves_others_alone(
    kind: str, ops: list[tuple[str, str, str, bool, int]], target: str, allowed: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        st_ = open_kind(kind, Path(tmp))
        try:
            check_forget_session_leaves_others_alone(st_, ops, target, allowed)
        finally:
            st_.close()


def vector_ids(st_: ChromaStore, scope: str) -> set[str]:
    """The ids of the vectors Chroma holds for ``scope`` (read by id, not by a query)."""
    col = st_.client.get_collection(st_.collection_name(scope), embedding_function=None)
    return set(col.get(include=[])["ids"])


@pytest.mark.slow
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=writes,
    target=st.sampled_from(SESSIONS),
    allowed=st.lists(st.sampled_from(SCOPES), min_size=1, max_size=4, unique=True),
)
def test_forget_session_leaves_others_alone_in_chroma(
    ops: list[tuple[str, str, str, bool, int]], target: str, allowed: list[str]
) -> None:
    """The same property on a ChromaStore (hashing vectors, fewer examples: each opens a
    Chroma folder): the forgotten entries' vectors are gone, every other live entry's stays."""
    with tempfile.TemporaryDirectory() as tmp:
        st_ = open_kind("chroma", Path(tmp))
        assert isinstance(st_, ChromaStore)
        try:
            gone, live = check_forget_session_leaves_others_alone(st_, ops, target, allowed)
            held = {(s, i.split("/", 1)[1]) for s in SCOPES for i in vector_ids(st_, s)}
            assert held == live
            assert not held & set(gone)
        finally:
            st_.close()


@pytest.mark.slow
def test_forget_session_counts_each_entry_once_per_record(store: Store) -> None:
    with session("a"):
        for i in range(3):
            store.put(Entry("user", f"e{i}", "v1"))
            store.put(Entry("user", f"e{i}", "v2"))
    seqs = itertools.count(len(list(store.journal())) + 1)
    gone = forget_session(store, "a", ["user"])
    assert [c.seq for c in gone] == [next(seqs) for _ in range(3)]
    assert store.list("user") == []


def test_every_store_has_forget_session_as_a_method(store: Store) -> None:
    with session("a"):
        store.put(Entry("user", "x", "from a"))
        store.put(Entry("team", "y", "from a"))
    with session("b"):
        store.put(Entry("user", "z", "from b"))
    gone = store.forget_session("a", ["user"])  # type: ignore[attr-defined]
    assert [c.entry.key for c in gone] == ["user/x"]
    assert [e.name for e in store.list("user")] == ["z"]
    assert [e.name for e in store.list("team")] == ["y"]
    with pytest.raises(InvalidEntryError, match="needs the scopes"):
        store.forget_session("b", [])  # type: ignore[attr-defined]
