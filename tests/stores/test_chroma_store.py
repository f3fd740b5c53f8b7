"""ChromaStore on an embedded Chroma folder: the shared store cases (tests/chroma_store_cases.py),
then what only the embedded store has: a process killed between the journal and the index, the
folder lock against a second process, a dead holder's lock, and the real packaged model."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chroma_store_cases import CASES, DIM, Backend, indexed_cosine, keys

from agentmemory import AgentMemoryError, ChromaStore, Entry, SqliteStore, StoreLockedError
from agentmemory.stores.chroma.folder_lock import LOCK_FILE_NAME, FolderLock
from agentmemory.stores.chroma.store import CHROMA_FOLDER, JOURNAL_FILE
from embedders import HashingEmbedder

REPO = Path(__file__).resolve().parents[2]
CHILD_TIMEOUT_S = 120


def open_embedded(
    path: Path, store_type: type[ChromaStore] = ChromaStore, **kwargs: Any
) -> ChromaStore:
    kwargs.setdefault("embedder", HashingEmbedder(DIM))
    return store_type.open(path, **kwargs)


def lose_folder(path: Path) -> None:
    shutil.rmtree(path / CHROMA_FOLDER)


def folder_client(path: Path) -> Any:
    # The store shares its client per folder in this process; reach it through a handle.
    with open_embedded(path) as st:
        return st.client


EMBEDDED = Backend("embedded", open_embedded, lose_folder, folder_client)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.removeprefix("case_"))
def test_embedded(case: Callable[[Backend, Path], None], tmp_path: Path) -> None:
    case(EMBEDDED, tmp_path / "store")


def run_child(script: str, *args: str, **popen: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,
    )


CRASH_CHILD = """
    import os, signal, sys
    from agentmemory import ChromaStore, Entry
    from agentmemory.stores.chroma.index import ChromaIndex
    from embedders import HashingEmbedder

    armed = False

    class KillingIndex(ChromaIndex):
        def upsert(self, scope, rows):
            if armed:
                os.kill(os.getpid(), signal.SIGKILL)
            super().upsert(scope, rows)

    class KillingStore(ChromaStore):
        index_type = KillingIndex

    st = KillingStore.open(sys.argv[1], embedder=HashingEmbedder(int(sys.argv[2])))
    st.put(Entry("user", "before", "written and indexed before the crash"))
    armed = True
    st.put_many([Entry("bulk", f"e{i}", f"bulk entry {i} word{i}") for i in range(600)])
    print("not killed")
"""


@pytest.mark.slow
def test_the_cursor_rides_the_next_write_and_close_records_the_last(tmp_path: Path) -> None:
    """A write costs one journal transaction: the index cursor its index update advanced is
    recorded by the next write's transaction (or by close), not by a transaction of its own."""
    store = tmp_path / "store"
    key = "chroma-index:embedded:agentmemory:cursor"
    with open_embedded(store) as st, SqliteStore(store / JOURNAL_FILE) as journal:
        for i in range(3):
            st.put(Entry("user", f"e{i}", f"entry {i}"))
        assert st.index_cursor == 3
        assert journal.get_state(key) == "2", "the third write carried the second's cursor"
        st.forget("user", "e0")
        assert journal.get_state(key) == "3"
    with SqliteStore(store / JOURNAL_FILE) as journal:
        assert journal.get_state(key) == "4", "close recorded the last cursor"
    with open_embedded(store) as st:
        assert st.index_cursor == 4 and st.verify().ok


@pytest.mark.slow
def test_sigkill_between_journal_and_index_is_repaired_on_open(tmp_path: Path) -> None:
    """A process killed after its journal commit and before its index write: the journal holds
    the write, the cursor stayed behind it, and reopening (taking over the dead process's lock)
    indexes it; verify() is clean."""
    store = tmp_path / "store"
    child = run_child(CRASH_CHILD, str(store), str(DIM))
    out, err = child.communicate(timeout=CHILD_TIMEOUT_S)
    assert child.returncode == -signal.SIGKILL, (out, err)
    assert "not killed" not in out
    with SqliteStore(store / JOURNAL_FILE) as journal:
        assert journal.last_seq() == 601
        assert journal.get_state("chroma-index:embedded:agentmemory:cursor") == "1"
    with open_embedded(store) as st:
        report = st.verify()
        assert report.ok and report.live == report.indexed == 601, report
        assert st.index_cursor == 601
        for i in (0, 599):
            assert indexed_cosine(st, f"bulk/e{i}", f"bulk entry {i} word{i}") > 0.999
        assert json.loads((store / LOCK_FILE_NAME).read_text())["pid"] == os.getpid()


HOLDER_CHILD = """
    import sys
    from agentmemory import ChromaStore, Entry
    from embedders import HashingEmbedder

    with ChromaStore.open(sys.argv[1], embedder=HashingEmbedder(int(sys.argv[2]))) as st:
        st.put(Entry("user", "held", "the holder wrote this"))
        print("ready", flush=True)
        sys.stdin.readline()
"""


