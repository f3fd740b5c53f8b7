"""purge on every store: a secret saved, patched three times, forgotten and purged leaves no
copy in any file under the store's folder, nor in either recall leg; everything else stays.
docs/contract.md#purge-erasing-an-entry-for-good"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import os
import signal
import sqlite3
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import psycopg
import pytest
from click.testing import CliRunner
from pg_cluster import Cluster

from agentmemory import (
    ChromaStore,
    Entry,
    FileStore,
    InvalidEntryError,
    MemStore,
    SqliteStore,
    StoreLockedError,
    lost_updates,
    provenance,
    purge_session,
)
from agentmemory.cli import main
from agentmemory.entries import REDACTED, SOURCE_PURGED
from agentmemory.stores.chroma.files import hnsw_slack
from agentmemory.stores.chroma.loaded import record_loaded
from embedders import HashingEmbedder, text_windows

SECRET = "zqxvelvet-4471-orchid"
VERSIONS = [
    f"Home address {SECRET} flat 9",
    f"Home address {SECRET} flat 9, moved",
    f"Home address {SECRET} flat 12",
    f"Home address {SECRET} flat 12 (door code 4471)",
]
EMBEDDER = HashingEmbedder(64)
PROC = Path(__file__).with_name("purge_proc.py")


def _needles() -> dict[str, bytes]:
    """What no file may hold afterwards: the secret, the sha256 hex of each version's content,
    and (for a vector store) each version's float32 vector, all 64 dimensions (a part could
    match another entry's: hashing vectors are sparse)."""
    out = {"secret": SECRET.encode()}
    for i, text in enumerate(VERSIONS):
        out[f"sha256 of version {i}"] = hashlib.sha256(text.encode()).hexdigest().encode()
        vec = np.asarray(EMBEDDER.embed([text]), dtype=np.float32)[0]
        out[f"vector of version {i}"] = vec.tobytes()
    return out


def scan(folder: Path) -> list[str]:
    """Every (file, needle) pair where a file under ``folder`` holds a needle."""
    hits = []
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            hits += [f"{p.relative_to(folder)}: {n}" for n, b in _needles().items() if b in data]
    return hits


AnyStore = MemStore | SqliteStore | ChromaStore | FileStore


def write_history(st: AnyStore, *, forget: bool = True) -> dict[str, str]:
    """The issue's scenario: others around a secret saved, patched three times, forgotten (or
    left live when ``forget`` is false)."""
    others = {"tea": "Likes green tea", "editor": "Uses vim for Go"}
    st.put(Entry("user", "tea", others["tea"]))
    for i, text in enumerate(VERSIONS):
        with provenance(message=f"m-{i}", tool="memory_save", reason=f"user said {SECRET}"):
            st.put(Entry("user", "address", text))
        st.put(Entry("user", f"between-{i}", f"Meeting note {i} about the garden"))
        others[f"between-{i}"] = f"Meeting note {i} about the garden"
    st.put(Entry("project", "editor", others["editor"]))
    if forget:
        st.forget("user", "address")
    return others


def _stores(tmp_path: Path) -> dict[str, Callable[[], AnyStore]]:
    return {
        "mem": MemStore,
        "sqlite": lambda: SqliteStore(tmp_path / "s" / "journal.sqlite3"),
        "chroma": lambda: ChromaStore(tmp_path / "s", embedder=EMBEDDER),
        "file": lambda: FileStore(tmp_path / "s"),
        "file-vectors": lambda: FileStore(tmp_path / "s", embedder=EMBEDDER),
    }


def _has_vectors(st: AnyStore) -> bool:
    return isinstance(st, ChromaStore) or (isinstance(st, FileStore) and st.embedder is not None)


def _reopen_in_a_fresh_process(folder: Path, *, perturb: int = 0) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, str(PROC), str(folder), "reopen"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env=_perturbed_env(perturb),
    )
    got: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


# Tagged heaps (issue 22 case 8). glibc's M_PERTURB makes malloc fill every block it hands out
# with ``~byte`` and free fill every block it takes back with ``byte``: the HNSW files' unused
# capacity, which hnswlib writes from memory it never cleared, then holds a known byte of the
# process that wrote it instead of whatever its heap held. A capacity the purge left unzeroed is
# so seen on every run, not only on the rare run where an erased hash lay in the heap there.
M_PERTURB = -6
"""glibc's ``mallopt`` parameter (malloc.h); the environment's ``MALLOC_PERTURB_`` sets it at
a process's start."""


def _perturbed_env(byte: int) -> dict[str, str] | None:
    """The environment of a child process whose heap is tagged with ``byte`` (``None``: this
    process's own environment, untagged)."""
    return {**os.environ, "MALLOC_PERTURB_": str(byte)} if byte else None


