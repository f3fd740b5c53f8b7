"""The schema of SqliteStore's file: the numbered migrations and the step that applies them.

:data:`MIGRATIONS` is the list of steps (docs/storage.md#tables); :class:`SchemaSteps` applies
the pending ones on open in one immediate transaction, adopting a table of ours that already
exists with the same columns and refusing one with other columns, or a step this version does
not know, with :class:`~agentmemory.StoreFormatError`.
"""

from __future__ import annotations

import builtins
import logging
import sqlite3
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from agentmemory.stores.base import utc_now
from agentmemory.wire import format_time

from .core import SqliteCore
from .faults import LEXICAL_DAMAGE_KEY, _LexiconDamaged, is_busy, is_damage
from .lexicon import (
    DOC_FREQ_TABLES,
    FTS5_TABLES,
    create_doc_freq_table,
    create_tables,
    fill_doc_freqs,
)

__all__ = [
    "MIGRATIONS",
    "SESSION_SQL",
    "STORE_ID_KEY",
    "SUPERSEDES_SQL",
    "Migration",
    "SchemaSteps",
]

logger = logging.getLogger("agentmemory.stores.sqlite.store")


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered schema step, applied once per database inside the schema transaction.

    Attributes:
        version: 1, 2, 3, ... in order; recorded in ``store_schema``.
        name: ``m<version as 3 digits>_<what>``, for example ``m001_initial``.
        apply: runs the DDL on the connection (a transaction is open; do not commit).
        tables: each table (or virtual table) the step creates, with its column names in order.
            Before the step runs, a table of that name that already exists must have exactly those
            columns (it is then adopted, for example from a database the Go module made); any
            other columns fail the open with :class:`~agentmemory.StoreFormatError`.
    """

    version: int
    name: str
    apply: Callable[[sqlite3.Connection], None]
    tables: Mapping[str, tuple[str, ...]]


def _m001_initial(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_entries ("
        " scope TEXT NOT NULL, name TEXT NOT NULL, content TEXT NOT NULL, meta TEXT NOT NULL,"
        " hash TEXT NOT NULL, updated TEXT NOT NULL, PRIMARY KEY (scope, name)) STRICT"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_journal ("
        " seq INTEGER PRIMARY KEY, scope TEXT NOT NULL, name TEXT NOT NULL, line TEXT NOT NULL)"
        " STRICT"
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memory_journal_entry ON memory_journal (scope, name, seq)"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS store_state (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT"
    )


SUPERSEDES_SQL = "(CASE WHEN json_valid(meta) THEN json_extract(meta, '$.supersedes') END)"
"""The expression of the ``supersedes`` meta; index and queries must spell it the same. A value
that is not JSON gives NULL instead of an error, so one damaged row never blocks a write or the
migration."""


def _m003_supersedes_index(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memory_entries_supersedes ON memory_entries"
        f" (scope, {SUPERSEDES_SQL}) WHERE {SUPERSEDES_SQL} IS NOT NULL"
    )


SESSION_SQL = "(CASE WHEN json_valid(line) THEN json_extract(line, '$.session') END)"
"""The expression of a journal record's session; index and queries must spell it the same. A
line that is not JSON (a damaged record) gives NULL instead of an error, so it never blocks a
write, the migration, or the report of the damage (:meth:`SqliteStore.journal`)."""


def _m004_journal_session_index(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memory_journal_session ON memory_journal"
        f" ({SESSION_SQL}, scope, name, seq) WHERE {SESSION_SQL} IS NOT NULL"
    )


STORE_ID_KEY = "store.id"
"""The ``store_state`` key of the store's random id (a UUID, made by ``m005_store_id``)."""


def _m005_store_id(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO store_state (key, value) VALUES (?, ?)",
        (STORE_ID_KEY, str(uuid.uuid4())),
    )


def _m006_lexical_doc_freqs(conn: sqlite3.Connection) -> None:
    """Create ``memory_lexical_df`` (agentmemory.stores.sqlite.lexicon) and fill it from the FTS5 index's own counts
    (one walk of every posting, once per file). A lexical index recorded as
    damaged leaves the table empty: ``verify --repair`` rebuilds the index, this table with it
    (docs/storage.md#a-damaged-lexical-index). Raises :class:`_LexiconDamaged` when the FTS5
    pages cannot be read; :meth:`SqliteStore._migrate` then records the damage and runs the
    step again."""
    create_doc_freq_table(conn)
    if conn.execute("SELECT 1 FROM store_state WHERE key = ?", (LEXICAL_DAMAGE_KEY,)).fetchone():
        return
    try:
        fill_doc_freqs(conn)
    except sqlite3.DatabaseError as err:
        if is_damage(err):  # sqlite refuses the rest of this transaction: start again
            raise _LexiconDamaged(err) from err
        raise


