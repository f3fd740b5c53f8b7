"""ChromaStore behaviour both backends must show: tests/stores/test_chroma_store.py runs these cases on an
embedded Chroma folder, tests/stores/test_chroma_server.py through chromadb.HttpClient against a real
`chroma run` server. Each case takes a Backend (how to open a store and how to lose its index)
and a fresh folder.

Expected numbers never come from the store under test: similarities are computed here with numpy
from the embedder's vectors, and the journal is read through its own SqliteStore API.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from agentmemory import ChromaStore, EmbedderMismatchError, Entry, IndexWriteError, content_hash
from agentmemory.errors import IndexOutOfStepWarning
from agentmemory.stores.chroma import store as chroma_store_module
from agentmemory.stores.chroma.index import ChromaIndex, IndexRow
from embedders import HashingEmbedder

DIM = 256


@dataclass
class Backend:
    """How a case opens stores and destroys an index.

    open(path, store_type=ChromaStore, **kwargs) opens a store_type (ChromaStore or a subclass)
    on the folder (always the same collections for the same folder); lose_index(path) deletes the store's vectors behind its back (the embedded
    Chroma folder, or the server's collections); client() is the Chroma client holding them.
    """

    name: str
    open: Callable[..., ChromaStore]
    lose_index: Callable[[Path], None]
    client: Callable[[Path], Any]


def embed(text: str) -> np.ndarray:
    return HashingEmbedder(DIM).embed([text])[0]


def cosine(a: str, b: str) -> float:
    va, vb = embed(a), embed(b)
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))


def keys(hits: list[tuple[Entry, float]]) -> list[str]:
    return [e.key for e, _ in hits]


def indexed_cosine(st: ChromaStore, key: str, text: str) -> float:
    """Cosine between the vector Chroma holds for ``key`` ("scope/name") and ``embed(text)``;
    0.0 when the index holds no vector for it.

    Read by id, not by query: Chroma's HNSW search is approximate, and on hundreds of
    near-identical hashing vectors ("bulk entry i word<i>", pairwise cosine 0.5 tied) its top-1
    misses the exact match about 15 times in 600 even at ef_search=600, so a query cannot tell
    "indexed" from "indexed but not found". Measured 2026-11-29, Chroma 1.5.9."""
    scope = key.split("/", 1)[0]
    col = st.client.get_collection(st.collection_name(scope), embedding_function=None)
    got = col.get(ids=[key], include=["embeddings"])
    if not got["ids"]:
        return 0.0
    stored = np.asarray(got["embeddings"][0], dtype=np.float32)
    want = embed(text)
    return float(stored @ want / (np.linalg.norm(stored) * np.linalg.norm(want)))


class Fault:
    """A fault for the store handles opened with its ``store_type``: while armed, every Chroma
    write of those handles (an upsert or a delete of their ``ChromaIndex``) raises, so each of
    their writes fails between its journal commit and its index update. Other handles on the
    same folder (plain ``ChromaStore``) are not affected."""

    def __init__(self, *, armed: bool = False) -> None:
        self.armed = armed
        fault = self

        class FaultyIndex(ChromaIndex):
            def upsert(self, scope: str, rows: Sequence[IndexRow]) -> None:
                fault.check()
                super().upsert(scope, rows)

            def delete(self, scope: str, names: Sequence[str]) -> None:
                fault.check()
                super().delete(scope, names)

        class FaultyStore(ChromaStore):
            index_type = FaultyIndex

        self.store_type: type[ChromaStore] = FaultyStore

    def check(self) -> None:
        if self.armed:
            raise RuntimeError("injected between journal and index")

    @contextmanager
    def on(self) -> Iterator[None]:
        self.armed = True
        try:
            yield
        finally:
            self.armed = False


def case_scopes_and_order(b: Backend, tmp: Path) -> None:
    """search_vector ranks by cosine, keeps to the named scopes (one collection each, a
    one-letter scope included), and returns live entries from the journal."""
    texts = {
        ("user", "cats"): "cats purr and sleep on warm laps",
        ("user", "dogs"): "dogs bark at the mail carrier",
        ("user", "tax"): "quarterly tax forms are due in april",
        ("project", "cats"): "the build bot is named after cats that purr",
        ("a", "cats"): "cats purr",
    }
    query = "cats purr on laps"
    with b.open(tmp) as st:
        for (scope, name), text in texts.items():
            st.put(Entry(scope, name, text, {"type": "note"}))
        hits = st.search_vector(embed(query), limit=10, scopes=["user"])
        assert {e.scope for e, _ in hits} == {"user"}
        want = sorted((k for k in texts if k[0] == "user"), key=lambda k: -cosine(query, texts[k]))
        assert keys(hits) == [f"{s}/{n}" for s, n in want]
        for e, score in hits:
            assert score == pytest.approx(cosine(query, texts[(e.scope, e.name)]), abs=1e-5)
            assert e.content == texts[(e.scope, e.name)] and e.meta == {"type": "note"}
            assert e.hash == content_hash(e.content) and e.updated is not None
        order = ["a", "project", "user"]
        both = st.search_vector(embed(query), limit=2, scopes=order)
        ranked = sorted(texts, key=lambda k: (-cosine(query, texts[k]), order.index(k[0]), k[1]))
        assert keys(both) == [f"{s}/{n}" for s, n in ranked[:2]]
        assert st.search_vector(embed(query), limit=3, scopes=["nowhere"]) == []
        assert st.search_vector(embed(query), limit=0, scopes=["user"]) == []
        with pytest.raises(ValueError, match=r"shape \(3,\)"):
            st.search_vector(np.ones(3, np.float32), limit=1, scopes=["user"])
        names = {c.name for c in b.client(tmp).list_collections()}
        for scope in ("user", "project", "a"):
            assert st.collection_name(scope) in names
        assert st.verify().ok


def case_forget_and_stale_vectors(b: Backend, tmp: Path) -> None:
    """A forgotten entry is gone from the index before forget returns; a vector the journal no
    longer backs (a write that bypassed the index) is never returned, and repair() drops it."""
    with b.open(tmp) as st:
        st.put(Entry("user", "tz", "lives in europe london timezone"))
        st.put(Entry("user", "editor", "uses neovim with a dark theme"))
        col = b.client(tmp).get_collection(st.collection_name("user"))
        st.forget("user", "tz")
        assert col.get(ids=["user/tz"])["ids"] == []
        assert keys(st.search_vector(embed("london timezone"), limit=5, scopes=["user"])) == [
            "user/editor"
        ]
        # Writes straight to the journal leave the index behind: a stale and a forgotten vector.
        st.journal_store.put(Entry("user", "editor", "prefers emacs keybindings"))
        st.journal_store.forget("user", "editor")
        st.journal_store.put(Entry("user", "new", "uses neovim with a dark theme"))
        assert col.get(ids=["user/editor"])["ids"] == ["user/editor"]
        assert st.search_vector(embed("neovim dark theme"), limit=5, scopes=["user"]) == []
        report = st.verify()
        assert not report.ok
        assert (report.missing, report.stale, report.extra) == (["user/new"], [], ["user/editor"])
        fixed = st.repair()
        assert fixed.ok and fixed.live == 1 and fixed.indexed == 1
        hits = st.search_vector(embed("neovim dark theme"), limit=5, scopes=["user"])
        assert keys(hits) == ["user/new"]
        assert st.index_cursor == st.last_seq()


def case_resave_gets_fresh_vector(b: Backend, tmp: Path) -> None:
    """Re-saving a name replaces its vector (one id, the new hash); a description change alone
    re-embeds too."""
    with b.open(tmp) as st:
        st.put(Entry("user", "pet", "a tabby cat called Miso"))
        st.put(Entry("user", "other", "garden tools in the shed"))
        st.put(Entry("user", "pet", "a greyhound dog called Rex"))
        hits = st.search_vector(embed("greyhound dog Rex"), limit=1, scopes=["user"])
        assert keys(hits) == ["user/pet"] and hits[0][1] == pytest.approx(
            cosine("greyhound dog Rex", "a greyhound dog called Rex"), abs=1e-5
        )
        got = b.client(tmp).get_collection(st.collection_name("user")).get(ids=["user/pet"])
        # the vector keeps "sha256:" and 32 hex digits of its text's hash, and an entry of one
        # window no window keys (docs/storage.md#ids-and-metadata)
        rex = content_hash("a greyhound dog called Rex")
        assert got["metadatas"][0] == {"name": "pet", "text_hash": rex[:39]}
        cat = st.search_vector(embed("tabby cat Miso"), limit=2, scopes=["user"])
        assert cat[0][1] < 0.5, "the old text's vector is still there"
        st.put(Entry("user", "pet", "a greyhound dog called Rex", {"description": "tabby cat"}))
        hits = st.search_vector(embed("tabby cat"), limit=1, scopes=["user"])
        assert keys(hits) == ["user/pet"]
        assert st.verify().ok


def case_put_many_in_batches(b: Backend, tmp: Path) -> None:
    """put_many writes one journal transaction and indexes more entries than one chunk."""
    n = chroma_store_module.SYNC_CHUNK * 2 + 7
    with b.open(tmp) as st:
        changes = st.put_many(
            [Entry("bulk", f"e{i}", f"bulk entry number {i} word{i}") for i in range(n)]
            + [Entry("other", "x", "word7 elsewhere")]
        )
        assert [c.seq for c in changes] == list(range(1, n + 2))
        report = st.verify()
        assert report.ok and report.indexed == n + 1
        assert indexed_cosine(st, "bulk/e1000", "bulk entry number 1000 word1000") > 0.999
        assert (
            indexed_cosine(st, f"bulk/e{n - 1}", f"bulk entry number {n - 1} word{n - 1}") > 0.999
        )
        assert st.index_cursor == n + 1


def case_exception_between_steps(b: Backend, tmp: Path) -> None:
    """An error after the journal commit leaves the write in the journal and the store usable;
    the next write catches the index up; so does reopening."""

    fault = Fault()
    with b.open(tmp, store_type=fault.store_type) as st:
        st.put(Entry("user", "first", "apples and pears"))
        with fault.on(), pytest.raises(IndexWriteError, match="seq 2") as info:
            st.put(Entry("user", "second", "bananas and cherries"))
        assert [c.entry.name for c in info.value.changes] == ["second"]
        assert isinstance(info.value.__cause__, RuntimeError)
        assert st.get("user", "second").content == "bananas and cherries"
        missed = st.search_vector(embed("bananas cherries"), limit=2, scopes=["user"])
        assert "user/second" not in keys(missed)
        assert st.verify().missing == ["user/second"]
        assert st.index_cursor == 1
        st.put(Entry("user", "third", "plums"))
        assert st.verify().ok
        assert keys(st.search_vector(embed("bananas cherries"), limit=1, scopes=["user"])) == [
            "user/second"
        ]
        assert st.index_cursor == 3
        # The same fault, then a reopen instead of another write.
        with fault.on(), pytest.raises(IndexWriteError):
            st.forget("user", "first")
        assert st.verify().extra == ["user/first"]
        hits = st.search_vector(embed("apples pears"), limit=3, scopes=["user"])
        assert "user/first" not in keys(hits), "a forgotten entry came back from a stale vector"
    with b.open(tmp) as st:
        assert st.verify().ok
        assert st.index_cursor == 4


def case_fault_is_scoped_to_its_handle(b: Backend, tmp: Path) -> None:
    """A fault given to one handle fails only that handle's index updates: a second handle on
    the same folder (sharing its index state) writes and indexes normally, and catches up the
    failed write; a later open without a fault is clean."""
    fault = Fault(armed=True)
    with b.open(tmp, store_type=fault.store_type) as faulty, b.open(tmp) as plain:
        with pytest.raises(IndexWriteError, match="seq 1"):
            faulty.put(Entry("user", "first", "apples and pears"))
        plain.put(Entry("user", "second", "bananas and cherries"))
        assert plain.verify().ok
        assert keys(plain.search_vector(embed("apples pears"), limit=1, scopes=["user"])) == [
            "user/first"
        ]
    with b.open(tmp) as st:
        st.put(Entry("user", "third", "plums"))
        assert st.verify().ok and st.index_cursor == 3


def case_index_lost_then_reindex(b: Backend, tmp: Path) -> None:
    """The index deleted behind the store's back: opening warns and verify lists what is
    missing; reindex() restores search, and later opens are quiet."""
    with b.open(tmp) as st:
        st.put(Entry("user", "cats", "cats purr"))
        st.put(Entry("project", "build", "run make check"))
    b.lose_index(tmp)
    with pytest.warns(IndexOutOfStepWarning, match=r"lost scopes project, user"):
        st = b.open(tmp)
    with st:
        report = st.verify()
        assert not report.ok and report.missing == ["project/build", "user/cats"]
        assert st.search_vector(embed("cats purr"), limit=1, scopes=["user"]) == []
        st.put(Entry("user", "dogs", "dogs bark"))
        assert st.reindex() == 3
        assert keys(st.search_vector(embed("cats purr"), limit=1, scopes=["user"])) == ["user/cats"]
        assert st.verify().ok
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with b.open(tmp) as st:
            assert st.verify().ok
    b.lose_index(tmp)
    with pytest.warns(IndexOutOfStepWarning, match=r"lost scopes project, user"), b.open(tmp):
        pass


class BreakingEmbedder(HashingEmbedder):
    """The hashing embedder of another dimension, made to fail after ``calls`` embed calls."""

    def __init__(self, calls: int) -> None:
        super().__init__(DIM // 2)
        self.calls = calls

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls -= 1
        if self.calls < 0:
            raise RuntimeError("the embedder broke during the rebuild")
        return super().embed(texts)


def case_reindex_cut_short_finishes_at_next_open(b: Backend, tmp: Path) -> None:
    """A rebuild for a new embedder that dies half way: the next open with that embedder
    finishes it (the cursor went back to 0 first), and the old embedder is refused."""
    n = chroma_store_module.SYNC_CHUNK + 10
    with b.open(tmp) as st:
        st.put_many([Entry("user", f"n{i}", f"note {i} word{i}") for i in range(n)])
    with pytest.raises(RuntimeError, match="broke"):
        b.open(tmp, embedder=BreakingEmbedder(calls=1), reindex=True)
    with pytest.raises(EmbedderMismatchError):
        b.open(tmp)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with b.open(tmp, embedder=HashingEmbedder(DIM // 2)) as st:
            report = st.verify()
            assert report.ok and report.indexed == n, report
            assert st.index_cursor == n


def case_embedder_mismatch(b: Backend, tmp: Path) -> None:
    """Another embedder is refused, naming both fingerprints and reindex; reindex=True switches."""
    with b.open(tmp) as st:
        st.put(Entry("user", "cats", "cats purr"))
        first = st.embedder.fingerprint
    other = HashingEmbedder(DIM // 2)
    with pytest.raises(EmbedderMismatchError) as info:
        b.open(tmp, embedder=other)
    message = str(info.value)
    assert first in message and other.fingerprint in message and "reindex" in message
    with b.open(tmp, embedder=other, reindex=True) as st:
        assert st.verify().ok
        hits = st.search_vector(other.embed(["cats purr"])[0], limit=1, scopes=["user"])
        assert keys(hits) == ["user/cats"] and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(EmbedderMismatchError):
        b.open(tmp)


def case_racing_writers_leave_no_stale_vector(b: Backend, tmp: Path) -> None:
    """Threads re-saving the same names through one store: the index ends with each name's last
    journal state, never an older one."""
    with b.open(tmp) as st:
        errors: list[BaseException] = []

        def writer(w: int) -> None:
            try:
                for i in range(12):
                    st.put(Entry("user", f"shared-{i % 3}", f"writer {w} version {i}"))
            except BaseException as err:  # reported below
                errors.append(err)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        report = st.verify()
        assert report.ok, report
        assert st.index_cursor == st.last_seq() == 48


def case_replay_after_journal_writes(b: Backend, tmp: Path) -> None:
    """Records the cursor has not seen (written through the journal alone) are indexed at the
    next open."""
    with b.open(tmp) as st:
        st.put(Entry("user", "cats", "cats purr"))
        st.journal_store.put(Entry("user", "dogs", "dogs bark"))
        st.journal_store.put(Entry("user", "cats", "cats hiss"))
        assert st.verify().missing == ["user/dogs"]
    with b.open(tmp) as st:
        assert st.verify().ok
        assert keys(st.search_vector(embed("cats hiss"), limit=1, scopes=["user"])) == ["user/cats"]
        assert st.index_cursor == 3


def case_two_handles_share_the_index(b: Backend, tmp: Path) -> None:
    """Two handles in one process, written from several threads: one cursor, a clean index, and
    each sees the other's vectors; closing one leaves the other working."""
    first = b.open(tmp)
    second = b.open(tmp)
    try:
        errors: list[BaseException] = []

        def writer(st: ChromaStore, w: int) -> None:
            try:
                for i in range(10):
                    st.put(Entry("user", f"h{w}-n{i}", f"handle {w} note {i} word{w}x{i}"))
            except BaseException as err:  # reported below
                errors.append(err)

        threads = [
            threading.Thread(target=writer, args=(st, w))
            for w, st in enumerate([first, second, first, second])
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert [c.seq for c in second.journal()] == list(range(1, 41))
        assert first.verify().ok and second.verify().ok
        assert first.index_cursor == second.index_cursor == 40
        assert keys(second.search_vector(embed("word0x3"), limit=1, scopes=["user"])) == [
            "user/h0-n3"
        ]
        first.close()
        second.put(Entry("user", "after", "written after the first handle closed"))
        assert second.verify().ok
    finally:
        first.close()
        second.close()


def case_recall_fuses_bm25_and_vectors(b: Backend, tmp: Path) -> None:
    """recall: "bm25" and "vector" give one leg each, "auto"/"hybrid" fuse both by the default
    fusion (z-score, BM25 0.75, vector 0.25); forgotten entries and other scopes never come
    back."""
    with b.open(tmp) as st:
        st.put(Entry("user", "editor", "uses neovim with a dark theme"))
        st.put(Entry("user", "lang", "prefers go over python for tools"))
        st.put(Entry("user", "gone", "neovim plugins list, forgotten"))
        st.put(Entry("other", "editor", "neovim neovim neovim"))
        st.forget("user", "gone")
        query = "neovim theme"
        bm25 = st.recall(query, scopes=["user"], mode="bm25")
        assert [h.entry.key for h in bm25] == ["user/editor"]
        assert set(bm25[0].legs) == {"bm25"}
        vector = st.recall(query, scopes=["user"], mode="vector", limit=2)
        assert vector[0].entry.key == "user/editor" and set(vector[0].legs) == {"vector"}
        assert vector[0].score == pytest.approx(
            cosine(query, "uses neovim with a dark theme"), abs=1e-5
        )
        for mode in ("auto", "hybrid"):
            fused = st.recall(query, scopes=["user"], mode=mode, limit=3)
            assert fused[0].entry.key == "user/editor"
            assert set(fused[0].legs) == {"bm25", "vector"}
            # first in both legs, so first of the fusion, by a margin
            assert fused[0].method == "z-score" and fused[0].score > 0
            assert all(h.score < fused[0].score for h in fused[1:])
            assert {h.entry.key for h in fused} <= {"user/editor", "user/lang"}


CASES = (
    case_scopes_and_order,
    case_forget_and_stale_vectors,
    case_resave_gets_fresh_vector,
    case_put_many_in_batches,
    case_exception_between_steps,
    case_fault_is_scoped_to_its_handle,
    case_index_lost_then_reindex,
    case_reindex_cut_short_finishes_at_next_open,
    case_embedder_mismatch,
    case_racing_writers_leave_no_stale_vector,
    case_replay_after_journal_writes,
    case_two_handles_share_the_index,
    case_recall_fuses_bm25_and_vectors,
)
