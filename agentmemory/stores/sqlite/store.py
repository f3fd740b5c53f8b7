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
"""

from __future__ import annotations

import builtins
import functools
import json
import logging
import os
import sqlite3
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import ClassVar, Concatenate, ParamSpec, Self, TypeVar

from agentmemory.entries import REDACTED, SOURCE_PURGED, Change, Entry
from agentmemory.errors import (
    AgentMemoryError,
    IndexDamagedError,
    IndexDamagedWarning,
    NotFoundError,
    StoreFormatError,
    StoreIOError,
    StoreLockedError,
)
from agentmemory.purge import ErasureCheck, PurgeReceipt, check_purge, purge_record, redact_history
from agentmemory.rules import DEFAULT_MAX_ENTRY_BYTES, check_entry, check_scope
from agentmemory.store import plan_forget, plan_put, recall_entries, search_entries
from agentmemory.stores.mem import utc_now
from agentmemory.wire import decode_change, encode_change, format_time, parse_time
from recallers import DEFAULT_TOKENIZER, BM25Recaller, Hit, Tokenizer

from .lexicon import (
    DOC_FREQ_TABLES,
    FTS5_TABLES,
    TOKENIZER_STATE_KEY,
    Fts5Index,
    create_doc_freq_table,
    create_tables,
    doc_freq_problems,
    fill_doc_freqs,
)

__all__ = ["DEFAULT_BUSY_TIMEOUT_S", "MIGRATIONS", "Migration", "SqliteStore"]

logger = logging.getLogger(__name__)

PURGE_STARTED_KEY = "purge:started"
"""``store_state`` key written (in its own transaction) before a purge's transaction:
``"<pid> <scope>/<name>"``; the purge's transaction removes it (docs/storage.md#purge-and-the-files)."""

PURGE_PENDING_KEY = "purge:pending"
"""``store_state`` key a purge's transaction writes and its file scrub (vacuum, WAL truncated)
removes: ``"<scope>/<name>"``; an open that finds it finishes the scrub."""

DEFAULT_BUSY_TIMEOUT_S = 5.0
"""How long a write waits for another writer's lock before :class:`StoreLockedError`, in seconds
(the Go store's ``busy_timeout 5000``; docs/storage.md#wal-and-the-busy-timeout)."""

LEXICAL_DAMAGE_KEY = "lexical.damaged"
"""The ``store_state`` key a write sets (to the database's message) when it found the lexical
index damaged, and an open sets when it found the file cut; :meth:`SqliteStore.rebuild_lexical`
clears it (``docs/storage.md#a-damaged-lexical-index``)."""

JOURNAL_CUT_KEY = "journal.cut"
"""The ``store_state`` key an open sets (to what it found) when the file was shorter than its
header says; :meth:`SqliteStore.rebuild_lexical` clears it once the file is rewritten and sound
(``docs/storage.md#a-cut-journal-file``)."""

SQLITE_MAGIC = b"SQLite format 3\x00"
"""The first 16 bytes of every sqlite database file (https://sqlite.org/fileformat2.html,
section 1.3, "The Database Header")."""

JOURNAL_TABLES = ("store_schema", "memory_entries", "memory_journal", "store_state")
"""The tables that hold the journal's own data; the rest of the file (the lexical tables and every
index) is derived from them and rebuilt by :meth:`SqliteStore.rebuild_lexical`."""

JOURNAL_PAGE_ROWS = 256
"""Journal rows read per query by :meth:`SqliteStore.journal`; no transaction stays open between
pages, so a slow reader never holds the database."""

LIVE_PAGE_KEYS = 500
"""Names bound per query by :meth:`SqliteStore.live_many`, and the default list size of
:meth:`SqliteStore.iter_live` (under sqlite's default limit of 32,766 bound parameters)."""


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


_SUPERSEDES = "(CASE WHEN json_valid(meta) THEN json_extract(meta, '$.supersedes') END)"
"""The expression of the ``supersedes`` meta; index and queries must spell it the same. A value
that is not JSON gives NULL instead of an error, so one damaged row never blocks a write or the
migration."""


def _m003_supersedes_index(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memory_entries_supersedes ON memory_entries"
        f" (scope, {_SUPERSEDES}) WHERE {_SUPERSEDES} IS NOT NULL"
    )


_SESSION = "(CASE WHEN json_valid(line) THEN json_extract(line, '$.session') END)"
"""The expression of a journal record's session; index and queries must spell it the same. A
line that is not JSON (a damaged record) gives NULL instead of an error, so it never blocks a
write, the migration, or the report of the damage (:meth:`SqliteStore.journal`)."""


