"""Sync and search: bring a ChromaIndex in line with the journal's live entries, compare the two,
and search the index checked against the journal.

The journal (a :class:`~agentmemory.SqliteStore`) is the truth; the index must hold, for each
live entry, one vector per window of :func:`embedding_text` of that entry
(:func:`embed_entries`, docs/recall.md#windows), and nothing for an entry that is not live.
:meth:`IndexSync.sync` makes it so for given keys: embed outside the index lock (the slow part),
then under it write the index and read the journal's live state of the keys once; a key another
writer changed meanwhile is written again from the state read, up to :data:`SYNC_ROUNDS` times
(docs/storage.md#a-failed-index-update). :meth:`IndexSync.compare` lists, per entry, what is
missing, stale or extra, and searches a sample of each scope's entries with their own vectors
(:class:`IndexReport`, docs/storage.md#self-queries).

:func:`nearest_live` is vector search checked against the journal: the index is derived and may
hold vectors the journal no longer agrees with (an entry forgotten or rewritten by another
process since, an index update that failed). Every neighbour is therefore looked up in the
journal, and kept only when its entry is live and its vector was made from the entry's current
text (its ``text_hash``); the entry returned is the journal's. When stale vectors had to be
dropped, the scope is asked again, deeper
(docs/storage.md#vector-search-checked-against-the-journal).

Which journal records are applied (the cursor), and when to sync, is
:class:`~agentmemory.ChromaStore`'s business, not this module's.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from agentmemory.entries import Entry, content_hash
from agentmemory.errors import IndexOutOfStepError
from agentmemory.progress import ANNOUNCE_FROM, announce_indexing
from agentmemory.wording import counted
from embedders import Embedder, text_windows

from .index import ChromaIndex, IndexRow, short_text_hash
from .journal_source import JournalStore

__all__ = [
    "SELF_SEARCH_MIN_FOUND",
    "SELF_SEARCH_SAMPLE",
    "SYNC_ROUNDS",
    "IndexReport",
    "IndexSync",
    "embed_entries",
    "embedding_text",
    "nearest_live",
    "text_hash",
]

SYNC_ROUNDS = 5
"""How often one index update re-reads and re-applies keys that another process changed while
it was writing them, before it gives up and leaves them to ``repair()``."""

Key = tuple[str, str]
"""An entry's ``(scope, name)``."""

Vectors = dict[Key, tuple[str, npt.NDArray[np.float32]]]
"""Embeddings by key: the text hash they were made from and the ``(w, dim)`` float32 matrix of
the text's ``w`` windows."""

SELF_SEARCH_SAMPLE = 32
"""Entries per scope whose own vector :meth:`IndexSync.compare` searches with
(docs/storage.md#self-queries)."""

SELF_SEARCH_MIN_FOUND = 1
"""How many of a scope's sample must find themselves (besides none being lost) for the scope to
count as searchable: one. HNSW search is approximate, and on synthetic data it can miss many
healthy entries (how many, and why a rebuild does not change that: docs/storage.md#self-queries),
so misses are reported, not repaired; a scope fails when Chroma cannot read back or search a
vector it lists (a lost segment file), or when none of its sample is found."""


def embedding_text(entry: Entry) -> str:
    """The text ChromaStore embeds for ``entry``: ``"<description>\\n\\n<content>"`` when the
    entry has a ``description`` meta value, else the content alone. Its windows are what the
    index holds (:func:`embed_entries`); the description lies in the first
    (docs/recall.md#windows)."""
    description = entry.description
    return f"{description}\n\n{entry.content}" if description else entry.content


def text_hash(entry: Entry) -> str:
    """The hash of :func:`embedding_text` of ``entry`` as a vector keeps it (``"sha256:"`` and
    32 hex digits, :func:`~.index.short_text_hash`): what every window of a vector made from the
    entry's current text is stored with (metadata ``text_hash``) and compared with."""
    return short_text_hash(content_hash(embedding_text(entry)))


