"""PostgresStore: live entries, the append-only journal and the store's state in PostgreSQL.

The layout mirrors :class:`~agentmemory.SqliteStore` (``docs/storage.md#postgresql``), in the
connection's current schema (``search_path``; a DSN may name another with
``options=-csearch_path=NAME``):

* ``memory_entries(scope, name, content, meta, hash, updated)``: one row per live entry;
  ``content`` is ``bytea`` (the UTF-8 bytes, so any text the contract accepts, NUL included,
  round-trips), ``meta`` JSON text, ``updated`` RFC 3339 text, UTC.
* ``memory_journal(seq, scope, name, line)``: one row per change; ``line`` is the record as
  :func:`agentmemory.wire.encode_change` writes it (the same wire form as SqliteStore's).
* ``memory_counter(id, seq, at)``: one row holding the last ``seq`` handed out and its ``at``.
* ``store_state(key, value)`` and ``store_schema(version, name, applied)``, as in SqliteStore.
* The lexical index of :meth:`PostgresStore.recall`: the tables of ``agentmemory.stores.postgres.lexicon``.

How ``seq`` stays contiguous across processes and hosts
(``docs/storage.md#how-seq-stays-contiguous-across-hosts``): every write is one transaction that
first locks the counter row (``SELECT ... FOR UPDATE``), so writers queue on it; then reads the
stored entry (a new statement, so it sees every write committed before the lock was granted),
runs the write rule (:func:`agentmemory.store.plan_put` / :func:`~agentmemory.store.plan_forget`),
writes the row, the journal record with ``seq = counter + 1``, the counter and the lexical index,
and commits. A refused or failed write rolls back, leaving the counter where it was, so no
``seq`` is ever skipped (a sequence object would skip the numbers of rolled-back writes).

Round trips: a write is sent in two pipelined batches (psycopg's pipeline mode): ``BEGIN``, the
lock and the read; then every write statement and ``COMMIT`` (a test counts them in libpq's
protocol trace). The write statements are set-based (arrays
through ``unnest``), so ``put_many`` is also two round trips and about eight statements, whatever
its size.
"""

from __future__ import annotations

import builtins
import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, ClassVar, Self

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict

from agentmemory.entries import Change, Entry
from agentmemory.errors import (
    AgentMemoryError,
    NotFoundError,
    StoreFormatError,
    StoreLockedError,
    StoreUnavailableError,
)
from agentmemory.purge import (
    ErasureCheck,
    PurgeReceipt,
    check_purge,
    history_copies,
    purge_record,
    redact_history,
)
from agentmemory.rules import DEFAULT_MAX_ENTRY_BYTES, check_entry, check_scope
from agentmemory.store import plan_forget, plan_put, recall_entries, search_entries
from agentmemory.stores.mem import utc_now
from agentmemory.stores.sqlite.lexicon import TOKENIZER_STATE_KEY
from agentmemory.wire import decode_change, encode_change, format_time, parse_time
from recallers import DEFAULT_TOKENIZER, BM25Recaller, Hit, Tokenizer

from .lexicon import PG_LEXICAL_TABLES, TOP_KEYS_SQL, PgBM25Index, create_pg_tables

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_LOCK_TIMEOUT_S",
    "PG_MIGRATIONS",
    "PgMigration",
    "PostgresStore",
    "dsn_where",
]

DEFAULT_LOCK_TIMEOUT_S = 5.0
"""How long a write waits for the counter row (another writer's transaction) before
:class:`~agentmemory.StoreLockedError`, in seconds (SqliteStore's busy timeout)."""

DEFAULT_CONNECT_TIMEOUT_S = 10.0
"""How long opening a connection may take before :class:`~agentmemory.StoreUnavailableError`, in
seconds."""

JOURNAL_PAGE_ROWS = 256
"""Journal rows read per query by :meth:`PostgresStore.journal`."""

LIVE_PAGE_KEYS = 500
"""Entries per list of :meth:`PostgresStore.iter_live` by default."""

_SCHEMA_LOCK_KEY = 0x61676D656D  # "agmem": the advisory lock the schema step takes

Conn = psycopg.Connection[tuple[Any, ...]]


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


logger = logging.getLogger(__name__)

PURGE_PENDING_PREFIX = "purge:pending:"
"""``store_state`` keys ``purge:pending:<seq of the purged record>`` (value ``"<scope>/<name>"``):
written in a purge's transaction, removed once its ``VACUUM FULL`` has run, so an open that finds
one runs the vacuum a killed purge did not (docs/storage.md#purge-and-the-files)."""

PURGE_VACUUM_TABLES = ("memory_journal", "memory_entries", *PG_LEXICAL_TABLES)
"""The tables a purge's ``VACUUM FULL`` rewrites: every one that held the entry's content."""


def dsn_where(dsn: str) -> str:
    """``postgresql://user@host:port/dbname`` for a libpq DSN (key/value or URI form), naming
    the database without the password; parts the DSN leaves out are left out (libpq's defaults
    apply). A DSN that does not parse gives ``"(a DSN that does not parse)"``: its text may hold
    the password, so it is never echoed."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.Error:
        return "(a DSN that does not parse)"
    user = f"{parts['user']}@" if parts.get("user") else ""
    host = str(parts.get("host") or parts.get("hostaddr") or "")
    port = f":{parts['port']}" if parts.get("port") else ""
    db = f"/{parts['dbname']}" if parts.get("dbname") else ""
    return f"postgresql://{user}{host}{port}{db}"


def _one_line(err: BaseException) -> str:
    """The error's text on one line (libpq's messages span several)."""
    return " ".join(str(err).split())


def _scrub(text: str, dsn: str) -> str:
    """``text`` with the DSN's password (if any) replaced by ``***``."""
    with suppress(psycopg.Error):
        password = conninfo_to_dict(dsn).get("password")
        if password:
            text = text.replace(str(password), "***")
    return text


def _meta_json(meta: Mapping[str, str] | None) -> str:
    return json.dumps(dict(sorted((meta or {}).items())), ensure_ascii=False, separators=(",", ":"))