MIGRATIONS: builtins.list[Migration] = [
    Migration(
        1,
        "m001_initial",
        _m001_initial,
        {
            "memory_entries": ("scope", "name", "content", "meta", "hash", "updated"),
            "memory_journal": ("seq", "scope", "name", "line"),
            "store_state": ("key", "value"),
        },
    ),
    # The lexical index of recall (agentmemory.stores.sqlite.lexicon): kept by _apply_in_txn, rebuilt on open when
    # the tokenizer's version differs from the one recorded in store_state.
    Migration(2, "m002_lexical_index", create_tables, FTS5_TABLES),
    # The entries that retire another (docs/kinds.md#out-of-date-on-purpose-only), found by a
    # partial index instead of a scan of every entry on each recall.
    Migration(3, "m003_supersedes_index", _m003_supersedes_index, {}),
    # The journal by session, for forget_session (docs/kinds.md#forgetting-a-session). The
    # record itself is unchanged: provenance rides in the line as members Go ignores.
    Migration(4, "m004_journal_session_index", _m004_journal_session_index, {}),
    # A random id for the store, made once: what names its vectors on a Chroma server it shares
    # with other stores (docs/storage.md#one-collection-per-scope).
    Migration(5, "m005_store_id", _m005_store_id, {}),
    # Each term's document frequency beside the FTS5 index, kept by _apply_in_txn with it, so a
    # search reads a common term's count in one lookup instead of walking its postings
    # (docs/recall.md#the-lexical-querys-cost).
    Migration(6, "m006_lexical_doc_freqs", _m006_lexical_doc_freqs, DOC_FREQ_TABLES),
]
"""The schema steps in order. Append new ones; never edit or reorder an applied one."""


_SCHEMA_TABLE = "store_schema"


_SCHEMA_COLUMNS = ("version", "name", "applied")


class SchemaSteps(SqliteCore):
    """Reads ``store_schema`` and applies the pending :class:`Migration` steps (a part of
    ``SqliteStore``; a subclass sets ``_migrations`` to a longer tuple)."""

    _migrations: ClassVar[Sequence[Migration]] = MIGRATIONS

    def _applied(self, conn: sqlite3.Connection) -> dict[int, str] | None:
        """Versions and names in ``store_schema``, or ``None`` when the table does not exist."""
        if not self._table_columns(conn, _SCHEMA_TABLE):
            return None
        return {int(v): str(n) for v, n in conn.execute("SELECT version, name FROM store_schema")}

    @staticmethod
    def _table_columns(conn: sqlite3.Connection, table: str) -> tuple[str, ...]:
        rows = conn.execute("SELECT name FROM pragma_table_info(?)", (table,)).fetchall()
        return tuple(str(r[0]) for r in rows)

    def _check_table(self, conn: sqlite3.Connection, table: str, want: tuple[str, ...]) -> None:
        have = self._table_columns(conn, table)
        if have and have != want:
            raise self._format_error(
                f"{table} has columns ({', '.join(have)}), not ({', '.join(want)}); "
                "the file was not made by agentmemory: open another file"
            )

    def _pending(self, applied: Mapping[int, str]) -> builtins.list[Migration]:
        known = {m.version: m for m in self._migrations}
        for version, name in sorted(applied.items()):
            m = known.get(version)
            if m is None:
                raise self._format_error(
                    f"its schema has step {name} (version {version}), which this version of "
                    "agentmemory does not know; upgrade agentmemory to open it"
                )
            if m.name != name:
                raise self._format_error(
                    f"its schema step {version} is {name}, not {m.name}; it was made by another "
                    "version of agentmemory"
                )
        return [m for m in self._migrations if m.version not in applied]

    def _migrate(self) -> None:
        """Apply the pending migrations in one immediate transaction (skipped when none are)."""
        try:
            applied = self._applied(self._writer)
        except sqlite3.DatabaseError as err:
            if isinstance(err, sqlite3.OperationalError) and is_busy(err):
                raise self._locked(err) from err
            raise self._unreadable(err) from err
        if applied is not None and not self._pending(applied):
            return
        try:
            self._apply_migrations()
        except _LexiconDamaged as exc:  # a step read a damaged lexical index: the open goes on
            with self._transaction() as conn:
                self._put_state(conn, LEXICAL_DAMAGE_KEY, str(exc.err))
            logger.warning(
                "agentmemory: store %s: the lexical index is damaged (%s); the journal's "
                "tables are not: run 'agentmemory verify --repair --path %s' to rebuild it",
                self._path.parent,
                exc.err,
                self._path.parent,
            )
            self._apply_migrations()

    def _apply_migrations(self) -> None:
        """The transaction of :meth:`_migrate`: every pending step, then its ``store_schema``
        row."""
        with self._transaction() as conn:
            self._check_table(conn, _SCHEMA_TABLE, _SCHEMA_COLUMNS)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS store_schema ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied TEXT NOT NULL) STRICT"
            )
            for m in self._pending(self._applied(conn) or {}):
                for table, columns in m.tables.items():
                    self._check_table(conn, table, tuple(columns))
                m.apply(conn)
                conn.execute(
                    "INSERT INTO store_schema (version, name, applied) VALUES (?, ?, ?)",
                    (m.version, m.name, format_time(utc_now())),
                )