def embed_entries(embedder: Embedder, entries: Sequence[Entry], *, batch: int) -> Vectors:
    """Every window of ``entries``' :func:`embedding_text`, embedded ``batch`` entries at a
    time (the windows of a batch's entries in one ``embed`` call), by key, each with the hash
    of the whole text (docs/recall.md#windows). The store's index and a Markdown folder's
    vectors both embed through here.

    Raises:
        ValueError: the embedder returned another shape than ``(windows, dim)``, or broken
            windows (:func:`embedders.text_windows`).
        And what the embedder raises.
    """
    out: Vectors = {}
    dim = embedder.dim
    step = max(1, batch)
    for start in range(0, len(entries), step):
        part = entries[start : start + step]
        texts = [embedding_text(e) for e in part]
        windows = [text_windows(embedder, t) for t in texts]
        flat = [w for ws in windows for w in ws]
        matrix = np.asarray(embedder.embed(flat), dtype=np.float32)
        if matrix.shape != (len(flat), dim):
            raise ValueError(
                f"embedder {embedder.name} returned an array of shape {matrix.shape} "
                f"for {len(flat)} texts; expected ({len(flat)}, {dim})"
            )
        at = 0
        for e, text, ws in zip(part, texts, windows, strict=True):
            out[(e.scope, e.name)] = (
                short_text_hash(content_hash(text)),
                matrix[at : at + len(ws)],
            )
            at += len(ws)
    return out


