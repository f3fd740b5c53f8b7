"""SqliteStore beyond the conformance suite: several processes, a killed writer, a held lock,
all-or-nothing bulk import, the write hook, schema migrations, and derived state.

Every test uses a real sqlite file on tmp_path. The conformance suite itself runs against
SqliteStore from tests/test_conformance.py, at both entry bounds and with reopen.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentmemory import (
    AgentMemoryError,
    Change,
    ConflictError,
    Entry,
    EntryTooLargeError,
    InvalidEntryError,
    MemStore,
    NotFoundError,
    SqliteStore,
    StoreFormatError,
    StoreLockedError,
    content_hash,
)
from agentmemory.stores.sqlite.store import MIGRATIONS, Migration
from agentmemory.wire import decode_change, encode_change
from recallers import document_terms

WRITER_SCRIPT = Path(__file__).with_name("sqlite_writer_proc.py")
PROCESSES = 4
ITERATIONS = 25  # two writes each: 50 writes per process


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WRITER_SCRIPT), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(str(path), isolation_level=None)


# -- several processes ----------------------------------------------------------------------


@pytest.mark.slow
def test_four_processes_keep_seq_contiguous_and_lose_no_append(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    with SqliteStore(path) as st:
        st.put(Entry("user", "shared", "facts:"))
    procs = [_spawn("writer", str(path), str(w), str(ITERATIONS)) for w in range(PROCESSES)]
    try:
        for p in procs:
            assert p.stdout is not None
            line = p.stdout.readline()
            assert line.strip() == "ready", f"writer did not start: {line!r} {p.stderr}"
        for p in procs:  # all open: start them together
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            assert out.strip().startswith("done")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    with SqliteStore(path) as st:
        changes = list(st.journal())
        n = 1 + PROCESSES * ITERATIONS * 2
        assert [c.seq for c in changes] == list(range(1, n + 1))
        assert st.last_seq() == n
        shared = st.get("user", "shared")
        appended = shared.content.removeprefix("facts:").split()
        want = {f"w{w}-{i}" for w in range(PROCESSES) for i in range(ITERATIONS)}
        assert sorted(appended) == sorted(want), "an append was lost or doubled"
        for w in range(PROCESSES):
            mine = [c for c in changes if c.session == f"proc-{w}"]
            assert len(mine) == ITERATIONS * 2, f"process {w} has {len(mine)} records"
            for i in range(ITERATIONS):
                assert st.get("user", f"w{w}-n{i}").content == f"process {w} entry {i}"
        last: dict[str, str] = {}
        for c in changes:
            assert c.replaced == last.get(c.entry.key, ""), f"record {c.seq} breaks the chain"
            assert c.prev == c.replaced, f"record {c.seq} was not built on what it replaced"
            last[c.entry.key] = c.entry.hash
        assert last["user/shared"] == shared.hash
        # each append record adds exactly one fact to the content before it
        shared_records = [c for c in changes if c.entry.key == "user/shared"]
        assert len(shared_records) == 1 + PROCESSES * ITERATIONS
        for before, after in itertools.pairwise(shared_records):
            assert after.entry.content.startswith(before.entry.content + " ")


# -- a killed writer ------------------------------------------------------------------------


@pytest.mark.slow
def test_writer_killed_mid_stream_loses_no_acknowledged_write(tmp_path: Path) -> None:
    path = tmp_path / "killed.sqlite3"
    SqliteStore(path).close()
    proc = _spawn("stream", str(path))
    acked: list[tuple[int, int]] = []
    try:
        assert proc.stdout is not None
        while len(acked) < 40:
            line = proc.stdout.readline()
            assert line, f"the writer stopped early: {proc.stderr.read() if proc.stderr else ''}"
            seq_text, i_text = line.split()
            acked.append((int(seq_text), int(i_text)))
        os.kill(proc.pid, signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    acked += [(int(s), int(i)) for s, i in (ln.split() for ln in rest.splitlines() if ln.strip())]

    conn = _raw(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = conn.execute("SELECT seq, line FROM memory_journal ORDER BY seq").fetchall()
    conn.close()
    for seq, line in rows:  # no torn record: every line decodes to its own seq
        assert decode_change(line).seq == seq
    with SqliteStore(path) as st:
        changes = list(st.journal())
        assert [c.seq for c in changes] == list(range(1, len(changes) + 1))
        by_seq = {c.seq: c for c in changes}
        for ack_seq, ack_i in acked:
            rec = by_seq.get(ack_seq)
            assert rec is not None, f"acknowledged write {ack_seq} is missing"
            assert rec.entry.name == f"k{ack_i}"
            assert st.get("user", f"k{ack_i}").content.startswith(f"value {ack_i} ")
        assert st.put(Entry("user", "after-crash", "still writable")).seq == len(changes) + 1
        assert st.get("user", "after-crash").content == "still writable"


# -- a held lock ----------------------------------------------------------------------------


def test_second_writer_fails_with_the_file_named_when_the_lock_is_held(tmp_path: Path) -> None:
    path = tmp_path / "held.sqlite3"
    st = SqliteStore(path, busy_timeout_s=0.1)  # four writes below each wait it out
    st.put(Entry("user", "before", "written before the lock"))
    holder = _raw(path)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.raises(StoreLockedError) as err:
            st.put(Entry("user", "blocked", "never written"))
        assert time.monotonic() - started < 30, "the writer waited far past its busy timeout"
        assert str(path) in str(err.value) and err.value.path == str(path)
        assert "busy_timeout_s" in str(err.value), "the message says what to do"
        with pytest.raises(StoreLockedError):
            st.forget("user", "before")
        with pytest.raises(StoreLockedError):
            st.put_many([Entry("user", "bulk", "never written")])
        with pytest.raises(StoreLockedError):
            st.set_state("cursor", "1")
        # readers go on while another process writes
        assert st.get("user", "before").content == "written before the lock"
        assert st.last_seq() == 1
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert st.put(Entry("user", "after", "written after the lock")).seq == 2
    assert [e.name for e in st.list("user")] == ["after", "before"]
    assert st.get_state("cursor") is None
    st.close()


def test_opening_a_new_file_held_by_another_writer_fails_with_the_file_named(
    tmp_path: Path,
) -> None:
    path = tmp_path / "fresh.sqlite3"
    holder = _raw(path)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreLockedError) as err:
            SqliteStore(path, busy_timeout_s=0.3)
        assert str(path) in str(err.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with SqliteStore(path) as st:
        assert st.put(Entry("user", "a", "x")).seq == 1


# -- refused writes leave nothing -----------------------------------------------------------


REFUSED: list[tuple[str, Entry, type[Exception]]] = [
    ("scope", Entry("User", "a", "x"), InvalidEntryError),
    ("name", Entry("user", "a_b", "x"), InvalidEntryError),
    ("empty content", Entry("user", "a", ""), InvalidEntryError),
    ("content not unicode", Entry("user", "a", "x\udcff"), InvalidEntryError),
    ("content not text", Entry("user", "a", b"x"), InvalidEntryError),  # type: ignore[arg-type]
    ("meta key", Entry("user", "a", "x", {"k_1": "v"}), InvalidEntryError),
    ("reserved key updated", Entry("user", "a", "x", {"updated": "v"}), InvalidEntryError),
    ("meta value with CR", Entry("user", "a", "x", {"k": "a\rb"}), InvalidEntryError),
    ("meta value padded", Entry("user", "a", "x", {"k": "v\t"}), InvalidEntryError),
    ("meta value not unicode", Entry("user", "a", "x", {"k": "\ud800"}), InvalidEntryError),
    ("meta value not text", Entry("user", "a", "x", {"k": 1}), InvalidEntryError),  # type: ignore[dict-item]
    ("meta not a mapping", Entry("user", "a", "x", ["k"]), InvalidEntryError),  # type: ignore[arg-type]
    ("meta over 1024 bytes", Entry("user", "a", "x", {"k": "v" * 1024}), InvalidEntryError),
    ("content over the bound", Entry("user", "a", "é" * 129), EntryTooLargeError),
]


@pytest.mark.parametrize(("label", "entry", "error"), REFUSED, ids=[r[0] for r in REFUSED])
def test_every_refused_entry_leaves_no_record(
    tmp_path: Path, label: str, entry: Entry, error: type[Exception]
) -> None:
    with SqliteStore(tmp_path / "refused.sqlite3", max_entry_bytes=256) as st:
        with pytest.raises(error):
            st.put(entry)
        with pytest.raises(error):
            st.put(entry, if_hash="")
        with pytest.raises(error):
            st.put_many([Entry("user", "fine", "valid"), entry])
        assert st.last_seq() == 0 and list(st.journal()) == []
        assert st.list("user") == [] and st.list("User") == []


def test_put_many_is_one_all_or_nothing_transaction(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "bulk.sqlite3", max_entry_bytes=256) as st:
        st.put(Entry("user", "small", "ten bytes!"))
        with pytest.raises(EntryTooLargeError) as err:
            st.put_many([Entry("user", "new", "fine"), Entry("user", "small", "y" * 300)])
        assert err.value.stored == 10, "the size error names what is stored"
        with pytest.raises(NotFoundError):
            st.get("user", "new")
        assert st.last_seq() == 1

        assert st.put_many([]) == []
        batch = [
            Entry("user", "a", "first a", {"description": "one"}),
            Entry("project", "b", "b"),
            Entry("user", "a", "second a"),
        ]
        got = st.put_many(batch, session="import-1")
        assert [c.seq for c in got] == [2, 3, 4]
        assert got == list(st.journal(1)), "the returned records are the journal's"
        assert [c.session for c in got] == ["import-1"] * 3
        assert (got[0].prev, got[0].replaced) == ("", "")
        assert got[2].replaced == got[2].prev == content_hash("first a")
        assert st.get("user", "a").content == "second a" and st.get("user", "a").meta is None
        assert got[0].at == got[1].at == got[2].at


# -- the write hook and extra migrations ----------------------------------------------------


def _m002_derived(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE derived (seq INTEGER PRIMARY KEY, key TEXT, deleted INTEGER)")


class DerivedStore(SqliteStore):
    """Keeps a derived table in step with every write, the way a lexical index would."""

    _migrations = (*MIGRATIONS, Migration(99, "m099_derived", _m002_derived, {"derived": ()}))
    refuse: str = ""

    def _apply_in_txn(self, conn: sqlite3.Connection, change: Change) -> None:
        row = conn.execute(
            "SELECT count(*) FROM memory_entries WHERE scope = ? AND name = ?",
            (change.entry.scope, change.entry.name),
        ).fetchone()
        assert row[0] == (0 if change.entry.deleted else 1), "the row is written first"
        if change.entry.name == self.refuse:
            raise RuntimeError(f"derived index refuses {change.entry.key}")
        conn.execute(
            "INSERT INTO derived VALUES (?, ?, ?)",
            (change.seq, change.entry.key, int(change.entry.deleted)),
        )


def _derived(path: Path) -> list[tuple[int, str, int]]:
    conn = _raw(path)
    try:
        return [tuple(r) for r in conn.execute("SELECT * FROM derived ORDER BY seq")]
    finally:
        conn.close()


def test_apply_in_txn_sees_every_write_and_a_failure_rolls_the_write_back(
    tmp_path: Path,
) -> None:
    path = tmp_path / "derived.sqlite3"
    SqliteStore(path).close()  # made by the base store; the subclass adds its migration
    st = DerivedStore(path)
    st.put(Entry("user", "a", "x"))
    st.put_many([Entry("user", "b", "y"), Entry("user", "c", "z")])
    st.forget("user", "a")
    assert _derived(path) == [
        (1, "user/a", 0),
        (2, "user/b", 0),
        (3, "user/c", 0),
        (4, "user/a", 1),
    ]

    st.refuse = "bad"
    with pytest.raises(RuntimeError):
        st.put(Entry("user", "bad", "x"))
    with pytest.raises(RuntimeError):
        st.put_many([Entry("user", "d", "fine"), Entry("user", "bad", "x")])
    st.refuse = "b"
    with pytest.raises(RuntimeError):
        st.forget("user", "b")
    assert st.last_seq() == 4 and len(_derived(path)) == 4
    assert [e.name for e in st.list("user")] == ["b", "c"]
    st.close()

    conn = _raw(path)
    names = [r[0] for r in conn.execute("SELECT name FROM store_schema ORDER BY version")]
    conn.close()
    assert names == [
        "m001_initial",
        "m002_lexical_index",
        "m003_supersedes_index",
        "m004_journal_session_index",
        "m005_store_id",
        "m006_lexical_doc_freqs",
        "m099_derived",
    ]
    with pytest.raises(StoreFormatError) as err:
        SqliteStore(path)  # code that does not know m099 must not write past the derived table
    assert "m099_derived" in str(err.value) and "upgrade" in str(err.value)


# -- migrations -----------------------------------------------------------------------------

# The m001 schema exactly as the first release wrote it. Do not edit: a database made by that
# release must keep opening under the current code.
M001_DDL = """
CREATE TABLE memory_entries ( scope TEXT NOT NULL, name TEXT NOT NULL, content TEXT NOT NULL,
  meta TEXT NOT NULL, hash TEXT NOT NULL, updated TEXT NOT NULL, PRIMARY KEY (scope, name)) STRICT;