@contextmanager
def _perturbed_heap(byte: int) -> Iterator[bool]:
    """Tag this process's heap with ``byte`` while the block runs; yields whether it could
    (glibc only: elsewhere the block runs untagged, and checks that need the tag are skipped).
    The setting before (``MALLOC_PERTURB_`` of the environment, or none) is put back after."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    mallopt = getattr(libc, "mallopt", None)
    tagged = bool(mallopt and mallopt(M_PERTURB, byte))
    try:
        yield tagged
    finally:
        if tagged and mallopt:
            mallopt(M_PERTURB, int(os.environ.get("MALLOC_PERTURB_", "0") or 0))


def _unzeroed_capacity(chroma: Path) -> list[str]:
    """Every HNSW segment file under the Chroma folder ``chroma`` whose bytes past its last element
    are not all zeros, with the bytes found there (a tag names the process that wrote them), and
    every segment folder whose header cannot be read. Read from hnswlib's own layout (header.bin:
    int32 version, then offsetLevel0, max_elements, cur_element_count, size_data_per_element as
    size_t), not through the code under test."""
    found = []
    for seg in sorted(p for p in chroma.iterdir() if p.is_dir()):
        head = (seg / "header.bin").read_bytes() if (seg / "header.bin").exists() else b""
        if len(head) < 36:
            found.append(f"{seg.name}: header.bin of {len(head)} bytes")
            continue
        count, per_element = struct.unpack_from("<QQ", head, 4 + 8 + 8)
        for name, per in (("data_level0.bin", per_element), ("length.bin", 4)):
            tail = (seg / name).read_bytes()[count * per :]
            if any(tail):
                found.append(f"{seg.name}/{name}: {sorted(set(tail))[:4]} past element {count}")
    return found


@pytest.fixture
def tagged_heap() -> Iterator[bool]:
    """This test's process heap tagged (:func:`_perturbed_heap`) from start to end; whether it
    could be."""
    with _perturbed_heap(1) as tagged:
        yield tagged


def _chroma_folder(st: AnyStore, root: Path) -> Path:
    return root / "chroma" if isinstance(st, ChromaStore) else root / ".vectors" / "chroma"


@pytest.fixture(params=["mem", "sqlite", "chroma", "file", "file-vectors"])
def kind(request: pytest.FixtureRequest) -> Iterator[str]:
    yield str(request.param)


@pytest.mark.slow
def test_purge_leaves_no_copy(kind: str, tmp_path: Path, tagged_heap: bool) -> None:
    st = _stores(tmp_path)[kind]()
    others = write_history(st)
    if kind != "mem":
        assert scan(tmp_path / "s"), "the scenario must put the secret in the files first"
    if _has_vectors(st) and tagged_heap:
        chroma = _chroma_folder(st, tmp_path / "s")
        assert _unzeroed_capacity(chroma), "HNSW capacity must hold this process's heap first"
    before = list(st.journal())
    receipt = st.purge("user", "address", reason="user asked for erasure", session="admin")
    pw_seqs = [c.seq for c in before if c.entry.name == "address"]
    assert receipt.redacted == tuple(pw_seqs) and receipt.tombstone is None
    assert receipt.record.seq == len(before) + 1
    if _has_vectors(st):
        assert any("rebuilt" in w for w in receipt.rewritten)
    if kind != "mem":
        assert scan(tmp_path / "s") == []
    check = st.verify_erased("user", "address")
    assert check.erased and check.looked, str(check)
    # neither leg finds it; everything else is found
    assert st.search(["user"], SECRET) == []
    assert [h.entry.name for h in st.recall(SECRET, scopes=["user"], mode="bm25")] == []
    if _has_vectors(st):
        names = [h.entry.name for h in st.recall(VERSIONS[3], scopes=["user"], mode="vector")]
        assert "address" not in names and names
    if isinstance(st, ChromaStore):
        assert st.verify().ok
    for name, content in others.items():
        scope = "project" if name == "editor" else "user"
        assert st.get(scope, name).content == content
        assert st.search([scope], content)[0].name == name
        hits = st.recall(content, scopes=[scope], mode="bm25")
        assert hits and hits[0].entry.name == name
    journal = list(st.journal())
    assert [c.seq for c in journal] == list(range(1, len(before) + 2))
    for old, new in zip(before, journal, strict=False):
        if old.entry.name == "address":
            assert new.entry.content == REDACTED and new.at == old.at and new.session == old.session
            assert new.message == old.message and new.tool == old.tool
            assert (new.reason == REDACTED) == bool(old.reason)
        else:
            assert new == old
    assert journal[-1].source == SOURCE_PURGED and journal[-1].session == "admin"
    assert journal[-1].entry.content == "user asked for erasure"
    assert lost_updates(st) == []
    st.close()
    if _has_vectors(st):  # searched after the purge, then closed: every capacity is zeros
        assert _unzeroed_capacity(_chroma_folder(st, tmp_path / "s")) == []
    if kind == "sqlite":
        with SqliteStore(tmp_path / "s" / "journal.sqlite3") as st2:
            assert list(st2.journal()) == journal and st2.recovery is None
            assert st2.verify_erased("user", "address").erased
    elif kind == "file":
        with FileStore(tmp_path / "s") as fs:
            assert list(fs.journal()) == journal and fs.recovery is None
            assert fs.verify_erased("user", "address").erased and fs.damaged_lines() == []
            assert fs.reconcile().changes == [], "files, journal and cursor agree"
    elif kind in ("chroma", "file-vectors"):
        # A fresh process, as a restart is, finds the erasure whole.
        got = _reopen_in_a_fresh_process(tmp_path / "s")
        assert got == {
            "records": len(journal),
            "last": "user asked for erasure",
            "verify": True if kind == "chroma" else None,
            "erased": True,
            "recovery": None,
            "vector_hits": sorted(n for n in others if n != "editor"),
        }
    assert scan(tmp_path / "s") == []


def collection_ids(st: ChromaStore, name: str) -> list[str]:
    """The ids of every vector of scope ``user`` whose metadata names ``name``, read from
    Chroma itself."""
    col = st.client.get_collection(st.collection_name("user"))
    return sorted(col.get(where={"name": name}, include=[])["ids"])


def test_purge_removes_every_window(tmp_path: Path) -> None:
    """An entry embedded as several windows (docs/recall.md#windows): after the purge no file
    holds any window's vector, nor the window ids, and the other entries keep theirs."""
    windowed = HashingEmbedder(64, window_words=3, window_stride=2)
    window_vectors = {
        f"window {k} of version {i}": windowed.embed([w])[0].tobytes()
        for i, text in enumerate(VERSIONS)
        for k, w in enumerate(text_windows(windowed, text))
    }
    assert len(window_vectors) > 2 * len(VERSIONS), "each version must have several windows"

    def window_hits() -> list[str]:
        return [
            f"{p.relative_to(tmp_path)}: {n}"
            for p in sorted((tmp_path / "s").rglob("*"))
            if p.is_file()
            for n, b in {**window_vectors, "a window id": b"user/address#1"}.items()
            if b in p.read_bytes()
        ]

    with ChromaStore(tmp_path / "s", embedder=windowed) as st:
        write_history(st)
        st.put(Entry("user", "address", VERSIONS[3]))
        assert window_hits(), "the scenario must put window vectors in the files first"
        collection = st.client.get_collection(st.collection_name("user"))
        held = collection.get(where={"name": "address"}, include=[])["ids"]
        assert len(held) > 2 and "user/address#1" in held, held
        receipt = st.purge("user", "address", reason="erasure", session="admin")
        assert receipt.vectors == len(held)
        assert collection_ids(st, "address") == []
        assert window_hits() == [] and scan(tmp_path / "s") == []
        assert st.verify_erased("user", "address").erased
        assert st.verify().ok
        assert st.recall("Meeting note 2 about the garden", scopes=["user"], mode="vector")


def test_purge_of_a_live_entry_tombstones_it_first(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "j.sqlite3") as st:
        st.put(Entry("user", "address", VERSIONS[0]))
        receipt = st.purge("user", "address", reason="erase")
        assert receipt.tombstone is not None and receipt.tombstone.seq == 2
        assert receipt.redacted == (1, 2) and receipt.index_rows == 1
        assert st.recall("address", scopes=["user"]) == []


def test_verify_erased_names_what_a_forget_keeps(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "j.sqlite3") as st:
        st.put(Entry("user", "address", VERSIONS[0]))
        st.forget("user", "address")
        check = st.verify_erased("user", "address")
        assert not check.erased
        assert "journal records 1 2 keep their content" in check.found


@pytest.mark.parametrize("reason", ["", "   ", "x" * 1025])
def test_bad_reason_writes_nothing(reason: str, tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "j.sqlite3") as st:
        st.put(Entry("user", "address", VERSIONS[0]))
        with pytest.raises(InvalidEntryError) as err:
            st.purge("user", "address", reason=reason)
        assert err.value.field == "reason"
        assert st.last_seq() == 1 and st.get("user", "address").content == VERSIONS[0]


def _kill_at(path: Path | str, phase: str, *, perturb: int = 0) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(PROC), str(path), phase],
        stdout=subprocess.PIPE,
        text=True,
        env=_perturbed_env(perturb),
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.slow
def test_sigkill_inside_the_transaction_rolls_back(tmp_path: Path) -> None:
    path = tmp_path / "s" / "journal.sqlite3"
    with SqliteStore(path) as st:
        write_history(st)
        before = list(st.journal())
    _kill_at(path, "txn")
    with SqliteStore(path) as st:
        assert st.recovery is not None and st.recovery.startswith("rolled back")
        assert list(st.journal()) == before
        st.purge("user", "address", reason="again")
        assert st.verify_erased("user", "address").erased
    assert scan(tmp_path / "s") == []


