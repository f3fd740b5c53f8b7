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
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import suppress
from datetime import datetime
from typing import ClassVar

import psycopg
from psycopg import errors as pg_errors

from agentmemory.entries import Change, Entry
from agentmemory.errors import AgentMemoryError, NotFoundError
from agentmemory.recall import search_entries
from agentmemory.rules import DEFAULT_MAX_ENTRY_BYTES, check_entry, check_scope
from agentmemory.store import plan_forget, plan_put
from agentmemory.stores.base import StoreBase, check_state_pair, checked_batch, utc_now
from agentmemory.stores.lexicon_state import TOKENIZER_STATE_KEY
from agentmemory.wire import decode_change
from recallers import DEFAULT_TOKENIZER, Tokenizer

from .connection import ENTRY_COLUMNS, Conn, dsn_where, one_line, row_entry
from .lexicon import TOP_KEYS_SQL, PgBM25Index
from .migrations import (
    PG_MIGRATIONS,
    STORE_ID_KEY,
    PgMigration,
    apply_migrations,
    check_encoding,
)
from .purge import PgPurge

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


class PostgresStore(PgPurge, StoreBase):
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
    def tokenizer(self) -> Tokenizer:
        """The tokenizer of the lexical index (documents and queries)."""
        return self._lexicon.tokenizer

    # -- the schema ---------------------------------------------------------------------------

    def _migrate(self, conn: Conn) -> None:
        """Check and migrate the schema (:func:`~agentmemory.stores.postgres.migrations.apply_migrations`
        with this class's ``_migrations``), turning psycopg's lock and drop errors into
        :class:`~agentmemory.StoreLockedError` and :class:`~agentmemory.StoreUnavailableError`."""
        check_encoding(conn, self._format_error)
        try:
            apply_migrations(
                conn, self._migrations, clock=self._clock, format_error=self._format_error
            )
        except pg_errors.LockNotAvailable as err:
            raise self._locked(err) from None
        except psycopg.OperationalError as err:
            raise self._unavailable(
                f"the connection dropped while the schema was checked ({one_line(err)}); "
                "nothing was changed; open the store again"
            ) from None

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
        batch = checked_batch(entries)
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

    # -- reads --------------------------------------------------------------------------------

    def get(self, scope: str, name: str) -> Entry:
        """Return the live entry; raise :class:`~agentmemory.NotFoundError` when there is none
        (:class:`~agentmemory.StoreUnavailableError` when the server cannot be reached)."""
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {ENTRY_COLUMNS} FROM memory_entries WHERE scope = %s AND name = %s",
                (scope, name),
            ).fetchone()
        if row is None:
            raise NotFoundError(scope, name)
        return row_entry(*row)

    def list(self, scope: str) -> builtins.list[Entry]:
        """The live entries of ``scope`` sorted by name (UTF-8 byte order); ``[]`` when none."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {ENTRY_COLUMNS} FROM memory_entries"
                ' WHERE scope = %s ORDER BY name COLLATE "C"',
                (scope,),
            ).fetchall()
        return [row_entry(*r) for r in rows]

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
                f"SELECT {ENTRY_COLUMNS} FROM memory_entries"
                " WHERE (scope, name) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
                ([k[0] for k in wanted], [k[1] for k in wanted]),
            ).fetchall()
        return {(str(r[0]), str(r[1])): row_entry(*r) for r in rows}

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
                    f"SELECT {ENTRY_COLUMNS} FROM memory_entries"
                    ' WHERE (scope COLLATE "C", name COLLATE "C") > (%s, %s)'
                    ' ORDER BY scope COLLATE "C", name COLLATE "C" LIMIT %s',
                    (*last, batch),
                ).fetchall()
            if not rows:
                return
            yield [row_entry(*r) for r in rows]
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
        """Live entries matching ``query`` by :func:`agentmemory.rules.matches`, scopes in the order
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
        check_state_pair(key, value)
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
                    f"({one_line(err)}); nothing was written; retry it"
                ) from None
            self._staged.pop(key, None)

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
                rows = conn.execute(f"SELECT {ENTRY_COLUMNS} FROM memory_entries").fetchall()
                with conn.pipeline():
                    self._lexicon.rebuild(conn, (row_entry(*r) for r in rows))
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
        return [(row_entry(*r[:6]), float(r[6])) for r in rows]

    def superseding(self, scopes: Sequence[str]) -> builtins.list[Entry]:
        """The live entries of ``scopes`` with a ``supersedes`` meta, by scope order then name
        (docs/kinds.md#out-of-date-on-purpose-only). One statement; ``meta`` is JSON text, so
        it is read by a substring test, then checked on the decoded meta."""
        wanted = builtins.list(dict.fromkeys(scopes))
        if not wanted:
            return []
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {ENTRY_COLUMNS} FROM memory_entries"
                " WHERE scope = ANY(%s) AND meta LIKE '%%\"supersedes\"%%'",
                (wanted,),
            ).fetchall()
        found = [e for e in (row_entry(*r) for r in rows) if (e.meta or {}).get("supersedes")]
        order = {sc: i for i, sc in enumerate(wanted)}
        found.sort(key=lambda e: (order[e.scope], e.name.encode()))
        return found

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

    def __repr__(self) -> str:
        return f"PostgresStore({self._where!r}, max_entry_bytes={self._limit})"


_COLS = ("scope", "name", "content", "meta", "hash", "updated")