def _row_entry(scope: str, name: str, content: bytes, meta: str, hash_: str, updated: str) -> Entry:
    m = json.loads(meta) if meta else None
    return Entry(
        scope=scope,
        name=name,
        content=bytes(content).decode("utf-8"),
        meta=dict(m) if m else None,
        hash=hash_,
        updated=parse_time(updated),
    )


_ENTRY_COLUMNS = "scope, name, content, meta, hash, updated"


class PostgresStore:
    """A :class:`~agentmemory.Store` in a PostgreSQL database: live entries, the journal, derived
    state and a BM25 lexical index, shared by every process and host given the same DSN.

    Safe for several threads (one writer connection behind a lock, one reader connection behind
    another) and for any number of processes on any hosts (the counter row serialises writers;
    see the module docstring). A connection that drops is opened again by the next call.

    Args:
        dsn: a libpq connection string (``"host=db port=5432 dbname=memory user=agent"`` or
            ``"postgresql://agent@db/memory"``). The database must exist and be UTF-8; the
            tables are created (or migrated) on first open.
        max_entry_bytes: the content bound in UTF-8 bytes (default 4096); must be positive.
        lock_timeout_s: how long a write waits for other writers before
            :class:`~agentmemory.StoreLockedError`, in seconds (PostgreSQL's ``lock_timeout``).
        connect_timeout_s: how long opening a connection may take, in seconds (whole seconds,
            at least 1, as libpq counts them).
        clock: returns the time stamped on writes (aware UTC); never goes backwards along
            ``seq`` (a clock behind the last record is clamped to that record's ``at``).
        tokenizer: the terms of the lexical index (default ``recallers.DEFAULT_TOKENIZER``).
            Opening with another tokenizer version than the index was built with rebuilds it.

    Raises:
        ValueError: ``max_entry_bytes`` under 1 or a negative timeout.
        StoreUnavailableError: the DSN does not parse, or the server cannot be reached or
            refuses the connection (naming ``user@host:port/dbname``, never the password).
        StoreFormatError: the database is not UTF-8, holds a table of ours with other columns,
            or was migrated by a newer version of agentmemory.
        StoreLockedError: another process held the schema lock past ``lock_timeout_s``.
    """

    _migrations: ClassVar[Sequence[PgMigration]] = PG_MIGRATIONS
    _journal_page_rows: ClassVar[int] = JOURNAL_PAGE_ROWS

    def __init__(
        self,
        dsn: str,
        *,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
        lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        clock: Callable[[], datetime] = utc_now,
        tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    ) -> None:
        if max_entry_bytes < 1:
            raise ValueError(f"max_entry_bytes is {max_entry_bytes}; it must be at least 1")
        if lock_timeout_s < 0:
            raise ValueError(f"lock_timeout_s is {lock_timeout_s}; it must be 0 or more seconds")
        if connect_timeout_s < 0:
            raise ValueError(
                f"connect_timeout_s is {connect_timeout_s}; it must be 0 or more seconds"
            )
        self._dsn = dsn
        self._where = dsn_where(dsn)
        self._limit = max_entry_bytes
        self._lock_timeout_s = float(lock_timeout_s)
        self._connect_timeout_s = float(connect_timeout_s)
        self._clock = clock
        self._lexicon = PgBM25Index(tokenizer=tokenizer)
        self._wlock = threading.RLock()
        self._rlock = threading.Lock()
        self._closed = False
        self._staged: dict[str, str] = {}  # deferred set_state values, under _wlock
        self._writer: Conn | None = None
        self._reader: Conn | None = None
        self._recovery: str | None = None
        try:
            self._writer = self._connect()
            self._migrate(self._writer)
            self._sync_lexicon()
            self._finish_purges()
        except BaseException:
            self.close()
            raise

    # -- properties -------------------------------------------------------------------------

    @property
    def dsn(self) -> str:
        """The DSN this store was opened with (it may hold a password: do not print it)."""
        return self._dsn

    @property
    def where(self) -> str:
        """The database as ``postgresql://user@host:port/dbname``, without the password."""
        return self._where

    @property
    def store_id(self) -> str:
        """The store's random id (a UUID made when its schema was created; the same for every
        handle on the database and schema, different for any other store)."""
        value = self.get_state(STORE_ID_KEY)
        if value is None:
            raise self._format_error(
                f"its store_state row {STORE_ID_KEY} is missing; restore it from a backup"
            )
        return value

    @property
    def max_entry_bytes(self) -> int:
        """The content bound in UTF-8 bytes."""
        return self._limit

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer of the lexical index (documents and queries)."""
        return self._lexicon.tokenizer

    # -- connections ------------------------------------------------------------------------

    def _unavailable(self, detail: str) -> StoreUnavailableError:
        return StoreUnavailableError(self._where, _scrub(detail, self._dsn))

    def _connect(self) -> Conn:
        try:
            conninfo_to_dict(self._dsn)
        except psycopg.Error:
            raise self._unavailable(
                "the DSN does not parse; give key=value pairs (host=... dbname=...) or a "
                "postgresql:// URI"
            ) from None
        try:
            conn = psycopg.connect(
                self._dsn,
                autocommit=True,
                connect_timeout=max(1, round(self._connect_timeout_s)),
                application_name="agentmemory",
            )
        except psycopg.Error as err:
            raise self._unavailable(
                f"cannot connect ({_one_line(err)}); check that the server runs, the "
                "address, the database name and the credentials"
            ) from None
        try:
            conn.execute(f"SET lock_timeout = {int(self._lock_timeout_s * 1000)}")
        except psycopg.Error:
            conn.close()
            raise
        return conn

    def _conn(self, which: str) -> Conn:
        """The writer or reader connection, opened again when it dropped."""
        if self._closed:
            raise AgentMemoryError(
                f"agentmemory: store {self._where} is closed; open a new PostgresStore to use it"
            )
        conn = self._writer if which == "writer" else self._reader
        if conn is None or conn.closed or conn.broken:
            if conn is not None:
                with suppress(psycopg.Error):
                    conn.close()
            conn = self._connect()
            if which == "writer":
                self._writer = conn
            else:
                self._reader = conn
        return conn

    def _locked(self, err: BaseException) -> StoreLockedError:
        return StoreLockedError(
            self._where,
            detail=(
                f"another writer held it for over {self._lock_timeout_s:g} s "
                f"({_one_line(err)}); retry later, or open the store with a longer "
                "lock_timeout_s"
            ),
        )

    def _format_error(self, detail: str) -> StoreFormatError:
        return StoreFormatError(self._where, detail)

    # -- the schema ---------------------------------------------------------------------------

    def _columns(self, conn: Conn, table: str) -> tuple[str, ...]:
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
            (table,),
        ).fetchall()
        return tuple(str(r[0]) for r in rows)

    def _migrate(self, conn: Conn) -> None:
        encoding = conn.execute("SHOW server_encoding").fetchone()
        if encoding is None or str(encoding[0]).upper() not in ("UTF8", "UTF-8"):
            raise self._format_error(
                f"the database's encoding is {encoding[0] if encoding else '?'}, not UTF8; "
                "create it with ENCODING 'UTF8'"
            )
        known = {m.version: m for m in self._migrations}
        newest = max(known)
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_KEY,))
                if current_schema_missing(conn):
                    raise self._format_error(
                        "the connection has no current schema to create tables in; set "
                        "search_path (options=-csearch_path=NAME in the DSN) to an existing one"
                    )
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS store_schema (version integer PRIMARY KEY,"
                    " name text NOT NULL, applied text NOT NULL)"
                )
                columns = self._columns(conn, "store_schema")
                if columns != ("version", "name", "applied"):
                    raise self._format_error(
                        f"its table store_schema has the columns {', '.join(columns)}, not "
                        "version, name, applied; use another database or schema"
                    )
                applied = {
                    int(v): str(n)
                    for v, n in conn.execute("SELECT version, name FROM store_schema").fetchall()
                }
                if applied and max(applied) > newest:
                    top = max(applied)
                    raise self._format_error(
                        f"its schema is at version {top} ({applied[top]}), newer than this "
                        f"agentmemory knows (up to {newest}); upgrade agentmemory"
                    )
                for m in sorted(self._migrations, key=lambda m: m.version):
                    if m.version in applied and applied[m.version] != m.name:
                        raise self._format_error(
                            f"its schema step {m.version} is {applied[m.version]}, not {m.name}; "
                            "it was made by another program or version; use another database"
                        )
                    if m.version in applied:
                        continue
                    for table, want in m.tables.items():
                        have = self._columns(conn, table)
                        if have and have != tuple(want):
                            raise self._format_error(
                                f"it has a table {table} with the columns {', '.join(have)}, "
                                f"not {', '.join(want)}; use another database or schema"
                            )
                    m.apply(conn)
                    conn.execute(
                        "INSERT INTO store_schema (version, name, applied) VALUES (%s, %s, %s)",
                        (m.version, m.name, format_time(self._clock())),
                    )
        except pg_errors.LockNotAvailable as err:
            raise self._locked(err) from None
        except psycopg.OperationalError as err:
            raise self._unavailable(
                f"the connection dropped while the schema was checked ({_one_line(err)}); "
                "nothing was changed; open the store again"
            ) from None

    # -- transactions -------------------------------------------------------------------------

    @contextmanager
    def _transaction(self, what: str) -> Iterator[Conn]:
        """Hold the writer lock and one transaction in pipeline mode on the writer connection:
        ``BEGIN`` is queued with the body's first statements and ``COMMIT`` with its last, so
        the body's one read (the counter lock and the stored entries) and the final sync are
        the only round trips. Commits on a clean exit; on an exception, rolls back (queued, or
        on its own once the pipeline is synced). ``what`` names the write in errors
        (``"the put of user/x"``).

        Raises:
            StoreLockedError: the counter row stayed locked past ``lock_timeout_s``.
            StoreUnavailableError: the connection dropped; the server rolled the transaction
                back (:meth:`_write_changes` checks a drop after the write was sent).
        """
        with self._wlock:
            conn = self._conn("writer")
            try:
                staged = dict(self._staged)
                with conn.pipeline():
                    conn.execute("BEGIN")
                    try:
                        yield conn
                        for key, value in staged.items():
                            self._put_state(conn, key, value)
                    except BaseException:
                        with suppress(psycopg.Error):
                            conn.execute("ROLLBACK")
                        raise
                    conn.execute("COMMIT")
                for key, value in staged.items():
                    if self._staged.get(key) == value:
                        del self._staged[key]
            except pg_errors.LockNotAvailable as err:
                self._end_failed(conn)
                raise self._locked(err) from None
            except psycopg.OperationalError as err:
                self._end_failed(conn)
                raise self._unavailable(
                    f"the connection dropped during {what} ({_one_line(err)}); "
                    "PostgreSQL rolled the transaction back, so nothing of it was written; "
                    "retry it"
                ) from None
            except BaseException:
                self._end_failed(conn)
                raise

    @staticmethod
    def _end_failed(conn: Conn) -> None:
        """Roll back a transaction a failed pipeline left open (a statement failed, so the
        queued ``COMMIT`` or ``ROLLBACK`` was skipped); nothing when the connection is gone."""
        if conn.closed or conn.broken:
            return
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            with suppress(psycopg.Error):
                conn.execute("ROLLBACK")

    def _write_changes(self, what: str, run: Callable[[Conn], list[Change]]) -> list[Change]:
        """Run ``run`` in :meth:`_transaction` and return its records. When the connection
        drops after the records were planned (during the write statements or ``COMMIT``), the
        journal is read on a new connection: if it holds the first record's line at its
        ``seq``, the write committed and its records are returned; otherwise nothing was
        written and :class:`~agentmemory.StoreUnavailableError` says so."""
        planned: list[Change] = []

        def body(conn: Conn) -> list[Change]:
            out = run(conn)
            planned.extend(out)
            return out

        try:
            with self._transaction(what) as conn:
                changes = body(conn)
            return changes
        except StoreUnavailableError as err:
            if not planned:
                raise
            try:
                committed = self._committed(planned[0])
            except StoreUnavailableError:
                raise self._unavailable(
                    f"the connection dropped while {what} was committing and the server cannot "
                    f"be reached to check it; it was written if the journal holds seq "
                    f"{planned[0].seq} for {planned[0].entry.key}"
                ) from err
            if committed:
                return planned
            raise

    def _committed(self, first: Change) -> bool:
        line = encode_change(first)
        with self._read() as conn:
            row = conn.execute(
                "SELECT line FROM memory_journal WHERE seq = %s", (first.seq,)
            ).fetchone()
        return row is not None and str(row[0]) == line

    @contextmanager
    def _read(self) -> Iterator[Conn]:
        with self._rlock:
            conn = self._conn("reader")
            try:
                yield conn
            except psycopg.OperationalError as err:
                raise self._unavailable(
                    f"the connection dropped during a read ({_one_line(err)}); retry it"
                ) from None

    # -- the write path -----------------------------------------------------------------------

    def _apply_in_txn(self, conn: Conn, changes: Sequence[Change]) -> None:
        """Extension point: keep derived state in step with the changes of one write, in its
        transaction.

        Called once per write (one change for ``put`` and ``forget``, every change of a
        ``put_many`` in ``seq`` order) inside the write's transaction on ``conn`` (pipeline
        mode: statements are queued and sent with ``COMMIT``; do not commit), after the entry
        rows and the journal records were queued. Raising rolls the whole write back. Here it
        keeps the lexical index (``agentmemory.stores.postgres.lexicon``) in step, in four set-based statements.
        A subclass that overrides it must call ``super()._apply_in_txn(conn, changes)``.
        """
        self._lexicon.write_many(
            conn,
            [(c.entry.scope, c.entry.name, None if c.entry.deleted else c.entry) for c in changes],
        )

    def _lock_and_read(
        self, conn: Conn, keys: Sequence[tuple[str, str]]
    ) -> tuple[int, datetime | None, dict[tuple[str, str], Entry]]:
        """Lock the counter row, then read the stored entries of ``keys`` (one round trip)."""
        counter = conn.execute("SELECT seq, at FROM memory_counter WHERE id = 1 FOR UPDATE")
        scopes = [k[0] for k in keys]
        names = [k[1] for k in keys]
        stored = conn.execute(
            f"SELECT {_ENTRY_COLUMNS} FROM memory_entries"
            " WHERE (scope, name) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
            (scopes, names),
        )
        row = counter.fetchone()
        if row is None:
            raise self._format_error(
                "its memory_counter row is missing; restore the database from a backup"
            )
        live = {(str(r[0]), str(r[1])): _row_entry(*r) for r in stored.fetchall()}
        at = parse_time(str(row[1])) if row[1] else None
        return int(row[0]), at, live

    def _now(self, last_at: datetime | None) -> datetime:
        now = parse_time(format_time(self._clock()))  # what the journal line will say
        if last_at is not None and now < last_at:
            return last_at
        return now

    def _queue(self, conn: Conn, changes: Sequence[Change]) -> None:
        """Queue the write's statements: the journal records (one statement), the entries'
        last states (one delete of the forgotten, one upsert of the rest), the derived state
        (:meth:`_apply_in_txn`) and the counter; none reads a result back."""
        conn.execute(
            "INSERT INTO memory_journal (seq, scope, name, line)"
            " SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[])",
            (
                [c.seq for c in changes],
                [c.entry.scope for c in changes],
                [c.entry.name for c in changes],
                [encode_change(c) for c in changes],
            ),
        )
        last: dict[tuple[str, str], Entry] = {}
        for c in changes:
            last.pop((c.entry.scope, c.entry.name), None)
            last[(c.entry.scope, c.entry.name)] = c.entry
        gone = [e for e in last.values() if e.deleted]
        kept = [e for e in last.values() if not e.deleted]
        if gone:
            conn.execute(
                "DELETE FROM memory_entries AS e USING unnest(%s::text[], %s::text[]) AS k(s, n)"
                " WHERE e.scope = k.s AND e.name = k.n",
                ([e.scope for e in gone], [e.name for e in gone]),
            )
        if kept:
            conn.execute(
                f"INSERT INTO memory_entries ({_ENTRY_COLUMNS}) SELECT * FROM unnest("
                "%s::text[], %s::text[], %s::bytea[], %s::text[], %s::text[], %s::text[])"
                " ON CONFLICT (scope, name) DO UPDATE SET content = excluded.content,"
                " meta = excluded.meta, hash = excluded.hash, updated = excluded.updated",
                (
                    [e.scope for e in kept],
                    [e.name for e in kept],
                    [e.content.encode("utf-8") for e in kept],
                    [_meta_json(e.meta) for e in kept],
                    [e.hash for e in kept],
                    [format_time(e.updated) if e.updated else "" for e in kept],
                ),
            )
        self._apply_in_txn(conn, changes)
        self._advance(conn, changes[-1])

    def _advance(self, conn: Conn, last: Change) -> None:
        assert last.at is not None  # plan_put and plan_forget always stamp it
        conn.execute(
            "UPDATE memory_counter SET seq = %s, at = %s WHERE id = 1",
            (last.seq, format_time(last.at)),
        )

    def put(
        self,
        entry: Entry,
        *,
        if_hash: str | None = None,
        based_on: str | None = None,
        session: str | None = None,
    ) -> Change:
        """Create or replace the whole entry and return the journal record it appended.

        One transaction (two round trips); see :meth:`agentmemory.Store.put` for the rule.

        Raises:
            InvalidEntryError: the entry breaks a rule of :func:`agentmemory.check_entry`
                (checked before anything is sent).
            EntryTooLargeError: content over ``max_entry_bytes``.
            ConflictError: ``if_hash`` is not the stored hash (``""``: the entry must not exist).
            StoreLockedError: other writers held the counter row for over ``lock_timeout_s``.
            StoreUnavailableError: the connection dropped; nothing was written.
        A refused put writes nothing.
        """
        check_entry(entry)

        def run(conn: Conn) -> list[Change]:
            seq, last_at, live = self._lock_and_read(conn, [(entry.scope, entry.name)])
            change = plan_put(
                entry,
                live.get((entry.scope, entry.name)),
                limit=self._limit,
                seq=seq + 1,
                now=self._now(last_at),
                if_hash=if_hash,
                based_on=based_on,
                session=session,
            )
            self._queue(conn, [change])
            return [change]

        (change,) = self._write_changes(f"the put of {entry.scope}/{entry.name}", run)
        return change.copy()

    def put_many(self, entries: Iterable[Entry], *, session: str | None = None) -> list[Change]:
        """Put every entry unconditionally in ONE transaction (two round trips), for bulk
        import; all or nothing. Records come back in the order given, with consecutive ``seq``;
        a name given twice is written twice. An empty iterable writes nothing and returns ``[]``.

        Raises:
            InvalidEntryError, EntryTooLargeError: the first entry that breaks a rule; nothing is
                written.
            StoreLockedError, StoreUnavailableError: as for :meth:`put`; nothing is written.
        """
        batch = builtins.list(entries)
        for e in batch:
            check_entry(e)
        if not batch:
            return []

        def run(conn: Conn) -> list[Change]:
            seq, last_at, live0 = self._lock_and_read(
                conn, builtins.list(dict.fromkeys((e.scope, e.name) for e in batch))
            )
            now = self._now(last_at)
            live: dict[tuple[str, str], Entry | None] = dict(live0)
            for e in batch:  # every size check before anything is queued
                k = (e.scope, e.name)
                check_entry(e, self._limit, live.get(k))
                live[k] = e
            live = dict(live0)
            changes: builtins.list[Change] = []
            for e in batch:
                k = (e.scope, e.name)
                seq += 1
                change = plan_put(
                    e, live.get(k), limit=self._limit, seq=seq, now=now, session=session
                )
                live[k] = change.entry
                changes.append(change)
            self._queue(conn, changes)
            return changes

        changes = self._write_changes(f"the put_many of {len(batch)} entries", run)
        return [c.copy() for c in changes]

    def forget_session(
        self, session_id: str, scopes: Sequence[str], *, reason: str | None = None
    ) -> builtins.list[Change]:
        """Tombstone the live entries of ``scopes`` whose last record ``session_id`` wrote, one
        journal record each: :func:`agentmemory.forget_session` on this store
        (docs/kinds.md#forgetting-a-session). Refuses an empty or unknown scope list and an
        empty session id with :class:`~agentmemory.InvalidEntryError`, writing nothing."""
        from agentmemory.forget_session import forget_session

        return forget_session(self, session_id, scopes, reason=reason)

    def forget(self, scope: str, name: str, *, session: str | None = None) -> Change:
        """Write a tombstone (the last content and meta, ``deleted=True``) and return its record.

        Raises:
            NotFoundError: no live entry ``scope/name``; nothing is written.
            StoreLockedError, StoreUnavailableError: as for :meth:`put`; nothing is written.
        """

        def run(conn: Conn) -> list[Change]:
            seq, last_at, live = self._lock_and_read(conn, [(scope, name)])
            stored = live.get((scope, name))
            if stored is None:
                raise NotFoundError(scope, name)
            change = plan_forget(stored, seq=seq + 1, now=self._now(last_at), session=session)
            self._queue(conn, [change])
            return [change]

        (change,) = self._write_changes(f"the forget of {scope}/{name}", run)
        return change.copy()

    # -- purge (docs/contract.md#purge-erasing-an-entry-for-good) -----------------------------

    def purge(
        self, scope: str, name: str, *, reason: str, session: str | None = None
    ) -> PurgeReceipt:
        """Erase every content ``scope/name`` ever held from this store's tables.

        One transaction (under the counter lock, as every write) tombstones the entry when it
        is live, replaces the content, meta and hashes of each of its journal records, removes
        it from the lexical index and appends the ``purged`` record naming ``reason``. Then
        ``VACUUM FULL`` rewrites the store's tables, so their files hold no dead copy. The
        server's write-ahead log, replicas and backups are out of this client's reach
        (docs/storage.md#purge-and-the-files).

        Raises:
            InvalidEntryError: ``scope`` or ``name`` not kebab-case, ``reason`` blank or over
                1024 bytes; nothing is written.
            NotFoundError: the journal has no record of ``scope/name``.
            StoreLockedError, StoreUnavailableError: as for :meth:`put`; nothing is written.
        """
        check_purge(scope, name, reason)
        done: dict[str, Any] = {}

        def run(conn: Conn) -> list[Change]:
            seq, last_at, live = self._lock_and_read(conn, [(scope, name)])
            rows = conn.execute(
                "SELECT seq, line FROM memory_journal WHERE scope = %s AND name = %s ORDER BY seq",
                (scope, name),
            ).fetchall()
            if not rows:
                raise NotFoundError(scope, name)
            records = [decode_change(str(line), seq=int(s)) for s, line in rows]
            now = self._now(last_at)
            stored = live.get((scope, name))
            out: list[Change] = []
            if stored is not None:
                tomb = plan_forget(stored, seq=seq + 1, now=now, session=session)
                out.append(tomb)
                records.append(tomb)
                seq += 1
            redacted = redact_history(records)
            record = purge_record(
                scope,
                name,
                seq=seq + 1,
                now=now,
                reason=reason,
                redacted=[c.seq for c in redacted],
                session=session,
            )
            out.append(record)
            self._queue(conn, out)
            conn.execute(
                "UPDATE memory_journal AS j SET line = k.l"
                " FROM unnest(%s::bigint[], %s::text[]) AS k(s, l) WHERE j.seq = k.s",
                ([c.seq for c in redacted], [encode_change(c) for c in redacted]),
            )
            self._put_state(conn, f"{PURGE_PENDING_PREFIX}{record.seq}", f"{scope}/{name}")
            done.update(tomb=out[0] if stored is not None else None, redacted=redacted)
            return [record]  # its line is not rewritten: the commit check reads it back

        (record,) = self._write_changes(f"the purge of {scope}/{name}", run)
        self._vacuum_after_purge([f"{PURGE_PENDING_PREFIX}{record.seq}"])
        tomb = done["tomb"]
        return PurgeReceipt(
            scope=scope,
            name=name,
            reason=reason,
            record=record.copy(),
            tombstone=None if tomb is None else tomb.copy(),
            redacted=tuple(c.seq for c in done["redacted"]),
            index_rows=0 if tomb is None else 1,
            rewritten=(
                f"VACUUM FULL {', '.join(PURGE_VACUUM_TABLES)}; the server's WAL and backups are "
                "out of reach",
            ),
        )

    def _vacuum_after_purge(self, pending: Sequence[str]) -> None:
        """``VACUUM FULL`` the tables that held a purged entry (dead row versions keep its
        bytes until then), then remove the ``pending`` purge keys from ``store_state``."""
        with self._wlock:
            conn = self._conn("writer")
            conn.execute("VACUUM FULL " + ", ".join(PURGE_VACUUM_TABLES))
            conn.execute("DELETE FROM store_state WHERE key = ANY(%s)", (list(pending),))

    def _finish_purges(self) -> None:
        """At open: run the ``VACUUM FULL`` of every purge that committed and was stopped
        before its vacuum (a ``purge:pending:`` key left), and say so in :attr:`recovery`."""
        conn = self._conn("writer")
        rows = conn.execute(
            "SELECT key, value FROM store_state WHERE key LIKE %s ORDER BY key",
            (PURGE_PENDING_PREFIX + "%",),
        ).fetchall()
        if not rows:
            return
        keys = ", ".join(sorted({str(v) for _, v in rows}))
        try:
            self._vacuum_after_purge([str(k) for k, _ in rows])
        except psycopg.Error as err:  # a role that may not vacuum: open anyway, and say so
            self._recovery = (
                f"found an interrupted purge of {keys} whose VACUUM FULL has not run, and could "
                f"not run it ({_one_line(err)}); open the store as the tables' owner to finish it"
            )
            logger.warning("agentmemory: store %s: %s", self._where, self._recovery)
            return
        self._recovery = (
            f"finished an interrupted purge of {keys}: its transaction had committed (the "
            f"journal records were redacted); VACUUM FULL of {', '.join(PURGE_VACUUM_TABLES)} "
            "ran now"
        )
        logger.warning("agentmemory: store %s: %s", self._where, self._recovery)

    @property
    def recovery(self) -> str | None:
        """What opening this handle did about a purge a killed process left: ``"finished ..."``
        (its transaction had committed and its ``VACUUM FULL`` had not run; it ran now), or
        ``None``. A purge killed before its commit wrote nothing and needs no recovery."""
        return self._recovery

    def verify_erased(self, scope: str, name: str) -> ErasureCheck:
        """Check that no row of this store's tables keeps ``scope/name``'s content: its journal
        records (each redacted, or a ``purged`` record), the live entries, the lexical index's
        documents, a purge whose ``VACUUM FULL`` has not run (a ``purge:pending:`` key: its
        dead row versions still hold the old bytes), and, when the database has the
        ``pgstattuple`` extension, the dead row versions of ``memory_journal`` (only a purge's
        redaction or an aborted write leaves one there). ``pg_stat_user_tables.n_dead_tup``
        is not used: ``VACUUM FULL`` does not reset it (measured on PostgreSQL 15), so it would
        report copies that are gone. The server's files, WAL and backups are not looked at
        (docs/storage.md#purge-and-the-files)."""
        check_scope(scope)
        with self._read() as conn:
            rows = conn.execute(
                "SELECT seq, line FROM memory_journal WHERE scope = %s AND name = %s ORDER BY seq",
                (scope, name),
            ).fetchall()
            live = conn.execute(
                "SELECT 1 FROM memory_entries WHERE scope = %s AND name = %s", (scope, name)
            ).fetchone()
            pending = conn.execute(
                "SELECT value FROM store_state WHERE key LIKE %s ORDER BY key",
                (PURGE_PENDING_PREFIX + "%",),
            ).fetchall()
            counted = conn.execute(
                "SELECT 1 FROM pg_extension WHERE extname = 'pgstattuple'"
            ).fetchone()
            dead = None
            if counted is not None:
                dead = conn.execute(
                    "SELECT dead_tuple_count FROM pgstattuple('memory_journal')"
                ).fetchone()
        found = history_copies(decode_change(str(line), seq=int(seq)) for seq, line in rows)
        if live is not None:
            found.append("a live entry")
        if self._lexicon_holds(scope, name):
            found.append("a lexical index row")
        if pending:
            found.append(
                f"a purge whose VACUUM FULL has not run ({', '.join(str(v) for (v,) in pending)}):"
                " dead row versions keep the old bytes until the next open"
            )
        if dead is not None and int(dead[0]):
            found.append(
                f"{int(dead[0])} dead row versions in memory_journal that may hold old bytes "
                "(VACUUM FULL not run since)"
            )
        looked = (
            f"journal records of {scope}/{name}",
            "live entries (memory_entries)",
            "lexical index",
            "pending purges (store_state purge:pending:*)",
            "dead row versions of memory_journal (pgstattuple)"
            if counted is not None
            else "dead row versions of memory_journal: not counted (install the pgstattuple "
            "extension in the database to count them)",
        )
        return ErasureCheck(scope, name, looked, tuple(found))

    def _lexicon_holds(self, scope: str, name: str) -> bool:
        with self._read() as conn:
            row = conn.execute(
                "SELECT 1 FROM memory_lexical_docs WHERE scope = %s AND name = %s", (scope, name)
            ).fetchone()
        return row is not None

    # -- reads --------------------------------------------------------------------------------

    def get(self, scope: str, name: str) -> Entry:
        """Return the live entry; raise :class:`~agentmemory.NotFoundError` when there is none
        (:class:`~agentmemory.StoreUnavailableError` when the server cannot be reached)."""
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM memory_entries WHERE scope = %s AND name = %s",
                (scope, name),
            ).fetchone()
        if row is None:
            raise NotFoundError(scope, name)
        return _row_entry(*row)

    def list(self, scope: str) -> builtins.list[Entry]:
        """The live entries of ``scope`` sorted by name (UTF-8 byte order); ``[]`` when none."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM memory_entries"
                ' WHERE scope = %s ORDER BY name COLLATE "C"',
                (scope,),
            ).fetchall()
        return [_row_entry(*r) for r in rows]

    def scopes(self) -> builtins.list[str]:
        """The scopes holding at least one live entry, sorted (byte order); ``[]`` when none."""
        with self._read() as conn:
            rows = conn.execute(
                'SELECT DISTINCT scope COLLATE "C" FROM memory_entries ORDER BY 1'
            ).fetchall()
        return [str(r[0]) for r in rows]

    def live_many(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Entry]:
        """The live entries among ``keys`` (``(scope, name)`` pairs), by key; keys with no live
        entry are left out. One statement (one snapshot) for any number of keys."""
        wanted = builtins.list(dict.fromkeys(keys))
        if not wanted:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM memory_entries"
                " WHERE (scope, name) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
                ([k[0] for k in wanted], [k[1] for k in wanted]),
            ).fetchall()
        return {(str(r[0]), str(r[1])): _row_entry(*r) for r in rows}

    def live_count(self) -> int:
        """The number of live entries in every scope."""
        with self._read() as conn:
            row = conn.execute("SELECT count(*) FROM memory_entries").fetchone()
        return int(row[0]) if row else 0

    def iter_live(self, batch: int = LIVE_PAGE_KEYS) -> Iterator[builtins.list[Entry]]:
        """Every live entry, by scope then name (byte order), in lists of at most ``batch``;
        no transaction is held between lists.

        Raises:
            ValueError: ``batch`` under 1.
        """
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ValueError(f"batch is {batch!r}; it must be an int of at least 1")
        return self._iter_live(batch)

    def _iter_live(self, batch: int) -> Iterator[builtins.list[Entry]]:
        last = ("", "")
        while True:
            with self._read() as conn:
                rows = conn.execute(
                    f"SELECT {_ENTRY_COLUMNS} FROM memory_entries"
                    ' WHERE (scope COLLATE "C", name COLLATE "C") > (%s, %s)'
                    ' ORDER BY scope COLLATE "C", name COLLATE "C" LIMIT %s',
                    (*last, batch),
                ).fetchall()
            if not rows:
                return
            yield [_row_entry(*r) for r in rows]
            last = (str(rows[-1][0]), str(rows[-1][1]))

    def scopes_written_by(self, seq: int, scopes: Iterable[str]) -> builtins.list[str]:
        """Those of ``scopes`` (in the order given) holding a live entry whose latest journal
        record has a ``seq`` at or before ``seq``."""
        out = []
        with self._read() as conn:
            for scope in scopes:
                row = conn.execute(
                    "SELECT 1 FROM memory_entries e WHERE e.scope = %s AND (SELECT max(j.seq)"
                    " FROM memory_journal j WHERE j.scope = e.scope AND j.name = e.name) <= %s"
                    " LIMIT 1",
                    (scope, seq),
                ).fetchone()
                if row is not None:
                    out.append(scope)
        return out

    def search(self, scopes: Sequence[str], query: str, limit: int = 0) -> builtins.list[Entry]:
        """Live entries matching ``query`` by :func:`agentmemory.matches`, scopes in the order
        given and entries by name, at most ``limit`` when ``limit > 0``.

        Raises :class:`~agentmemory.InvalidEntryError` for a scope that is not kebab-case.
        """
        return search_entries(self, scopes, query, limit)

    def journal(self, after: int = 0) -> Iterator[Change]:
        """Yield every record with ``seq > after`` in ``seq`` order, :data:`JOURNAL_PAGE_ROWS`
        rows per query; a reader may stop early and resume from the last ``seq`` it saw.

        Raises:
            StoreFormatError: a journal line that does not decode (naming its ``seq``).
        """
        cursor = max(after, 0)
        while True:
            with self._read() as conn:
                rows = conn.execute(
                    "SELECT seq, line FROM memory_journal WHERE seq > %s ORDER BY seq LIMIT %s",
                    (cursor, self._journal_page_rows),
                ).fetchall()
            for seq, line in rows:
                try:
                    change = decode_change(str(line), seq=int(seq))
                except (ValueError, TypeError, KeyError) as err:
                    raise self._format_error(
                        f"journal record {seq} does not decode ({err}); "
                        "restore the database from a backup"
                    ) from err
                cursor = int(seq)
                yield change
            if len(rows) < self._journal_page_rows:
                return

    def last_seq(self) -> int:
        """The highest ``seq`` in the journal; 0 when it is empty."""
        with self._read() as conn:
            row = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM memory_journal").fetchone()
        return int(row[0]) if row else 0

    # -- derived state ------------------------------------------------------------------------

    def get_state(self, key: str) -> str | None:
        """The value stored under ``key`` in ``store_state`` (or deferred by this handle and not
        yet written), or ``None`` when there is none."""
        staged = self._staged.get(key)  # one dict read: no lock, so reads never wait for writers
        if staged is not None:
            return staged
        with self._read() as conn:
            row = conn.execute("SELECT value FROM store_state WHERE key = %s", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_state(self, key: str, value: str, *, deferred: bool = False) -> None:
        """Store ``value`` under ``key`` in ``store_state``; writes no journal record.

        Written at once (one statement, committed), or with ``deferred`` inside this handle's
        next write transaction (or by :meth:`close`), as :meth:`agentmemory.SqliteStore.set_state`
        does: for values that may lag behind, such as an index cursor. :meth:`get_state` of this
        handle sees a deferred value at once.

        Raises:
            TypeError: ``key`` or ``value`` is not a ``str``.
            StoreUnavailableError: the connection dropped; nothing was written.
            AgentMemoryError: the store is closed.
        """
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(
                f"store state key and value must be str, got {type(key).__name__} "
                f"and {type(value).__name__}"
            )
        if deferred:
            with self._wlock:
                self._conn_check_open()
                self._staged[key] = value
            return
        with self._wlock:
            conn = self._conn("writer")
            try:
                self._put_state(conn, key, value)
            except psycopg.OperationalError as err:
                raise self._unavailable(
                    f"the connection dropped while state {key!r} was set "
                    f"({_one_line(err)}); nothing was written; retry it"
                ) from None
            self._staged.pop(key, None)

    @staticmethod
    def _put_state(conn: Conn, key: str, value: str) -> None:
        conn.execute(
            "INSERT INTO store_state (key, value) VALUES (%s, %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def _conn_check_open(self) -> None:
        if self._closed:
            raise AgentMemoryError(
                f"agentmemory: store {self._where} is closed; open a new PostgresStore to use it"
            )

    # -- recall -------------------------------------------------------------------------------

    def _sync_lexicon(self) -> None:
        """Rebuild the lexical index when it was built with another tokenizer version (or
        never), in one transaction holding the counter row, so no write interleaves."""
        if not self._lexicon.needs_rebuild(self.get_state(TOKENIZER_STATE_KEY)):
            return
        with self._wlock:
            conn = self._conn("writer")
            with conn.transaction():
                conn.execute("SELECT seq FROM memory_counter WHERE id = 1 FOR UPDATE")
                row = conn.execute(
                    "SELECT value FROM store_state WHERE key = %s", (TOKENIZER_STATE_KEY,)
                ).fetchone()
                if not self._lexicon.needs_rebuild(None if row is None else str(row[0])):
                    return  # another process rebuilt it meanwhile
                rows = conn.execute(f"SELECT {_ENTRY_COLUMNS} FROM memory_entries").fetchall()
                with conn.pipeline():
                    self._lexicon.rebuild(conn, (_row_entry(*r) for r in rows))
                    conn.execute(
                        "INSERT INTO store_state (key, value) VALUES (%s, %s)"
                        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        (TOKENIZER_STATE_KEY, self._lexicon.tokenizer.version),
                    )

    def search_text(
        self, query: str, *, scopes: Sequence[str], limit: int
    ) -> builtins.list[tuple[Entry, float]]:
        """The lexical leg: at most ``limit`` ``(entry, BM25 score)`` pairs of ``scopes``, best
        first, every score above 0, in one statement (one snapshot, one round trip); ``[]``
        when no entry shares a term with ``query``.

        The index is written in each write's own transaction, so it is never behind the
        journal. Okapi BM25 (k1 1.2, b 0.75, idf floor 1e-6) over the requested scopes'
        statistics, computed in SQL (``agentmemory.stores.postgres.lexicon``); it agrees with rank-bm25 on the
        same terms. The query is capped as every lexical leg caps it (its first 4,096 bytes and
        64 terms, each distinct term sent once with its weight: docs/recall.md#the-lexical-query),
        so a 1 MB query costs what its capped form costs.

        Raises :class:`~agentmemory.InvalidEntryError` for a scope that is not kebab-case.
        """
        for s in scopes:
            check_scope(s)
        terms = self._lexicon.query_terms(query)
        wanted = builtins.list(dict.fromkeys(scopes))
        if limit < 1 or not terms or not wanted:
            return []
        with self._read() as conn:
            rows = conn.execute(
                "WITH " + TOP_KEYS_SQL + f" SELECT {', '.join('e.' + c for c in _COLS)}, top.score"
                " FROM top JOIN memory_entries AS e USING (scope, name)"
                ' ORDER BY top.score DESC, array_position(%(scopes)s, e.scope), e.name COLLATE "C"',
                {**self._lexicon.query_params(terms), "scopes": wanted, "limit": limit},
            ).fetchall()
        return [(_row_entry(*r[:6]), float(r[6])) for r in rows]

    def superseding(self, scopes: Sequence[str]) -> builtins.list[Entry]:
        """The live entries of ``scopes`` with a ``supersedes`` meta, by scope order then name
        (docs/kinds.md#out-of-date-on-purpose-only). One statement; ``meta`` is JSON text, so
        it is read by a substring test, then checked on the decoded meta."""
        wanted = builtins.list(dict.fromkeys(scopes))
        if not wanted:
            return []
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM memory_entries"
                " WHERE scope = ANY(%s) AND meta LIKE '%%\"supersedes\"%%'",
                (wanted,),
            ).fetchall()
        found = [e for e in (_row_entry(*r) for r in rows) if (e.meta or {}).get("supersedes")]
        order = {sc: i for i, sc in enumerate(wanted)}
        found.sort(key=lambda e: (order[e.scope], e.name.encode()))
        return found

    def recall(
        self,
        query: str,
        *,
        scopes: Sequence[str],
        limit: int = 5,
        mode: str = "auto",
        as_of: date | str | None = None,
        include_superseded: bool = False,
    ) -> builtins.list[Hit[Entry]]:
        """At most ``limit`` live entries of ``scopes`` ranked by BM25 for ``query``, best first
        (``mode`` ``"auto"`` or ``"bm25"``; a PostgresStore alone keeps no vectors). Each hit's
        ``score`` is the BM25 score and ``legs["bm25"]`` its rank and score. Entries out of date
        on ``as_of`` (default today) are left out unless ``include_superseded``
        (docs/kinds.md#out-of-date-on-purpose-only).

        Raises :class:`~agentmemory.EmptyQueryError`, :class:`~agentmemory.InvalidEntryError`
        (a scope), ``ValueError`` (``limit`` under 1) and :class:`~agentmemory.RecallModeError`
        (``"vector"``, ``"hybrid"``, or an unknown mode); see
        :func:`agentmemory.store.recall_entries`.
        """
        return recall_entries(
            self,
            query,
            scopes=scopes,
            limit=limit,
            mode=mode,
            bm25=BM25Recaller(self),
            as_of=as_of,
            include_superseded=include_superseded,
        )

    # -- lifetime -----------------------------------------------------------------------------

    def close(self) -> None:
        """Write the state deferred by :meth:`set_state` and close the connections; idempotent.
        Later calls raise :class:`~agentmemory.AgentMemoryError`."""
        with self._wlock, self._rlock:
            if self._staged and not self._closed:
                # Deferred state may lag by design: a server gone must not fail close.
                with suppress(psycopg.Error, AgentMemoryError):
                    writer = self._conn("writer")
                    for key, value in self._staged.items():
                        self._put_state(writer, key, value)
                self._staged.clear()
            self._closed = True
            for conn in (self._reader, self._writer):
                if conn is not None:
                    with suppress(psycopg.Error):
                        conn.close()
            self._reader = self._writer = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresStore({self._where!r}, max_entry_bytes={self._limit})"


_COLS = ("scope", "name", "content", "meta", "hash", "updated")


def current_schema_missing(conn: Conn) -> bool:
    """Whether the connection's ``search_path`` names no existing schema (``current_schema()``
    is NULL), so tables could not be created."""
    row = conn.execute("SELECT current_schema()").fetchone()
    return row is None or row[0] is None