@pytest.mark.slow
def test_sigkill_after_commit_is_finished_by_reopen(tmp_path: Path) -> None:
    path = tmp_path / "s" / "journal.sqlite3"
    with SqliteStore(path) as st:
        write_history(st)
        n = st.last_seq()
    _kill_at(path, "scrub")
    with SqliteStore(path) as st:
        assert st.recovery is not None and st.recovery.startswith("finished")
        journal = list(st.journal())
        assert len(journal) == n + 1 and journal[-1].entry.content == "killed midway"
        assert st.verify_erased("user", "address").erased
    assert scan(tmp_path / "s") == []


@pytest.mark.slow
def test_cli_purge_prints_the_receipt(tmp_path: Path) -> None:
    path = tmp_path / "cli"
    with ChromaStore(path, embedder=EMBEDDER) as st:
        write_history(st)
    runner = CliRunner()
    refused = runner.invoke(main, ["purge", "user/address", "--path", str(path)])
    assert refused.exit_code != 0 and "--reason" in refused.output
    done = runner.invoke(
        main, ["purge", "user/address", "--path", str(path), "--reason", "GDPR request 17"]
    )
    assert done.exit_code == 0, done.output
    assert "journal records redacted: 2 4 6 8 11" in done.output
    assert "user/address: erased" in done.output
    assert f"rebuilt ({1 + len(VERSIONS)} entries)" in done.output  # tea and the meeting notes
    with SqliteStore(path / "journal.sqlite3") as st:
        assert list(st.journal())[-1].entry.content == "GDPR request 17"
    # the journal's last line reads as the purge it is, the reason beside it
    last = runner.invoke(main, ["journal", "--path", str(path)]).output.splitlines()[-1]
    assert last.split()[3:5] == ["purge", "user/address"], last
    assert last.endswith("reason 'GDPR request 17'") and "forget" not in last, last
    # This process wrote the secret; the purge zeroed the HNSW files' unused capacity, where
    # hnswlib writes uninitialised heap bytes (docs/storage.md#purge-and-the-files).
    assert scan(tmp_path) == []


