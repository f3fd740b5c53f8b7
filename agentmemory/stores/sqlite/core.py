"""The connections, transactions, ``store_state`` and write path under SqliteStore.

:class:`SqliteCore` is the base of :class:`~agentmemory.stores.sqlite.store.SqliteStore` and of
its parts (:mod:`.migrations`, :mod:`.recovery`, :mod:`.purge`): one writer connection behind
a lock, one reader connection behind another, the ``BEGIN IMMEDIATE`` transaction every write
runs in, the translation of sqlite's errors into ours
(docs/storage.md#errors-that-are-not-ours), and the row-and-journal write each change makes
(with :meth:`SqliteCore._apply_in_txn`, the extension point). It opens nothing itself: the
attributes below are set by ``SqliteStore.__init__``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path

from agentmemory.entries import Change, Entry
from agentmemory.errors import (
    AgentMemoryError,
    StoreFormatError,
    StoreIOError,
    StoreLockedError,
    io_error,
)
from agentmemory.stores.base import check_state_pair
from agentmemory.stores.space import is_full, out_of_space
from agentmemory.wire import encode_change, format_time, parse_time

from .faults import LEXICAL_DAMAGE_KEY, _LexiconDamaged, header_pages, is_busy, is_damage
from .lexicon import Fts5Index

__all__ = ["SqliteCore", "meta_json", "row_entry"]


def meta_json(meta: Mapping[str, str] | None) -> str:
    return json.dumps(dict(sorted((meta or {}).items())), ensure_ascii=False, separators=(",", ":"))


def row_entry(scope: str, name: str, content: str, meta: str, hash_: str, updated: str) -> Entry:
    m = json.loads(meta) if meta else None
    return Entry(
        scope=scope,
        name=name,
        content=content,
        meta=dict(m) if m else None,
        hash=hash_,
        updated=parse_time(updated),
    )


class SqliteCore:
    """Connections, transactions, ``store_state`` and the write of one change (see the module
    docstring); the base of ``SqliteStore``."""

    _path: Path
    _limit: int
    _timeout_s: float
    _clock: Callable[[], datetime]
    _wlock: threading.RLock
    _rlock: threading.Lock
    _closed: bool
    _staged: dict[str, str]  # deferred set_state values, under _wlock
    _lexicon: Fts5Index[Entry]
    _read_only: bool
    _cut: str | None  # what this open found and did about a cut file
    _cut_found: str | None  # the same, as recorded (JOURNAL_CUT_KEY)
    _writer: sqlite3.Connection
    _reader: sqlite3.Connection

    # -- connections and transactions --------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            str(self._path),
            timeout=self._timeout_s,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout_s * 1000)}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _locked(self, err: sqlite3.Error) -> StoreLockedError:
        return StoreLockedError(
            str(self._path),
            detail=(
                f"another writer held it for over {self._timeout_s:g} s ({err}); "
                "retry later, or open the store with a longer busy_timeout_s"
            ),
        )

    def _failed(self, err: sqlite3.Error) -> AgentMemoryError:
        """The :class:`AgentMemoryError` for a failure of sqlite: busy is
        :class:`StoreLockedError`, the rest a :class:`StoreIOError` saying full, read-only,
        damaged or refused (docs/storage.md#errors-that-are-not-ours)."""
        if isinstance(err, sqlite3.OperationalError) and is_busy(err):
            return self._locked(err)
        code = getattr(err, "sqlite_errorcode", None)
        primary = code & 0xFF if isinstance(code, int) else None
        text = str(err).lower()
        if primary == sqlite3.SQLITE_FULL or is_full(err, self._path.parent):
            kind = "full"
        elif self._read_only and out_of_space(self._path.parent):
            # opened read-only because its WAL index had no room
            return io_error(
                str(self._path.parent), "full", "no room for the journal's WAL index: read-only"
            )
        elif primary == sqlite3.SQLITE_READONLY or "readonly" in text or "read-only" in text:
            kind = "read-only"
        elif is_damage(err):
            kind = "damaged"
            if self._cut_found is not None:  # say why: the open that found the cut recorded it
                return StoreIOError(str(self._path.parent), kind, f"{err}; {self._cut_found}")
        else:
            kind = "io"
        return io_error(str(self._path.parent), kind, str(err))

    def _format_error(self, detail: str) -> StoreFormatError:
        return StoreFormatError(str(self._path), detail)

    def _unreadable(self, err: sqlite3.DatabaseError) -> AgentMemoryError:
        """The error for a file sqlite cannot read at open: :class:`StoreIOError` ``"damaged"``
        (with the cure) when it starts as an sqlite database does, else
        :class:`StoreFormatError` (some other file)."""
        if is_full(err, self._path.parent):  # no room for the WAL: full, not another format
            return self._failed(err)
        if is_damage(err) and header_pages(self._path) is not None:
            return self._failed(err)
        return self._format_error(f"it is not an sqlite database ({err})")

    def _check_open(self) -> None:
        if self._closed:
            raise AgentMemoryError(
                f"agentmemory: store {self._path} is closed; open a new SqliteStore to use it"
            )

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """Hold the writer lock and one ``BEGIN IMMEDIATE`` transaction; commit on a clean exit,
        roll back on an exception. Raises :class:`StoreLockedError` when another writer holds
        the file past the busy timeout."""
        with self._wlock:
            self._check_open()
            conn = self._writer
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as err:
                raise self._failed(err) from err
            staged = dict(self._staged)
            try:
                yield conn
                for key, value in staged.items():
                    self._put_state(conn, key, value)
            except BaseException as exc:
                if conn.in_transaction:  # sqlite may have rolled back already (I/O error, full)
                    with suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._failed(exc) from exc
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as err:
                if conn.in_transaction:
                    with suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                raise self._failed(err) from err
            for key, value in staged.items():
                if self._staged.get(key) == value:
                    del self._staged[key]

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._rlock:
            self._check_open()
            try:
                yield self._reader
            except sqlite3.Error as err:
                raise self._failed(err) from err

    # -- store_state -------------------------------------------------------------------------

    def get_state(self, key: str) -> str | None:
        """The value stored under ``key`` in ``store_state`` (or deferred by this handle and not
        yet written), or ``None`` when there is none."""
        staged = self._staged.get(key)  # one dict read: no lock, so reads never wait for writers
        if staged is not None:
            return staged
        with self._read() as conn:
            row = conn.execute("SELECT value FROM store_state WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_state(self, key: str, value: str, *, deferred: bool = False) -> None:
        """Store ``value`` under ``key`` in ``store_state``.

        For derived state other components keep beside the journal (a vector index cursor, an
        embedder fingerprint). Writes no journal record. The value is written in an immediate
        transaction of its own; with ``deferred``, it is written instead inside this handle's
        next write transaction (a ``put``, ``forget``, ``put_many`` or ``set_state``), or by
        :meth:`close`, so a value that changes after every write costs no transaction of its
        own. :meth:`get_state` of this handle sees a deferred value at once; other handles and
        processes see it once written. A deferred value is lost if the process dies first (or
        if ``close`` cannot write it within ``busy_timeout_s``): defer only values that may lag
        behind, such as an index cursor (more replay at the next open; docs/storage.md#deferred-state).

        Raises:
            TypeError: ``key`` or ``value`` is not a ``str``.
            StoreLockedError: another writer held the file for over ``busy_timeout_s``.
            AgentMemoryError: the store is closed.
        """
        check_state_pair(key, value)
        if deferred:
            with self._wlock:
                self._check_open()
                self._staged[key] = value
            return
        with self._transaction() as conn:
            self._put_state(conn, key, value)

    @staticmethod
    def _put_state(conn: sqlite3.Connection, key: str, value: str) -> None:
        conn.execute(
            "INSERT INTO store_state (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # -- the write of one change -------------------------------------------------------------

    def _apply_in_txn(self, conn: sqlite3.Connection, change: Change) -> None:
        """Extension point: keep derived state in step with one change, in its transaction.

        Called inside the write's ``BEGIN IMMEDIATE`` transaction on ``conn`` (do not commit),
        after the ``memory_entries`` row was upserted (or deleted, when ``change.entry.deleted``)
        and the journal row with ``change.seq`` appended; once per entry for ``put_many``.
        Raising rolls the whole write back (nothing is written and the error reaches the
        caller). Here it keeps the lexical index of :meth:`recall` (``agentmemory.stores.sqlite.lexicon.Fts5Index``) in
        step: one tokenization of the entry, one FTS5 delete and insert (a forget deletes
        only), and the document frequency of each term the entry gains or loses
        (``memory_lexical_df``). A subclass that overrides it must call
        ``super()._apply_in_txn(conn, change)``.
        """
        e = change.entry
        if conn.execute(
            "SELECT 1 FROM store_state WHERE key = ?", (LEXICAL_DAMAGE_KEY,)
        ).fetchone():
            return  # the index is damaged: the journal takes the write, a repair re-indexes it
        try:
            self._lexicon.write(conn, e.scope, e.name, None if e.deleted else e)
        except sqlite3.DatabaseError as err:
            if is_damage(err):  # sqlite refuses the rest of this transaction: start again
                raise _LexiconDamaged(err) from err
            raise

    def _stored(self, conn: sqlite3.Connection, scope: str, name: str) -> Entry | None:
        row = conn.execute(
            "SELECT content, meta, hash, updated FROM memory_entries WHERE scope = ? AND name = ?",
            (scope, name),
        ).fetchone()
        if row is None:
            return None
        return row_entry(scope, name, *row)

    def _tail(self, conn: sqlite3.Connection) -> tuple[int, datetime | None]:
        """The last record's seq (0 when the journal is empty) and its ``at``."""
        row = conn.execute(
            "SELECT seq, line FROM memory_journal ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return 0, None
        try:
            at = json.loads(row[1]).get("at")
            return int(row[0]), parse_time(at) if isinstance(at, str) else None
        except ValueError:
            return int(row[0]), None

    def _now(self, last_at: datetime | None) -> datetime:
        now = parse_time(format_time(self._clock()))  # what the journal line will say
        if last_at is not None and now < last_at:
            return last_at
        return now

    def _write(self, conn: sqlite3.Connection, change: Change) -> None:
        e = change.entry
        if e.deleted:
            conn.execute(
                "DELETE FROM memory_entries WHERE scope = ? AND name = ?", (e.scope, e.name)
            )
        else:
            assert e.updated is not None
            conn.execute(
                "INSERT INTO memory_entries (scope, name, content, meta, hash, updated)"
                " VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (scope, name) DO UPDATE SET content = excluded.content,"
                " meta = excluded.meta, hash = excluded.hash, updated = excluded.updated",
                (e.scope, e.name, e.content, meta_json(e.meta), e.hash, format_time(e.updated)),
            )
        conn.execute(
            "INSERT INTO memory_journal (seq, scope, name, line) VALUES (?, ?, ?, ?)",
            (change.seq, e.scope, e.name, encode_change(change)),
        )
        self._apply_in_txn(conn, change)
