"""ChromaStore's index upkeep: check the index against the journal, repair it, rebuild it
(docs/storage.md#verify-repair-reindex).

Each is the :class:`~agentmemory.stores.chroma.follow.IndexFollower`'s work on this handle's
index, behind the handle's guards (closed, journal-only).
"""

from __future__ import annotations

from collections.abc import Iterable

from embedders import window_layout

from .core import ChromaCore
from .sync import IndexReport

__all__ = ["IndexUpkeep"]


class IndexUpkeep(ChromaCore):
    """``verify``, ``repair`` and ``reindex`` (a part of ``ChromaStore``)."""

    def verify(self) -> IndexReport:
        """Compare the index with the journal; returns an :class:`IndexReport`.

        Reads every live entry and every vector's metadata (its duration: benchmarks/README.md,
        "Notes moved from docstrings", agentmemory.stores.chroma). Writes
        made while it runs may show up as missing or stale. Changes nothing.
        """
        self._check_open()
        return self._following().verify()

    def repair(self, *, keep: Iterable[str] = ()) -> IndexReport:
        """Apply what the cursor has not seen, then fix every key :meth:`verify` finds missing,
        stale or extra (embedding only those). Returns the report of a second verify; when it
        is clean, the cursor moves to the journal's end and the lost-index warning stops.

        ``keep``: extra keys (``"scope/name"``) whose vectors stay, for example those of entries
        the journal never had (``SqliteStore.never_journaled``), kept as evidence that the
        journal lost records (docs/storage.md#a-journal-shorter-than-its-index).

        Raises what the embedder or Chroma raise; the index is then no worse than before.
        """
        self._check_open()
        return self._following().repair(keep=keep, batch=self._batch)

    def reindex(self) -> int:
        """Rebuild the index from the journal with this store's embedder: drop the store's
        collections, embed every live entry, and record the embedder's fingerprint. Returns the
        number of entries indexed.

        Writes made meanwhile (by any handle) are kept: they wait for the collections to be
        dropped, then land in the new ones. Vector search sees a partial index until it ends.
        The cursor is set back to 0 (and the new fingerprint recorded) before anything is
        dropped, so a rebuild cut short finishes at the next open, which replays the whole
        journal and embeds only what is still missing.
        """
        self._check_open()
        return self._following().reindex(
            self._embedder.fingerprint, batch=self._batch, layout=window_layout(self._embedder)
        )
