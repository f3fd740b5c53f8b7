"""The schema of :class:`~agentmemory.stores.postgres.store.PostgresStore`: its numbered steps
(:data:`PG_MIGRATIONS`, recorded in ``store_schema``) and the open's check and migration, run
under an advisory lock in one transaction (docs/storage.md#postgresql)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from agentmemory.errors import StoreFormatError
from agentmemory.wire import format_time

from .connection import Conn
from .lexicon import PG_LEXICAL_TABLES, create_pg_tables

__all__ = [
    "PG_MIGRATIONS",
    "STORE_ID_KEY",
    "PgMigration",
    "apply_migrations",
    "check_encoding",
    "current_schema_missing",
    "table_columns",
]

_SCHEMA_LOCK_KEY = 0x61676D656D  # "agmem": the advisory lock the schema step takes


@dataclass(frozen=True, slots=True)
class PgMigration:
    """One numbered schema step, applied once per database (schema) in the schema transaction.

    Attributes:
        version: 1, 2, 3, ... in order; recorded in ``store_schema``.
        name: ``m<version as 3 digits>_<what>``.
        apply: runs the DDL on the psycopg connection (a transaction is open; do not commit).
        tables: each table the step creates, with its column names in order. A table of that
            name that already exists with other columns fails the open with
            :class:`~agentmemory.StoreFormatError`.
    """

    version: int
    name: str
    apply: Callable[[Conn], None]
    tables: Mapping[str, tuple[str, ...]]


def _m001_initial(conn: Conn) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_entries ("
        " scope text NOT NULL, name text NOT NULL, content bytea NOT NULL, meta text NOT NULL,"
        " hash text NOT NULL, updated text NOT NULL, PRIMARY KEY (scope, name))"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_journal ("
        " seq bigint PRIMARY KEY, scope text NOT NULL, name text NOT NULL, line text NOT NULL)"
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memory_journal_entry ON memory_journal (scope, name, seq)"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_counter ("
        " id integer PRIMARY KEY CHECK (id = 1), seq bigint NOT NULL, at text NOT NULL)"
    )
    conn.execute(
        "INSERT INTO memory_counter (id, seq, at) VALUES (1, 0, '') ON CONFLICT (id) DO NOTHING"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS store_state (key text PRIMARY KEY, value text NOT NULL)"
    )


STORE_ID_KEY = "store.id"
"""The ``store_state`` key of the store's random id (a UUID, made by ``m003_store_id``)."""


def _m003_store_id(conn: Conn) -> None:
    conn.execute(
        "INSERT INTO store_state (key, value) VALUES (%s, gen_random_uuid()::text)"
        " ON CONFLICT (key) DO NOTHING",
        (STORE_ID_KEY,),
    )


PG_MIGRATIONS: builtins.list[PgMigration] = [
    PgMigration(
        1,
        "m001_initial",
        _m001_initial,
        {
            "memory_entries": ("scope", "name", "content", "meta", "hash", "updated"),
            "memory_journal": ("seq", "scope", "name", "line"),
            "memory_counter": ("id", "seq", "at"),
            "store_state": ("key", "value"),
        },
    ),
    # The lexical index of recall (agentmemory.stores.postgres.lexicon), kept by _apply_in_txn and rebuilt on open
    # when the tokenizer's version differs from the one recorded in store_state.
    PgMigration(2, "m002_lexical_index", create_pg_tables, PG_LEXICAL_TABLES),
    # A random id for the database's store, made once under the schema lock: what names its
    # vectors on a shared Chroma server (agentmemory.opening.open_hosted_store).
    PgMigration(3, "m003_store_id", _m003_store_id, {}),
]
"""The schema steps in order. Append new ones; never edit or reorder an applied one."""


def current_schema_missing(conn: Conn) -> bool:
    """Whether the connection's ``search_path`` names no existing schema (``current_schema()``
    is NULL), so tables could not be created."""
    row = conn.execute("SELECT current_schema()").fetchone()
    return row is None or row[0] is None


def table_columns(conn: Conn, table: str) -> tuple[str, ...]:
    """The column names of ``table`` in the current schema, in order (``()`` when it does not
    exist)."""
    rows = conn.execute(
        "SELECT column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
        (table,),
    ).fetchall()
    return tuple(str(r[0]) for r in rows)


def check_encoding(conn: Conn, format_error: Callable[[str], StoreFormatError]) -> None:
    """Raise ``format_error(...)`` (a :class:`~agentmemory.StoreFormatError`) when the database
    is not UTF-8."""
    encoding = conn.execute("SHOW server_encoding").fetchone()
    if encoding is None or str(encoding[0]).upper() not in ("UTF8", "UTF-8"):
        raise format_error(
            f"the database's encoding is {encoding[0] if encoding else '?'}, not UTF8; "
            "create it with ENCODING 'UTF8'"
        )


def apply_migrations(
    conn: Conn,
    migrations: Sequence[PgMigration],
    *,
    clock: Callable[[], datetime],
    format_error: Callable[[str], StoreFormatError],
) -> None:
    """In one transaction under the schema's advisory lock: create ``store_schema``, check the
    steps it records against ``migrations`` and apply the missing ones in order, each recorded
    with ``clock()``'s time.

    Raises:
        StoreFormatError: (made by ``format_error``) no current schema, a ``store_schema`` or
            a table of ours with other columns, a step recorded under another name, or a
            schema newer than ``migrations`` knows.
        psycopg.errors.LockNotAvailable, psycopg.OperationalError: as psycopg raises them
            (the caller turns them into the store's errors).
    """
    known = {m.version: m for m in migrations}
    newest = max(known)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_KEY,))
        if current_schema_missing(conn):
            raise format_error(
                "the connection has no current schema to create tables in; set "
                "search_path (options=-csearch_path=NAME in the DSN) to an existing one"
            )
        conn.execute(
            "CREATE TABLE IF NOT EXISTS store_schema (version integer PRIMARY KEY,"
            " name text NOT NULL, applied text NOT NULL)"
        )
        columns = table_columns(conn, "store_schema")
        if columns != ("version", "name", "applied"):
            raise format_error(
                f"its table store_schema has the columns {', '.join(columns)}, not "
                "version, name, applied; use another database or schema"
            )
        applied = {
            int(v): str(n)
            for v, n in conn.execute("SELECT version, name FROM store_schema").fetchall()
        }
        if applied and max(applied) > newest:
            top = max(applied)
            raise format_error(
                f"its schema is at version {top} ({applied[top]}), newer than this "
                f"agentmemory knows (up to {newest}); upgrade agentmemory"
            )
        for m in sorted(migrations, key=lambda m: m.version):
            if m.version in applied and applied[m.version] != m.name:
                raise format_error(
                    f"its schema step {m.version} is {applied[m.version]}, not {m.name}; "
                    "it was made by another program or version; use another database"
                )
            if m.version in applied:
                continue
            for table, want in m.tables.items():
                have = table_columns(conn, table)
                if have and have != tuple(want):
                    raise format_error(
                        f"it has a table {table} with the columns {', '.join(have)}, "
                        f"not {', '.join(want)}; use another database or schema"
                    )
            m.apply(conn)
            conn.execute(
                "INSERT INTO store_schema (version, name, applied) VALUES (%s, %s, %s)",
                (m.version, m.name, format_time(clock())),
            )
