"""Damaged files: the journal stays the truth when an index's pages are damaged.

Each test corrupts a copy of a real store on disk (real sqlite, real Chroma) and checks what a user
sees: writes still land in the journal, one error line names the folder and the cure, ``verify``
finds the damage and ``verify --repair`` fixes it (docs/storage.md#a-damaged-lexical-index).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from agentmemory import (
    AgentMemoryError,
    ChromaStore,
    Entry,
    FileStore,
    SqliteStore,
    StoreIOError,
    open_store,
    tools,
)
from agentmemory.cli import main
from agentmemory.errors import IndexDamagedError, IndexDamagedWarning, IndexOutOfStepWarning
from agentmemory.opening import open_store_moving_damage
from agentmemory.stores.chroma.damage import DAMAGED_PREFIX
from agentmemory.verify import LexicalCheck, check_reindexed, check_store
from embedders import HashingEmbedder


def fill(store: SqliteStore | ChromaStore, n: int = 300) -> None:
    store.put_many(
        [Entry("user", f"n-{i}", f"note {i} about zebras and lions, day {i}") for i in range(n)]
    )


def fill_varied(store: ChromaStore, n: int) -> None:
    """``n`` entries of 8 words each drawn from 400 (seeded), none of them "fresh" or "zebra".

    For a test that asks the vector leg for one entry: under the hashing embedder the notes
    :func:`fill` writes are near-copies of each other, and an entry orthogonal to all of them
    is left without in-links by HNSW's neighbour pruning (Malkov and Yashunin 2018,
    algorithm 4) in about one graph of 40 (chroma rebuilds the graph with new random levels at
    each open), which no real history looks like."""
    rng = random.Random(7)
    words = [f"w{j}" for j in range(400)]
    store.put_many([Entry("user", f"n-{i}", " ".join(rng.sample(words, 8))) for i in range(n)])


def garble_lexical_pages(db: Path) -> list[int]:
    """Overwrite every page of the FTS5 index's data table with random bytes (the file is
    closed); returns the page numbers. The entries and the journal are untouched."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [
            int(r[0])
            for r in conn.execute("SELECT pageno FROM dbstat WHERE name = 'memory_lexical_data'")
        ]
    conn.close()
    assert pages and 1 not in pages
    with db.open("r+b") as f:
        for page in pages:
            f.seek((page - 1) * size)
            f.write(os.urandom(size))
    return pages


