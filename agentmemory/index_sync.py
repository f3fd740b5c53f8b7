"""IndexSync: bring a ChromaIndex in line with the journal's live entries, and compare the two.

The journal (a :class:`~agentmemory.SqliteStore`) is the truth; the index must hold one vector
per live entry, made from :func:`embedding_text` of that entry, and nothing for an entry that is
not live. :meth:`IndexSync.sync` makes it so for given keys: embed outside the index lock (the
slow part), then under it write the index and read the journal's live state of the keys once; a
key another writer changed meanwhile is written again from the state read, up to
:data:`SYNC_ROUNDS` times (docs/storage.md#a-failed-index-update). :meth:`IndexSync.compare`
lists what is missing, stale or extra (:class:`IndexReport`).

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

from embedders import Embedder

from .chroma_index import ChromaIndex, IndexRow
from .entries import Entry, content_hash
from .errors import IndexOutOfStepError
from .journal_store import JournalStore

__all__ = ["SYNC_ROUNDS", "IndexReport", "IndexSync", "embedding_text", "text_hash"]

SYNC_ROUNDS = 5
"""How often one index update re-reads and re-applies keys that another process changed while
it was writing them, before it gives up and leaves them to ``repair()``."""

Key = tuple[str, str]
"""An entry's ``(scope, name)``."""

Vectors = dict[Key, tuple[str, npt.NDArray[np.float32]]]
"""Embeddings by key, each with the text hash it was made from."""


def embedding_text(entry: Entry) -> str:
    """The text ChromaStore embeds for ``entry``: ``"<description>\\n\\n<content>"`` when the
    entry has a ``description`` meta value, else the content alone."""
    description = entry.description
    return f"{description}\n\n{entry.content}" if description else entry.content


def text_hash(entry: Entry) -> str:
    """The hash of :func:`embedding_text` of ``entry`` (``"sha256:<hex>"``): what a vector made
    from the entry's current text is stored with (metadata ``text_hash``)."""
    return content_hash(embedding_text(entry))


def _state(entry: Entry | None) -> str | None:
    """What the index must hold for a key: the text hash of its live entry, or nothing."""
    return None if entry is None else text_hash(entry)


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What :meth:`ChromaStore.verify` found, comparing the index with the journal.

    Attributes:
        ok: no key is missing, stale or extra.
        missing: keys (``"scope/name"``) live in the journal without a vector, sorted.
        stale: keys whose vector was made from other text than the live entry's, sorted.
        extra: keys with a vector that are not live in the journal (forgotten or unknown), sorted.
        live: number of live entries in the journal.
        indexed: number of vectors in the store's collections.
        cursor: the index cursor (every record up to this ``seq`` is applied).
        last_seq: the journal's last ``seq`` when the check began.
    """

    ok: bool
    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    live: int = 0
    indexed: int = 0
    cursor: int = 0
    last_seq: int = 0

    def __str__(self) -> str:
        if self.ok:
            return f"index ok: {self.indexed} vectors for {self.live} live entries"
        parts = []
        for label, keys in (
            ("missing", self.missing),
            ("stale", self.stale),
            ("extra", self.extra),
        ):
            if keys:
                shown = ", ".join(keys[:5]) + (", ..." if len(keys) > 5 else "")
                parts.append(f"{len(keys)} {label} ({shown})")
        return (
            f"index out of step: {'; '.join(parts)}; {self.indexed} vectors for {self.live} "
            "live entries; repair() or reindex() fixes it"
        )


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
        """Vectors for ``entries`` by key, with the text hash each was made from.

        Raises:
            ValueError: the embedder returned another shape than ``(len(part), dim)``.
        """
        out: Vectors = {}
        dim = self._embedder.dim
        for start in range(0, len(entries), self._batch):
            part = entries[start : start + self._batch]
            texts = [embedding_text(e) for e in part]
            matrix = np.asarray(self._embedder.embed(texts), dtype=np.float32)
            if matrix.shape != (len(part), dim):
                raise ValueError(
                    f"embedder {self._embedder.name} returned an array of shape {matrix.shape} "
                    f"for {len(part)} texts; expected ({len(part)}, {dim})"
                )
            for e, text, row in zip(part, texts, matrix, strict=True):
                out[(e.scope, e.name)] = (content_hash(text), row)
        return out

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
    ) -> None:
        """Make the index hold exactly the journal's live state of ``keys``, ``batch`` keys at a
        time. With ``check_index``, keys the index already holds right are skipped (nothing is
        embedded for them). ``known`` gives the journal state of every key when the caller just
        wrote it (its records' entries, a tombstone for a forgotten key), so it is not read
        back before the index is written.

        Raises:
            IndexOutOfStepError: keys changed in the journal during each of
                :data:`SYNC_ROUNDS` rounds (another process writing them).
            And what the embedder or Chroma raise.
        """
        todo = builtins.list(dict.fromkeys(keys))
        for start in range(0, len(todo), self._batch):
            self._sync_chunk(
                todo[start : start + self._batch], check_index=check_index, known=known
            )

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
        """Every vector in the index's collections: key to text hash."""
        out: dict[Key, str] = {}
        for scope in self._index.scopes():
            for page in self._index.iter_held(scope, self._batch):
                for name, held in page.items():
                    out[(scope, name)] = held
        return out

    def compare(self, *, cursor: int) -> IndexReport:
        """Compare the index with the journal (every live entry, every vector's metadata);
        ``cursor`` is reported as it is. Writes made meanwhile may show up as missing or
        stale. Changes nothing."""
        last = self._journal.last_seq()
        live: dict[Key, str] = {}
        for batch in self._journal.iter_live(self._batch):
            for e in batch:
                live[(e.scope, e.name)] = text_hash(e)
        indexed = self.all_indexed()

        def keys(found: Iterable[Key]) -> builtins.list[str]:
            return sorted(f"{s}/{n}" for s, n in found)

        missing = keys(k for k in live if k not in indexed)
        extra = keys(k for k in indexed if k not in live)
        stale = keys(k for k, h in live.items() if k in indexed and indexed[k] != h)
        return IndexReport(
            ok=not (missing or stale or extra),
            missing=missing,
            stale=stale,
            extra=extra,
            live=len(live),
            indexed=len(indexed),
            cursor=cursor,
            last_seq=last,
        )
