"""PostgresStore against a real PostgreSQL (a throwaway cluster per test session, one database per
test; tests/pg_cluster.py): BM25 in SQL against rank-bm25, several processes sharing nothing but the DSN, a writer killed inside its transaction, and the
errors (a DSN that cannot connect, a newer schema, a connection dropped mid-write)."""

from __future__ import annotations

import itertools
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pg_cluster import Cluster
from test_bm25 import (
    assert_agrees,
    locomo_corpus,
    reference_scores,
    synthetic_corpus,
    synthetic_queries,
)

from agentmemory import (
    AgentMemoryError,
    Change,
    Entry,
    EntryTooLargeError,
    StoreFormatError,
    StoreLockedError,
    StoreUnavailableError,
    lost_updates,
)
from agentmemory.errors import RecallModeError
from agentmemory.stores.postgres.lexicon import PgBM25Index
from agentmemory.stores.postgres.store import PG_MIGRATIONS, PostgresStore, dsn_where
from recallers import DEFAULT_TOKENIZER, MAX_QUERY_BYTES, MAX_QUERY_TERMS, Tokenizer

pytestmark = pytest.mark.slow

WRITER_SCRIPT = Path(__file__).with_name("pg_writer_proc.py")
PROCESSES = 4
ITERATIONS = 25  # two writes each: 50 writes per process, half of them conditional appends
SECRET = "s3cret-Pa55word"


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WRITER_SCRIPT), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PostgresStore]:
    with PostgresStore(pg_dsn) as st:
        yield st


# -- the contract -------------------------------------------------------------------------------


# the conformance suite runs over PostgresStore in tests/test_conformance.py


def test_content_round_trips_exactly_and_the_journal_line_is_sqlites(
    store: PostgresStore, tmp_path: Path
) -> None:
    from agentmemory import SqliteStore

    odd = "NUL \x00 inside, emoji 🧠, CJK 日本語, <b>&amp;</b>\r\n"
    rec = store.put(Entry("user", "odd", odd, {"description": "a \x01 control"}))
    assert store.get("user", "odd").content == odd
    assert store.get("user", "odd").meta == {"description": "a \x01 control"}
    with psycopg.connect(store.dsn) as conn:
        line = conn.execute("SELECT line FROM memory_journal WHERE seq = 1").fetchone()
    assert line is not None
    from agentmemory.wire import encode_change

    assert line[0] == encode_change(rec)
    with SqliteStore(tmp_path / "s.sqlite3", clock=lambda: rec.at) as sq:
        sq.put(Entry("user", "odd", odd, {"description": "a \x01 control"}))
        (sq_line,) = sq._reader.execute("SELECT line FROM memory_journal").fetchone()
    assert sq_line == line[0], "the journal line differs from SqliteStore's"


def test_put_many_is_one_all_or_nothing_transaction(store: PostgresStore) -> None:
    store.put(Entry("user", "small", "ten bytes!"))
    batch = [Entry("user", f"b{i}", f"bulk {i}") for i in range(20)]
    with pytest.raises(EntryTooLargeError):
        store.put_many([*batch, Entry("user", "small", "x" * 5000)])
    assert [c.seq for c in store.journal()] == [1]
    assert [e.name for e in store.list("user")] == ["small"]
    assert store.search_text("bulk", scopes=["user"], limit=5) == []
    changes = store.put_many([*batch, Entry("user", "b3", "bulk again")])
    assert [c.seq for c in changes] == list(range(2, 23))
    assert store.get("user", "b3").content == "bulk again"
    assert changes[-1].replaced == changes[3].entry.hash  # the second b3 replaced the first
    assert store.last_seq() == 22


def test_state_is_kept_beside_the_journal_and_survives_reopening(
    pg_dsn: str, pg_cluster: Cluster
) -> None:
    with PostgresStore(pg_dsn) as st:
        assert st.get_state("index.cursor") is None
        st.set_state("index.cursor", "7")
        st.set_state("index.cursor", "9")
        with pytest.raises(TypeError):
            st.set_state("k", 3)  # type: ignore[arg-type]
    with PostgresStore(pg_dsn) as st:
        assert st.get_state("index.cursor") == "9"
        assert st.last_seq() == 0
        first_id = st.store_id
    with PostgresStore(pg_dsn) as again, PostgresStore(pg_cluster.create_database()) as other:
        assert again.store_id == first_id != other.store_id
        assert len(first_id) == 36 and first_id.count("-") == 4  # a UUID