@pytest.mark.slow
def test_second_process_gets_store_locked_naming_the_holder(tmp_path: Path) -> None:
    store = tmp_path / "store"
    child = run_child(HOLDER_CHILD, str(store), str(DIM), stdin=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdin is not None
        line = child.stdout.readline()
        assert line.strip() == "ready", (line, child.stderr.read() if child.stderr else "")
        with pytest.raises(StoreLockedError) as info:
            open_embedded(store, lock_timeout_s=0.5)
        err = info.value
        assert f"pid {child.pid} on host" in err.holder
        assert f"pid {child.pid}" in str(err) and "HttpClient" in str(err)
        assert err.path == str(store)
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.wait(timeout=CHILD_TIMEOUT_S) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    with open_embedded(store) as st:
        assert st.get("user", "held").content == "the holder wrote this"
        assert st.verify().ok


def test_dead_holders_lock_file_is_taken_over(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (store / LOCK_FILE_NAME).write_text(
        json.dumps({"pid": gone.pid, "host": os.uname().nodename, "since": "2026-01-01T00:00:00Z"})
    )
    with open_embedded(store) as st:
        st.put(Entry("user", "mine", "now"))
        holder = json.loads((store / LOCK_FILE_NAME).read_text())
        assert holder["pid"] == os.getpid()


def test_folder_lock_is_held_while_any_handle_is_open(tmp_path: Path) -> None:
    """Handles in one process share one lock: a separate lock on the folder is refused until
    the last handle closes."""
    store = tmp_path / "store"
    first = open_embedded(store)
    second = open_embedded(store)
    assert first.client is second.client
    first.close()
    with pytest.raises(StoreLockedError, match=f"pid {os.getpid()}"):
        FolderLock.acquire(store, timeout_s=0.1)
    second.close()
    with FolderLock.acquire(store, timeout_s=0.1) as lock:
        assert f"pid {os.getpid()}" in lock.holder()


def test_forked_child_cannot_use_the_parents_embedded_store(tmp_path: Path) -> None:
    """A child forked from the owner gets a clear error instead of a second writer on the
    folder, and closing its copy leaves the parent's lock in place."""
    store = tmp_path / "store"
    with open_embedded(store) as st:
        st.put(Entry("user", "parent", "written by the parent"))
        pid = os.fork()
        if pid == 0:  # the child: report through the exit code only
            code = 3
            try:
                st.put(Entry("user", "child", "must not be written"))
            except AgentMemoryError as err:
                code = 0 if "forked" in str(err) else 4
            st.close()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        with pytest.raises(StoreLockedError):
            FolderLock.acquire(store, timeout_s=0.1)
        st.put(Entry("user", "after", "the parent goes on"))
        assert [e.name for e in st.list("user")] == ["after", "parent"]
        assert st.verify().ok


def test_collection_prefix_is_checked(tmp_path: Path) -> None:
    for bad in ("", "_x", "a.b", "a b", "x" * 201):
        with pytest.raises(ValueError, match="collection_prefix"):
            open_embedded(tmp_path / "bad", collection_prefix=bad)
    with open_embedded(tmp_path / "s", collection_prefix="mem_1") as st:
        st.put(Entry("a", "x", "a one-letter scope gets a valid collection name"))
        assert st.collection_name("a") == "mem_1_a"
        assert [c.name for c in st.client.list_collections()] == ["mem_1_a"]


def test_scopes_are_the_journals_live_scopes(tmp_path: Path) -> None:
    """Every store answers scopes(): a ChromaStore's are its journal's, so a scope whose entries
    were all forgotten is gone although its collection is still in the index."""
    with open_embedded(tmp_path / "s") as st:
        assert st.scopes() == []
        st.put(Entry("user", "cats", "cats purr"))
        st.put(Entry("project", "plan", "ship on friday"))
        st.put(Entry("a", "x", "a one-letter scope"))
        assert st.scopes() == ["a", "project", "user"]
        st.forget("project", "plan")
        assert st.scopes() == ["a", "user"] == st.journal_store.scopes()
        assert "agentmemory_project" in [c.name for c in st.client.list_collections()]


@pytest.mark.slow
def test_real_packaged_model_ranks_by_meaning(tmp_path: Path) -> None:
    """The packaged all-MiniLM-L6-v2, offline: a cat on a mat is nearer a feline on a rug than
    quarterly revenue, through the store's Chroma index."""
    from embedders import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    with ChromaStore.open(tmp_path / "store", embedder=embedder) as st:
        st.put(Entry("user", "feline", "a feline rested on the rug"))
        st.put(Entry("user", "revenue", "quarterly revenue grew 5%"))
        query = embedder.embed(["the cat sat on the mat"])[0]
        hits = st.search_vector(query, limit=2, scopes=["user"])
        assert keys(hits) == ["user/feline", "user/revenue"]
        assert hits[0][1] > hits[1][1] + 0.2
        assert st.verify().ok
        assert st.recall("a kitten on the carpet", scopes=["user"], mode="bm25") == []
        fused = st.recall("a kitten on the carpet", scopes=["user"], limit=1)
        assert [h.entry.key for h in fused] == ["user/feline"]


@pytest.mark.slow
def test_the_same_model_through_onnx_opens_a_sentence_transformers_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store indexed with sentence-transformers opens with the packaged model through
    onnxruntime (same weights, same vectors): search and writes work, the recorded fingerprint
    stays, and a model-free embedder is still refused, naming both and reindex."""
    from agentmemory import EmbedderMismatchError
    from embedders import OnnxEmbedder, SentenceTransformerEmbedder

    monkeypatch.setenv("AGENTMEMORY_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "store"
    st_embedder = SentenceTransformerEmbedder()
    with ChromaStore.open(path, embedder=st_embedder) as st:
        st.put(Entry("user", "feline", "a feline rested on the rug"))
        st.put(Entry("user", "revenue", "quarterly revenue grew 5%"))
    onnx = OnnxEmbedder()
    assert onnx.fingerprint != st_embedder.fingerprint
    with ChromaStore.open(path, embedder=onnx) as st:
        assert st.embedder is onnx
        hits = st.search_vector(onnx.embed(["the cat sat on the mat"])[0], limit=2, scopes=["user"])
        assert keys(hits) == ["user/feline", "user/revenue"]
        assert hits[0][1] > hits[1][1] + 0.2
        st.put(Entry("user", "pet", "my dog Rex is a golden retriever"))
        fused = st.recall("which puppy do I own", scopes=["user"], limit=1)
        assert [h.entry.key for h in fused] == ["user/pet"]
        assert st.verify().ok
    assert onnx.onnx_path.is_relative_to(tmp_path / "cache")
    with SqliteStore(path / JOURNAL_FILE) as journal:
        recorded = journal.get_state("chroma-index:embedded:agentmemory:embedder")
    assert recorded == st_embedder.fingerprint
    with pytest.raises(EmbedderMismatchError) as info:
        ChromaStore.open(path, embedder=HashingEmbedder(256))
    message = str(info.value)
    assert st_embedder.fingerprint in message and "hashing:256" in message
    assert "reindex" in message
    with ChromaStore.open(path, embedder=st_embedder) as st:  # and back again
        query = st_embedder.embed(["rug"])[0]
        assert keys(st.search_vector(query, limit=1, scopes=["user"])) == ["user/feline"]


@pytest.mark.slow
def test_one_put_costs_one_write_transaction_and_two_reads_of_the_row(tmp_path: Path) -> None:
    """docs/storage.md#the-cost-of-one-write: counted by sqlite3's trace callback on both of the
    journal's connections (before the layout of that section: two transactions, four reads)."""
    st = open_embedded(tmp_path / "s")
    try:
        st.put(Entry("user", "warm", "warm up the index"))
        journal = st._journal
        assert isinstance(journal, SqliteStore)
        statements: list[str] = []
        for conn in (journal._writer, journal._reader):
            conn.set_trace_callback(statements.append)
        try:
            st.put(Entry("user", "tea", "Likes green tea"))
        finally:
            for conn in (journal._writer, journal._reader):
                conn.set_trace_callback(None)
        begins = [s for s in statements if s.strip().upper().startswith("BEGIN")]
        row_reads = [
            s
            for s in statements
            if s.lstrip().upper().startswith("SELECT") and "FROM memory_entries" in s
        ]
        assert len(begins) == 1, statements
        assert len(row_reads) == 2, row_reads
        assert st.get("user", "tea").content == "Likes green tea"
    finally:
        st.close()


def test_a_store_indexed_with_the_older_metadata_stays_current(tmp_path: Path) -> None:
    """A store whose vectors hold the metadata written before the cut (scope, hash, the whole
    text_hash: docs/storage.md#ids-and-metadata) verifies ok on the new code: no entry reads
    as stale, so nothing is re-embedded, and search finds by meaning as before."""
    from agentmemory.entries import content_hash
    from agentmemory.stores.chroma.sync import embedding_text

    path = tmp_path / "store"
    with open_embedded(path) as st:
        entries = [Entry("user", f"e{i}", f"fact number {i} about topic {i}") for i in range(5)]
        st.put_many(entries)
        col = st.client.get_collection(st.collection_name("user"))
        got = col.get(include=["metadatas", "embeddings"])
        older = []
        for meta in got["metadatas"]:
            e = next(x for x in entries if x.name == meta["name"])
            whole = content_hash(embedding_text(e))
            assert meta["text_hash"] == whole[:39]
            older.append({**meta, "scope": "user", "hash": e.hash, "text_hash": whole})
        col.upsert(ids=got["ids"], embeddings=got["embeddings"], metadatas=older)
    with open_embedded(path) as st:
        report = st.verify()
        assert report.ok and not report.stale and report.indexed == 5, report
        assert keys(st.search_vector(st.embedder.embed(["fact number 3 about topic 3"])[0],
                                     limit=1, scopes=["user"])) == ["user/e3"]  # fmt: skip