CREATE TABLE memory_journal ( seq INTEGER PRIMARY KEY, scope TEXT NOT NULL, name TEXT NOT NULL,
  line TEXT NOT NULL) STRICT;
CREATE INDEX memory_journal_entry ON memory_journal (scope, name, seq);
CREATE TABLE store_state (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE store_schema ( version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied TEXT NOT NULL)
  STRICT;
INSERT INTO store_schema VALUES (1, 'm001_initial', '2026-01-02T03:04:05Z');
"""
M001_LINE = (
    '{"seq":1,"entry":{"scope":"user","name":"style","content":"Short \\u003canswers\\u003e.",'
    '"meta":{"description":"How to answer"},'
    '"hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000",'
    '"updated":"2026-01-02T03:04:05.5Z"},"session":"s1","at":"2026-01-02T03:04:05.5Z"}'
)


def _schema_names(path: Path) -> list[str]:
    conn = _raw(path)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM store_schema ORDER BY version")]
    finally:
        conn.close()


def test_a_database_made_by_m001_opens_under_the_current_code(tmp_path: Path) -> None:
    path = tmp_path / "m001.sqlite3"
    conn = _raw(path)
    conn.executescript(M001_DDL)
    hash_ = content_hash("Short <answers>.")
    conn.execute(
        "INSERT INTO memory_entries VALUES (?, ?, ?, ?, ?, ?)",
        (
            "user",
            "style",
            "Short <answers>.",
            '{"description":"How to answer"}',
            hash_,
            "2026-01-02T03:04:05.5Z",
        ),
    )
    conn.execute(
        "INSERT INTO memory_journal VALUES (1, 'user', 'style', ?)",
        (M001_LINE.replace("0" * 64, hash_.removeprefix("sha256:")),),
    )
    conn.execute("INSERT INTO store_state VALUES ('cursor', '1')")
    conn.close()

    with SqliteStore(path) as st:
        got = st.get("user", "style")
        assert (got.content, got.meta, got.hash) == (
            "Short <answers>.",
            {"description": "How to answer"},
            hash_,
        )
        assert got.updated == datetime(2026, 1, 2, 3, 4, 5, 500000, tzinfo=UTC)
        (rec,) = list(st.journal())
        assert (rec.seq, rec.session, rec.entry.content) == (1, "s1", "Short <answers>.")
        assert st.get_state("cursor") == "1"
        assert st.put(Entry("user", "style", "Long."), if_hash=hash_).seq == 2
    assert _schema_names(path) == [m.name for m in MIGRATIONS]


def test_a_store_made_before_the_document_frequency_table_gets_it_filled(tmp_path: Path) -> None:
    """A file as the code before m006_lexical_doc_freqs left it (its lexical index written,
    replaced and forgotten into, no memory_lexical_df): opening adds the table, holding how
    many live entries hold each term, and later writes keep it so."""
    path = tmp_path / "m005.sqlite3"
    with SqliteStore(path) as st:
        st.put_many([Entry("user", f"n-{i}", f"zebra note {i} crossing{i % 3}") for i in range(40)])
        st.put(Entry("user", "n-1", "only a lion now"))
        st.forget("user", "n-2")
    conn = _raw(path)
    conn.executescript("DROP TABLE memory_lexical_df; DELETE FROM store_schema WHERE version = 6;")
    conn.close()
    assert _schema_names(path)[-1] == "m005_store_id"

    def table() -> dict[str, int]:
        conn = _raw(path)
        try:
            return dict(conn.execute("SELECT term, docs FROM memory_lexical_df").fetchall())
        finally:
            conn.close()

    with SqliteStore(path) as st:
        assert _schema_names(path) == [m.name for m in MIGRATIONS]
        live = st.list("user")
        want = Counter(t for e in live for t in set(document_terms(e)))
        assert len(live) == 39 and table() == dict(want)
        assert (want["zebra"], want["lion"], want["crossing0"]) == (38, 1, 14)
        st.put(Entry("user", "n-3", "a lion again"))
        got = table()
        assert (got["zebra"], got["lion"]) == (37, 2)
        assert st.check_lexical() == []


def test_a_database_made_by_the_go_module_is_adopted(tmp_path: Path) -> None:
    path = tmp_path / "go.sqlite3"
    conn = _raw(path)
    conn.executescript(  # docs/storage.md#tables, without the FTS table
        "CREATE TABLE memory_entries(scope TEXT, name TEXT, content TEXT, meta TEXT, hash TEXT,"
        " updated TEXT, PRIMARY KEY(scope,name)) STRICT;"
        "CREATE TABLE memory_journal(seq INTEGER PRIMARY KEY, scope TEXT, name TEXT, line TEXT)"
        " STRICT;"
        "CREATE INDEX memory_journal_entry ON memory_journal(scope, name, seq);"
    )
    conn.execute(
        "INSERT INTO memory_entries VALUES ('user', 'tz', 'UTC', '{}', ?, '2026-01-02T03:04:05Z')",
        (content_hash("UTC"),),
    )
    conn.close()
    with SqliteStore(path) as st:
        got = st.get("user", "tz")
        assert got.content == "UTC" and got.meta is None
        assert st.put(Entry("user", "tz", "Europe/London")).replaced == content_hash("UTC")
    assert _schema_names(path) == [m.name for m in MIGRATIONS]


def test_a_foreign_table_under_our_name_is_refused_naming_it_and_its_columns(
    tmp_path: Path,
) -> None:
    path = tmp_path / "foreign.sqlite3"
    conn = _raw(path)
    conn.execute("CREATE TABLE memory_entries (id INTEGER, body TEXT)")
    conn.close()
    with pytest.raises(StoreFormatError) as err:
        SqliteStore(path)
    assert "memory_entries has columns (id, body)" in str(err.value)
    assert str(path) in str(err.value)
    conn = _raw(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert tables == {"memory_entries"}, "a refused open must not change the file"


def test_a_newer_schema_and_a_file_that_is_not_a_database_are_refused(tmp_path: Path) -> None:
    newer = tmp_path / "newer.sqlite3"
    SqliteStore(newer).close()
    conn = _raw(newer)
    conn.execute("INSERT INTO store_schema VALUES (500, 'm500_future', '2030-01-01T00:00:00Z')")
    conn.close()
    with pytest.raises(StoreFormatError, match="m500_future"):
        SqliteStore(newer)

    junk = tmp_path / "notes.txt"
    junk.write_bytes(b"these are notes, not a database\n" * 100)
    with pytest.raises(StoreFormatError) as err:
        SqliteStore(junk)
    assert str(junk) in str(err.value)


# -- the file's contents --------------------------------------------------------------------


def test_the_file_holds_go_lines_and_json_meta_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "layout.sqlite3"
    with SqliteStore(path) as st:
        a = st.put(Entry("user", "a", "x <y> & z", {"description": "One"}), session="s")
        b = st.put(Entry("user", "b", "plain"))
        conn = _raw(path)
        lines = [r[0] for r in conn.execute("SELECT line FROM memory_journal ORDER BY seq")]
        metas = dict(conn.execute("SELECT name, meta FROM memory_entries").fetchall())
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        conn.close()
    assert lines == [encode_change(a), encode_change(b)]
    assert "\\u003cy\\u003e \\u0026 z" in lines[0]
    assert json.loads(metas["a"]) == {"description": "One"} and metas["b"] == "{}"
    assert mode == "wal"


def test_at_never_goes_back_when_the_clock_does(tmp_path: Path) -> None:
    times = iter(
        [
            datetime(2026, 5, 1, 12, 0, 0, 250000, tzinfo=UTC),
            datetime(2026, 5, 1, 11, 0, 0, tzinfo=UTC),
            datetime(2026, 5, 1, 13, 0, 0, tzinfo=UTC),
        ]
    )
    with SqliteStore(tmp_path / "clock.sqlite3", clock=lambda: next(times)) as st:
        first = st.put(Entry("user", "a", "1"))
        second = st.put(Entry("user", "b", "2"))
        third = st.put(Entry("user", "a", "3"))
        assert second.at == first.at == datetime(2026, 5, 1, 12, 0, 0, 250000, tzinfo=UTC)
        assert st.get("user", "b").updated == second.at
        assert third.at == datetime(2026, 5, 1, 13, 0, 0, tzinfo=UTC)
        assert [c.at for c in st.journal()] == [first.at, second.at, third.at]


# -- the journal reader ---------------------------------------------------------------------


class SmallPages(SqliteStore):
    _journal_page_rows = 3


def test_journal_reads_in_pages_resumes_and_sees_later_appends(tmp_path: Path) -> None:
    path = tmp_path / "pages.sqlite3"
    with SmallPages(path) as st, SqliteStore(path, busy_timeout_s=0.5) as other:
        st.put_many([Entry("user", f"e{i}", f"{i}") for i in range(7)])
        assert [c.seq for c in st.journal()] == list(range(1, 8))
        assert [c.seq for c in st.journal(5)] == [6, 7]
        it = st.journal(0)
        assert next(it).seq == 1
        # no transaction is held across yields: another handle writes while we iterate
        assert other.put(Entry("user", "late", "appended meanwhile")).seq == 8
        assert [c.seq for c in it] == list(range(2, 9))


def test_a_journal_line_that_does_not_decode_is_reported_with_its_seq(tmp_path: Path) -> None:
    path = tmp_path / "torn.sqlite3"
    with SqliteStore(path) as st:
        st.put(Entry("user", "a", "1"))
        st.put(Entry("user", "b", "2"))
        conn = _raw(path)
        conn.execute('UPDATE memory_journal SET line = \'{"seq":2,"ent\' WHERE seq = 2')
        conn.close()
        it = st.journal()
        assert next(it).seq == 1
        with pytest.raises(StoreFormatError, match="journal record 2"):
            next(it)


# -- the live set: scopes, live_many, live_count, iter_live, scopes_written_by ----------------


def test_the_live_set_reads_agree_with_what_was_written_and_forgotten(tmp_path: Path) -> None:
    path = tmp_path / "live.sqlite3"
    with SqliteStore(path) as st:
        assert st.scopes() == [] and st.live_count() == 0 and list(st.iter_live(2)) == []
        st.put_many([Entry("user", n, f"u {n}", {"k": n}) for n in ("b", "a", "c")])
        st.put(Entry("project", "x", "project x"))
        st.put(Entry("gone", "y", "forgotten soon"))
        st.forget("gone", "y")
        st.put(Entry("user", "a", "a again"))
        # a scope whose only entry was forgotten holds no live entry
        assert st.scopes() == ["project", "user"]
        assert st.live_count() == 4
        got = st.live_many(
            [
                ("user", "a"),
                ("user", "a"),
                ("gone", "y"),
                ("user", "zz"),
                ("project", "x"),
                ("nope", "x"),
            ]
        )
        assert sorted(got) == [("project", "x"), ("user", "a")]
        assert got[("user", "a")] == st.get("user", "a")
        assert got[("user", "a")].content == "a again"
        pages = list(st.iter_live(3))
        assert [[e.key for e in p] for p in pages] == [
            ["project/x", "user/a", "user/b"],
            ["user/c"],
        ]
        assert pages[0][2].meta == {"k": "b"} and pages[0][2].hash == content_hash("u b")
        # seq: 1-3 user/b,a,c; 4 project/x; 5 gone/y; 6 its tombstone; 7 user/a again
        assert st.scopes_written_by(3, ["user", "project", "gone"]) == ["user"]
        assert st.scopes_written_by(4, ["project", "user"]) == ["project", "user"]
        assert st.scopes_written_by(0, ["user", "project"]) == []
        assert st.scopes_written_by(100, ["gone", "nope"]) == []
        for bad in (0, -1, True):
            with pytest.raises(ValueError, match="batch"):
                st.iter_live(bad)
    with SqliteStore(path) as again:  # read back from the file by a new handle
        assert again.scopes() == ["project", "user"] and again.live_count() == 4


def test_live_many_reads_more_keys_than_one_query_binds(tmp_path: Path) -> None:
    from agentmemory.stores.sqlite.store import LIVE_PAGE_KEYS

    count = LIVE_PAGE_KEYS * 2 + 7
    with SqliteStore(tmp_path / "many.sqlite3") as st:
        st.put_many([Entry("bulk", f"e{i}", f"entry {i}") for i in range(count)])
        got = st.live_many(("bulk", f"e{i}") for i in range(count + 3))
        assert len(got) == count
        assert got[("bulk", f"e{count - 1}")].content == f"entry {count - 1}"
        assert sum(len(p) for p in st.iter_live()) == count


# -- state, lifetime ------------------------------------------------------------------------


def test_state_is_kept_beside_the_journal_and_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite3"
    with SqliteStore(path) as st:
        assert st.get_state("vector-cursor") is None
        st.set_state("vector-cursor", "0")
        st.set_state("vector-cursor", "12")
        st.set_state("embedder", "hashing:64")
        assert st.last_seq() == 0, "state writes no journal record"
        with pytest.raises(TypeError):
            st.set_state("vector-cursor", 13)  # type: ignore[arg-type]
    with SqliteStore(path) as st:
        assert st.get_state("vector-cursor") == "12"
        assert st.get_state("embedder") == "hashing:64"


def test_deferred_state_rides_the_next_write_and_close_writes_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "deferred.sqlite3"
    with SqliteStore(path) as st, SqliteStore(path) as other:
        st.set_state("vector-cursor", "3", deferred=True)
        assert st.get_state("vector-cursor") == "3"
        assert other.get_state("vector-cursor") is None, "not written yet"
        with pytest.raises(ConflictError):
            st.put(Entry("user", "a", "refused"), if_hash="sha256:" + "0" * 64)
        assert other.get_state("vector-cursor") is None, "a refused write rolls it back too"
        st.put(Entry("user", "a", "written"))
        assert other.get_state("vector-cursor") == "3"
        st.set_state("vector-cursor", "4", deferred=True)
        st.close()
        assert other.get_state("vector-cursor") == "4"
        with pytest.raises(AgentMemoryError, match="closed"):
            st.set_state("vector-cursor", "5", deferred=True)


def test_close_is_idempotent_and_a_closed_store_says_so(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "dir" / "closed.sqlite3"
    st = SqliteStore(path)
    assert st.path == path and path.exists(), "the parent folder is created"
    st.put(Entry("user", "a", "x"))
    st.close()
    st.close()
    with pytest.raises(AgentMemoryError, match="closed"):
        st.get("user", "a")
    with pytest.raises(AgentMemoryError, match="closed"):
        st.put(Entry("user", "b", "y"))
    with SqliteStore(path) as again:
        assert again.get("user", "a").content == "x"


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [({"max_entry_bytes": 0}, "max_entry_bytes"), ({"busy_timeout_s": -1.0}, "busy_timeout_s")],
)
def test_bad_options_are_refused(tmp_path: Path, kwargs: dict[str, float], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        SqliteStore(tmp_path / "opts.sqlite3", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", [":memory:", ""])
def test_a_path_that_is_not_a_file_is_refused_with_what_to_use(path: str) -> None:
    with pytest.raises(ValueError, match=r"give a file path .* or use MemStore"):
        SqliteStore(path)


@pytest.mark.parametrize("kind", ["mem", "sqlite"])
def test_search_refuses_a_bad_scope_before_reading_any(kind: str, tmp_path: Path) -> None:
    with MemStore() if kind == "mem" else SqliteStore(tmp_path / "s.sqlite3") as st:
        st.put(Entry("user", "editor", "Uses Neovim."))
        with pytest.raises(InvalidEntryError, match='scope "User_1" is not kebab-case'):
            st.search(["user", "User_1"], "neovim")
        assert [e.key for e in st.search(["user"], "NEOVIM", 1)] == ["user/editor"]


def test_a_folder_given_as_the_file_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(StoreFormatError, match="give the path of a database file") as err:
        SqliteStore(tmp_path)
    assert err.value.path == str(tmp_path) and str(tmp_path) in str(err.value)