HASHING = ("--embedder", "hashing:256")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_a_damaged_lexical_index_takes_writes_and_is_rebuilt(tmp_path: Path) -> None:
    db = tmp_path / "store" / "journal.sqlite3"
    with SqliteStore(db) as st:
        fill(st)
    garble_lexical_pages(db)
    with SqliteStore(db) as st:
        with pytest.warns(IndexDamagedWarning, match="verify --repair"):
            st.put(Entry("user", "fresh", "a fresh zebra sighting"))
        st.forget("user", "n-3")  # no second warning needed; it lands too
        assert st.get("user", "fresh").content == "a fresh zebra sighting"
        assert [c.entry.name for c in st.journal()][-2:] == ["fresh", "n-3"]
        with pytest.raises(IndexDamagedError) as err:
            st.search_text("zebra", scopes=["user"], limit=5)
        line = str(err.value)
        assert "\n" not in line and str(db.parent) in line and "verify --repair" in line
        problems = st.check_lexical()
        assert any("FTS5 integrity-check" in p or "quick_check" in p for p in problems), problems
        assert st.rebuild_lexical() == 300  # 300 - n-3 + fresh
        assert st.check_lexical() == []
        names = [e.name for e, _ in st.search_text("fresh zebra", scopes=["user"], limit=3)]
        assert names[0] == "fresh"
        assert "n-3" not in [
            e.name for e, _ in st.search_text("note 3", scopes=["user"], limit=300)
        ]
        st.put(Entry("user", "later", "a later write is indexed again"))
        assert [e.name for e, _ in st.search_text("later", scopes=["user"], limit=3)] == ["later"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()


@pytest.mark.slow
def test_the_cli_reports_a_damaged_lexical_index_and_repairs_it(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    with ChromaStore.open(folder, embedder=HashingEmbedder(256)) as st:
        fill(st, 200)
    garble_lexical_pages(folder / "journal.sqlite3")
    saved = run("save", "user/fresh", "a fresh zebra", "--path", str(folder), *HASHING)
    assert saved.exit_code == 0, saved.output
    said = saved.stderr.strip().splitlines()  # one line of ours, not Python's warning format
    assert len(said) == 1 and said[0].startswith("agentmemory: "), said
    assert "lexical index" in said[0] and "Warning" not in said[0] and ".py:" not in said[0]
    checked = run("verify", "--path", str(folder), *HASHING)
    assert checked.exit_code == 1
    assert "lexical index" in checked.output and "verify --repair" in checked.output
    repaired = run("verify", "--repair", "--path", str(folder), *HASHING)
    assert repaired.exit_code == 0, repaired.output
    assert "lexical index rebuilt: 201 entries" in repaired.output
    again = run("verify", "--path", str(folder), *HASHING)
    assert again.exit_code == 0, again.output
    found = run("search", "fresh zebra", "--mode", "bm25", "--path", str(folder), *HASHING)
    assert found.exit_code == 0 and "1. user/fresh" in found.output, found.output


def test_a_store_made_before_the_document_frequencies_opens_with_a_damaged_lexical_index(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Migration m006 fills memory_lexical_df from FTS5's own counts; when FTS5's pages are
    garbled the open still succeeds, records the damage and says the cure; --repair's rebuild
    then fills the table."""
    db = tmp_path / "store" / "journal.sqlite3"
    with SqliteStore(db) as st:
        fill(st)
    with sqlite3.connect(db) as conn:  # the file as the code before m006 left it
        conn.executescript(
            "DROP TABLE memory_lexical_df; DELETE FROM store_schema WHERE version = 6;"
        )
    conn.close()
    garble_lexical_pages(db)
    with SqliteStore(db) as st:
        assert "verify --repair" in caplog.text and "lexical index is damaged" in caplog.text
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the damage is known: the write says nothing more
            st.put(Entry("user", "fresh", "a fresh zebra sighting"))
        with pytest.raises(IndexDamagedError):
            st.search_text("zebra", scopes=["user"], limit=5)
        assert st.check_lexical() != []
        assert st.rebuild_lexical() == 301
        assert st.check_lexical() == []
        with sqlite3.connect(db) as conn:
            (zebras,) = conn.execute(
                "SELECT docs FROM memory_lexical_df WHERE term = 'zebra'"
            ).fetchone()
        conn.close()
        assert zebras == 301
        names = [e.name for e, _ in st.search_text("fresh zebra", scopes=["user"], limit=3)]
        assert names[0] == "fresh"


@pytest.mark.slow
def test_a_document_frequency_table_out_of_step_is_found_and_repaired(tmp_path: Path) -> None:
    """A count changed behind the store's back (a tool that edits the file) is a lexical index
    problem: verify names the table and the term, --repair rebuilds it."""
    folder = tmp_path / "store"
    with ChromaStore.open(folder, embedder=HashingEmbedder(256)) as st:
        fill(st, 50)
    with sqlite3.connect(folder / "journal.sqlite3") as conn:
        conn.execute("UPDATE memory_lexical_df SET docs = docs + 7 WHERE term = 'lion'")
    conn.close()
    checked = run("verify", "--path", str(folder), *HASHING)
    assert checked.exit_code == 1
    assert "memory_lexical_df" in checked.output and "'lion': 57 in the table, 50" in (
        checked.output
    ), checked.output
    repaired = run("verify", "--repair", "--path", str(folder), *HASHING)
    assert repaired.exit_code == 0, repaired.output
    assert "lexical index rebuilt: 50 entries" in repaired.output
    assert run("verify", "--path", str(folder), *HASHING).exit_code == 0


def test_the_tools_say_a_damaged_index_is_permanent_and_name_no_host_path(tmp_path: Path) -> None:
    db = tmp_path / "store" / "journal.sqlite3"
    with SqliteStore(db) as st:
        fill(st, 50)
    garble_lexical_pages(db)
    with SqliteStore(db) as st:
        search = {t.name: t for t in tools(st, ["user"])}["memory_search"]
        result = search({"query": "zebra"})
    assert result.is_error
    assert "try again" not in result.text and str(tmp_path) not in result.text
    assert "damaged" in result.text and "verify --repair" in result.text


# -- errors that are not ours: every sqlite failure is one AgentMemoryError line ---------------


def garble_table(db: Path, table: str) -> None:
    """Overwrite every page of ``table``'s b-tree with random bytes (the file is closed)."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [
            int(r[0]) for r in conn.execute("SELECT pageno FROM dbstat WHERE name = ?", (table,))
        ]
    conn.close()
    assert pages and 1 not in pages
    with db.open("r+b") as f:
        for page in pages:
            f.seek((page - 1) * size)
            f.write(os.urandom(size))


def one_line_error(err: BaseException, folder: Path, *words: str) -> None:
    text = str(err)
    assert isinstance(err, AgentMemoryError) and "\n" not in text, repr(err)
    assert text.startswith("agentmemory: ") and str(folder) in text, text
    for w in words:
        assert w in text, text


@pytest.mark.parametrize("table", ["memory_journal", "memory_entries"])
def test_garbled_journal_pages_give_one_line_naming_the_folder(tmp_path: Path, table: str) -> None:
    db = tmp_path / "store" / "journal.sqlite3"
    with SqliteStore(db) as st:
        fill(st)
    garble_table(db, table)
    with SqliteStore(db) as st:
        calls = {
            "memory_journal": [lambda: list(st.journal())],
            "memory_entries": [lambda: st.get("user", "n-5"), lambda: st.list("user")],
        }[table]
        for call in [*calls, lambda: st.put(Entry("user", "x", "y"))]:
            with pytest.raises(StoreIOError) as err:
                call()
            assert err.value.kind == "damaged"
            one_line_error(err.value, db.parent, "damaged", "backup")
    result = run("journal", "--path", str(db.parent))
    if table == "memory_journal":
        assert result.exit_code == 1
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "damaged" in lines[0] and str(db.parent) in lines[0]


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    """SQLite's own SQLITE_FULL, reached by capping the file's pages (PRAGMA max_page_count, what
    a full disk looks like to sqlite) on the store's writer connection."""
    db = tmp_path / "store" / "journal.sqlite3"
    with SqliteStore(db) as st:
        fill(st, 20)
        pages = st._writer.execute("PRAGMA page_count").fetchone()[0]
        st._writer.execute(f"PRAGMA max_page_count = {pages}")
        big = [Entry("user", f"big-{i}", f"{i} " + "lorem ipsum " * 300) for i in range(200)]
        with pytest.raises(StoreIOError) as err:
            st.put_many(big)
        assert err.value.kind == "full"
        one_line_error(err.value, db.parent, "disk is full", "nothing was written")
        assert len(list(st.journal())) == 20 and len(st.list("user")) == 20
        st._writer.execute("PRAGMA max_page_count = 1073741823")
        assert len(st.put_many(big)) == 200  # the rerun finishes the job


def test_a_hybrid_search_whose_lexical_leg_failed_is_not_labelled_hybrid(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    with ChromaStore.open(folder, embedder=HashingEmbedder(256)) as st:
        fill(st, 50)
    garble_lexical_pages(folder / "journal.sqlite3")
    found = run("search", "zebras", "--path", str(folder), "--json")
    assert found.exit_code == 0, found.output
    out = json.loads(found.stdout)
    assert out["mode"] == "vector" and set(out["failed_legs"]) == {"bm25"}
    assert "damaged" in out["failed_legs"]["bm25"]
    assert out["hits"] and all(set(h["legs"]) == {"vector"} for h in out["hits"])
    text = run("search", "zebras", "--path", str(folder))
    assert "(vector)" in text.stdout.splitlines()[0] and "(hybrid)" not in text.stdout
    assert "the bm25 leg failed" in text.stderr and "verify --repair" in text.stderr


# -- a damaged vector index (docs/storage.md#a-damaged-vector-index) ---------------------------


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "garbled"])
def test_a_damaged_vector_index_takes_writes_and_is_moved_aside_and_rebuilt(
    tmp_path: Path, damage: str
) -> None:
    folder = tmp_path / "store"
    with ChromaStore.open(folder, embedder=HashingEmbedder(256)) as st:
        fill_varied(st, 100)
    index = folder / "chroma" / "chroma.sqlite3"
    size = index.stat().st_size
    if damage == "truncated":
        with index.open("r+b") as f:
            f.truncate(size // 2)
    else:
        with index.open("r+b") as f:
            f.seek(4096)
            f.write(os.urandom(size - 8192))
    saved = run("save", "user/fresh", "a fresh zebra", "--path", str(folder), *HASHING)
    assert saved.exit_code == 0, saved.output
    assert "journal seq 101" in saved.stdout
    warning = saved.stderr.strip().splitlines()
    assert len(warning) == 1 and "vector index" in warning[0] and "verify --repair" in warning[0]
    with SqliteStore(folder / "journal.sqlite3") as journal:
        assert journal.get("user", "fresh").content == "a fresh zebra"
    # a search still answers, on the BM25 leg, and says why (before: one error line, exit 1)
    searched = run("search", "fresh zebra", "--path", str(folder), *HASHING, "--json")
    assert searched.exit_code == 0, searched.output
    answer = json.loads(searched.stdout)
    assert answer["mode"] == "bm25" and answer["hits"][0]["name"] == "fresh", answer
    assert "damaged" in answer["hits"][0]["unavailable"]["vector"]
    assert "damaged" in searched.stderr and "verify --repair" in searched.stderr
    with tools_store(folder) as st:  # an agent's memory_search says so too
        search = {t.name: t for t in tools(st, ["user"])}["memory_search"]
        result = search({"query": "fresh zebra"})
        assert not result.is_error and "user/fresh" in result.text
        assert "vector" in result.text and "damaged" in result.text, result.text
        assert str(tmp_path) not in result.text  # no host path reaches the model
    checked = run("verify", "--path", str(folder), *HASHING)
    assert checked.exit_code == 1
    lines = checked.stderr.strip().splitlines()
    assert len(lines) == 1 and str(folder) in lines[0] and "verify --repair" in lines[0]
    repaired = run("verify", "--repair", "--path", str(folder), *HASHING)
    assert repaired.exit_code == 0, repaired.output
    assert "index ok: 101 entries indexed (101 vectors) for 101 live entries" in repaired.stdout
    aside = [p.name for p in folder.iterdir() if p.name.startswith("chroma.damaged-")]
    assert len(aside) == 1 and aside[0] in repaired.stderr  # the evidence is kept, and named
    found = run("search", "fresh zebra", "--mode", "vector", "--path", str(folder), *HASHING)
    assert "1. user/fresh" in found.stdout, found.output


@contextmanager
def tools_store(folder: Path) -> Iterator[ChromaStore | FileStore]:
    """The store as the MCP server opens it (:func:`agentmemory.open_store`)."""
    st = open_store(folder, embedder="hashing:256", create=False)
    try:
        yield st
    finally:
        st.close()


@pytest.mark.slow
def test_a_journal_shorter_than_its_index_keeps_the_evidence(tmp_path: Path) -> None:
    """The journal file goes back to an older copy (what a lost WAL or a restore does): the index
    holds vectors of 20 entries no journal record names. verify says so, --repair keeps them
    unless told otherwise (docs/storage.md#a-journal-shorter-than-its-index)."""
    folder = tmp_path / "store"
    db = folder / "journal.sqlite3"
    with ChromaStore.open(folder, embedder=HashingEmbedder(256)) as st:
        fill(st, 30)
    older = tmp_path / "journal-older.sqlite3"
    older.write_bytes(db.read_bytes())
    with ChromaStore.open(folder, embedder=HashingEmbedder(256)) as st:
        st.put_many([Entry("user", f"late-{i}", f"a later note {i}") for i in range(20)])
    db.write_bytes(older.read_bytes())
    with (
        pytest.warns(IndexOutOfStepWarning, match="the journal may have lost records"),
        ChromaStore.open(folder, embedder=HashingEmbedder(256)),
    ):
        pass  # opening says so (before, it opened silently and the next write reused seq 31)
    searched = run("search", "note", "--path", str(folder), *HASHING)
    assert searched.exit_code == 0 and "journal may have lost records" in searched.stderr
    checked = run("verify", "--path", str(folder), *HASHING)
    assert checked.exit_code == 1
    assert (
        "journal shorter than its index: the index holds vectors of 20 entries" in checked.stdout
    ), checked.output
    kept = run("verify", "--repair", "--path", str(folder), *HASHING, "--json")
    assert kept.exit_code == 1
    assert len(json.loads(kept.stdout)["orphans"]) == 20  # still there: the evidence
    dropped = run("verify", "--repair", "--drop-orphans", "--path", str(folder), *HASHING)
    assert dropped.exit_code == 0, dropped.output
    assert "journal shorter" not in dropped.stdout


@pytest.mark.slow
def test_check_store_and_the_rebuild_of_a_damaged_index_as_library_calls(tmp_path: Path) -> None:
    """What verify and reindex call: check_store finds the orphans and keeps them on repair
    unless told to drop them; open_store_moving_damage moves a damaged chroma/ aside and rebuilds
    it; check_reindexed counts what the rebuild indexed."""
    folder = tmp_path / "store"
    db = folder / "journal.sqlite3"
    emb = HashingEmbedder(256)
    with ChromaStore.open(folder, embedder=emb) as st:
        fill(st, 10)
    older = tmp_path / "journal-older.sqlite3"
    older.write_bytes(db.read_bytes())
    with ChromaStore.open(folder, embedder=emb) as st:
        st.put_many([Entry("user", f"late-{i}", f"a later note {i}") for i in range(3)])
    db.write_bytes(older.read_bytes())
    late = ("user/late-0", "user/late-1", "user/late-2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IndexOutOfStepWarning)
        st = ChromaStore.open(folder, embedder=emb)
    with st:
        found = check_store(st)
        assert not found.ok and found.orphans == late and found.index.extra == list(late)
        assert found.lexical == LexicalCheck()
        kept = check_store(st, repair=True)
        assert kept.orphans == late and not kept.ok  # the evidence stays
        dropped = check_store(st, repair=True, drop_orphans=True)
        assert dropped.ok and dropped.orphans == () and dropped.index.indexed == 10
    index = folder / "chroma" / "chroma.sqlite3"
    with index.open("r+b") as f:
        f.truncate(index.stat().st_size // 2)
    with pytest.raises(IndexDamagedError):
        ChromaStore.open(folder, embedder=emb).close()
    store, moved = open_store_moving_damage(folder, embedder=emb)
    with store:
        assert moved is not None and moved.aside.name.startswith(DAMAGED_PREFIX)
        assert moved.aside.is_dir() and moved.detail
        done = check_reindexed(store)
        assert (done.indexed, done.embedder, done.lexical) == (
            10,
            emb.name,
            LexicalCheck(rebuilt=None),
        )
    again, nothing = open_store_moving_damage(folder, embedder=emb)
    with again:
        assert nothing is None and check_store(again).ok


# -- a read-only store (docs/storage.md#a-read-only-store) -------------------------------------


@contextmanager
def read_only(*paths: Path) -> Iterator[None]:
    """Make ``paths`` unwritable for this process, and writable again afterwards: permission
    bits for a user, the immutable attribute (``chattr +i``) for root, whom permission bits do
    not stop."""
    if os.geteuid() != 0:
        modes = [p.stat().st_mode for p in paths]
        for p in paths:
            p.chmod(0o555 if p.is_dir() else 0o444)
        try:
            yield
        finally:
            for p, mode in zip(paths, modes, strict=True):
                p.chmod(mode)
        return
    chattr = shutil.which("chattr")
    done = chattr is not None and subprocess.run([chattr, "+i", *map(str, paths)]).returncode == 0
    if not done:
        subprocess.run([chattr or "chattr", "-i", *map(str, paths)], check=False)
        reason = "root needs chattr +i (CAP_LINUX_IMMUTABLE) to make a folder read-only"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        yield
    finally:
        subprocess.run([str(chattr), "-i", *map(str, paths)], check=True)


def test_a_read_only_store_can_still_be_read(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    with ChromaStore.open(folder, embedder=HashingEmbedder(256)) as st:
        fill(st, 30)
    locked = [folder, folder / "journal.sqlite3", folder / "chroma.lock"]
    with read_only(*locked):
        with SqliteStore(folder / "journal.sqlite3") as st:
            assert st.read_only
            assert st.get("user", "n-3").content.startswith("note 3 ")
            assert len(st.list("user")) == 30 and len(list(st.journal())) == 30
            assert st.search_text("zebras", scopes=["user"], limit=5)
            with pytest.raises(StoreIOError) as err:
                st.put(Entry("user", "new", "x"))
            assert err.value.kind == "read-only"
            one_line_error(err.value, folder, "read-only", "reads work")
        for args in (("get", "user/n-3"), ("list",), ("journal",), ("render", "user"),
                     ("search", "zebras", "--mode", "bm25")):  # fmt: skip
            result = run(*args, "--path", str(folder))
            assert result.exit_code == 0, (args, result.output)
            assert "n-" in result.stdout


@pytest.mark.slow
def test_a_read_only_vector_index_takes_no_writes_but_the_journal_does(tmp_path: Path) -> None:
    """chroma/ (and its sqlite file) may not be written, the journal may: saves land in the
    journal with a note saying so and what to do (not "damaged"), searches answer from BM25,
    verify --repair moves nothing aside and says to make the folder writable; once it is,
    verify --repair indexes what the journal took meanwhile (before: the line said "damaged" and
    the repair failed with "Operation not permitted")."""
    folder = tmp_path / "store"
    with ChromaStore.open(folder, embedder=HashingEmbedder(256)) as st:
        fill(st, 30)
    chroma = folder / "chroma"
    with read_only(chroma, chroma / "chroma.sqlite3"):
        saved = run("save", "user/fresh", "a fresh zebra", "--path", str(folder), *HASHING)
        assert saved.exit_code == 0, saved.output
        assert "may not be written here" in saved.stderr and "damaged" not in saved.stderr
        found = run("search", "fresh zebra", "--path", str(folder), *HASHING)
        assert found.exit_code == 0 and "1. user/fresh" in found.stdout, found.output
        repaired = run("verify", "--repair", "--path", str(folder), *HASHING)
        assert repaired.exit_code == 1
        line = repaired.stderr.strip().splitlines()
        assert len(line) == 1 and "writable" in line[0] and "Operation not permitted" not in line[0]
        assert not [p for p in folder.iterdir() if p.name.startswith(DAMAGED_PREFIX)]
    repaired = run("verify", "--repair", "--path", str(folder), *HASHING)
    assert repaired.exit_code == 0, repaired.output
    assert "index ok: 31 entries indexed (31 vectors) for 31 live entries" in repaired.stdout


@pytest.mark.slow
def test_a_segment_file_that_crashes_its_loader_is_found_by_a_probe_and_rebuilt(
    tmp_path: Path,
) -> None:
    """A garbled HNSW segment (data_level0.bin) kills the process that loads it with SIGSEGV:
    verify probes it in a child process, says so in one line, and --repair rebuilds it."""
    folder = tmp_path / "store"
    with ChromaStore.open(folder, embedder=HashingEmbedder(256)) as st:
        st.put_many([Entry("user", f"n-{i}", f"note {i} about zebras") for i in range(3000)])
    segments = list((folder / "chroma").glob("*/data_level0.bin"))
    assert segments, "Chroma wrote no HNSW segment file"
    with segments[0].open("r+b") as f:
        f.write(os.urandom(200_000))
    # before issue 22, save and search died here with SIGSEGV (save not journaled): the files
    # changed behind the store's back, so every open probes them first and opens the journal alone
    saved = subprocess.run(
        [sys.executable, "-m", "agentmemory", "save", "user/late", "late note about zebras",
         "--path", str(folder)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    assert "verify --repair" in saved.stderr and "the vector index is damaged" in saved.stderr
    searched = subprocess.run(
        [sys.executable, "-m", "agentmemory", "search", "late zebras", "--path", str(folder)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert searched.returncode == 0, searched.stderr
    assert "user/late" in searched.stdout and "vector leg was unavailable" in searched.stderr
    checked = run("verify", "--path", str(folder))
    assert checked.exit_code == 1
    line = checked.stderr.strip().splitlines()
    assert len(line) == 1 and "crashed a probe process" in line[0] and "--repair" in line[0]
    repaired = run("verify", "--repair", "--path", str(folder))
    assert repaired.exit_code == 0, repaired.output
    assert "index ok: 3001 entries indexed (3001 vectors) for 3001 live entries" in repaired.stdout
    found = subprocess.run(
        [sys.executable, "-m", "agentmemory", "search", "zebras", "--path", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode == 0 and "hits in user" in found.stdout, found.stderr


def test_a_lost_segment_folder_is_found_by_self_queries_and_repaired(tmp_path: Path) -> None:
    """Delete one collection's HNSW segment folder of a 3,000-entry store: Chroma still lists
    every vector (the metadata check alone said "index ok: 3000 vectors"), but most of them can
    no longer be read back or found. verify's self-queries report it, repair() rebuilds the
    scope from the journal, and the CLI's verify --repair leaves it ok
    (docs/storage.md#self-queries)."""
    folder = tmp_path / "store"
    rng = random.Random(7)
    notes = {f"n-{i}": f"note {i} about {' '.join(rng.sample(WORDS, 4))}" for i in range(3000)}
    with ChromaStore.open(folder, embedder=HashingEmbedder(384)) as st:
        st.put_many([Entry("user", n, t) for n, t in notes.items()])
        st.put_many([Entry("team", f"t-{i}", f"team note {i}") for i in range(40)])
        healthy = st.verify()
        assert healthy.ok and healthy.lost == [] and healthy.searched == 64, healthy
        assert healthy.found >= 0.8 * healthy.searched, healthy
        user = st.collection_name("user")
    shutil.rmtree(folder / "chroma" / segment_of(folder, user))
    with ChromaStore.open(folder, embedder=HashingEmbedder(384)) as st:
        report = st.verify()
        assert not report.ok and report.unsearchable_scopes == ["user"], report
        assert (report.missing, report.stale, report.extra) == ([], [], [])
        assert report.indexed == 3040, "the metadata still lists every entry"
        assert report.lost and all(k.startswith("user/") for k in report.lost)
        assert report.found < report.searched
        assert "scopes not searchable: user" in str(report)
        fixed = st.repair()
        assert fixed.ok and fixed.lost == [] and fixed.found >= healthy.found - 4, fixed
        for name in ("n-17", "n-1500", "n-2999"):
            hits = st.recall(notes[name], scopes=["user"], mode="vector", limit=10)
            assert name in [h.entry.name for h in hits]
    shutil.rmtree(folder / "chroma" / segment_of(folder, user))
    checked = run("verify", "--path", str(folder), *HASHING_384)
    assert checked.exit_code == 1, checked.output
    repaired = run("verify", "--repair", "--path", str(folder), *HASHING_384)
    assert repaired.exit_code == 0, repaired.output
    assert "index ok: 3040 entries indexed (3040 vectors)" in repaired.stdout


WORDS = [a + b + c for a in ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi") for b in
         ("be", "do", "fa", "gu", "hi", "jo", "ku", "le") for c in ("m", "n", "r", "s", "t")]  # fmt: skip
HASHING_384 = ("--embedder", "hashing:384")


def segment_of(folder: Path, collection: str) -> str:
    """The id (folder name) of ``collection``'s HNSW segment in ``folder/chroma``."""
    with sqlite3.connect(folder / "chroma" / "chroma.sqlite3") as conn:
        found = conn.execute(
            "SELECT s.id FROM segments s JOIN collections c ON c.id = s.collection"
            " WHERE c.name = ? AND s.scope = 'VECTOR'",
            (collection,),
        ).fetchone()[0]
    conn.close()
    return str(found)


# -- pages cut from the end of journal.sqlite3 (docs/storage.md#a-cut-journal-file) ------------

LEXICAL_TABLES = {
    "memory_lexical_data",
    "memory_lexical_idx",
    "memory_lexical_content",
    "memory_lexical_docsize",
    "memory_lexical_config",
    "memory_lexical_docs",
    "sqlite_autoindex_memory_lexical_docs_1",
    "memory_lexical_df",
}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The command line in a process of its own, as a user runs it: what it logs while opening
    reaches stderr there (under pytest, the log goes to pytest's handlers instead)."""
    return subprocess.run(
        [sys.executable, "-m", "agentmemory", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )


def cli_store(folder: Path, *, purge: bool) -> None:
    """300 entries imported through the command line; with ``purge``, one entry then purged
    through it too (its VACUUM writes the tables in schema order, the lexical ones last)."""
    lines = folder.parent / f"{folder.name}.jsonl"
    lines.write_text(
        "".join(
            json.dumps({"scope": "user", "name": f"n-{i}", "content": f"note {i} about zebras "
                        "and lions, day " + f"{i} " + "more words here " * (i % 7)}) + "\n"
            for i in range(301)
        )
    )  # fmt: skip
    done = run("import", str(lines), "--path", str(folder), *HASHING)
    assert done.exit_code == 0, done.output
    if purge:
        done = run("purge", "user/n-300", "--reason", "test", "--path", str(folder), *HASHING)
        assert done.exit_code == 0, done.output


def tail_owners(db: Path, pages: int) -> set[str]:
    """The tables and indexes whose pages are the last ``pages`` of ``db``, by sqlite's dbstat."""
    with sqlite3.connect(db) as conn:
        (count,) = conn.execute("PRAGMA page_count").fetchone()
        owners = {
            str(name)
            for (name,) in conn.execute(
                "SELECT DISTINCT name FROM dbstat WHERE pageno > ?", (count - pages,)
            )
        }
    conn.close()
    return owners


def cut_pages(db: Path, pages: int) -> None:
    with db.open("r+b") as f:
        f.truncate(db.stat().st_size - pages * 4096)


@pytest.fixture(scope="module")
def purged_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cut") / "store"
    cli_store(folder, purge=True)
    return folder


@pytest.fixture(scope="module")
def imported_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cut") / "store"
    cli_store(folder, purge=False)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("pages", [1, 3, 10])
def test_pages_cut_from_the_lexical_tables_cost_no_write(
    tmp_path: Path, purged_store: Path, pages: int
) -> None:
    """Before: every command failed at open with "not an sqlite database (database disk image
    is malformed)". Now the file gets its length back, writes land, and --repair rebuilds."""
    folder = tmp_path / "store"
    shutil.copytree(purged_store, folder)
    db = folder / "journal.sqlite3"
    assert tail_owners(db, pages) <= LEXICAL_TABLES  # what this test is about: derived pages
    cut_pages(db, pages)
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):  # what sqlite does with it
        sqlite3.connect(db).execute("PRAGMA quick_check").fetchall()

    saved = cli("save", "user/fresh", "a fresh okapi sighting", "--path", str(folder), *HASHING)
    assert saved.returncode == 0, saved.stderr
    assert "journal seq 304" in saved.stdout  # 301 imported, a purge wrote 2
    assert f"{pages} page" in saved.stderr and "shorter than its header" in saved.stderr
    assert "verify --repair" in saved.stderr and "not an sqlite database" not in saved.stderr
    shown = run("journal", "--path", str(folder))
    assert shown.exit_code == 0 and "user/fresh" in shown.stdout.splitlines()[-1]

    found = run("search", "okapi", "--path", str(folder), *HASHING)
    assert found.exit_code == 0, found.output
    assert "the bm25 leg failed" in found.stderr and "damaged" in found.stderr
    assert "(vector)" in found.stdout.splitlines()[0]

    checked = run("verify", "--path", str(folder), *HASHING)
    assert checked.exit_code == 1
    assert "shorter than its header" in checked.stdout and "verify --repair" in checked.stdout
    repaired = run("verify", "--repair", "--path", str(folder), *HASHING)
    assert repaired.exit_code == 0, repaired.output
    assert "lexical index rebuilt: 301 entries" in repaired.stdout  # 301 - n-300 + fresh
    again = run("verify", "--path", str(folder), *HASHING)
    assert again.exit_code == 0 and "lexical index ok" in again.stdout, again.output
    found = run("search", "fresh okapi", "--mode", "bm25", "--path", str(folder), *HASHING)
    assert found.exit_code == 0 and "1. user/fresh" in found.stdout, found.output
    found = run("search", "note 7 zebras", "--mode", "bm25", "--path", str(folder), *HASHING)
    assert "1. user/n-7" in found.stdout, found.output
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()


@pytest.mark.slow
@pytest.mark.parametrize("pages", [3, 10])
def test_pages_cut_from_the_journal_tables_say_damaged_with_the_cure(
    tmp_path: Path, imported_store: Path, pages: int
) -> None:
    """An import leaves journal pages among the last ones: a cut takes records with it. Before:
    "not an sqlite database". Now each command says the journal is damaged and the cure, the
    records before the damage can still be read, and --repair refuses to rewrite the file."""
    folder = tmp_path / "store"
    shutil.copytree(imported_store, folder)
    db = folder / "journal.sqlite3"
    assert "memory_journal" in tail_owners(db, pages)
    cut_pages(db, pages)
    first = cli("save", "user/fresh", "a fresh okapi", "--path", str(folder), *HASHING)
    assert first.returncode == 1
    assert "memory_journal: database disk image is malformed after" in first.stderr
    for args in (("verify",), ("verify", "--repair")):  # verify says what is left instead
        said = run(*args, "--path", str(folder), *HASHING)
        assert said.exit_code == 1, (args, said.output)
        report = said.stdout.strip().splitlines()
        assert report[0].startswith(f"the journal database of store {folder} is damaged: ")
        assert "journal records read before the damage (seq 1 to " in report[0], report
        assert "backup" in report[1] and said.stderr == "", said.stderr
    for args in (("save", "user/fresh", "a fresh okapi"), ("search", "zebras")):
        said = run(*args, "--path", str(folder), *HASHING)
        assert said.exit_code == 1, (args, said.output)
        lines = said.stderr.strip().splitlines()
        assert len(lines) == 1, (args, lines)
        assert lines[0].startswith(f"agentmemory: store {folder}: the journal database is damaged")
        assert "backup" in lines[0] and "shorter than its header" in lines[0]
        assert "not an sqlite database" not in lines[0]
    shown = run("journal", "--path", str(folder))
    assert shown.exit_code == 1 and "damaged" in shown.stderr
    assert "user/n-0 " in shown.stdout  # what is left before the damage is still printed
    with SqliteStore(db) as st:
        problems = st.check_journal()
        assert any(p.startswith("memory_journal: ") for p in problems), problems
        with pytest.raises(StoreIOError) as err:
            st.rebuild_lexical()
        assert err.value.kind == "damaged" and "memory_journal" in str(err.value)


def test_a_cut_read_only_journal_is_read_as_it_is(tmp_path: Path, purged_store: Path) -> None:
    folder = tmp_path / "store"
    shutil.copytree(purged_store, folder)
    db = folder / "journal.sqlite3"
    cut_pages(db, 3)
    size = db.stat().st_size
    with read_only(folder, db), SqliteStore(db) as st:
        assert st.read_only
        assert len(st.list("user")) == 300 and st.get("user", "n-7").content.startswith("note 7")
        assert [c.seq for c in st.journal()] == list(range(1, 304))
    assert db.stat().st_size == size  # nothing padded it: a read-only store is never written


def store_of_zebras(folder: Path, n: int = 1500) -> None:
    with ChromaStore.open(folder, embedder=HashingEmbedder(256)) as st:
        st.put_many([Entry("user", f"n-{i}", f"note {i} about zebras") for i in range(n)])


@pytest.mark.slow
@pytest.mark.parametrize("command", [["verify", "--repair"], ["reindex"]])
def test_8kb_garbled_in_the_middle_of_chroma_sqlite3_is_one_line_and_cured(
    tmp_path: Path, command: list[str]
) -> None:
    # issue 22 case 7: Chroma opens the file and finds the damage mid-call; before, verify,
    # verify --repair and reindex ended in a 55-line chromadb traceback
    folder = tmp_path / "store"
    store_of_zebras(folder)
    db = folder / "chroma" / "chroma.sqlite3"
    with sqlite3.connect(db) as conn:  # two pages the metadata reads go through (8 KB)
        page = int(conn.execute("PRAGMA page_size").fetchone()[0])
        pages = sorted(n for (n,) in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = 'embedding_metadata' AND pagetype = 'leaf'"))  # fmt: skip
    conn.close()
    middle = pages[len(pages) // 2 : len(pages) // 2 + 2]
    with db.open("r+b") as f:
        for number in middle:
            f.seek((number - 1) * page)
            f.write(random.Random(number).randbytes(page))
    args = ("--path", str(folder), "--embedder", "hashing:256")
    checked = run("verify", *args)
    assert checked.exit_code == 1
    lines = checked.stderr.strip().splitlines()
    assert len(lines) == 1 and "is damaged" in lines[0] and "verify --repair" in lines[0], lines
    assert "Traceback" not in checked.output
    cured = run(*command, *args)
    assert cured.exit_code == 0, cured.output
    assert "moved it to" in cured.stderr and DAMAGED_PREFIX in cured.stderr
    again = run("verify", *args)
    assert again.exit_code == 0, again.output
    assert "index ok: 1500 entries indexed (1500 vectors) for 1500 live entries" in again.stdout


@pytest.mark.slow
def test_vectors_of_another_width_are_one_line_and_repair_uses_the_recorded_embedder(
    tmp_path: Path,
) -> None:
    # issue 22 case 7: an index built with hashing:64 whose journal was replaced by one that
    # records hashing:384; before, every vector command ended in a traceback (64 vs 384)
    folder = tmp_path / "store"
    assert run("save", "user/a", "Prefers Vim.", "--path", str(folder), "--embedder",
               "hashing:64").exit_code == 0  # fmt: skip
    for p in folder.glob("journal.sqlite3*"):
        p.unlink()
    saved = run("save", "user/b", "Uses tmux daily.", "--path", str(folder), *HASHING_384)
    assert saved.exit_code == 0, saved.output  # journaled, with the note
    assert "64 dimensions" in saved.stderr and "verify --repair" in saved.stderr
    found = run("search", "tmux", "--path", str(folder), *HASHING_384)
    assert found.exit_code == 0, found.output
    assert "user/b" in found.stdout and "vector leg was unavailable" in found.stderr
    assert "Traceback" not in found.output
    checked = run("verify", "--path", str(folder))  # the embedder the journal records
    assert checked.exit_code == 1
    assert len(checked.stderr.strip().splitlines()) == 1 and "64 dimensions" in checked.stderr
    cured = run("verify", "--repair", "--path", str(folder))
    assert cured.exit_code == 0, cured.output
    assert "index ok: 1 entry indexed (1 vector) for 1 live entry" in cured.stdout
    meaning = run("search", "tmux", "--mode", "vector", "--path", str(folder))
    assert meaning.exit_code == 0 and "user/b" in meaning.stdout, meaning.output


@pytest.mark.parametrize("table", ["memory_journal", "memory_entries"])
def test_verify_on_a_garbled_journal_says_what_is_left_not_to_run_verify(
    tmp_path: Path, table: str
) -> None:
    # issue 22 case 7: every command said "run agentmemory verify", and verify said the same
    db = tmp_path / "store" / "journal.sqlite3"
    with SqliteStore(db) as st:
        fill(st)
    garble_table(db, table)
    saved = run("save", "user/x", "y", "--path", str(db.parent), "--embedder", "hashing")
    assert saved.exit_code == 1 and "agentmemory verify" in saved.stderr
    before = db.read_bytes()
    checked = run("verify", "--path", str(db.parent), "--embedder", "hashing")
    assert checked.exit_code == 1
    first, cure = checked.stdout.strip().splitlines()
    assert first.startswith(f"the journal database of store {db.parent} is damaged: ")
    if table == "memory_journal":
        assert "read before the damage" in first or "0 journal records" in first, first
    else:
        assert "the entries table does not read past row" in first, first
    assert "restore" in cure and "backup" in cure and "agentmemory journal" in cure
    assert "run 'agentmemory verify'" not in checked.output
    assert db.read_bytes() == before  # nothing was changed
    report = json.loads(
        run("verify", "--json", "--path", str(db.parent), "--embedder", "hashing").stdout
    )
    assert report["ok"] is False and report["journal_damaged"] is True


@pytest.mark.slow
def test_chroma_replaced_by_a_file_is_damage_not_a_holder(tmp_path: Path) -> None:
    # issue 22 case 7: verify spoke of a holder process that does not exist
    folder = tmp_path / "store"
    args = ("--path", str(folder), *HASHING)
    assert run("save", "user/a", "Prefers Vim.", *args).exit_code == 0
    shutil.rmtree(folder / "chroma")
    (folder / "chroma").write_text("not a folder\n")
    checked = run("verify", *args)
    assert checked.exit_code == 1
    assert "is a file, not Chroma's folder" in checked.stderr, checked.stderr
    assert "holder" not in checked.stderr and "locked" not in checked.stderr
    saved = run("save", "user/b", "Uses tmux.", *args)
    assert saved.exit_code == 0 and "verify --repair" in saved.stderr
    cured = run("verify", "--repair", *args)
    assert cured.exit_code == 0, cured.output
    assert "index ok: 2 entries indexed" in cured.stdout
