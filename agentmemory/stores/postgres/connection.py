"""The connections, transactions and write path under :class:`PostgresStore`
(``agentmemory.stores.postgres.store``): the writer and reader connections, opened again when
they drop; one pipelined transaction per write under the counter row's lock; and the
set-based statements a write queues (docs/storage.md#how-seq-stays-contiguous-across-hosts).
The module docstring of ``agentmemory.stores.postgres.store`` describes the tables."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict

from agentmemory.entries import Change, Entry
from agentmemory.errors import (
    AgentMemoryError,
    StoreFormatError,
    StoreLockedError,
    StoreUnavailableError,
)
from agentmemory.wire import encode_change, format_time, parse_time

from .lexicon import PgBM25Index

__all__ = ["ENTRY_COLUMNS", "Conn", "PgConnections", "dsn_where", "row_entry"]

Conn = psycopg.Connection[tuple[Any, ...]]


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


def one_line(err: BaseException) -> str:
    """The error's text on one line (libpq's messages span several)."""
    return " ".join(str(err).split())


def scrub(text: str, dsn: str) -> str:
    """``text`` with the DSN's password (if any) replaced by ``***``."""
    with suppress(psycopg.Error):
        password = conninfo_to_dict(dsn).get("password")
        if password:
            text = text.replace(str(password), "***")
    return text


def meta_json(meta: Mapping[str, str] | None) -> str:
    return json.dumps(dict(sorted((meta or {}).items())), ensure_ascii=False, separators=(",", ":"))


def row_entry(scope: str, name: str, content: bytes, meta: str, hash_: str, updated: str) -> Entry:
    m = json.loads(meta) if meta else None
    return Entry(
        scope=scope,
        name=name,
        content=bytes(content).decode("utf-8"),
        meta=dict(m) if m else None,
        hash=hash_,
        updated=parse_time(updated),
    )


ENTRY_COLUMNS = "scope, name, content, meta, hash, updated"


class PgConnections:
    """The connection and transaction half of :class:`PostgresStore` (a base class, not a
    store by itself): the writer and reader connections behind their locks, the pipelined
    write transaction with its commit check after a drop, and the statements of a write
    (journal records, entry rows, derived state, counter). ``PostgresStore.__init__`` sets
    the attributes declared here."""

    _dsn: str
    _where: str
    _limit: int
    _lock_timeout_s: float
    _connect_timeout_s: float
    _clock: Callable[[], datetime]
    _lexicon: PgBM25Index
    _wlock: threading.RLock
    _rlock: threading.Lock
    _closed: bool
    _staged: dict[str, str]  # deferred set_state values, under _wlock
    _writer: Conn | None
    _reader: Conn | None
    _recovery: str | None

    # -- connections ------------------------------------------------------------------------

    def _unavailable(self, detail: str) -> StoreUnavailableError:
        return StoreUnavailableError(self._where, scrub(detail, self._dsn))

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
                f"cannot connect ({one_line(err)}); check that the server runs, the "
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
                f"({one_line(err)}); retry later, or open the store with a longer "
                "lock_timeout_s"
            ),
        )

    def _format_error(self, detail: str) -> StoreFormatError:
        return StoreFormatError(self._where, detail)

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
                    f"the connection dropped during {what} ({one_line(err)}); "
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
                    f"the connection dropped during a read ({one_line(err)}); retry it"
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
            f"SELECT {ENTRY_COLUMNS} FROM memory_entries"
            " WHERE (scope, name) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
            (scopes, names),
        )
        row = counter.fetchone()
        if row is None:
            raise self._format_error(
                "its memory_counter row is missing; restore the database from a backup"
            )
        live = {(str(r[0]), str(r[1])): row_entry(*r) for r in stored.fetchall()}
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
                f"INSERT INTO memory_entries ({ENTRY_COLUMNS}) SELECT * FROM unnest("
                "%s::text[], %s::text[], %s::bytea[], %s::text[], %s::text[], %s::text[])"
                " ON CONFLICT (scope, name) DO UPDATE SET content = excluded.content,"
                " meta = excluded.meta, hash = excluded.hash, updated = excluded.updated",
                (
                    [e.scope for e in kept],
                    [e.name for e in kept],
                    [e.content.encode("utf-8") for e in kept],
                    [meta_json(e.meta) for e in kept],
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
