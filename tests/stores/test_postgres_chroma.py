"""ChromaStore over a PostgresStore journal on the session's Chroma server (`chroma run`,
tests/chroma_server.py; PostgreSQL from tests/pg_cluster.py): the index cursor kept in the database so any process catches the index up,
and four processes sharing nothing but the DSN and the server's address."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from chroma_server import free_port
from pg_cluster import Cluster

from agentmemory import ChromaStore, Entry, lost_updates, open_journal, open_store
from agentmemory.errors import ChromaAddressError, ChromaServerError
from agentmemory.stores.postgres.store import PostgresStore
from embedders import HashingEmbedder

pytestmark = pytest.mark.slow

WRITER_SCRIPT = Path(__file__).with_name("pg_writer_proc.py")
PROCESSES = 4
ITERATIONS = 25  # two writes each: 50 per process, half conditional appends to one entry
DIM = 32  # the writers' HashingEmbedder width (tests/stores/pg_writer_proc.py)
_prefixes = itertools.count()


def open_over(dsn: str, chroma: Any, prefix: str, **kwargs: Any) -> ChromaStore:
    return ChromaStore(
        None,
        journal=PostgresStore(dsn, **kwargs),
        client=chroma,
        collection_prefix=prefix,
        embedder=HashingEmbedder(DIM),
    )


def test_no_folder_is_made_and_a_journal_needs_a_server(pg_dsn: str, chroma_client: Any) -> None:
    with open_over(pg_dsn, chroma_client, "pgfolder") as st:
        st.put(Entry("user", "editor", "Prefers dark mode in Vim."))
        assert st.where.startswith("postgresql://") and "editor" not in st.where
        hits = st.recall("dark mode editor", scopes=["user"], mode="hybrid")
        assert [h.entry.name for h in hits] == ["editor"]
        assert set(hits[0].legs) == {"bm25", "vector"}
    with pytest.raises(ValueError, match="needs client="):
        ChromaStore(None, journal=PostgresStore(pg_dsn), embedder=HashingEmbedder(DIM))


def test_the_cursor_lives_in_the_database_so_another_process_catches_up(
    pg_dsn: str,
    chroma_client: Any,
) -> None:
    with open_over(pg_dsn, chroma_client, "pgcursor") as st:
        st.put(Entry("user", "a", "alpha words"))
        cursor = st.index_cursor
    with PostgresStore(pg_dsn) as journal:  # a host without Chroma writes the journal alone
        journal.put(Entry("user", "b", "beta words"))
        journal.forget("user", "a")
    with open_over(
        pg_dsn, chroma_client, "pgcursor"
    ) as st:  # any process: replays after the cursor
        assert st.index_cursor == 3 > cursor
        report = st.verify()
        assert report.ok and report.live == 1 and report.indexed == 1, report


_SERVER_ENV = (
    "AGENTMEMORY_DSN",
    "AGENTMEMORY_CHROMA_URL",
    "AGENTMEMORY_CHROMA",
    "AGENTMEMORY_PATH",
)


def test_open_store_with_a_dsn_and_a_chroma_address(
    pg_dsn: str,
    chroma_client: Any,
    chroma_port: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in _SERVER_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))  # the default store folder would be under it
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    address = f"127.0.0.1:{chroma_port}"
    with open_store(dsn=pg_dsn, chroma_url=address, embedder="hashing:32") as st:
        assert isinstance(st, ChromaStore) and isinstance(st.journal_store, PostgresStore)
        st.put(Entry("user", "editor", "Prefers dark mode in Vim."))
        st.put(Entry("project", "deploy", "Deploys go through the staging cluster first."))
        hits = st.recall("dark mode editor", scopes=["project", "user"], mode="hybrid")
        assert hits[0].entry.name == "editor" and set(hits[0].legs) == {"bm25", "vector"}
        prefix, user_collection = st.collection_prefix, st.collection_name("user")
    with PostgresStore(pg_dsn) as journal:  # the prefix is the database's own store id
        assert prefix == "am-" + journal.store_id.replace("-", "")[:16]
    assert (
        chroma_client.get_collection(user_collection).count() == 1
    )  # the vectors are on the server
    # Everything from the environment (the address as a URL), the embedder the journal records.
    monkeypatch.setenv("AGENTMEMORY_DSN", pg_dsn)
    monkeypatch.setenv("AGENTMEMORY_CHROMA_URL", f"http://{address}")
    with open_store() as st:
        assert st.embedder.name == "hashing:32" and st.collection_prefix == prefix
        report = st.verify()
        assert report.ok and report.live == report.indexed == 2, report
    with open_journal() as journal:  # the journal alone: BM25 in the database
        assert isinstance(journal, PostgresStore)
        found = journal.recall("staging cluster", scopes=["project", "user"])
        assert [h.entry.name for h in found] == ["deploy"]
    monkeypatch.delenv("AGENTMEMORY_CHROMA_URL")
    with pytest.raises(ChromaAddressError, match="open_journal"):
        open_store()
    assert list(tmp_path.iterdir()) == [], "a store on servers wrote a local folder"


def test_open_store_on_servers_takes_the_default_embedder_and_closes_what_it_opened(
    pg_cluster: Cluster,
    chroma_port: int,
) -> None:
    dsn = pg_cluster.create_database()
    with open_store(dsn=dsn, chroma_url=f"127.0.0.1:{chroma_port}") as st:
        assert st.embedder.name == "onnx:all-MiniLM-L6-v2"  # choose_embedder's first choice
    with pytest.raises(ChromaServerError, match="no Chroma server"):
        open_store(dsn=dsn, chroma_url=f"127.0.0.1:{free_port()}", embedder="hashing:32")
    assert _our_backends(dsn) == 0, "the journal's connection was left open"


def _our_backends(dsn: str) -> int:
    """Our connections to ``dsn``'s database once their backends have gone (up to 10 s).

    A closed connection's backend leaves ``pg_stat_activity`` only when its process exits, a
    moment after the client's Terminate message, so one read straight after a close can still see
    it; a connection left open stays there for good.
    """
    count = -1
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(200):
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'agentmemory'"
                " AND datname = current_database()"
            ).fetchone()
            count = int(row[0]) if row is not None else -1
            if count == 0:
                break
            time.sleep(0.05)
    return count


def open_hosted(dsn: str, address: str) -> ChromaStore:
    store = open_store(dsn=dsn, chroma_url=address, embedder=HashingEmbedder(DIM))
    assert isinstance(store, ChromaStore)
    return store


def test_four_processes_sharing_only_the_dsn_and_the_server(
    pg_dsn: str,
    chroma_client: Any,
    chroma_port: int,
    tmp_path: Path,
) -> None:
    address = f"127.0.0.1:{chroma_port}"
    with open_hosted(pg_dsn, address) as st:
        st.put(Entry("user", "shared", "facts:"))
    argv = [sys.executable, str(WRITER_SCRIPT), "chroma", pg_dsn, address]
    hosts = [tmp_path / f"host{w}" for w in range(PROCESSES)]
    procs = []
    for w, host in enumerate(hosts):  # each its own working folder and HOME, nothing shared
        (host / "home").mkdir(parents=True)
        (host / "work").mkdir()
        procs.append(
            subprocess.Popen(
                [*argv, str(w), str(ITERATIONS)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=host / "work",
                env={**os.environ, "HOME": str(host / "home")},
            )
        )
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
    for host in hosts:  # no host kept any of the memory in a local folder
        assert list((host / "work").iterdir()) == [], f"{host.name} wrote into its cwd"
        assert list((host / "home").iterdir()) == [], f"{host.name} wrote into its HOME"
    with open_hosted(pg_dsn, address) as st:
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
        ids = chroma_client.get_collection(st.collection_name("user")).get(include=[])["ids"]
        assert len(ids) == len(set(ids)) == live
        assert st.index_cursor == n
