"""ChromaStore over a PostgresStore journal on a Chroma server (`chroma run`, started once for
this module as tests/test_chroma_server.py starts it; PostgreSQL from tests/pg_cluster.py): the
conformance suite, the index cursor kept in the database so any process catches the index up,
and four processes sharing nothing but the DSN and the server's address."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pg_cluster import Cluster
from test_chroma_server import client, server_port  # noqa: F401 (fixtures: one server)

from agentmemory import ChromaStore, Entry, lost_updates
from agentmemory.postgres_store import PostgresStore
from agentmemory.testing import CASES, Harness
from embedders import HashingEmbedder

pytestmark = pytest.mark.slow

WRITER_SCRIPT = Path(__file__).with_name("pg_writer_proc.py")
PROCESSES = 4
ITERATIONS = 25  # two writes each: 50 per process, half conditional appends to one entry
DIM = 32  # the writers' HashingEmbedder width (tests/pg_writer_proc.py)
_prefixes = itertools.count()


def open_over(dsn: str, chroma: Any, prefix: str, **kwargs: Any) -> ChromaStore:
    return ChromaStore(
        None,
        journal=PostgresStore(dsn, **kwargs),
        client=chroma,
        collection_prefix=prefix,
        embedder=HashingEmbedder(DIM),
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.removeprefix("case_"))
def test_conformance_over_postgres_and_a_chroma_server(
    case: Callable[[Harness], None],
    pg_cluster: Cluster,
    client: Any,  # noqa: F811
) -> None:
    def new() -> ChromaStore:
        return open_over(pg_cluster.create_database(), client, f"pgc{next(_prefixes)}")

    def reopen(st: object) -> ChromaStore:
        assert isinstance(st, ChromaStore)
        journal = st.journal_store
        assert isinstance(journal, PostgresStore)
        return open_over(journal.dsn, client, st.collection_prefix)

    case(Harness(new=new, reopen=reopen))  # type: ignore[arg-type]


def test_no_folder_is_made_and_a_journal_needs_a_server(pg_dsn: str, client: Any) -> None:  # noqa: F811
    with open_over(pg_dsn, client, "pgfolder") as st:
        st.put(Entry("user", "editor", "Prefers dark mode in Vim."))
        assert st.where.startswith("postgresql://") and "editor" not in st.where
        hits = st.recall("dark mode editor", scopes=["user"], mode="hybrid")
        assert [h.entry.name for h in hits] == ["editor"]
        assert set(hits[0].legs) == {"bm25", "vector"}
    with pytest.raises(ValueError, match="needs client="):
        ChromaStore(None, journal=PostgresStore(pg_dsn), embedder=HashingEmbedder(DIM))


def test_the_cursor_lives_in_the_database_so_another_process_catches_up(
    pg_dsn: str,
    client: Any,  # noqa: F811
) -> None:
    with open_over(pg_dsn, client, "pgcursor") as st:
        st.put(Entry("user", "a", "alpha words"))
        cursor = st.index_cursor
    with PostgresStore(pg_dsn) as journal:  # a host without Chroma writes the journal alone
        journal.put(Entry("user", "b", "beta words"))
        journal.forget("user", "a")
    with open_over(pg_dsn, client, "pgcursor") as st:  # any process: replays after the cursor
        assert st.index_cursor == 3 > cursor
        report = st.verify()
        assert report.ok and report.live == 1 and report.indexed == 1, report


def test_four_processes_sharing_only_the_dsn_and_the_server(
    pg_dsn: str,
    client: Any,  # noqa: F811
    server_port: int,  # noqa: F811
) -> None:
    prefix = "pgfour"
    with open_over(pg_dsn, client, prefix) as st:
        st.put(Entry("user", "shared", "facts:"))
    argv = [sys.executable, str(WRITER_SCRIPT), "chroma", pg_dsn, str(server_port), prefix]
    procs = [
        subprocess.Popen(
            [*argv, str(w), str(ITERATIONS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(PROCESSES)
    ]
    try:
        for p in procs:
            assert p.stdout is not None
            line = p.stdout.readline()
            assert line.strip() == "ready", f"writer did not start: {line!r} {p.stderr}"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
            assert out.strip().startswith("done")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    with open_over(pg_dsn, client, prefix) as st:
        changes = list(st.journal())
        n = 1 + PROCESSES * ITERATIONS * 2
        assert [c.seq for c in changes] == list(range(1, n + 1))
        assert lost_updates(st) == []
        last: dict[str, str] = {}
        for c in changes:
            assert c.replaced == last.get(c.entry.key, "") == c.prev, f"record {c.seq}"
            last[c.entry.key] = c.entry.hash
        appended = st.get("user", "shared").content.removeprefix("facts:").split()
        want = {f"w{w}-{i}" for w in range(PROCESSES) for i in range(ITERATIONS)}
        assert sorted(appended) == sorted(want), "an append was lost or doubled"
        report = st.verify()
        assert report.ok, report
        live = 1 + PROCESSES * ITERATIONS
        assert report.live == live and report.indexed == live, report  # each entry once
        ids = client.get_collection(st.collection_name("user")).get(include=[])["ids"]
        assert len(ids) == len(set(ids)) == live
        assert st.index_cursor == n
