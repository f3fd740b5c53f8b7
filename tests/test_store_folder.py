"""open_store and open_journal: the one rule for opening a store folder and choosing its embedder,
on real folders (sqlite and Chroma) with the model-free hashing embedder."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentmemory
from agentmemory import (
    EmbedderMismatchError,
    EmbedderNameError,
    Entry,
    NoStoreError,
    open_journal,
    open_store,
)
from embedders import HashingEmbedder


def test_a_new_store_then_reopened_with_its_own_embedder(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    with open_store(folder, embedder="hashing:64") as store:
        store.put(Entry("user", "tz", "Europe/London"))
        made_with = store.embedder.fingerprint
    assert (folder / "journal.sqlite3").is_file() and (folder / "chroma").is_dir()
    # no embedder named: the store's own, rebuilt from its fingerprint
    with open_store(folder, create=False) as store:
        assert store.embedder.fingerprint == made_with
        assert [h.entry.name for h in store.recall("Europe London", scopes=["user"])] == ["tz"]


def test_a_named_embedder_with_other_vectors_is_refused_unless_reindexing(tmp_path: Path) -> None:
    with open_store(tmp_path, embedder=HashingEmbedder(64)) as store:
        store.put(Entry("user", "tz", "Europe/London"))
    with pytest.raises(EmbedderMismatchError) as caught:
        open_store(tmp_path, embedder="hashing:32")
    assert caught.value.path == str(tmp_path)
    assert caught.value.given.startswith("hashing:32")
    with open_store(tmp_path, embedder="hashing:32", reindex=True) as store:
        assert store.embedder.name == "hashing:32"
        assert store.verify().ok
    with open_store(tmp_path) as store:  # the store's own is now hashing:32
        assert store.embedder.name == "hashing:32"


def test_opening_an_existing_store_refuses_a_folder_without_one(tmp_path: Path) -> None:
    missing = tmp_path / "none"
    for opener in (open_journal, lambda p: open_store(p, create=False)):
        with pytest.raises(NoStoreError) as caught:
            opener(missing)
        assert str(caught.value) == (
            f"agentmemory: no store at {missing} (it has no journal.sqlite3)"
        )
        assert isinstance(caught.value, FileNotFoundError)
    assert not missing.exists()
    a_file = tmp_path / "file"
    a_file.write_text("not a store")
    with pytest.raises(NoStoreError, match="is a file, not a folder") as caught:
        open_store(a_file)
    assert caught.value.is_file


def test_an_unknown_embedder_name_is_our_error_and_nothing_is_created(tmp_path: Path) -> None:
    with pytest.raises(EmbedderNameError, match="no embedder is registered as 'nope'"):
        open_store(tmp_path / "store", embedder="nope")
    with pytest.raises(EmbedderNameError, match="integer dimension"):
        open_store(tmp_path / "store", embedder="hashing:abc")
    assert not (tmp_path / "store").exists()


def test_open_journal_reads_beside_the_process_holding_the_store(tmp_path: Path) -> None:
    with open_store(tmp_path, embedder="hashing") as store:
        store.put(Entry("user", "tz", "Europe/London"))
        with open_journal(tmp_path) as journal:  # no folder lock, no model
            assert [e.content for e in journal.list("user")] == ["Europe/London"]
            assert journal.scopes() == ["user"]


def test_the_default_folder_is_the_user_data_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", "/somewhere")
    if not str(agentmemory.default_store_path()).startswith("/somewhere"):
        pytest.skip("XDG_DATA_HOME places the user data folder on Linux only")
    assert agentmemory.default_store_path() == Path("/somewhere/agentmemory/store")
