"""Saving one entry whole (agentmemory/save_entry.py): the meta a save keeps, the checks before a
store is made, the retire check, and the journal alone when the vector index is damaged."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentmemory import (
    ChromaStore,
    Entry,
    EntryTooLargeError,
    InvalidEntryError,
    NoStoreError,
    SqliteStore,
)
from agentmemory.save_entry import meta_for_save, save_entry
from embedders import HashingEmbedder

EMB = HashingEmbedder(64)


def test_meta_for_save_keeps_the_stored_meta_unless_given() -> None:
    stored = Entry("user", "style", "terse", {"description": "how to write", "type": "feedback"})
    bare = Entry("user", "style", "terse")
    assert meta_for_save(stored, None) == {"description": "how to write", "type": "feedback"}
    assert meta_for_save(stored, {}) is None  # {} clears
    assert meta_for_save(stored, {"source": "chat"}) == {"source": "chat"}  # replaced whole
    assert meta_for_save(None, None) is None and meta_for_save(bare, None) is None
    assert meta_for_save(stored, None, {"type": "user"}) == {
        "description": "how to write",
        "type": "user",
    }
    assert meta_for_save(None, {}, {"supersedes": "old"}) == {"supersedes": "old"}


def test_a_refused_save_creates_no_store(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    with pytest.raises(InvalidEntryError):
        save_entry(folder, "User", "x", "text", embedder=EMB)
    with pytest.raises(EntryTooLargeError):
        save_entry(folder, "user", "x", "é" * 3000, embedder=EMB, max_entry_bytes=4096)
    with pytest.raises(InvalidEntryError, match="valid-from"):
        save_entry(folder, "user", "x", "text", meta={"valid-from": "soon"}, embedder=EMB)
    with pytest.raises(InvalidEntryError, match="'chore' is not a kind"):
        save_entry(folder, "user", "x", "text", kind="chore", embedder=EMB)
    with pytest.raises(InvalidEntryError, match="itself"):
        save_entry(folder, "user", "x", "text", supersedes="x", embedder=EMB)
    with pytest.raises(NoStoreError):  # the entry to retire is in a store that exists
        save_entry(folder, "user", "x", "text", supersedes="old", embedder=EMB)
    assert not folder.exists()


@pytest.mark.slow
def test_a_save_keeps_the_stored_meta_built_on_what_it_read_and_retires(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    first = save_entry(folder, "user", "style", "terse", meta={"description": "d"}, embedder=EMB)
    assert first.change.prev == "" and first.retired is None and first.index_error is None
    kept = save_entry(folder, "user", "style", "terse, in English", embedder=EMB, kind="feedback")
    assert kept.change.entry.meta == {"description": "d", "type": "feedback"}
    assert kept.change.prev == first.change.entry.hash  # based_on what it read
    cleared = save_entry(folder, "user", "style", "plain", meta={}, embedder=EMB)
    assert cleared.change.entry.meta is None
    save_entry(folder, "user", "old-style", "verbose", embedder=EMB)
    with pytest.raises(InvalidEntryError, match="does not exist"):
        save_entry(folder, "user", "style", "x", supersedes="gone", embedder=EMB)
    new = save_entry(folder, "user", "style", "plain, short", supersedes="old-style", embedder=EMB)
    assert new.retired is not None and new.retired.key == "user/old-style"
    assert new.change.entry.meta == {"supersedes": "old-style"}
    with ChromaStore.open(folder, embedder=EMB) as st:
        assert st.verify().ok
        hits = st.recall("verbose", scopes=["user"], limit=5)
        assert "old-style" not in [h.entry.name for h in hits]  # retired: out of search


def test_a_damaged_vector_index_sends_the_save_to_the_journal_alone(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    with ChromaStore.open(folder, embedder=EMB) as st:
        st.put_many([Entry("user", f"n-{i}", f"note {i}") for i in range(50)])
    index = folder / "chroma" / "chroma.sqlite3"
    with index.open("r+b") as f:
        f.truncate(index.stat().st_size // 2)
    saved = save_entry(folder, "user", "fresh", "a fresh note", embedder=EMB)
    assert saved.change.note is not None and "damaged" in saved.change.note
    assert "verify --repair" in saved.change.note
    assert saved.change.seq == 51 and saved.index_error is None
    with SqliteStore(folder / "journal.sqlite3") as journal:
        assert journal.get("user", "fresh").content == "a fresh note"
