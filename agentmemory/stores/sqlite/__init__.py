"""The sqlite journal: :class:`SqliteStore`, one file in WAL mode, with its own BM25 index in
FTS5 tables (docs/storage.md#the-sqlite-journal).

The face is this package's ``__all__``; its modules (``store``, ``core``, ``migrations``,
``lexicon``, ``purge``, ``recovery``, ``faults``) are internal
(docs/README.md#public-face-and-internal-modules).
"""

from __future__ import annotations

from .store import DEFAULT_BUSY_TIMEOUT_S, MIGRATIONS, Migration, SqliteStore

__all__ = ["DEFAULT_BUSY_TIMEOUT_S", "MIGRATIONS", "Migration", "SqliteStore"]