@pytest.mark.slow
def test_purge_zeroes_the_unused_hnsw_capacity(tmp_path: Path) -> None:
    """hnswlib writes the slots past its last element from memory it never cleared; a purge
    zeroes them in every segment, and HNSW still finds every entry afterwards."""
    with ChromaStore(tmp_path / "s", embedder=HashingEmbedder(1024)) as st:
        write_history(st)
        st.put_many([Entry("project", f"n-{i}", f"garden note tag{i * 7919}") for i in range(1100)])
        st.put_many([Entry("team", f"t-{i}", f"garden note team{i}") for i in range(5)])
        queries = [f"garden note tag{i * 7919}" for i in (0, 550, 1099)] + ["garden note team3"]

        def ranked(query: str) -> list[str]:
            hits = st.recall(query, scopes=["project", "team"], mode="vector", limit=10)
            return [h.entry.name for h in hits]

        before = [ranked(q) for q in queries]
        assert all(len(names) == 10 for names in before)
        folder = tmp_path / "s" / "chroma"
        segments = [p for p in folder.iterdir() if hnsw_slack(p)]
        assert segments, "the scenario must persist HNSW segment files"
        spans = [span for p in segments for span in (hnsw_slack(p) or {}).values()]
        assert any(start for start, _ in spans), "elements must be in the files, not only the log"
        assert any(end > start for start, end in spans), "some segment must have capacity left"
        ranges = {p: hnsw_slack(p) for p in segments}
        for p, slack in ranges.items():  # fill the slack, as a dirty heap would
            for name, (start, end) in (slack or {}).items():
                with (p / name).open("r+b") as f:
                    f.seek(start)
                    f.write(b"\xab" * (end - start))
        receipt = st.purge("user", "address", reason="erasure", session="admin")
        assert any("unused HNSW capacity zeroed" in line for line in receipt.rewritten)
        for p in folder.iterdir():
            for name, (start, end) in (hnsw_slack(p) or {}).items():
                data = (p / name).read_bytes()
                assert data[start:end] == bytes(end - start), f"{p.name}/{name}"
        assert st.verify_erased("user", "address").erased
        # the zeros changed nothing HNSW uses: each query ranks the same entries as before
        assert [ranked(q) for q in queries] == before
        st.put(Entry("project", "after", "written after the purge"))
        assert st.verify().ok