# -- BM25 in SQL --------------------------------------------------------------------------------


@pytest.mark.parametrize("corpus", ["synthetic", "locomo"])
def test_ranking_agrees_with_rank_bm25(corpus: str, store: PostgresStore) -> None:
    if corpus == "synthetic":
        entries, queries = synthetic_corpus(300), synthetic_queries()
    else:
        entries, queries = locomo_corpus()
    store.put_many(entries)
    scope = entries[0].scope
    checked = 0
    for q in queries:
        ref = reference_scores(entries, q, DEFAULT_TOKENIZER)
        for limit in (10, len(entries)):
            found = store.search_text(q, scopes=[scope], limit=limit)
            assert_agrees([(e.key, s) for e, s in found], ref, limit)
            checked += 1
        if any(s > 1e-4 for s in ref.values()):
            hits = store.recall(q, scopes=[scope], limit=5, mode="bm25")
            assert hits and hits[0].legs["bm25"].rank == 1
            assert hits[0].score == pytest.approx(max(ref.values()), abs=1e-4)
    assert checked >= 2 * 40


def test_statistics_are_those_of_the_requested_scopes(store: PostgresStore) -> None:
    a = synthetic_corpus(120, seed=1)
    b = [Entry("other", e.name, e.content) for e in synthetic_corpus(80, seed=2)]
    store.put_many(a + b)
    for q in synthetic_queries()[:15]:
        found = store.search_text(q, scopes=["corpus"], limit=10)
        assert_agrees([(e.key, s) for e, s in found], reference_scores(a, q, DEFAULT_TOKENIZER), 10)
        found = store.search_text(q, scopes=["corpus", "other"], limit=10)
        ref_ab = reference_scores(a + b, q, DEFAULT_TOKENIZER)
        assert_agrees([(e.key, s) for e, s in found], ref_ab, 10)


def test_the_index_follows_puts_and_forgets(store: PostgresStore) -> None:
    rng = random.Random(3)
    pool = synthetic_corpus(150, seed=5)
    live: dict[str, Entry] = {}
    for step in range(300):
        e = rng.choice(pool)
        if e.name in live and rng.random() < 0.3:
            store.forget(e.scope, e.name)
            del live[e.name]
        else:
            new = Entry(e.scope, e.name, f"{e.content} w{step % 50}")
            store.put(new)
            live[e.name] = new
    final = sorted(live.values(), key=lambda e: e.name)
    for q in synthetic_queries()[:20]:
        ref = reference_scores(final, q, DEFAULT_TOKENIZER)
        found = store.search_text(q, scopes=["corpus"], limit=len(final))
        assert_agrees([(e.key, s) for e, s in found], ref, len(final))
        assert {e.name for e, _ in found} <= set(live)


def _capped_entries() -> list[Entry]:
    """The 30 entries of tests/stores/test_bm25.py's ``capped_stores``."""
    entries = [Entry("q", f"e-{i:02d}", f"filler{i} text number {i}") for i in range(29)]
    return [*entries, Entry("q", "target", "the zebra crossing")]


def test_a_query_reads_its_first_terms_and_bytes_only(store: PostgresStore) -> None:
    """The lexical query cap of docs/recall.md#the-lexical-query holds in SQL as in the other
    stores (tests/stores/test_bm25.py's test of the same name)."""
    store.put_many(_capped_entries())
    pad = "unmatched " * (MAX_QUERY_TERMS - 1)  # each a term found nowhere
    # the 64th term is read, the 65th is not
    assert [e.name for e, _ in store.search_text(pad + "zebra", scopes=["q"], limit=5)] == [
        "target"
    ]
    assert store.search_text(pad + "unmatched zebra", scopes=["q"], limit=5) == []
    # a term inside the first MAX_QUERY_BYTES bytes is read, one after them is not
    spaces = " " * (MAX_QUERY_BYTES - len("zebra"))
    assert store.search_text(spaces + "zebra", scopes=["q"], limit=5)
    assert store.search_text(spaces + " zebra", scopes=["q"], limit=5) == []