def _state(entry: Entry | None) -> str | None:
    """What the index must hold for a key: the text hash of its live entry, or nothing."""
    return None if entry is None else text_hash(entry)


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What :meth:`ChromaStore.verify` found, comparing the index with the journal.

    Everything is counted per entry, not per vector: an entry is indexed when its windows are
    in the index (docs/recall.md#windows).

    Attributes:
        ok: no key is missing, stale or extra, and every scope's self-queries found enough of
            its sample (no ``unsearchable_scopes``).
        missing: keys (``"scope/name"``) live in the journal without a vector, sorted.
        stale: keys whose vectors were made from other text than the live entry's, or whose
            windows are not whole (one missing, or left from another text), sorted.
        extra: keys with a vector that are not live in the journal (forgotten or unknown), sorted.
        live: number of live entries in the journal.
        indexed: number of entries with a vector in the store's collections.
        cursor: the index cursor (every record up to this ``seq`` is applied).
        last_seq: the journal's last ``seq`` when the check began.
        vectors: number of vectors (windows) in the store's collections.
        searched: entries whose own vector was searched with (docs/storage.md#self-queries).
        found: how many of them the search found.
        unsearchable: the searched keys that were not found (missed by the approximate search,
            or lost), sorted.
        lost: the searched keys whose vector Chroma lists but cannot read back or search with
            (a lost or damaged segment file), sorted.
        unsearchable_scopes: scopes with a lost entry in their sample, or fewer than
            :data:`SELF_SEARCH_MIN_FOUND` found, sorted; ``repair()`` rebuilds them from the
            journal.
    """

    ok: bool
    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    live: int = 0
    indexed: int = 0
    cursor: int = 0
    last_seq: int = 0
    vectors: int = 0
    searched: int = 0
    found: int = 0
    unsearchable: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    unsearchable_scopes: list[str] = field(default_factory=list)

    def _searched(self) -> str:
        return f"self-search found {self.found} of {self.searched} sampled"

    def __str__(self) -> str:
        counts = (
            f"{counted(self.indexed, 'entry')} indexed ({counted(self.vectors, 'vector')}) "
            f"for {counted(self.live, 'live entry', 'live entries')}; {self._searched()}"
        )
        if self.ok:
            return f"index ok: {counts}"
        parts = []
        for label, keys in (
            ("missing", self.missing),
            ("stale", self.stale),
            ("extra", self.extra),
            ("lost (listed by Chroma, not readable or searchable)", self.lost),
        ):
            if keys:
                shown = ", ".join(keys[:5]) + (", ..." if len(keys) > 5 else "")
                parts.append(f"{len(keys)} {label} ({shown})")
        if self.unsearchable_scopes:
            parts.append(f"scopes not searchable: {', '.join(self.unsearchable_scopes)}")
        return f"index out of step: {'; '.join(parts)}; {counts}; repair() or reindex() fixes it"


class IndexSync:
    """Keeps ``index`` in line with ``journal``'s live entries, with ``embedder``'s vectors.

    Args:
        journal: the journal (the truth).
        index: the vectors.
        embedder: makes the vectors (``embed(texts) -> (n, dim)`` float32).
        batch: entries embedded and written per step (1 or more).
        lock: held while the index is written and the journal read back (shared by every
            handle on the index in the process).
        where: the store's folder, named in errors.
    """

    def __init__(
        self,
        journal: JournalStore,
        index: ChromaIndex,
        embedder: Embedder,
        *,
        batch: int,
        lock: threading.RLock,
        where: str,
    ) -> None:
        self._journal = journal
        self._index = index
        self._embedder = embedder
        self._batch = max(1, batch)
        self._lock = lock
        self._where = where

    def embed(self, entries: Sequence[Entry]) -> Vectors:
        """Every window's vector for ``entries`` by key, with the text hash each was made from
        (:func:`embed_entries`, ``batch`` entries per ``embed`` call).

        Raises:
            ValueError: the embedder returned another shape than ``(windows, dim)``.
        """
        return embed_entries(self._embedder, entries, batch=self._batch)

    def window_counts(self, entries: Sequence[Entry]) -> dict[Key, int]:
        """How many windows each of ``entries``' text has for this embedder, by key (tokenizes
        every text; embeds nothing)."""
        return {
            (e.scope, e.name): len(text_windows(self._embedder, embedding_text(e))) for e in entries
        }

    def relayout(self, entries: Sequence[Entry]) -> int:
        """Re-embed those of ``entries`` whose windows differ under this embedder's window
        layout from what the index holds: each text of more than one window now, and each
        entry the index holds as more than one; return how many were re-embedded
        (docs/storage.md#windows-and-the-index-state)."""
        keys: builtins.list[Key] = []
        now = self.window_counts(entries)
        by_scope: dict[str, builtins.list[str]] = {}
        for scope, name in now:
            by_scope.setdefault(scope, []).append(name)
        held: dict[Key, int] = {}
        for scope, names in by_scope.items():
            for name, w in self._index.window_counts(scope, names).items():
                held[(scope, name)] = w
        keys = [k for k, w in now.items() if w > 1 or held.get(k, 1) > 1]
        if keys:
            self.sync(keys, check_index=False)
        return len(keys)

    def indexed(self, keys: Sequence[Key]) -> dict[Key, str]:
        """The text hash the index holds for each of ``keys`` that has a vector."""
        by_scope: dict[str, builtins.list[str]] = {}
        for scope, name in keys:
            by_scope.setdefault(scope, []).append(name)
        out: dict[Key, str] = {}
        for scope, names in by_scope.items():
            for name, held in self._index.held(scope, names).items():
                out[(scope, name)] = held
        return out

    def sync(
        self,
        keys: Sequence[Key],
        *,
        check_index: bool,
        known: dict[Key, Entry] | None = None,
        by_name: bool = False,
    ) -> None:
        """Make the index hold exactly the journal's live state of ``keys``, ``batch`` keys at a
        time. With ``check_index``, keys the index already holds right are skipped (nothing is
        embedded for them). ``known`` gives the journal state of every key when the caller just
        wrote it (its records' entries, a tombstone for a forgotten key), so it is not read
        back before the index is written. ``by_name`` first removes every vector whose
        metadata names the keys (:meth:`ChromaIndex.delete` with ``by_name``), windows no count
        names included: what a repair does.

        Raises:
            IndexOutOfStepError: keys changed in the journal during each of
                :data:`SYNC_ROUNDS` rounds (another process writing them).
            And what the embedder or Chroma raise.
        """
        todo = builtins.list(dict.fromkeys(keys))
        if check_index and len(todo) >= ANNOUNCE_FROM:
            # a long catch-up (an index far behind its journal): count what will be embedded,
            # say so before the wait (agentmemory.progress), then embed only those
            live = self._journal.live_many(todo)
            have = self.indexed(todo)
            todo = [k for k in todo if have.get(k) != _state(live.get(k))]
            embedded = sum(1 for k in todo if k in live)
            announce_indexing(self._where, embedded, "journal records its vector index lacks")
            check_index = False  # checked just now: the chunks need not read the index again
        for start in range(0, len(todo), self._batch):
            part = todo[start : start + self._batch]
            if by_name:
                with self._lock:
                    for scope, names in _by_scope(part).items():
                        self._index.delete(scope, names, by_name=True)
            self._sync_chunk(part, check_index=check_index, known=known)

    def _sync_chunk(
        self,
        keys: builtins.list[Key],
        *,
        check_index: bool,
        known: dict[Key, Entry] | None = None,
    ) -> None:
        if known is None:
            live = self._journal.live_many(keys)
        else:
            live = {k: known[k] for k in keys if not known[k].deleted}
        if check_index:
            have = self.indexed(keys)
            keys = [k for k in keys if have.get(k) != _state(live.get(k))]
            if not keys:
                return
        # Embed outside the lock (the slow part). Under it, write the index, then read the
        # journal's live state of the keys once: a key another writer changed meanwhile is
        # written again from that state, so of two writers racing on one key the later
        # journal state is what the index keeps (a vector written from older text in between
        # is never returned: search checks each hit against the journal).
        vectors = self.embed([live[k] for k in keys if k in live])
        with self._lock:
            for _ in range(SYNC_ROUNDS):
                self._apply(keys, live, vectors)
                after = self._journal.live_many(keys)
                keys = [k for k in keys if _state(live.get(k)) != _state(after.get(k))]
                if not keys:
                    return
                live = after
                redo = [
                    after[k]
                    for k in keys
                    if k in after and vectors.get(k, ("",))[0] != text_hash(after[k])
                ]
                if redo:
                    vectors.update(self.embed(redo))
        raise IndexOutOfStepError(
            f"agentmemory: store {self._where}: entries "
            f"{', '.join(f'{s}/{n}' for s, n in keys)} changed in the journal during each of "
            f"{SYNC_ROUNDS} index updates (another process writing them?); call repair() when "
            "the writes settle"
        )

    def _apply(self, keys: Sequence[Key], live: dict[Key, Entry], vectors: Vectors) -> None:
        """Delete the vectors of the keys that are not live, then upsert those of the live
        ones: one index call per scope each."""
        ups: dict[str, builtins.list[IndexRow]] = {}
        dels: dict[str, builtins.list[str]] = {}
        for k in keys:
            e = live.get(k)
            if e is None:
                dels.setdefault(k[0], []).append(k[1])
            else:
                held, vector = vectors[k]
                ups.setdefault(k[0], []).append(IndexRow(e.name, e.hash, held, vector))
        for scope, names in dels.items():
            self._index.delete(scope, names)
        for scope, rows in ups.items():
            self._index.upsert(scope, rows)

    def all_indexed(self) -> dict[Key, str]:
        """Every entry with a vector in the index's collections: key to text hash (``""`` when
        its windows are not whole, :meth:`ChromaIndex.iter_held`)."""
        out: dict[Key, str] = {}
        for scope in self._index.scopes():
            for page in self._index.iter_held(scope, self._batch):
                for name, held in page.items():
                    out[(scope, name)] = held
        return out

    def self_search(
        self, names: dict[str, builtins.list[str]], *, sample: int = SELF_SEARCH_SAMPLE
    ) -> tuple[int, builtins.list[str], builtins.list[str], builtins.list[str]]:
        """Search each scope of ``names`` (scope to its indexed, current entries' names) with
        the own window-0 vectors of ``sample`` of its entries, evenly spaced in name order
        (:meth:`ChromaIndex.self_search`). Returns how many were searched, the keys not found
        (missed or lost), the keys lost (their vector cannot be read back or searched with),
        and the scopes that fail: one entry of the sample lost, or under
        :data:`SELF_SEARCH_MIN_FOUND` found (docs/storage.md#self-queries)."""
        searched = 0
        unfound: builtins.list[str] = []
        lost: builtins.list[str] = []
        failed: builtins.list[str] = []
        for scope in sorted(names):
            ordered = sorted(names[scope], key=lambda n: n.encode())
            if not ordered:
                continue
            take = min(sample, len(ordered))
            picked = [ordered[i * len(ordered) // take] for i in range(take)]
            said = self._index.self_search(scope, picked)
            searched += len(picked)
            unfound += [f"{scope}/{n}" for n in picked if said[n] != "found"]
            gone = [f"{scope}/{n}" for n in picked if said[n] == "lost"]
            lost += gone
            found = sum(said[n] == "found" for n in picked)
            if gone or found < min(SELF_SEARCH_MIN_FOUND, len(picked)):
                failed.append(scope)
        return searched, sorted(unfound), sorted(lost), failed

    def compare(self, *, cursor: int) -> IndexReport:
        """Compare the index with the journal (every live entry, every vector's metadata, per
        entry), then search a sample of each scope's entries with their own vectors
        (:meth:`self_search`); ``cursor`` is reported as it is. Writes made meanwhile may show
        up as missing or stale. Changes nothing."""
        last = self._journal.last_seq()
        live: dict[Key, str] = {}
        for batch in self._journal.iter_live(self._batch):
            for e in batch:
                live[(e.scope, e.name)] = text_hash(e)
        indexed = self.all_indexed()
        vectors = sum(self._index.vector_count(scope) for scope in self._index.scopes())

        def keys(found: Iterable[Key]) -> builtins.list[str]:
            return sorted(f"{s}/{n}" for s, n in found)

        missing = keys(k for k in live if k not in indexed)
        extra = keys(k for k in indexed if k not in live)
        stale = keys(k for k, h in live.items() if k in indexed and indexed[k] != h)
        current: dict[str, builtins.list[str]] = {}
        for (scope, name), h in live.items():
            if indexed.get((scope, name)) == h:
                current.setdefault(scope, []).append(name)
        searched, unfound, lost, failed = self.self_search(current)
        return IndexReport(
            ok=not (missing or stale or extra or failed),
            missing=missing,
            stale=stale,
            extra=extra,
            live=len(live),
            indexed=len(indexed),
            cursor=cursor,
            last_seq=last,
            vectors=vectors,
            searched=searched,
            found=searched - len(unfound),
            unsearchable=unfound,
            lost=lost,
            unsearchable_scopes=failed,
        )


def _by_scope(keys: Iterable[Key]) -> dict[str, builtins.list[str]]:
    """Entry names by scope, in order."""
    out: dict[str, builtins.list[str]] = {}
    for scope, name in keys:
        out.setdefault(scope, []).append(name)
    return out


def _scope_nearest(
    index: ChromaIndex,
    journal: JournalStore,
    scope: str,
    query: npt.NDArray[np.float32],
    limit: int,
) -> builtins.list[tuple[Entry, float]]:
    """Up to ``limit`` (entry, cosine similarity) of one scope, checked against the journal;
    asks Chroma for more when stale vectors had to be dropped."""
    want = limit
    while True:
        found = index.query(scope, query, want)
        live = journal.live_many([(scope, n.name) for n in found])
        good: builtins.list[tuple[Entry, float]] = []
        for n in found:
            e = live.get((scope, n.name))
            if e is None:
                continue
            if n.text_hash is not None and n.text_hash != text_hash(e):
                continue
            good.append((e, 1.0 - n.distance))
        if len(good) >= limit or len(found) < want:
            return good[:limit]
        want = want * 2 + (limit - len(good))


def nearest_live(
    index: ChromaIndex,
    journal: JournalStore,
    query: npt.NDArray[np.float32],
    *,
    scopes: Sequence[str],
    limit: int,
) -> builtins.list[tuple[Entry, float]]:
    """The at most ``limit`` live entries of ``scopes`` nearest the ``(dim,)`` float32
    ``query``, nearest first, each with its cosine similarity (``1 - cosine distance``,
    unitless, in [-1, 1]).

    ``scopes`` are kebab-case scope names, each searched in its own collection (no ``where``
    filter) for ``limit`` neighbours; ties break by the scope's position in ``scopes``, then by
    name (UTF-8 byte order). ``[]`` when ``limit`` is under 1. Chroma's errors propagate.
    """
    if limit < 1:
        return []
    order = {s: i for i, s in reversed(builtins.list(enumerate(scopes)))}
    hits: builtins.list[tuple[int, Entry, float]] = []
    for scope, position in sorted(order.items(), key=lambda kv: kv[1]):
        for e, score in _scope_nearest(index, journal, scope, query, limit):
            hits.append((position, e, score))
    hits.sort(key=lambda h: (-h[2], h[0], h[1].name.encode()))
    return [(e, score) for _, e, score in hits[:limit]]