def _table_file_hits(cluster: Cluster, dsn: str) -> list[str]:
    """Needles found in the files of every table, index and TOAST relation of ``dsn``'s
    database, after a CHECKPOINT has written their pages."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        paths = [
            str(r[0])
            for r in conn.execute(
                "SELECT pg_relation_filepath(c.oid) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname IN ('public', 'pg_toast')"
                " AND pg_relation_filepath(c.oid) IS NOT NULL"
            )
        ]
    data = cluster.folder / "data"
    files = [p for rel in paths for p in data.glob(rel + "*") if p.is_file()]
    assert files
    return [f"{p.name}: {n}" for p in files for n, b in _needles().items() if b in p.read_bytes()]


@pytest.mark.slow
def test_postgres_purge_leaves_no_copy_in_the_tables_files(pg_cluster: Cluster) -> None:
    from agentmemory.stores.postgres.store import PostgresStore

    dsn = pg_cluster.create_database()
    with PostgresStore(dsn) as st:
        others = write_history(st)
        assert _table_file_hits(pg_cluster, dsn), "the secret must be in the files first"
        before = list(st.journal())
        receipt = st.purge("user", "address", reason="user asked for erasure")
        assert receipt.redacted == tuple(c.seq for c in before if c.entry.name == "address")
        assert st.verify_erased("user", "address").erased
        assert st.search(["user"], SECRET) == [] and st.recall(SECRET, scopes=["user"]) == []
        for name, content in others.items():
            scope = "project" if name == "editor" else "user"
            assert st.get(scope, name).content == content
        journal = list(st.journal())
        assert [c.seq for c in journal] == list(range(1, len(before) + 2))
        assert journal[-1].source == SOURCE_PURGED and lost_updates(st) == []
    assert _table_file_hits(pg_cluster, dsn) == []
    with PostgresStore(dsn) as st:  # reopen: the same journal, nothing to recover, erased
        assert list(st.journal()) == journal and st.recovery is None
        assert st.verify_erased("user", "address").erased
        assert st.search(["user"], SECRET) == []
    assert _table_file_hits(pg_cluster, dsn) == []


@pytest.mark.slow
def test_postgres_purge_killed_before_its_vacuum_is_finished_by_reopen(pg_cluster: Cluster) -> None:
    """Killed after its COMMIT and before VACUUM FULL, a purge leaves dead row versions holding
    the secret: verify_erased says so (the pending key), and the next open runs the vacuum."""
    from agentmemory.stores.postgres.store import PostgresStore

    dsn = pg_cluster.create_database()
    with psycopg.connect(dsn, autocommit=True) as conn:  # lets verify_erased count dead rows
        conn.execute("CREATE EXTENSION pgstattuple")
    with PostgresStore(dsn) as st:
        write_history(st)
        n = st.last_seq()
        assert st.verify_erased("user", "address").looked[-1].endswith("(pgstattuple)")
    opened_before = PostgresStore(dsn)
    try:
        _kill_at(dsn, "pg-vacuum")
        assert _table_file_hits(pg_cluster, dsn), "dead row versions hold the secret"
        check = opened_before.verify_erased("user", "address")
        assert not check.erased and any("VACUUM FULL has not run" in f for f in check.found)
        assert any("5 dead row versions in memory_journal" in f for f in check.found), check
    finally:
        opened_before.close()
    with PostgresStore(dsn) as st:
        assert st.recovery is not None and st.recovery.startswith("finished"), st.recovery
        journal = list(st.journal())
        assert len(journal) == n + 1 and journal[-1].entry.content == "killed midway"
        assert st.verify_erased("user", "address").erased
    with PostgresStore(dsn) as st:
        assert st.recovery is None
    assert _table_file_hits(pg_cluster, dsn) == []


def test_purge_session_purges_what_one_session_wrote_in_the_allowed_scopes(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "j.sqlite3") as st:
        st.put(Entry("user", "mine", f"a {SECRET}"), session="leaky")
        st.put(Entry("user", "mine", f"b {SECRET}"), session="other")
        st.put(Entry("user", "theirs", "kept"), session="other")
        st.put(Entry("project", "mine-too", f"c {SECRET}"), session="leaky")
        receipts = purge_session(st, "leaky", ["user"], by="admin")
        assert [(r.scope, r.name) for r in receipts] == [("user", "mine")]
        assert receipts[0].redacted == (1, 2, 5) and receipts[0].reason == "purge of session leaky"
        assert st.get("user", "theirs").content == "kept"
        assert st.get("project", "mine-too").content == f"c {SECRET}"  # scope not allowed
        assert st.verify_erased("user", "mine").erased
        for scopes in ([], "user", ["no-such-scope"], ["Bad"]):
            with pytest.raises(InvalidEntryError) as err:
                purge_session(st, "leaky", scopes)  # type: ignore[arg-type]
            assert err.value.field == "scope"
        with pytest.raises(InvalidEntryError):
            purge_session(st, "", ["user"])
        assert purge_session(st, "nobody", ["user"]) == []


# -- the Markdown folder (docs/filestore-format.md#a-purge-rewrites-the-journal) -----------------


def _no_leftovers(folder: Path) -> list[str]:
    """Files a purge must not leave: its marker and temporaries (the journal's, the entry
    file moved aside)."""
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.name == ".purge.json" or p.name.startswith(".tmp-")
    )


def _line_ends(data: bytes) -> set[int]:
    return {i for i, b in enumerate(data) if b == 0x0A}


def test_file_store_purge_of_a_hand_edited_live_entry(tmp_path: Path) -> None:
    """A person's edit is journaled as reconciled first, then the tombstone, both redacted in
    the journal; a torn tail holding the secret is blanked; every old line still ends where it
    did; a handle opened before the purge follows it without rebuilding anything."""
    folder = tmp_path / "s"
    st = FileStore(folder)
    others = write_history(st, forget=False)
    other_handle = FileStore(folder)
    assert other_handle.recall(SECRET, scopes=["user"], mode="bm25")[0].entry.name == "address"
    path = folder / "user" / "address.md"
    path.write_text(path.read_text() + f"edited by hand: {SECRET}\n")
    with (folder / "journal.jsonl").open("ab") as f:  # a writer killed mid-append
        f.write(b'{"seq":99,"entry":{"scope":"user","name":"address","content":"' + SECRET.encode())
    old = (folder / "journal.jsonl").read_bytes()
    before = list(st.journal())
    receipt = st.purge("user", "address", reason="erase", session="admin")
    assert receipt.tombstone is not None and receipt.tombstone.entry.content == REDACTED
    assert receipt.redacted[-2:] == (len(before) + 1, len(before) + 2)  # reconciled, tombstone
    assert receipt.record.seq == len(before) + 3 and receipt.index_rows == 1
    journal = list(st.journal())
    reconciled, tomb = journal[-3], journal[-2]
    assert reconciled.source == "reconciled" and reconciled.entry.content == REDACTED
    assert tomb.entry.deleted and tomb.replaced == reconciled.entry.hash
    last = [c for c in journal[:-3] if c.entry.name == "address"][-1]
    assert reconciled.prev == reconciled.replaced == last.entry.hash  # the chain holds
    new = (folder / "journal.jsonl").read_bytes()
    assert _line_ends(old) <= _line_ends(new), "every old line keeps its byte offsets"
    assert new[len(old) - 1 : len(old) + 1] == b" \n", "the torn tail is blanked and ended"
    assert not path.exists() and "address" not in (folder / "user" / "INDEX.md").read_text()
    assert '"user/address"' not in (folder / ".state.json").read_text()
    assert scan(folder) == [] and _no_leftovers(folder) == []
    assert st.damaged_lines() == [] and lost_updates(st) == []
    # the handle opened before follows the journal (offsets unchanged) and finds nothing
    assert other_handle.recall(SECRET, scopes=["user"], mode="bm25") == []
    assert other_handle.verify_erased("user", "address").erased
    other_handle.put(Entry("user", "later", "written by the other handle"))
    assert [c.seq for c in st.journal()] == list(range(1, len(journal) + 2))
    for name, content in others.items():
        assert other_handle.get("project" if name == "editor" else "user", name).content == content
    other_handle.close()
    st.close()


@pytest.mark.slow
def test_file_store_purge_of_a_record_written_tighter_than_its_redacted_form(
    tmp_path: Path,
) -> None:
    """A record another writer wrote shorter than its redacted line (here a hash that is not
    sha256) cannot be padded: offsets move, and the cursor and the vectors are made again from
    the new journal."""
    folder = tmp_path / "s"
    with FileStore(folder, embedder=EMBEDDER) as st:
        st.put(Entry("user", "tea", "Likes green tea"))
        st.put(Entry("user", "address", VERSIONS[0]))
        st.forget("user", "address")
    line = '{"seq":4,"entry":{"scope":"user","name":"pin","content":"7","hash":"h"},"at":"2026-01-01T00:00:00Z"}\n'
    with (folder / "journal.jsonl").open("a") as f:
        f.write(line)
    with FileStore(folder, embedder=EMBEDDER) as st:
        receipt = st.purge("user", "pin", reason="erase")
        assert any("offsets moved" in w for w in receipt.rewritten)
        assert receipt.redacted == (4,)
        receipt = st.purge("user", "address", reason="erase")
        assert st.verify_erased("user", "pin").erased and st.verify_erased("user", "address").erased
        names = [h.entry.name for h in st.recall("green tea", scopes=["user"], mode="vector")]
        assert names == ["tea"]
        assert [c.seq for c in st.journal()] == [1, 2, 3, 4, 5, 6]
    with FileStore(folder) as st:
        assert st.reconcile().changes == [] and st.recovery is None
    assert scan(folder) == [] and _no_leftovers(folder) == []


@pytest.mark.slow
def test_file_store_purge_without_an_embedder_scrubs_the_vectors(tmp_path: Path) -> None:
    """A handle without an embedder still erases the folder's .vectors (it opens it for the
    purge); with another process owning .vectors it refuses, writing nothing."""
    folder = tmp_path / "s"
    with FileStore(folder, embedder=EMBEDDER) as st:
        write_history(st)
    holder = subprocess.Popen(
        [sys.executable, str(PROC), str(folder), "hold"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        journal = (folder / "journal.jsonl").read_bytes()
        with FileStore(folder, lock_timeout_s=0.2) as st, pytest.raises(StoreLockedError):
            st.purge("user", "address", reason="erase")
        assert (folder / "journal.jsonl").read_bytes() == journal
        assert _no_leftovers(folder) == []
    finally:
        holder.kill()
        holder.wait(timeout=60)
    with FileStore(folder) as st:
        receipt = st.purge("user", "address", reason="erase")
        assert any(".vectors" in w and "rebuilt" in w for w in receipt.rewritten)
        assert st.verify_erased("user", "address").erased
    assert scan(folder) == []
    got = _reopen_in_a_fresh_process(folder)
    assert got["erased"] is True and got["recovery"] is None
    assert got["vector_hits"] == ["between-0", "between-1", "between-2", "between-3", "tea"]


def _live_history_with_a_hand_edit(folder: Path) -> tuple[list[object], str]:
    with FileStore(folder, embedder=EMBEDDER) as st:
        write_history(st, forget=False)
        before: list[object] = list(st.journal())
    path = folder / "user" / "address.md"
    edited = path.read_text() + "edited by hand\n"
    path.write_text(edited)
    return before, edited


@pytest.mark.slow
def test_file_store_purge_killed_before_the_rename_is_rolled_back(
    tmp_path: Path, tagged_heap: bool
) -> None:
    folder = tmp_path / "s"
    before, edited = _live_history_with_a_hand_edit(folder)
    _kill_at(folder, "file-before", perturb=2)
    assert (folder / ".purge.json").exists() and not (folder / "user" / "address.md").exists()
    with FileStore(folder, embedder=EMBEDDER) as st:
        assert st.recovery is not None and st.recovery.startswith("rolled back"), st.recovery
        assert list(st.journal()) == before, "the journal is the old one"
        assert (folder / "user" / "address.md").read_text() == edited, "the file is back"
        assert _no_leftovers(folder) == []
        names = [h.entry.name for h in st.recall(VERSIONS[3], scopes=["user"], mode="vector")]
        assert "address" in names
        st.purge("user", "address", reason="again")
        assert st.verify_erased("user", "address").erased
    assert scan(folder) == [] and _no_leftovers(folder) == []
    assert _unzeroed_capacity(folder / ".vectors" / "chroma") == []


@pytest.mark.slow
def test_file_store_purge_killed_after_the_rename_is_finished(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    with _perturbed_heap(1):  # the writer's capacity reads 0xfe, the purger's 0xfd, ...
        before, _ = _live_history_with_a_hand_edit(folder)
    chroma = folder / ".vectors" / "chroma"
    assert _unzeroed_capacity(chroma) == [], "the writer's close zeroes the capacity"
    _kill_at(folder, "file-after", perturb=2)
    got = _reopen_in_a_fresh_process(folder, perturb=3)
    assert _unzeroed_capacity(chroma) == [], "the recovery zeroes every segment's capacity"
    assert str(got["recovery"]).startswith("finished"), got
    assert got["records"] == len(before) + 3 and got["last"] == "killed midway"
    assert got["erased"] is True
    assert got["vector_hits"] == ["between-0", "between-1", "between-2", "between-3", "tea"]
    # Scanned before this process opens the folder: this process wrote the secret, so its heap
    # holds it, and HNSW capacity Chroma writes from that heap could carry it back into the files
    # (docs/storage.md, "The HNSW files' unused capacity"). The claim is about the recovery.
    assert scan(folder) == [] and _no_leftovers(folder) == []
    with FileStore(folder) as st:
        assert st.recovery is None and st.verify_erased("user", "address").erased
        journal = list(st.journal())
        assert [c.source for c in journal[-3:]] == ["reconciled", "", SOURCE_PURGED]
        assert st.reconcile().changes == []
    assert _no_leftovers(folder) == []


@pytest.mark.slow
def test_a_process_that_held_the_text_leaves_no_heap_bytes_after_a_purge_elsewhere(
    tmp_path: Path, tagged_heap: bool
) -> None:
    """Issue 22 case 8: this process wrote the secret (its heap held it), another process purged
    it, and this process opens the folder again, searches and closes. Chroma writes a segment
    whose elements are still in its log, capacity and all, from this heap at that close; the
    close zeroes it, so no file holds this process's heap bytes (the tag) or the erased text."""
    folder = tmp_path / "s"
    with FileStore(folder, embedder=EMBEDDER) as st:
        write_history(st)
    purge = ["purge", "user/address", "--path", str(folder), "--reason", "erasure"]
    done = subprocess.run(
        [sys.executable, "-m", "agentmemory", *purge],
        capture_output=True,
        text=True,
        env=_perturbed_env(2),
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert scan(folder) == [] and _unzeroed_capacity(folder / ".vectors" / "chroma") == []
    with FileStore(folder, embedder=EMBEDDER) as st:
        vec = np.asarray(EMBEDDER.embed([VERSIONS[3]]), dtype=np.float32)[0]
        hits = [e.name for e, _ in st.search_vector(vec, limit=10, scopes=["user"])]
        assert "address" not in hits and "tea" in hits
    assert _unzeroed_capacity(folder / ".vectors" / "chroma") == []
    assert scan(folder) == []


@pytest.mark.slow
def test_an_open_zeroes_the_capacity_a_killed_holder_left(
    tmp_path: Path, tagged_heap: bool
) -> None:
    """A holder killed before its close leaves the capacity Chroma wrote from its heap; the next
    open zeroes it, under the folder lock, before its client loads the folder (the files are
    recorded as loaded, so no probe child rewrites them first); the index still answers, and
    what this process's own load wrote there is zeros again after its close."""
    folder = tmp_path / "s"
    with FileStore(folder, embedder=EMBEDDER) as st:
        write_history(st, forget=False)
    chroma = folder / ".vectors" / "chroma"
    for seg in (p for p in chroma.iterdir() if (p / "header.bin").exists()):
        count, per = struct.unpack_from("<QQ", (seg / "header.bin").read_bytes(), 20)
        with (seg / "data_level0.bin").open("r+b") as f:  # as the killed holder's heap left it
            f.seek(count * per)
            f.write(SECRET.encode() * 8)
    record_loaded(folder / ".vectors")  # as a holder that loaded them would have recorded them
    assert _unzeroed_capacity(chroma)
    with FileStore(folder, embedder=EMBEDDER) as st:
        assert _unzeroed_capacity(chroma) == []
        assert not [p for p in chroma.rglob("*.bin") if SECRET.encode() in p.read_bytes()]
        vec = np.asarray(EMBEDDER.embed([VERSIONS[3]]), dtype=np.float32)[0]
        assert "address" in [e.name for e, _ in st.search_vector(vec, limit=10, scopes=["user"])]
        if tagged_heap:  # the search loaded the segments: Chroma wrote them from this heap
            assert _unzeroed_capacity(chroma)
    assert _unzeroed_capacity(chroma) == []


@pytest.mark.slow
def test_cli_purge_on_a_markdown_folder(tmp_path: Path, tagged_heap: bool) -> None:
    folder = tmp_path / "notes"
    with FileStore(folder, embedder=EMBEDDER) as st:
        write_history(st)
    runner = CliRunner()
    done = runner.invoke(
        main,
        ["purge", "user/address", "--path", str(folder), "--reason", "GDPR request 17"],
    )
    assert done.exit_code == 0, done.output
    assert "journal records redacted: 2 4 6 8 11" in done.output
    assert "user/address: erased" in done.output and ".vectors" in done.output
    with FileStore(folder) as st:
        assert list(st.journal())[-1].entry.content == "GDPR request 17"
    assert scan(tmp_path) == [] and _no_leftovers(folder) == []
    assert _unzeroed_capacity(folder / ".vectors" / "chroma") == []


def _hold_a_read(db: Path) -> subprocess.Popen[str]:
    """A real process holding a read transaction on ``db`` (as a backup or a person's sqlite3
    shell would), printing ``ready`` once it holds it."""
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('BEGIN'); c.execute('SELECT count(*) FROM segments').fetchall()\n"
            "print('ready', flush=True); time.sleep(60)\n",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
    return reader


@pytest.mark.slow
def test_a_busy_vacuum_still_zeroes_the_hnsw_capacity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22 case 8: when another process holds a read on chroma.sqlite3 past the busy
    timeout, the scrub's VACUUM fails; the HNSW files' unused capacity (heap bytes hnswlib
    wrote, the erased text among them) is zeroed all the same, and the failure is raised."""
    from agentmemory.stores.chroma import files

    folder = tmp_path / "s"
    with FileStore(folder, embedder=EMBEDDER) as st:
        write_history(st, forget=False)
    chroma = folder / ".vectors" / "chroma"
    planted = []
    for seg in sorted(p for p in chroma.iterdir() if (p / "data_level0.bin").exists()):
        data = seg / "data_level0.bin"
        with data.open("r+b") as f:  # as a process whose heap held the secret leaves it
            f.seek(data.stat().st_size - len(SECRET))
            f.write(SECRET.encode())
        planted.append(data)
    assert planted and all(SECRET.encode() in p.read_bytes() for p in planted)
    reader = _hold_a_read(chroma / "chroma.sqlite3")
    try:
        monkeypatch.setattr(files, "BUSY_TIMEOUT_S", 0.2)
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            files.scrub_chroma_folder(chroma)
    finally:
        reader.kill()
        reader.wait(timeout=60)
    assert [p for p in planted if SECRET.encode() in p.read_bytes()] == []
    with FileStore(folder, embedder=EMBEDDER) as st:  # the index still loads and answers
        vec = np.asarray(EMBEDDER.embed([VERSIONS[3]]), dtype=np.float32)[0]
        assert "address" in [e.name for e, _ in st.search_vector(vec, limit=10, scopes=["user"])]


@pytest.mark.slow
def test_a_scrub_that_failed_at_close_is_done_by_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22 case 8: the purging process's scrub at its last close fails (a reader holds
    chroma.sqlite3); it leaves chroma.scrub-pending, and the next open, in a fresh process,
    scrubs before Chroma loads the folder: no file keeps the erased bytes."""
    from agentmemory.stores.chroma import files

    folder = tmp_path / "s"
    st = FileStore(folder, embedder=EMBEDDER)
    write_history(st)
    st.purge("user", "address", reason="erase")
    chroma = folder / ".vectors" / "chroma"
    planted = []
    for seg in sorted(p for p in chroma.iterdir() if (p / "data_level0.bin").exists()):
        data = seg / "data_level0.bin"
        with data.open("r+b") as f:  # as Chroma writing from this process's heap would leave it
            f.seek(data.stat().st_size - len(SECRET))
            f.write(SECRET.encode())
        planted.append(data)
    assert planted
    reader = _hold_a_read(chroma / "chroma.sqlite3")
    try:
        monkeypatch.setattr(files, "BUSY_TIMEOUT_S", 0.2)
        st.close()
    finally:
        reader.kill()
        reader.wait(timeout=60)
    mark = folder / ".vectors" / "chroma.scrub-pending"
    assert "locked" in mark.read_text()
    got = _reopen_in_a_fresh_process(folder)
    assert got["erased"] is True
    assert got["vector_hits"] == ["between-0", "between-1", "between-2", "between-3", "tea"]
    assert not mark.exists() and scan(folder) == []