def test_a_huge_repeated_query_is_scored_as_its_capped_terms(store: PostgresStore) -> None:
    """A 1 MB query of one repeated word is sent as one term of weight 64 (its first 64 terms):
    same ranking and scores as its capped form and as rank-bm25's for 64 copies, and it is sent
    to the server as one term, not 200,000 (the statement's parameters stay small)."""
    entries = _capped_entries()
    store.put_many(entries)
    huge = "zebra " * 200_000  # 1.2 MB
    assert len(huge.encode()) > 1_000_000
    ref = reference_scores(entries, "zebra " * MAX_QUERY_TERMS, DEFAULT_TOKENIZER)
    found = store.search_text(huge, scopes=["q"], limit=5)
    capped = store.search_text("zebra " * MAX_QUERY_TERMS, scopes=["q"], limit=5)
    assert [(e.key, s) for e, s in found] == [(e.key, s) for e, s in capped]
    assert [e.key for e, _ in found] == ["q/target"]
    assert found[0][1] == pytest.approx(ref["q/target"], abs=1e-4)
    single = store.search_text("zebra", scopes=["q"], limit=1)[0][1]
    assert found[0][1] == pytest.approx(MAX_QUERY_TERMS * single)
    hits = store.recall(huge, scopes=["q"], limit=5, mode="bm25")
    assert [h.entry.key for h in hits] == ["q/target"]
    index = PgBM25Index()
    assert index.query_params(index.query_terms(huge)) == {
        "terms": ["zebra"],
        "weights": [MAX_QUERY_TERMS],
    }


def test_recall_is_bm25_alone_and_refuses_vector_modes(store: PostgresStore) -> None:
    store.put(Entry("user", "editor", "Prefers dark mode in Vim."))
    store.put(Entry("user", "build", "Run make check before a commit."))
    for mode in ("auto", "bm25"):
        hits = store.recall("which editor theme, dark or light?", scopes=["user"], mode=mode)
        assert [h.entry.name for h in hits] == ["editor"]
        assert set(hits[0].legs) == {"bm25"}
    for mode in ("vector", "hybrid"):
        with pytest.raises(RecallModeError, match="PostgresStore"):
            store.recall("dark", scopes=["user"], mode=mode)


def test_a_tokenizer_change_rebuilds_the_index(pg_dsn: str) -> None:
    unstemmed = Tokenizer(stemmer=None)
    with PostgresStore(pg_dsn, tokenizer=unstemmed) as st:
        st.put(Entry("user", "runner", "She was running the marathon"))
        assert st.search_text("runs", scopes=["user"], limit=5) == []
    with PostgresStore(pg_dsn) as st:
        assert [e.name for e, _ in st.search_text("runs", scopes=["user"], limit=5)] == ["runner"]
    with PostgresStore(pg_dsn, tokenizer=unstemmed) as st:
        assert st.search_text("runs", scopes=["user"], limit=5) == []
        assert [e.name for e, _ in st.search_text("running", scopes=["user"], limit=5)] == [
            "runner"
        ]


# -- several processes on one database ----------------------------------------------------------


def test_four_processes_keep_seq_contiguous_and_chained_and_lose_no_append(pg_dsn: str) -> None:
    with PostgresStore(pg_dsn) as st:
        st.put(Entry("user", "shared", "facts:"))
    procs = [_spawn("writer", pg_dsn, str(w), str(ITERATIONS)) for w in range(PROCESSES)]
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
            out, err = p.communicate(timeout=180)
            assert p.returncode == 0, err
            assert out.strip().startswith("done")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    with PostgresStore(pg_dsn) as st:
        changes = list(st.journal())
        n = 1 + PROCESSES * ITERATIONS * 2
        assert [c.seq for c in changes] == list(range(1, n + 1))
        assert st.last_seq() == n
        assert lost_updates(st) == []
        shared = st.get("user", "shared")
        appended = shared.content.removeprefix("facts:").split()
        want = {f"w{w}-{i}" for w in range(PROCESSES) for i in range(ITERATIONS)}
        assert sorted(appended) == sorted(want), "an append was lost or doubled"
        for w in range(PROCESSES):
            mine = [c for c in changes if c.session == f"proc-{w}"]
            assert len(mine) == ITERATIONS * 2, f"process {w} has {len(mine)} records"
        last: dict[str, str] = {}
        for c in changes:
            assert c.replaced == last.get(c.entry.key, ""), f"record {c.seq} breaks the chain"
            assert c.prev == c.replaced, f"record {c.seq} was not built on what it replaced"
            last[c.entry.key] = c.entry.hash
        shared_records = [c for c in changes if c.entry.key == "user/shared"]
        for before, after in itertools.pairwise(shared_records):
            assert after.entry.content.startswith(before.entry.content + " ")
        found = [e.name for e, _ in st.search_text("w2-24", scopes=["user"], limit=10)]
        assert "shared" in found, "the lexical index missed the last append"