def _m004_journal_session_index(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memory_journal_session ON memory_journal"
        f" ({_SESSION}, scope, name, seq) WHERE {_SESSION} IS NOT NULL"
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
    (one walk of every posting, once per file: 0.4 s at 100k entries). A lexical index recorded as
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
        if _is_damage(err):  # sqlite refuses the rest of this transaction: start again
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


def _is_busy(err: sqlite3.Error) -> bool:
    code = getattr(err, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    text = str(err).lower()
    return "locked" in text or "busy" in text


def _is_damage(err: sqlite3.Error) -> bool:
    """Whether ``err`` says the file's pages are damaged (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``,
    or a virtual table whose pages cannot be read), not busy, full or read-only."""
    code = getattr(err, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return True
    text = str(err).lower()
    return "malformed" in text or "vtable constructor failed" in text


class _LexiconDamaged(Exception):
    """Raised inside a write transaction when the lexical index's pages are damaged; the write
    is rolled back, the damage recorded, and the write made again without the index."""

    def __init__(self, err: sqlite3.Error) -> None:
        super().__init__(str(err))
        self.err = err


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


def _meta_json(meta: Mapping[str, str] | None) -> str:
    return json.dumps(dict(sorted((meta or {}).items())), ensure_ascii=False, separators=(",", ":"))


def _row_entry(scope: str, name: str, content: str, meta: str, hash_: str, updated: str) -> Entry:
    m = json.loads(meta) if meta else None
    return Entry(
        scope=scope,
        name=name,
        content=content,
        meta=dict(m) if m else None,
        hash=hash_,
        updated=parse_time(updated),
    )


def _header_pages(path: Path) -> tuple[int, int] | None:
    """The page size (bytes) and page count the database header of ``path`` records, or ``None``
    when the file is not an sqlite database or its header's count is not valid.

    Read from the 100-byte header (https://sqlite.org/fileformat2.html, section 1.3): the page
    size at offset 16 (2 bytes, big-endian; 1 means 65536), the change counter at 24, the
    "in-header database size" at 28 and the "version-valid-for number" at 92 (4 bytes each).
    The count is valid only when nonzero and the two numbers agree; sqlite otherwise sizes the
    database by the file. Nothing past the header is read.
    """
    try:
        with path.open("rb") as f:
            head = f.read(100)
    except OSError:
        return None
    if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
        return None
    size = int.from_bytes(head[16:18], "big")
    size = 65536 if size == 1 else size
    changed, pages, valid_for = (int.from_bytes(head[i : i + 4], "big") for i in (24, 28, 92))
    if size < 512 or size & (size - 1) or pages == 0 or changed != valid_for:
        return None
    return size, pages


def _missing_pages(path: Path) -> tuple[int, int, int]:
    """``(missing, page_size, header_pages)``: how many whole or partial pages the file lacks
    against the page count its header records (0 when none, or when the header has no valid
    count). sqlite refuses to open such a file ("database disk image is malformed") unless the
    schema is writable (docs/storage.md#a-cut-journal-file)."""
    found = _header_pages(path)
    if found is None:
        return 0, 0, 0
    size, pages = found
    try:
        length = path.stat().st_size
    except OSError:
        return 0, 0, 0
    held = -(-length // size)  # a partial last page is read (short reads give zeros)
    return max(pages - held, 0), size, pages


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (signal 0)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class SqliteStore:
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

    _migrations: ClassVar[Sequence[Migration]] = MIGRATIONS
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

    def _open_read_only(self) -> bool:
        """Open an existing journal that may not be written (a read-only folder or file) for
        reading: both connections ``mode=ro`` (``immutable=1`` when sqlite cannot even share
        the WAL index read-only). Writes then fail with :class:`StoreIOError` ``"read-only"``
        (docs/storage.md#a-read-only-store). A cut file (fewer pages than its header counts),
        which cannot be padded here, is read with ``PRAGMA writable_schema`` on, the one way
        sqlite opens it (docs/storage.md#a-cut-journal-file). ``False`` when the file is
        missing, writable, or not readable as a journal of ours this way."""
        if not self._path.is_file() or self._writable():
            return False
        for flags in ("mode=ro", "mode=ro&immutable=1"):
            uri = f"{self._path.resolve().as_uri()}?{flags}"
            try:
                writer = sqlite3.connect(
                    uri, uri=True, isolation_level=None, check_same_thread=False
                )
                reader = sqlite3.connect(
                    uri, uri=True, isolation_level=None, check_same_thread=False
                )
                missing, _, pages = _missing_pages(self._path)
                if missing:  # a cut file it may not pad: read what is left
                    for conn in (writer, reader):
                        conn.execute("PRAGMA writable_schema = ON")
                    self._cut_found = (
                        f"{self._path.name} is {missing} of its header's {pages} pages short "
                        "(a cut file), read as it is"
                    )
                applied = self._applied(reader)
            except sqlite3.Error:
                continue
            if applied is None or self._pending(applied):
                writer.close()
                reader.close()
                return False
            self._writer, self._reader = writer, reader
            self._read_only = True
            return True
        return False

    def _writable(self) -> bool:
        """Whether a file can be made next to the journal (its WAL index needs one)."""
        probe = self._path.with_name(f".{self._path.name}.write-probe-{os.getpid()}")
        try:
            probe.touch()
        except OSError:
            return False
        with suppress(OSError):
            probe.unlink()
        return os.access(self._path, os.W_OK) and self._try_write_open()

    def _try_write_open(self) -> bool:
        try:
            with self._path.open("r+b"):
                return True
        except OSError:
            return False

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

    @property
    def max_entry_bytes(self) -> int:
        """The content bound in UTF-8 bytes."""
        return self._limit

    # -- connections, transactions and the schema --------------------------------------------

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
        if isinstance(err, sqlite3.OperationalError) and _is_busy(err):
            return self._locked(err)
        code = getattr(err, "sqlite_errorcode", None)
        primary = code & 0xFF if isinstance(code, int) else None
        text = str(err).lower()
        if primary == sqlite3.SQLITE_FULL or "disk is full" in text:
            kind = "full"
        elif primary == sqlite3.SQLITE_READONLY or "readonly" in text or "read-only" in text:
            kind = "read-only"
        elif _is_damage(err):
            kind = "damaged"
            if self._cut_found is not None:  # say why: the open that found the cut recorded it
                return StoreIOError(str(self._path.parent), kind, f"{err}; {self._cut_found}")
        else:
            kind = "io"
        return StoreIOError(str(self._path.parent), kind, str(err))

    def _format_error(self, detail: str) -> StoreFormatError:
        return StoreFormatError(str(self._path), detail)

    def _configure(self) -> None:
        # The busy timeout is set first (in _connect), then WAL, as the Go store does. Changing
        # the journal mode of a fresh file needs a lock another opener may hold: retry until the
        # busy timeout is spent.
        deadline = time.monotonic() + self._timeout_s
        pause = 0.01
        while True:
            try:
                self._writer.execute("PRAGMA journal_mode = WAL").fetchall()
                self._writer.execute("PRAGMA synchronous = NORMAL")
                return
            except sqlite3.DatabaseError as err:
                if isinstance(err, sqlite3.OperationalError) and _is_busy(err):
                    if time.monotonic() >= deadline:
                        raise self._locked(err) from err
                    time.sleep(pause)
                    pause = min(pause * 2, 0.25)
                    continue
                if _is_damage(err) and self._restore_cut_length():
                    continue  # the writer was reconnected to the file at its header's length
                raise self._unreadable(err) from err

    def _unreadable(self, err: sqlite3.DatabaseError) -> AgentMemoryError:
        """The error for a file sqlite cannot read at open: :class:`StoreIOError` ``"damaged"``
        (with the cure) when it starts as an sqlite database does, else
        :class:`StoreFormatError` (some other file)."""
        if _is_damage(err) and _header_pages(self._path) is not None:
            return self._failed(err)
        return self._format_error(f"it is not an sqlite database ({err})")

    def _restore_cut_length(self) -> bool:
        """Give back to a file cut short (fewer pages than its header counts) its length, with
        zero bytes, and reconnect the writer; ``True`` when done. ``False`` (nothing changed)
        when the file is not cut or may not be written.

        sqlite refuses such a file at open (SQLITE_CORRUPT), but reads a page lost from a file
        cut mid-page as zeros, a page it then reports damaged when a query reaches it. Padding
        to the header's length gives every lost page that treatment, and nothing already in the
        file is changed; new pages go after the header's count, so none is given two owners
        (docs/storage.md#a-cut-journal-file).
        """
        missing, size, pages = _missing_pages(self._path)
        if not missing:
            return False
        try:
            with self._path.open("r+b") as f:
                f.truncate(size * pages)
        except OSError:
            return False
        self._writer.close()
        self._writer = self._connect()
        self._cut = (
            f"{self._path.name} was {missing} page{'s' if missing > 1 else ''} "
            f"({missing * size} bytes) shorter than its header's {pages} pages (a cut file); "
            "opening gave it back its length in zero bytes"
        )
        return True

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
            if isinstance(err, sqlite3.OperationalError) and _is_busy(err):
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

    # -- the write path ----------------------------------------------------------------------

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
            if _is_damage(err):  # sqlite refuses the rest of this transaction: start again
                raise _LexiconDamaged(err) from err
            raise

    def _mark_lexicon_damaged(self, err: sqlite3.Error) -> None:
        """Record, in a transaction of its own, that the lexical index is damaged, and warn."""
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO store_state (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (LEXICAL_DAMAGE_KEY, str(err)),
            )
        warnings.warn(
            IndexDamagedWarning(
                f"agentmemory: the lexical index of store {self._path.parent} is damaged ({err}); "
                "the write is in the journal, search misses it: run 'agentmemory verify --repair "
                f"--path {self._path.parent}' to rebuild the index"
            ),
            stacklevel=4,
        )

    def _stored(self, conn: sqlite3.Connection, scope: str, name: str) -> Entry | None:
        row = conn.execute(
            "SELECT content, meta, hash, updated FROM memory_entries WHERE scope = ? AND name = ?",
            (scope, name),
        ).fetchone()
        if row is None:
            return None
        return _row_entry(scope, name, *row)

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
                (e.scope, e.name, e.content, _meta_json(e.meta), e.hash, format_time(e.updated)),
            )
        conn.execute(
            "INSERT INTO memory_journal (seq, scope, name, line) VALUES (?, ?, ?, ?)",
            (change.seq, e.scope, e.name, encode_change(change)),
        )
        self._apply_in_txn(conn, change)

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
        batch = builtins.list(entries)
        for e in batch:
            check_entry(e)
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

    def forget_session(
        self, session_id: str, scopes: Sequence[str], *, reason: str | None = None
    ) -> builtins.list[Change]:
        """Tombstone the live entries of ``scopes`` whose last record ``session_id`` wrote, one
        journal record each: :func:`agentmemory.forget_session` on this store
        (docs/kinds.md#forgetting-a-session). Refuses an empty or unknown scope list and an
        empty session id with :class:`~agentmemory.InvalidEntryError`, writing nothing."""
        from agentmemory.forget_session import forget_session

        return forget_session(self, session_id, scopes, reason=reason)

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

    # -- purge (docs/contract.md#purge-erasing-an-entry-for-good) ----------------------------

    def purge(
        self, scope: str, name: str, *, reason: str, session: str | None = None
    ) -> PurgeReceipt:
        """Erase every content ``scope/name`` ever held and return the receipt.

        One ``BEGIN IMMEDIATE`` transaction tombstones the entry when it is live, replaces the
        content, meta and hashes of each of its journal records
        (:func:`agentmemory.purge.redact_history`), removes its lexical index row, and appends
        the ``purged`` record naming ``reason`` and ``session``. Then the file is scrubbed: FTS5
        segments merged, ``VACUUM`` with ``secure_delete``, the WAL checkpointed and truncated
        (docs/storage.md#purge-and-the-files). A process killed during the transaction leaves
        the entry as it was; killed during the scrub, the next open finishes it
        (:attr:`recovery` says which).

        Raises:
            InvalidEntryError: ``scope`` or ``name`` not kebab-case, ``reason`` blank or over
                1024 bytes (field ``"reason"``); nothing is written.
            NotFoundError: the journal has no record of ``scope/name``.
            StoreLockedError: another writer held the file for over ``busy_timeout_s``.
        """
        check_purge(scope, name, reason)
        self.set_state(PURGE_STARTED_KEY, f"{os.getpid()} {scope}/{name}")
        try:
            receipt = self._purge_txn(scope, name, reason, session)
        except BaseException:
            with suppress(sqlite3.Error, AgentMemoryError):
                self._delete_state(PURGE_STARTED_KEY)
            raise
        return self._with_scrub(receipt)

    def _purge_txn(self, scope: str, name: str, reason: str, session: str | None) -> PurgeReceipt:
        with self._transaction() as conn:
            conn.execute("PRAGMA secure_delete = ON")
            records = [
                decode_change(line, seq=int(seq))
                for seq, line in conn.execute(
                    "SELECT seq, line FROM memory_journal WHERE scope = ? AND name = ?"
                    " ORDER BY seq",
                    (scope, name),
                ).fetchall()
            ]
            if not records:
                raise NotFoundError(scope, name)
            seq, last_at = self._tail(conn)
            now = self._now(last_at)
            stored = self._stored(conn, scope, name)
            tomb = None
            index_rows = self._lexicon_rows(conn, scope, name)
            if stored is not None:
                tomb = plan_forget(stored, seq=seq + 1, now=now, session=session)
                self._write(conn, tomb)
                records.append(tomb)
                seq += 1
            redacted = redact_history(records)
            for c in redacted:
                conn.execute(
                    "UPDATE memory_journal SET line = ? WHERE seq = ?", (encode_change(c), c.seq)
                )
            record = purge_record(
                scope,
                name,
                seq=seq + 1,
                now=now,
                reason=reason,
                redacted=[c.seq for c in redacted],
                session=session,
            )
            self._write(conn, record)
            conn.execute("DELETE FROM store_state WHERE key = ?", (PURGE_STARTED_KEY,))
            self._put_state(conn, PURGE_PENDING_KEY, f"{scope}/{name}")
        return PurgeReceipt(
            scope=scope,
            name=name,
            reason=reason,
            record=record.copy(),
            tombstone=None if tomb is None else tomb.copy(),
            redacted=tuple(c.seq for c in redacted),
            index_rows=index_rows,
        )

    @staticmethod
    def _lexicon_rows(conn: sqlite3.Connection, scope: str, name: str) -> int:
        row = conn.execute(
            "SELECT COUNT(*) FROM memory_lexical_docs WHERE scope = ? AND name = ?", (scope, name)
        ).fetchone()
        return int(row[0])

    def _with_scrub(self, receipt: PurgeReceipt) -> PurgeReceipt:
        done = self._scrub()
        return PurgeReceipt(
            scope=receipt.scope,
            name=receipt.name,
            reason=receipt.reason,
            record=receipt.record,
            tombstone=receipt.tombstone,
            redacted=receipt.redacted,
            index_rows=receipt.index_rows,
            vectors=receipt.vectors,
            rewritten=(*receipt.rewritten, done),
        )

    def _delete_state(self, key: str) -> None:
        with self._transaction() as conn:
            conn.execute("DELETE FROM store_state WHERE key = ?", (key,))

    def _scrub(self) -> str:
        """Remove freed copies from the file after a purge's transaction: merge the FTS5
        segments (a deleted row's terms stay in them until a merge), ``VACUUM`` with
        ``secure_delete`` on, checkpoint and truncate the WAL, then clear
        :data:`PURGE_PENDING_KEY` (kept when another connection stopped the checkpoint, so the
        next purge or open retries). Returns what was done, for the receipt."""
        with self._wlock:
            self._check_open()
            conn = self._writer
            conn.execute("PRAGMA secure_delete = ON")
            with self._transaction() as txn:
                txn.execute("INSERT INTO memory_lexical (memory_lexical) VALUES ('optimize')")
            try:
                conn.execute("VACUUM")
            except sqlite3.OperationalError as err:
                if _is_busy(err):
                    raise self._locked(err) from err
                raise
            busy = self._checkpoint()
            if busy:
                return (
                    f"{self._path.name}: vacuumed; the WAL was not truncated (another connection "
                    "is reading); the next purge or open retries"
                )
            self._delete_state(PURGE_PENDING_KEY)
            self._checkpoint()
            conn.execute("PRAGMA secure_delete = OFF")
        return f"{self._path.name}: FTS5 segments merged, vacuumed, WAL truncated"

    def _checkpoint(self) -> bool:
        """``PRAGMA wal_checkpoint(TRUNCATE)`` on the writer; ``True`` when it could not finish."""
        with self._rlock:
            row = self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return bool(row and row[0])

    def _recover_purge(self) -> None:
        """Finish or report a purge a killed process left (docs/storage.md#purge-and-the-files)."""
        pending = self.get_state(PURGE_PENDING_KEY)
        if pending is not None:
            self._scrub()
            self._recovery = (
                f"finished an interrupted purge of {pending}: its journal records were already "
                "redacted; the file was vacuumed and the WAL truncated now"
            )
        else:
            started = self.get_state(PURGE_STARTED_KEY)
            if started is None:
                return
            pid_text, _, key = started.partition(" ")
            if pid_text.isdigit() and _alive(int(pid_text)):
                return  # that purge is still running
            self._delete_state(PURGE_STARTED_KEY)
            self._recovery = (
                f"rolled back an interrupted purge of {key}: it never committed, nothing was "
                "purged; run the purge again"
            )
        logger.warning("agentmemory: store %s: %s", self._path, self._recovery)

    @property
    def recovery(self) -> str | None:
        """What opening this handle did about a purge a killed process left: ``"finished ..."``
        (the purge had committed; its scrub was completed), ``"rolled back ..."`` (it had not;
        nothing was purged), or ``None``."""
        return self._recovery

    def verify_erased(self, scope: str, name: str) -> ErasureCheck:
        """Check that no copy of the content ``scope/name`` held remains in this file.

        Looks at: the entry's journal records (each redacted, or a ``purged`` record), the
        live entries table, the lexical index's rows, a pending purge scrub, and the file's
        free pages (``PRAGMA freelist_count``: freed pages may keep old bytes). Returns an
        :class:`~agentmemory.purge.ErasureCheck`; ``found`` is empty when erased. An entry
        never purged reports its unredacted records.
        """
        check_scope(scope)
        looked = [
            f"journal records of {scope}/{name} in {self._path.name}",
            "live entries (memory_entries)",
            "lexical index (memory_lexical_docs)",
            "pending purge scrub (store_state)",
            f"free pages of {self._path.name} (freelist_count)",
        ]
        found: builtins.list[str] = []
        with self._read() as conn:
            rows = conn.execute(
                "SELECT seq, line FROM memory_journal WHERE scope = ? AND name = ? ORDER BY seq",
                (scope, name),
            ).fetchall()
            kept = []
            purged = False
            for seq, line in rows:
                c = decode_change(line, seq=int(seq))
                if c.source == SOURCE_PURGED:
                    purged = True
                elif not (c.redacted and c.entry.content == REDACTED and not c.entry.meta):
                    kept.append(int(seq))
            if kept:
                found.append(f"journal records {' '.join(map(str, kept))} keep their content")
            if rows and not purged:
                found.append("no purged record in the journal")
            if self._stored(conn, scope, name) is not None:
                found.append("a live entry")
            if self._lexicon_rows(conn, scope, name):
                found.append("a lexical index row")
            if conn.execute(
                "SELECT 1 FROM store_state WHERE key = ?", (PURGE_PENDING_KEY,)
            ).fetchone():
                found.append("a purge whose scrub has not finished")
            free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
            if free:
                found.append(f"{free} free pages that may hold old bytes (vacuum not run)")
        return ErasureCheck(scope, name, tuple(looked), tuple(found))

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
        return [_row_entry(scope, *r) for r in rows]

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
                    out[(scope, row[0])] = _row_entry(scope, *row)
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
            yield [_row_entry(*r) for r in rows]
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
        """Live entries matching ``query`` by :func:`agentmemory.matches` (every word a
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
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(
                f"store state key and value must be str, got {type(key).__name__} "
                f"and {type(value).__name__}"
            )
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
            self._lexicon.rebuild(conn, (_row_entry(*r) for r in rows))
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

    def check_journal(self) -> builtins.list[str]:
        """What is wrong with the journal's own tables (:data:`JOURNAL_TABLES`), one line each;
        ``[]`` when each reads whole.

        Reads every row and every value of each table by its own b-tree (never an index), so a
        page lost or garbled anywhere in them is met: ``memory_journal`` in ``seq`` order, saying
        how many records were read before the damage (``"memory_journal: database disk image is
        malformed after 260 records (seq 260)"``). The indexes and the lexical tables are
        derived from these and not read here (docs/storage.md#a-cut-journal-file). Changes
        nothing; reads the whole journal (0.3 s at 100k entries and records here, load 2).
        """
        problems: builtins.list[str] = []
        with self._rlock:
            self._check_open()
            conn = self._reader
            for table in JOURNAL_TABLES:
                if table == "memory_journal":
                    continue  # read below, in seq order
                try:
                    columns = " + ".join(f"length({c})" for c in self._table_columns(conn, table))
                    conn.execute(f"SELECT total({columns or 0}) FROM {table}").fetchall()
                except sqlite3.DatabaseError as err:
                    problems.append(f"{table}: {err}")
            read, last = 0, 0
            try:
                rows = conn.execute(
                    "SELECT seq, length(scope) + length(name) + length(line) FROM memory_journal"
                    " ORDER BY seq"
                )
                for seq, _ in rows:
                    read, last = read + 1, int(seq)
            except sqlite3.DatabaseError as err:
                problems.append(f"memory_journal: {err} after {read} records (seq {last})")
        return problems

    def _record_cut(self, note: str) -> None:
        """After :meth:`_restore_cut_length`: record the cut under :data:`JOURNAL_CUT_KEY`, mark
        the lexical index damaged (its lost pages cannot be told from the journal's without
        reading them, and it is rebuilt from the journal in any case), and log one line with
        the cure: ``verify --repair`` when the journal's tables read whole, a backup when not."""
        folder = self._path.parent
        problems = self.check_journal()
        found = note
        if problems:
            found += f"; the journal's own tables lost pages too ({'; '.join(problems)})"
        self._cut_found = found
        try:
            with self._transaction() as conn:
                self._put_state(conn, JOURNAL_CUT_KEY, found)
                self._put_state(conn, LEXICAL_DAMAGE_KEY, note)
        except AgentMemoryError as err:
            problems.append(f"recording the cut failed ({err})")
        if problems:
            logger.warning(
                "agentmemory: store %s: %s; the journal's own tables lost pages too (%s): "
                "copy the folder aside, run 'agentmemory verify' on the copy to see what is "
                "left, or restore the folder from a backup",
                folder,
                note,
                "; ".join(problems),
            )
        else:
            logger.warning(
                "agentmemory: store %s: %s; the journal's tables read whole, the lexical index "
                "is rebuilt from them by 'agentmemory verify --repair --path %s'",
                folder,
                note,
                folder,
            )

    @staticmethod
    def _quick_check(conn: sqlite3.Connection, rows: int) -> builtins.list[str]:
        """``PRAGMA quick_check(rows)``'s lines; ``["ok"]`` when the file is sound. sqlite may
        raise instead of (or after) lines (a page it cannot read): the error is then the last
        line."""
        found: builtins.list[str] = []
        try:
            for (line,) in conn.execute(f"PRAGMA quick_check({int(rows)})"):
                found.append(str(line))
        except sqlite3.DatabaseError as err:
            found.append(str(err))
        return found

    def check_lexical(self) -> builtins.list[str]:
        """What is wrong with the lexical index, one line each; ``[]`` when it is sound.

        First reads the journal's own tables (:meth:`check_journal`): the lexical index is
        rebuilt from them, so when they are damaged no verdict on it helps. Then runs sqlite's
        ``PRAGMA quick_check`` on the file and FTS5's ``integrity-check`` command on the index,
        compares the indexed count with the live entries and each term's document frequency
        (``memory_lexical_df``) with FTS5's own count, and reports a damage a write or an open
        recorded (``docs/storage.md#a-damaged-lexical-index``). Reads the whole file (2.2 s at
        100k entries here under load 4, 0.5 s of it the document frequencies). Changes nothing.

        Raises:
            StoreIOError: ``kind`` ``"damaged"``: a table of the journal's own cannot be read
                (the message names it and the cure: a backup).
        """
        journal = self.check_journal()
        if journal:
            raise self._journal_damaged(journal)
        problems: builtins.list[str] = []
        cut = self.get_state(JOURNAL_CUT_KEY)
        damaged = self.get_state(LEXICAL_DAMAGE_KEY)
        if cut is not None:
            problems.append(cut)
        if damaged is not None and damaged != cut:
            problems.append(f"a write found the lexical index damaged ({damaged})")
        with self._read() as conn:
            rows = self._quick_check(conn, 5)
            if rows != ["ok"]:
                problems.append("sqlite quick_check: " + "; ".join(rows))
            try:
                conn.execute(
                    "INSERT INTO memory_lexical (memory_lexical, rank) VALUES ('integrity-check', 1)"
                )
            except sqlite3.DatabaseError as err:
                problems.append(f"FTS5 integrity-check: {err}")
            try:
                (docs,) = conn.execute("SELECT count(*) FROM memory_lexical_docs").fetchone()
                (live,) = conn.execute("SELECT count(*) FROM memory_entries").fetchone()
                if docs != live:
                    problems.append(f"the index holds {docs} entries, the store {live}")
            except sqlite3.DatabaseError as err:
                problems.append(f"counting the indexed entries: {err}")
            try:
                problems.extend(doc_freq_problems(conn))
            except sqlite3.DatabaseError as err:
                problems.append(f"comparing the document frequencies with the index: {err}")
        return problems

    def _journal_damaged(self, problems: Sequence[str]) -> StoreIOError:
        """The one-line :class:`StoreIOError` ``"damaged"`` for :meth:`check_journal`'s lines,
        led by the cut an open recorded, if any."""
        cut = None
        with suppress(AgentMemoryError):
            cut = self.get_state(JOURNAL_CUT_KEY)
        detail = "; ".join([*([cut] if cut else []), *problems])
        return StoreIOError(str(self._path.parent), "damaged", detail)

    def rebuild_lexical(self) -> int:
        """Drop the lexical index (derived data) and rebuild it from the live entries; returns
        how many were indexed. Clears a recorded damage.

        When the index's tables cannot be dropped (their pages are damaged), their schema rows
        are removed (``PRAGMA writable_schema``) and the file is rebuilt by ``VACUUM``, which
        copies only the tables still named and builds every index anew from its table, so no
        damaged page survives; so it is too when ``quick_check`` still finds damage after the
        drop (a page of an index, a cut file) (``docs/storage.md#a-damaged-lexical-index``).
        A cut recorded at open is cleared once the file checks sound. Blocks other writers
        meanwhile.

        Raises:
            StoreLockedError: another writer held the file past the busy timeout.
            StoreIOError: ``kind`` ``"damaged"``: a table of the journal's own cannot be read
                (:meth:`check_journal`); nothing is changed, the cure is a backup.
            IndexDamagedError: ``VACUUM`` failed on what is left.
        """
        journal = self.check_journal()
        if journal:
            raise self._journal_damaged(journal)
        tables = (*FTS5_TABLES, *DOC_FREQ_TABLES)
        with self._wlock:
            try:
                with self._transaction() as conn:
                    for t in tables:
                        conn.execute(f"DROP TABLE IF EXISTS {t}")
            except StoreIOError as err:
                if err.kind != "damaged":
                    raise
                self._drop_by_schema()
            else:
                with self._rlock:
                    sound = self._quick_check(self._writer, 1) == ["ok"]
                if not sound:
                    self._vacuum()
            with self._transaction() as conn:
                create_tables(conn)
                create_doc_freq_table(conn)
                rows = conn.execute(
                    "SELECT scope, name, content, meta, hash, updated FROM memory_entries"
                ).fetchall()
                n = self._lexicon.rebuild(conn, (_row_entry(*r) for r in rows))
                conn.execute(
                    "INSERT INTO store_state (key, value) VALUES (?, ?)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (TOKENIZER_STATE_KEY, self._lexicon.tokenizer.version),
                )
                conn.execute("DELETE FROM store_state WHERE key = ?", (LEXICAL_DAMAGE_KEY,))
                if self._quick_check(conn, 1) == ["ok"]:
                    conn.execute("DELETE FROM store_state WHERE key = ?", (JOURNAL_CUT_KEY,))
        return n

    def _drop_by_schema(self) -> None:
        """Remove the lexical tables' schema rows and ``VACUUM`` the damaged pages away."""
        conn = self._writer
        names = [
            "memory_lexical",
            *(f"memory_lexical_{s}" for s in ("data", "idx", "content", "docsize", "config")),
            "memory_lexical_docs",
            *DOC_FREQ_TABLES,
        ]
        marks = ", ".join("?" * len(names))
        conn.execute("PRAGMA writable_schema = ON")
        try:
            with self._transaction() as txn:
                txn.execute(
                    f"DELETE FROM sqlite_master WHERE name IN ({marks}) OR tbl_name IN ({marks})",
                    (*names, *names),
                )
        finally:
            conn.execute("PRAGMA writable_schema = OFF")
        self._vacuum()

    def _vacuum(self) -> None:
        """``VACUUM`` the file: every table still named is copied and every index built anew
        from its table, so no damaged page of an index or a dropped table survives."""
        conn = self._writer
        with self._rlock:  # VACUUM needs no other statement open on this file from us
            try:
                conn.execute("VACUUM")
            except sqlite3.DatabaseError as err:
                raise IndexDamagedError(
                    str(self._path.parent), "lexical", f"VACUUM failed: {err}"
                ) from err

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
                    f" WHERE scope = ? AND {_SUPERSEDES} IS NOT NULL",
                    (scope,),
                ).fetchall()
                found = [_row_entry(scope, *r) for r in rows]
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
                    f" WHERE {_SESSION.replace('(line', '(j.line')} = ? AND j.scope = ?"
                    " AND j.seq = (SELECT MAX(k.seq) FROM memory_journal AS k"
                    " WHERE k.scope = j.scope AND k.name = j.name)",
                    (session_id, scope),
                ).fetchall()
                for name, hash_ in rows:
                    found[(scope, str(name))] = str(hash_)
        return found, unknown

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
        (``mode`` ``"auto"`` or ``"bm25"``; an SqliteStore keeps no vectors). Each hit's
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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteStore({str(self._path)!r}, max_entry_bytes={self._limit})"
