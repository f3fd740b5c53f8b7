"""Hybrid recall over a FileStore: the BM25 leg in memory and the vector index in Chroma beside the
files (.vectors/), following the journal; a person's edit is re-embedded after reconcile."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agentmemory import EmbedderMismatchError, Entry, FileStore
from agentmemory.stores.chroma.clients import close_folder, open_folder
from agentmemory.stores.chroma.index import ChromaIndex
from embedders import HashingEmbedder


class Counting(HashingEmbedder):
    """The real hashing embedder, counting the texts it embeds."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.texts = 0

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.texts += len(texts)
        return super().embed(texts)


def nearest(st: FileStore, text: str) -> tuple[str, float]:
    emb = st.embedder
    assert emb is not None
    vec = np.asarray(emb.embed([text]), dtype=np.float32)[0]
    e, score = st.search_vector(vec, limit=1, scopes=["user", "project"])[0]
    return e.key, score


def test_hybrid_recall_over_a_markdown_folder(tmp_path: Path) -> None:
    st = FileStore(tmp_path, embedder=HashingEmbedder(64))
    st.put(Entry("user", "editor", "Uses Neovim with a dark theme.", {"description": "Editor"}))
    st.put(Entry("user", "language", "Prefers Go over Python for tools."))
    st.put(Entry("project", "build", "Run make check before a commit."))
    hits = st.recall("neovim theme", scopes=["user", "project"], limit=3)
    assert hits[0].entry.key == "user/editor"
    assert set(hits[0].legs) == {"bm25", "vector"}, "auto is hybrid when the store keeps vectors"
    assert nearest(st, "Prefers Go over Python for tools.") == ("user/language", pytest.approx(1.0))
    st.forget("user", "language")
    assert "user/language" not in {h.entry.key for h in st.recall("go python", scopes=["user"])}
    cursor = json.loads((tmp_path / ".vectors" / "cursor.json").read_text())
    assert cursor["off"] == (tmp_path / "journal.jsonl").stat().st_size
    assert st.scopes() == ["project", "user"], ".vectors is not a scope"
    st.close()


def test_a_persons_edit_is_re_embedded_after_reconcile(tmp_path: Path) -> None:
    st = FileStore(tmp_path, embedder=HashingEmbedder(64))
    st.put(Entry("user", "editor", "Uses Neovim with a dark theme."))
    st.put(Entry("user", "other", "Something else entirely."))
    f = tmp_path / "user" / "editor.md"
    f.write_text(f.read_text().replace("Uses Neovim with a dark theme.", "Switched to Helix."))
    _, score = nearest(st, "Switched to Helix.")
    assert score < 0.99, "the vector changed before the edit was journaled"
    st.reconcile()
    assert nearest(st, "Switched to Helix.") == ("user/editor", pytest.approx(1.0))
    st.close()


@pytest.mark.slow
def test_the_vector_cursor_is_kept_in_the_folder_across_opens(tmp_path: Path) -> None:
    first = Counting(64)
    st = FileStore(tmp_path, embedder=first)
    for i in range(5):
        st.put(Entry("user", f"e{i}", f"entry number {i}"))
    st.close()
    writer = FileStore(tmp_path)  # another handle without vectors writes meanwhile
    writer.put(Entry("user", "late", "written while the index was closed"))
    again = Counting(64)
    st2 = FileStore(tmp_path, embedder=again)
    assert again.texts == 1, "reopening re-embedded entries the index already held"
    assert nearest(st2, "written while the index was closed")[0] == "user/late"
    writer.put(Entry("user", "later", "written while the index is open"))
    assert nearest(st2, "written while the index is open")[0] == "user/later"
    st2.close()


def test_another_embedder_is_refused_unless_reindexed(tmp_path: Path) -> None:
    st = FileStore(tmp_path, embedder=HashingEmbedder(64))
    st.put(Entry("user", "a", "alpha"))
    st.close()
    with pytest.raises(EmbedderMismatchError):
        FileStore(tmp_path, embedder=HashingEmbedder(32))
    st2 = FileStore(tmp_path, embedder=HashingEmbedder(32), reindex=True)
    assert nearest(st2, "alpha") == ("user/a", pytest.approx(1.0))
    st2.close()


def test_a_markdown_folder_embeds_every_window_and_re_embeds_on_a_new_layout(
    tmp_path: Path,
) -> None:
    """A long entry's last words are found by meaning (its windows are indexed), a replace with
    fewer windows and a forget leave no window behind, and a folder indexed with another window
    layout (here: none, one vector per entry) is indexed again from the start when it opens
    (docs/filestore-format.md#the-vector-index)."""
    long_text = " ".join(f"early{i}" for i in range(30)) + " zebra quartz lantern orbit"
    st = FileStore(tmp_path, embedder=HashingEmbedder(64))
    st.put(Entry("user", "long", long_text))
    st.put(Entry("user", "short", "zebra notes"))
    st.close()
    windowed = HashingEmbedder(64, window_words=8)
    st2 = FileStore(tmp_path, embedder=windowed)
    cursor = json.loads((tmp_path / ".vectors" / "cursor.json").read_text())
    assert cursor["windows"] == "words:8/4;win-1"
    # the last window's 8 words; the whole text's vector would give 8 / sqrt(8 * 34) = 0.49
    last = "early26 early27 early28 early29 zebra quartz lantern orbit"
    assert nearest(st2, last) == ("user/long", pytest.approx(1.0))
    # the folder's own client, shared by the handles of this process (chroma_registry)
    col = ChromaIndex(open_folder(tmp_path / ".vectors", 1.0))
    assert col.window_counts("user", ["long", "short"]) == {"long": 8, "short": 1}  # 34 words
    st2.put(Entry("user", "long", "now a short text"))
    assert col.vector_count("user") == 2
    st2.forget("user", "long")
    assert col.vector_count("user") == 1 and col.count("user") == 1
    close_folder(tmp_path / ".vectors")
    st2.close()
