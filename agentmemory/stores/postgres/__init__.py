"""The PostgreSQL journal: :class:`PostgresStore`, the journal and its BM25 index in one
database that several hosts share (docs/storage.md#postgresql). Importing it imports psycopg.

The face is this package's ``__all__``; its modules (``store``, ``connection``, ``migrations``,
``lexicon``, ``purge``) are internal (docs/README.md#public-face-and-internal-modules).
"""

from __future__ import annotations

from .store import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_LOCK_TIMEOUT_S,
    PG_MIGRATIONS,
    PgMigration,
    PostgresStore,
    dsn_where,
)

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_LOCK_TIMEOUT_S",
    "PG_MIGRATIONS",
    "PgMigration",
    "PostgresStore",
    "dsn_where",
]