def test_a_writer_killed_inside_its_transaction_leaves_nothing_and_others_go_on(
    pg_dsn: str,
) -> None:
    with PostgresStore(pg_dsn) as st:
        st.put(Entry("user", "before", "written before"))
        proc = _spawn("hold", pg_dsn)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("inside "), f"holder did not start: {line!r} {proc.stderr}"
            assert int(line.split()[1]) == 2  # it took seq 2 onward, uncommitted
            done: list[int] = []
            other = threading.Thread(
                target=lambda: done.append(st.put(Entry("user", "other", "waited")).seq)
            )
            other.start()  # queues behind the holder's lock on the counter row
            time.sleep(0.5)
            assert not done, "a write went past a transaction holding the counter"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            other.join(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert done == [2], "the next write must take the seq the killed one never committed"
        assert [c.seq for c in st.journal()] == [1, 2]
        assert [e.name for e in st.list("user")] == ["before", "other"]
        assert st.search_text("held", scopes=["user"], limit=5) == []
        assert st.put(Entry("user", "after", "still writable")).seq == 3


# -- errors -------------------------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_dsn_that_cannot_connect_names_where_and_never_the_password(
    pg_cluster: Cluster,
) -> None:
    port = _free_port()
    dsn = f"host=127.0.0.1 port={port} dbname=memory user=agent password={SECRET}"
    with pytest.raises(StoreUnavailableError) as err:
        PostgresStore(dsn, connect_timeout_s=2)
    msg = str(err.value)
    assert f"postgresql://agent@127.0.0.1:{port}/memory" in msg and "cannot connect" in msg
    assert SECRET not in msg and SECRET not in repr(err.value.__cause__)
    missing = pg_cluster.dsn("no_such_db", password=SECRET)
    with pytest.raises(StoreUnavailableError, match="no_such_db") as err:
        PostgresStore(missing)
    assert SECRET not in str(err.value)
    with pytest.raises(StoreUnavailableError, match="does not parse") as err:
        PostgresStore(f"host=x password={SECRET} =oops")
    assert SECRET not in str(err.value)
    uri = f"postgresql://agent:{SECRET}@127.0.0.1:{port}/memory"
    assert dsn_where(uri) == f"postgresql://agent@127.0.0.1:{port}/memory"


