"""SqliteStore: live entries and an append-only journal in one sqlite file.

The layout follows the Go module's sqlite store (docs/storage.md#tables), so a database
can be dumped to a ``journal.jsonl`` the Go file store reads:

* ``memory_entries(scope, name, content, meta, hash, updated)``: one row per live entry; ``meta`` is
  JSON text (``"{}"`` when empty), ``updated`` RFC 3339 with nanosecond precision, UTC.
* ``memory_journal(seq, scope, name, line)``: one row per change; ``line`` is the record as
  :func:`agentmemory.lost_updates.encode_change` writes it, and the ``seq`` column is authoritative.
* ``store_state(key, value)``: small text values that components keep beside the journal (a vector
  index cursor, an embedder fingerprint), read and written with :meth:`SqliteStore.get_state` and
  :meth:`SqliteStore.set_state`.
* ``store_schema(version, name, applied)``: the numbered migrations applied to the file.

Every write is one ``BEGIN IMMEDIATE`` transaction that reads the stored row, runs the write rule
(:func:`agentmemory.store.plan_put` / :func:`~agentmemory.store.plan_forget`), upserts or deletes
the row, appends the journal record with ``seq = MAX(seq) + 1``, and calls
:meth:`SqliteStore._apply_in_txn`. WAL mode and ``synchronous=NORMAL``: a committed write survives
the writer process being killed (not necessarily a power cut). Several processes may write one
file: sqlite's write lock serialises them, so ``seq`` stays contiguous.

Extension points (private, but kept stable for the components of this library that build on it):

* :data:`MIGRATIONS` is the numbered list of schema steps. A component that needs its own tables
  (for example an FTS5 lexical index, ``m002_lexical_index``) appends a :class:`Migration` with the
  next version, or a subclass sets ``_migrations`` to a longer tuple.
* :meth:`SqliteStore._apply_in_txn` runs inside every write transaction, after the row and the
  journal record are written, for ``put``, ``forget`` and each entry of ``put_many``. Overriding it
  keeps a derived table in step with the entries in the same transaction; raising from it rolls
  the whole write back.

The class is put together from parts, each a module of this package: :mod:`.core` (connections,
transactions, ``store_state``, the write of one change), :mod:`.migrations` (the schema steps),
:mod:`.recovery` (a cut, read-only or damaged file; ``verify --repair``) and :mod:`.purge`.
This module holds the Store API.
"""

from __future__ import annotations

import builtins
import functools
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import suppress
from datetime import datetime
from pathlib import Path
from typing import ClassVar, Concatenate, ParamSpec, TypeVar

from agentmemory.entries import Change, Entry
from agentmemory.errors import (
    AgentMemoryError,
    IndexDamagedError,
    NotFoundError,
    StoreFormatError,
    StoreIOError,
    StoreLockedError,
)
from agentmemory.recall import search_entries
from agentmemory.rules import DEFAULT_MAX_ENTRY_BYTES, check_entry, check_scope
from agentmemory.store import plan_forget, plan_put
from agentmemory.stores.base import StoreBase, checked_batch, utc_now
from agentmemory.wire import decode_change
from recallers import DEFAULT_TOKENIZER, Tokenizer

from .core import row_entry
from .faults import JOURNAL_CUT_KEY, LEXICAL_DAMAGE_KEY, _LexiconDamaged
from .lexicon import TOKENIZER_STATE_KEY, Fts5Index
from .migrations import MIGRATIONS, SESSION_SQL, STORE_ID_KEY, SUPERSEDES_SQL, Migration
from .purge import Purging
from .recovery import Recovery

__all__ = ["DEFAULT_BUSY_TIMEOUT_S", "MIGRATIONS", "Migration", "SqliteStore"]

DEFAULT_BUSY_TIMEOUT_S = 5.0
"""How long a write waits for another writer's lock before :class:`StoreLockedError`, in seconds
(the Go store's ``busy_timeout 5000``; docs/storage.md#wal-and-the-busy-timeout)."""


JOURNAL_PAGE_ROWS = 256
"""Journal rows read per query by :meth:`SqliteStore.journal`; no transaction stays open between
pages, so a slow reader never holds the database."""