def test_a_newer_schema_and_a_foreign_table_are_refused(pg_cluster: Cluster) -> None:
    dsn = pg_cluster.create_database()
    PostgresStore(dsn).close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO store_schema VALUES (99, 'm099_future', 'x')")
    with pytest.raises(StoreFormatError, match=r"version 99 \(m099_future\).*upgrade"):
        PostgresStore(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM store_schema WHERE version = 99")
        conn.execute("UPDATE store_schema SET name = 'm001_other' WHERE version = 1")
    with pytest.raises(StoreFormatError, match="step 1 is m001_other, not m001_initial"):
        PostgresStore(dsn)
    other = pg_cluster.create_database()
    with psycopg.connect(other, autocommit=True) as conn:
        conn.execute("CREATE TABLE memory_journal (id int, body text)")
    with pytest.raises(StoreFormatError, match="memory_journal with the columns id, body"):
        PostgresStore(other)
    with psycopg.connect(other, autocommit=True) as conn:  # nothing was created
        assert conn.execute("SELECT to_regclass('memory_entries')").fetchone() == (None,)


class _StepTwoStore(PostgresStore):
    """A store of the schema as it was before ``m003_store_id``: the real migration functions of
    postgres_store, steps 1 and 2 only."""

    _migrations = PG_MIGRATIONS[:2]


def _schema(dsn: str) -> list[tuple[int, str, str]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT version, name, applied FROM store_schema ORDER BY version")
        return [(int(v), str(n), str(a)) for v, n, a in rows.fetchall()]


def test_a_database_of_an_older_schema_is_migrated_on_open_and_keeps_its_data(
    pg_dsn: str,
) -> None:
    with _StepTwoStore(pg_dsn) as old:
        old.put(Entry("user", "editor", "Prefers dark mode in Vim.", {"description": "Editor"}))
        old.put(Entry("project", "deploy", "Deploys go through the staging cluster first."))
        old.put(Entry("user", "editor", "Prefers dark mode in Neovim."))
        old.put(Entry("user", "gone", "Soon forgotten."))
        old.forget("user", "gone")
        old.set_state("app:marker", "kept")
        before_journal = list(old.journal())
        before_live = [*old.list("project"), *old.list("user")]
        assert old.get_state("store.id") is None  # m003 made it; this schema has none
    old_schema = _schema(pg_dsn)
    assert [(v, n) for v, n, _ in old_schema] == [(1, "m001_initial"), (2, "m002_lexical_index")]
    assert len(before_journal) == 5
    with PostgresStore(pg_dsn) as new:  # today's code: step 3 applied on open
        assert _schema(pg_dsn)[:2] == old_schema  # the applied steps are not run again
        assert [(v, n) for v, n, _ in _schema(pg_dsn)] == [
            (1, "m001_initial"),
            (2, "m002_lexical_index"),
            (3, "m003_store_id"),
        ]
        store_id = new.store_id
        assert re.fullmatch(
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", store_id
        )
        assert list(new.journal()) == before_journal
        assert [*new.list("project"), *new.list("user")] == before_live
        assert new.get("user", "editor").content == "Prefers dark mode in Neovim."
        assert new.get_state("app:marker") == "kept"
        hits = new.recall("staging cluster", scopes=["project", "user"], mode="bm25")
        assert [h.entry.key for h in hits] == ["project/deploy"]
        assert new.put(Entry("user", "tz", "Europe/London")).seq == 6  # seq goes on
    with PostgresStore(pg_dsn) as again:  # recorded: nothing applied twice, the id stays
        assert again.store_id == store_id
        assert len(_schema(pg_dsn)) == 3
    with pytest.raises(StoreFormatError, match=r"version 3 \(m003_store_id\).*upgrade"):
        _StepTwoStore(pg_dsn)  # and the older code now refuses the newer schema


def _blocked_writer_pid(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(200):
            row = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'agentmemory'"
                " AND wait_event_type = 'Lock' AND datname = current_database()"
            ).fetchone()
            if row is not None:
                return int(row[0])
            time.sleep(0.05)
    raise AssertionError("the write never waited on the counter row")


def test_a_connection_dropped_mid_write_writes_nothing_and_the_store_goes_on(
    store: PostgresStore,
) -> None:
    store.put(Entry("user", "first", "one"))
    with psycopg.connect(store.dsn) as holder:
        holder.execute("SELECT seq FROM memory_counter WHERE id = 1 FOR UPDATE")  # a transaction
        failure: list[BaseException] = []

        def write() -> None:
            try:
                store.put(Entry("user", "second", "two"))
            except BaseException as err:
                failure.append(err)

        t = threading.Thread(target=write)
        t.start()
        pid = _blocked_writer_pid(store.dsn)
        with psycopg.connect(store.dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        t.join(timeout=30)
        holder.rollback()
    assert len(failure) == 1 and isinstance(failure[0], StoreUnavailableError)
    msg = str(failure[0])
    assert "the put of user/second" in msg and "nothing of it was written" in msg
    assert store.where in msg
    assert [c.seq for c in store.journal()] == [1]
    assert store.put(Entry("user", "third", "three")).seq == 2  # a new connection, same store
    assert [e.name for e in store.list("user")] == ["first", "third"]


class _DroppingStore(PostgresStore):
    """Its connection dies after every statement of a write was sent, before COMMIT."""

    def _apply_in_txn(self, conn: Any, changes: Sequence[Change]) -> None:
        super()._apply_in_txn(conn, changes)
        if changes[0].entry.name == "doomed":
            conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")


def test_a_connection_dropped_before_commit_is_checked_and_wrote_nothing(pg_dsn: str) -> None:
    with _DroppingStore(pg_dsn) as st:
        st.put(Entry("user", "first", "one"))
        with pytest.raises(StoreUnavailableError, match="the put of user/doomed") as err:
            st.put(Entry("user", "doomed", "two"))
        assert "nothing of it was written" in str(err.value)
        assert [c.seq for c in st.journal()] == [1]
        assert st.search_text("two", scopes=["user"], limit=5) == []
        assert st.put(Entry("user", "later", "three")).seq == 2


def test_a_held_counter_times_out_as_store_locked(pg_dsn: str) -> None:
    with PostgresStore(pg_dsn, lock_timeout_s=0.2) as st, psycopg.connect(pg_dsn) as holder:
        holder.execute("SELECT seq FROM memory_counter WHERE id = 1 FOR UPDATE")
        with pytest.raises(StoreLockedError, match="lock_timeout_s"):
            st.put(Entry("user", "x", "y"))
        holder.rollback()
        assert st.put(Entry("user", "x", "y")).seq == 1


def test_close_is_idempotent_and_a_closed_store_says_so(pg_dsn: str) -> None:
    st = PostgresStore(pg_dsn)
    st.close()
    st.close()
    with pytest.raises(AgentMemoryError, match="closed"):
        st.get("user", "x")
    assert "postgresql://" in repr(st)


def test_live_set_reads_match_sqlite_stores(store: PostgresStore, tmp_path: Path) -> None:
    from agentmemory import SqliteStore

    writes = [Entry(s, n, f"{s} {n}") for s in ("b-scope", "a", "z") for n in ("x", "b", "a-1")]
    with SqliteStore(tmp_path / "same.sqlite3") as sq:
        for st_ in (sq, store):
            st_.put_many(writes)
            st_.forget("z", "b")
            st_.forget("z", "x")
            st_.forget("z", "a-1")
            st_.put(Entry("a", "b", "rewritten"))
        assert store.scopes() == sq.scopes() == ["a", "b-scope"]
        assert store.live_count() == sq.live_count() == 6
        keys = [("a", "b"), ("z", "x"), ("b-scope", "a-1"), ("nope", "x")]
        pg_live = {k: (e.content, e.hash) for k, e in store.live_many(keys).items()}
        assert pg_live == {k: (e.content, e.hash) for k, e in sq.live_many(keys).items()}
        assert set(store.live_many(keys)) == {("a", "b"), ("b-scope", "a-1")}
        for batch in (1, 4, 500):
            pg_lists = [[e.key for e in page] for page in store.iter_live(batch)]
            sq_lists = [[e.key for e in page] for page in sq.iter_live(batch)]
            assert pg_lists == sq_lists
        with pytest.raises(ValueError, match="batch"):
            store.iter_live(0)
        for seq in (0, 9, 13, 14):
            scopes = ["z", "a", "b-scope"]
            assert store.scopes_written_by(seq, scopes) == sq.scopes_written_by(seq, scopes)
        assert store.scopes_written_by(13, ["a", "b-scope"]) == ["a", "b-scope"]


def _round_trips(store: PostgresStore, write: Callable[[], object], trace: Path) -> int:
    """How many times the client waited for the server during ``write``: the turns from
    frontend to backend messages in libpq's protocol trace of the writer connection."""
    conn = store._writer
    assert conn is not None
    with open(trace, "w") as f:
        conn.pgconn.trace(f.fileno())
        try:
            write()
        finally:
            conn.pgconn.untrace()
    sides = [line.split("\t")[1] for line in trace.read_text().splitlines() if "\t" in line]
    assert sides and sides[0] == "F"
    return sum(1 for a, b in itertools.pairwise(sides) if (a, b) == ("F", "B"))


def test_a_write_is_two_round_trips_whatever_its_size(store: PostgresStore, tmp_path: Path) -> None:
    trace = tmp_path / "trace.txt"
    store.put(Entry("user", "warm", "the writer connection is open"))
    assert _round_trips(store, lambda: store.put(Entry("user", "a", "one entry")), trace) == 2
    many = [Entry("user", f"m{i}", f"bulk entry {i}") for i in range(300)]
    assert _round_trips(store, lambda: store.put_many(many), trace) == 2
    assert _round_trips(store, lambda: store.forget("user", "a"), trace) == 2
    assert store.last_seq() == 1 + 1 + 300 + 1
    assert len(store.search_text("bulk", scopes=["user"], limit=500)) == 300