LIVE_PAGE_KEYS = 500
"""Names bound per query by :meth:`SqliteStore.live_many`, and the default list size of
:meth:`SqliteStore.iter_live` (under sqlite's default limit of 32,766 bound parameters)."""


_P = ParamSpec("_P")

_R = TypeVar("_R")


def _past_a_damaged_lexicon(
    write: Callable[Concatenate[SqliteStore, _P], _R],
) -> Callable[Concatenate[SqliteStore, _P], _R]:
    """Make a write land even when the lexical index is damaged: on :class:`_LexiconDamaged`
    record the damage and run the write once more (it then skips the index)."""

    @functools.wraps(write)
    def run(self: SqliteStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return write(self, *args, **kwargs)
        except _LexiconDamaged as exc:
            self._mark_lexicon_damaged(exc.err)
            return write(self, *args, **kwargs)

    return run


class SqliteStore(Purging, Recovery, StoreBase):
    """A :class:`~agentmemory.Store` in one sqlite file: live entries plus an append-only journal.

    Safe for several threads (one writer connection behind a lock, one reader connection behind
    another) and for several processes on one machine (sqlite's file lock; WAL lets readers go on
    while one process writes). Reads never wait for writers.

    Args:
        path: the database file; created, with its parent folder, when missing.
        max_entry_bytes: the content bound in UTF-8 bytes (default 4096); must be positive. It is
            a property of the handle, not of the file.
        busy_timeout_s: how long, in seconds, a write (and the schema step on open) waits for
            another writer's lock before raising :class:`~agentmemory.StoreLockedError`.
        clock: returns the time stamped on writes (aware UTC). Stored times have microsecond
            precision, and never go backwards along ``seq``: a clock behind the last record is
            clamped to that record's ``at``.
        tokenizer: the terms of the lexical index :meth:`recall` ranks by (default
            ``recallers.DEFAULT_TOKENIZER``). Opening with a tokenizer whose ``version`` differs
            from the one the file's index was built with rebuilds the index (one tokenization of
            every live entry, in one transaction); give every handle on a file the same one.

    Raises:
        ValueError: ``max_entry_bytes`` under 1, ``busy_timeout_s`` negative, or ``path`` is
            ``""`` or ``":memory:"`` (the store's two connections need one file).
        StoreLockedError: another process held the file for longer than ``busy_timeout_s`` while
            the schema had to be created or migrated.
        StoreFormatError: the path cannot be opened as a file (a folder, no permission), the file
            is not an sqlite database, holds a table of ours with other columns, or was migrated
            by a newer version of agentmemory.
        StoreIOError: ``kind`` ``"damaged"``: the file starts as an sqlite database does but
            sqlite cannot read its schema (the cure is a backup). A file cut short of the pages
            its header counts is not refused: opening gives it back its length in zero bytes and
            logs what it found (docs/storage.md#a-cut-journal-file).
    """

    _journal_page_rows: ClassVar[int] = JOURNAL_PAGE_ROWS

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        clock: Callable[[], datetime] = utc_now,
        tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    ) -> None:
        if max_entry_bytes < 1:
            raise ValueError(f"max_entry_bytes is {max_entry_bytes}; it must be at least 1")
        if busy_timeout_s < 0:
            raise ValueError(f"busy_timeout_s is {busy_timeout_s}; it must be 0 or more seconds")
        if str(path) in ("", ":memory:"):
            # Each of the store's two connections would open a database of its own.
            raise ValueError(
                f"SqliteStore path is {str(path)!r}; give a file path (a temporary folder will "
                "do), or use MemStore for a store that lives in memory"
            )
        self._path = Path(path)
        self._limit = max_entry_bytes
        self._timeout_s = float(busy_timeout_s)
        self._clock = clock
        self._wlock = threading.RLock()
        self._rlock = threading.Lock()
        self._closed = False
        self._staged: dict[str, str] = {}  # deferred set_state values, under _wlock
        self._lexicon: Fts5Index[Entry] = Fts5Index(
            read=self._read, load=self._stored, tokenizer=tokenizer
        )
        self._read_only = False
        self._cut: str | None = None  # what this open found and did about a cut file
        self._cut_found: str | None = None  # the same, as recorded (JOURNAL_CUT_KEY)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._writer = self._connect()
        except sqlite3.Error as err:  # a folder, a file we may not read, a missing drive
            if self._open_read_only():
                return
            raise self._format_error(
                f"sqlite cannot open it ({err}); give the path of a database file (new or "
                "existing) in a folder you may write"
            ) from err
        try:
            self._configure()
            self._migrate()
            self._reader = self._connect()
        except (StoreFormatError, StoreIOError, sqlite3.Error):
            self._writer.close()
            if self._open_read_only():
                return
            raise
        except BaseException:
            self._writer.close()
            raise
        self._recovery: str | None = None
        try:
            if self._cut is not None:
                self._record_cut(self._cut)
            else:
                with suppress(AgentMemoryError):  # a damaged store_state fails its own calls
                    self._cut_found = self.get_state(JOURNAL_CUT_KEY)
            self._sync_lexicon()
            self._recover_purge()
        except BaseException:
            self.close()
            raise

    @property
    def read_only(self) -> bool:
        """Whether the store was opened read-only (its folder or file may not be written)."""
        return self._read_only

    # -- properties -------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    @property
    def where(self) -> str:
        """The database file as text, for messages (as ``PostgresStore.where`` names its
        database)."""
        return str(self._path)

    # -- the write path ----------------------------------------------------------------------

    @_past_a_damaged_lexicon
    def put(
        self,
        entry: Entry,
        *,
        if_hash: str | None = None,
        based_on: str | None = None,
        session: str | None = None,
    ) -> Change:
        """Create or replace the whole entry and return the journal record it appended.

        One ``BEGIN IMMEDIATE`` transaction; see :meth:`agentmemory.Store.put` for the rule.

        Raises:
            InvalidEntryError: the entry breaks a rule of :func:`agentmemory.check_entry`
                (checked before the lock is taken).
            EntryTooLargeError: content over ``max_entry_bytes``.
            ConflictError: ``if_hash`` is not the stored hash (``""``: the entry must not exist).
            StoreLockedError: another writer held the file for over ``busy_timeout_s``.
        A refused put writes nothing.
        """
        check_entry(entry)
        with self._transaction() as conn:
            seq, last_at = self._tail(conn)
            change = plan_put(
                entry,
                self._stored(conn, entry.scope, entry.name),
                limit=self._limit,
                seq=seq + 1,
                now=self._now(last_at),
                if_hash=if_hash,
                based_on=based_on,
                session=session,
                checked=True,
            )
            self._write(conn, change)
        return change.copy()

    @_past_a_damaged_lexicon
    def put_many(self, entries: Iterable[Entry], *, session: str | None = None) -> list[Change]:
        """Put every entry unconditionally in ONE transaction, for bulk import; all or nothing.

        Each entry is checked once: :func:`agentmemory.check_entry` for all of them before the
        transaction begins, then the size bound of each against the entry stored at that point,
        inside it (a refusal rolls back the rows written before it). The records are returned
        in the order given, with consecutive ``seq``. A name given twice is written twice (the
        second record replaces the first). An empty iterable writes nothing and returns ``[]``.

        Raises:
            InvalidEntryError, EntryTooLargeError: the first entry that breaks a rule; nothing is
                written.
            StoreLockedError: another writer held the file for over ``busy_timeout_s``.
        """
        batch = checked_batch(entries)
        if not batch:
            return []
        with self._transaction() as conn:  # a refused entry rolls back every row before it
            seq, last_at = self._tail(conn)
            now = self._now(last_at)
            live: dict[tuple[str, str], Entry | None] = {}
            changes: builtins.list[Change] = []
            for e in batch:
                k = (e.scope, e.name)
                if k not in live:
                    live[k] = self._stored(conn, e.scope, e.name)
                seq += 1
                change = plan_put(
                    e, live[k], limit=self._limit, seq=seq, now=now, session=session, checked=True
                )
                live[k] = change.entry
                self._write(conn, change)
                changes.append(change)
        return [c.copy() for c in changes]

    @_past_a_damaged_lexicon
    def forget(self, scope: str, name: str, *, session: str | None = None) -> Change:
        """Write a tombstone (the last content and meta, ``deleted=True``) and return its record.

        Raises:
            NotFoundError: no live entry ``scope/name``; nothing is written.
            StoreLockedError: another writer held the file for over ``busy_timeout_s``.
        """
        with self._transaction() as conn:
            stored = self._stored(conn, scope, name)
            if stored is None:
                raise NotFoundError(scope, name)
            seq, last_at = self._tail(conn)
            change = plan_forget(stored, seq=seq + 1, now=self._now(last_at), session=session)
            self._write(conn, change)
        return change.copy()

    # -- reads -------------------------------------------------------------------------------

    def get(self, scope: str, name: str) -> Entry:
        """Return the live entry; raise :class:`~agentmemory.NotFoundError` when there is none."""
        with self._read() as conn:
            e = self._stored(conn, scope, name)
        if e is None:
            raise NotFoundError(scope, name)
        return e

    def list(self, scope: str) -> builtins.list[Entry]:
        """The live entries of ``scope`` sorted by name (UTF-8 byte order); ``[]`` when none."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT name, content, meta, hash, updated FROM memory_entries"
                " WHERE scope = ? ORDER BY name",
                (scope,),
            ).fetchall()
        return [row_entry(scope, *r) for r in rows]

    def scopes(self) -> builtins.list[str]:
        """The scopes holding at least one live entry, sorted (byte order); ``[]`` when none.

        One indexed read of ``memory_entries`` (its primary key leads with ``scope``), not a
        pass over the journal.
        """
        with self._read() as conn:
            rows = conn.execute("SELECT DISTINCT scope FROM memory_entries ORDER BY scope")
            return [str(r[0]) for r in rows.fetchall()]

    def live_many(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Entry]:
        """The live entries among ``keys`` (``(scope, name)`` pairs), by key; keys with no live
        entry (never written, forgotten, or not valid names) are left out. Read
        :data:`LIVE_PAGE_KEYS` names of one scope per query; no transaction is held between
        queries, so an entry written meanwhile may show either state."""
        by_scope: dict[str, builtins.list[str]] = {}
        for scope, name in keys:
            by_scope.setdefault(scope, []).append(name)
        out: dict[tuple[str, str], Entry] = {}
        for scope, names in by_scope.items():
            unique = builtins.list(dict.fromkeys(names))
            for start in range(0, len(unique), LIVE_PAGE_KEYS):
                part = unique[start : start + LIVE_PAGE_KEYS]
                marks = ",".join("?" * len(part))
                with self._read() as conn:
                    rows = conn.execute(
                        "SELECT name, content, meta, hash, updated FROM memory_entries"
                        f" WHERE scope = ? AND name IN ({marks})",
                        (scope, *part),
                    ).fetchall()
                for row in rows:
                    out[(scope, row[0])] = row_entry(scope, *row)
        return out

    def live_count(self) -> int:
        """The number of live entries in every scope."""
        with self._read() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM memory_entries").fetchone()[0])

    def iter_live(self, batch: int = LIVE_PAGE_KEYS) -> Iterator[builtins.list[Entry]]:
        """Every live entry, by scope then name (byte order), in lists of at most ``batch``.

        No transaction is held between lists, so the caller may write meanwhile: an entry
        written behind the position reached is not seen, one ahead of it is.

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
                    "SELECT scope, name, content, meta, hash, updated FROM memory_entries"
                    " WHERE (scope, name) > (?, ?) ORDER BY scope, name LIMIT ?",
                    (*last, batch),
                ).fetchall()
            if not rows:
                return
            yield [row_entry(*r) for r in rows]
            last = (rows[-1][0], rows[-1][1])

    def scopes_written_by(self, seq: int, scopes: Iterable[str]) -> builtins.list[str]:
        """Those of ``scopes`` (in the order given) holding a live entry whose latest journal
        record has a ``seq`` at or before ``seq``: a derived index that applied every record up
        to ``seq`` must hold something for each of them."""
        out = []
        with self._read() as conn:
            for scope in scopes:
                row = conn.execute(
                    "SELECT 1 FROM memory_entries e WHERE e.scope = ? AND (SELECT MAX(j.seq)"
                    " FROM memory_journal j WHERE j.scope = e.scope AND j.name = e.name) <= ?"
                    " LIMIT 1",
                    (scope, seq),
                ).fetchone()
                if row is not None:
                    out.append(scope)
        return out

    def never_journaled(self, keys: Iterable[str]) -> builtins.list[str]:
        """Those of ``keys`` (``"scope/name"``, in the order given) that no journal record names:
        a derived index holding one proves the journal lost records (a truncated file, a cut
        WAL). One indexed lookup per key."""
        out = []
        with self._read() as conn:
            for key in keys:
                scope, _, name = key.partition("/")
                row = conn.execute(
                    "SELECT 1 FROM memory_journal WHERE scope = ? AND name = ? LIMIT 1",
                    (scope, name),
                ).fetchone()
                if row is None:
                    out.append(key)
        return out

    def search(self, scopes: Sequence[str], query: str, limit: int = 0) -> builtins.list[Entry]:
        """Live entries matching ``query`` by :func:`agentmemory.rules.matches` (every word a
        case-insensitive substring of name, meta values or content), scopes in the order given
        and entries by name, at most ``limit`` when ``limit > 0``.

        Raises :class:`~agentmemory.InvalidEntryError` for a scope that is not kebab-case.
        """
        return search_entries(self, scopes, query, limit)

    def journal(self, after: int = 0) -> Iterator[Change]:
        """Yield every record with ``seq > after`` in ``seq`` order.

        Rows are read :data:`JOURNAL_PAGE_ROWS` at a time and no transaction is held between
        pages, so a reader may stop early, resume later from the last ``seq`` it saw, and see
        records appended while it iterates.

        Raises:
            StoreFormatError: a journal line that does not decode (naming its ``seq``).
        """
        cursor = max(after, 0)
        while True:
            with self._read() as conn:
                rows = conn.execute(
                    "SELECT seq, line FROM memory_journal WHERE seq > ? ORDER BY seq LIMIT ?",
                    (cursor, self._journal_page_rows),
                ).fetchall()
            for seq, line in rows:
                try:
                    change = decode_change(line, seq=int(seq))
                except (ValueError, TypeError, KeyError) as err:
                    raise self._format_error(
                        f"journal record {seq} does not decode ({err}); "
                        "restore the file from a backup"
                    ) from err
                cursor = int(seq)
                yield change
            if len(rows) < self._journal_page_rows:
                return

    def last_seq(self) -> int:
        """The highest ``seq`` in the journal; 0 when it is empty."""
        with self._read() as conn:
            row = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM memory_journal").fetchone()
        return int(row[0])

    # -- derived state -----------------------------------------------------------------------

    @property
    def store_id(self) -> str:
        """The store's random id (a UUID made by migration ``m005_store_id``; the same for every
        handle on the file, different for any other store, kept by a copy of the file).

        Raises:
            StoreFormatError: the journal has no id: it is read-only and older than that
                migration (open it once where it may be written), or its row was deleted.
        """
        value = self.get_state(STORE_ID_KEY)
        if value is None:
            raise StoreFormatError(
                str(self._path),
                f"it has no store id (store_state {STORE_ID_KEY}); open it once where it may be "
                "written, so its migrations run",
            )
        return value

    # -- recall (lexical index: lexicon.Fts5Index, tables of m002_lexical_index) ------------

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer of the lexical index (documents and queries)."""
        return self._lexicon.tokenizer

    def _sync_lexicon(self) -> None:
        """Rebuild the lexical index when it was built with another tokenizer version (or never,
        as in a file made before m002), in one immediate transaction."""
        if not self._lexicon.needs_rebuild(self.get_state(TOKENIZER_STATE_KEY)):
            return
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT value FROM store_state WHERE key = ?", (TOKENIZER_STATE_KEY,)
            ).fetchone()
            if not self._lexicon.needs_rebuild(None if row is None else str(row[0])):
                return  # another process rebuilt it meanwhile
            rows = conn.execute(
                "SELECT scope, name, content, meta, hash, updated FROM memory_entries"
            ).fetchall()
            self._lexicon.rebuild(conn, (row_entry(*r) for r in rows))
            conn.execute(
                "INSERT INTO store_state (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (TOKENIZER_STATE_KEY, self._lexicon.tokenizer.version),
            )

    def search_text(
        self, query: str, *, scopes: Sequence[str], limit: int
    ) -> builtins.list[tuple[Entry, float]]:
        """The lexical leg: at most ``limit`` ``(entry, BM25 score)`` pairs of ``scopes``, best
        first, every score above 0, read in one snapshot; ``[]`` when no entry shares a term
        with ``query``.

        The index is an FTS5 table written in each write's own transaction (see
        :meth:`_apply_in_txn`), so it is never behind the journal, even across processes. FTS5's
        ``bm25()`` scores with k1 1.2 and b 0.75 over the statistics of the whole file (every
        scope), see ``agentmemory.stores.sqlite.lexicon``.

        Raises :class:`~agentmemory.InvalidEntryError` for a scope that is not kebab-case.
        """
        for s in scopes:
            check_scope(s)
        damaged = self.get_state(LEXICAL_DAMAGE_KEY)
        if damaged is not None:
            raise self._damaged(damaged)
        try:
            return self._lexicon.search_text(query, scopes=scopes, limit=limit)
        except StoreIOError as err:
            if err.kind == "damaged":
                raise self._damaged(err.detail) from err
            raise

    def _damaged(self, detail: str) -> IndexDamagedError:
        return IndexDamagedError(str(self._path.parent), "lexical", detail)

    def superseding(self, scopes: Sequence[str]) -> builtins.list[Entry]:
        """The live entries of ``scopes`` with a ``supersedes`` meta, by scope order then name.

        Read through the partial index of ``m003_supersedes_index``, so the cost follows the
        number of such entries, not the size of the scope.
        """
        out: builtins.list[Entry] = []
        with self._read() as conn:
            for scope in dict.fromkeys(scopes):
                # INDEXED BY: without statistics the planner would rather walk the primary key
                # (it gives the name order), which reads the whole scope.
                rows = conn.execute(
                    "SELECT name, content, meta, hash, updated FROM memory_entries"
                    " INDEXED BY memory_entries_supersedes"
                    f" WHERE scope = ? AND {SUPERSEDES_SQL} IS NOT NULL",
                    (scope,),
                ).fetchall()
                found = [row_entry(scope, *r) for r in rows]
                found.sort(key=lambda e: e.name.encode())
                out.extend(found)
        return out

    def last_written_by(
        self, session_id: str, scopes: Sequence[str]
    ) -> tuple[dict[tuple[str, str], str], builtins.list[str]]:
        """The live entries of ``scopes`` whose last journal record ``session_id`` wrote, with
        the hash that record wrote; and the scopes of ``scopes`` with no journal record at all.

        Read in one snapshot through the indexes of ``m004_journal_session_index`` (records by
        session) and ``m001`` (records by entry), so the cost follows what the session wrote.
        """
        found: dict[tuple[str, str], str] = {}
        unknown: builtins.list[str] = []
        with self._read() as conn:
            for scope in dict.fromkeys(scopes):
                if (
                    conn.execute(
                        "SELECT 1 FROM memory_journal WHERE scope = ? LIMIT 1", (scope,)
                    ).fetchone()
                    is None
                ):
                    unknown.append(scope)
                    continue
                rows = conn.execute(
                    "SELECT j.name, m.hash FROM memory_journal AS j"
                    " JOIN memory_entries AS m ON m.scope = j.scope AND m.name = j.name"
                    f" WHERE {SESSION_SQL.replace('(line', '(j.line')} = ? AND j.scope = ?"
                    " AND j.seq = (SELECT MAX(k.seq) FROM memory_journal AS k"
                    " WHERE k.scope = j.scope AND k.name = j.name)",
                    (session_id, scope),
                ).fetchall()
                for name, hash_ in rows:
                    found[(scope, str(name))] = str(hash_)
        return found, unknown

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Write the state deferred by :meth:`set_state`, run ``PRAGMA optimize`` and close the
        connections; idempotent. Later calls on the
        store raise :class:`~agentmemory.AgentMemoryError`."""
        with self._wlock, self._rlock:
            if self._closed:
                return
            if self._staged:
                # Deferred state may lag by design: a busy file must not fail close.
                with suppress(sqlite3.Error, StoreLockedError), self._transaction():
                    pass
            self._closed = True
            with suppress(sqlite3.Error):  # optimize is advice; a busy file must not fail close
                self._writer.execute("PRAGMA optimize")
            self._reader.close()
            self._writer.close()

    def __repr__(self) -> str:
        return f"SqliteStore({str(self._path)!r}, max_entry_bytes={self._limit})"
