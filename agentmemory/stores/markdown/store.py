"""FileStore: memory a person can open, edit, diff and commit — a folder of Markdown files.

The folder (docs/filestore-format.md#layout)::

    memory/
      journal.jsonl          every change, one JSON record a line (append only)
      .state.json            the cursor: how far the journal was read, the state it left (derived)
      .lock                  present while a writer holds the folder, naming it
      user/
        INDEX.md             the scope's live entries, one line each (derived)
        style.md             one entry: a frontmatter block, then the content byte for byte

Writes are serialised by the ``.lock`` file (:mod:`agentmemory.stores.markdown.lock_file`) across processes and
by a mutex across the threads of one process; reads take no lock (every file is replaced by an
atomic rename, so a reader sees the old file or the new one). The order of a write, under the
lock: read the entry file; check the bound and the precondition (a refusal writes nothing); journal
what a person changed by hand first (a ``"reconciled"`` record); write the entry file; rewrite the
scope's INDEX.md; append the record; save the cursor.

A person may edit, add and remove entry files at any time. :meth:`FileStore.reconcile` journals
every such change as a ``source="reconciled"`` record with no session, and every write journals
the changes made anywhere in the folder first (opening only the files whose ``stat`` changed since
the handle last looked), so the journal never loses a state and search sees a hand edit after the
next write (docs/filestore-format.md#a-persons-edit-is-journaled-first).
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import logging
import os
import secrets
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Self

from agentmemory.entries import SOURCE_PURGED, SOURCE_RECONCILED, Change, Entry
from agentmemory.errors import (
    AgentMemoryError,
    IndexWriteError,
    NotFoundError,
    RecallModeError,
    StoreLockedError,
)
from agentmemory.purge import (
    ErasureCheck,
    PurgeReceipt,
    check_purge,
    history_copies,
    purge_record,
    redact_history,
)
from agentmemory.rules import DEFAULT_MAX_ENTRY_BYTES, check_entry, check_scope, valid_name
from agentmemory.store import RECALL_MODES, plan_forget, plan_put, recall_entries, search_entries
from agentmemory.stores.mem import utc_now
from agentmemory.wire import format_time, parse_time
from recallers import DEFAULT_TOKENIZER, BM25Index, BM25Recaller, Hit, Tokenizer, VectorRecaller

from .atomic_write import TEMP_PREFIX, fsync_dir, remove_durably, write_atomic, write_synced
from .entry_file import (
    ENTRY_SUFFIX,
    INDEX_NAME,
    meta_hash,
    mtime_time,
    parse_entry_file,
    render_entry_file,
    render_index,
)
from .journal_file import (
    JOURNAL_NAME,
    STATE_NAME,
    Cursor,
    DamagedLine,
    append_records,
    find_last_record,
    journal_head,
    scan_journal,
)
from .journal_rewrite import PURGE_MARKER, PurgeMarker, copy_finder, rewrite_journal
from .lock_file import DEFAULT_LOCK_TIMEOUT_S, LockFile, LockHolder, break_lock, read_holder

if TYPE_CHECKING:
    import numpy.typing as npt

    from embedders import Embedder


__all__ = ["FileStore", "Reconciliation", "UnjournaledFile"]

log = logging.getLogger(__name__)

SQLITE_JOURNAL = "journal.sqlite3"
"""The journal file of a sqlite store folder (:data:`agentmemory.stores.chroma.store.JOURNAL_FILE`,
named here so this module does not import Chroma's); a folder holding one is not a Markdown
folder."""

_MUTEXES: dict[str, threading.Lock] = {}
_MUTEXES_GUARD = threading.Lock()


def _folder_mutex(root: Path) -> threading.Lock:
    """The one mutex every handle of this process on ``root`` shares."""
    key = os.path.realpath(root)
    with _MUTEXES_GUARD:
        m = _MUTEXES.get(key)
        if m is None:
            m = _MUTEXES[key] = threading.Lock()
        return m


@dataclass(frozen=True, slots=True)
class UnjournaledFile:
    """An entry file the store cannot journal, left as it is.

    Attributes:
        path: the file.
        key: its entry, ``"scope/name"``.
        reason: why (the :func:`agentmemory.check_entry` message: empty, over the bound, bad meta,
            not UTF-8).
    """

    path: Path
    key: str
    reason: str


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """What :meth:`FileStore.reconcile` did.

    Attributes:
        changes: the ``"reconciled"`` records it appended, in ``scope/name`` byte order.
        unjournaled: entry files it could not journal and left alone, by ``scope/name``.
        damaged: damaged journal lines it read past (from the cursor on).
    """

    changes: list[Change]
    unjournaled: list[UnjournaledFile]
    damaged: list[DamagedLine]


_FileStat = tuple[int, int, int, int]
"""What a sweep compares of an entry file: ``(st_ino, st_size, st_mtime_ns, st_ctime_ns)``."""


def _differs(found: Entry, journaled: tuple[str, str] | None) -> bool:
    """Whether the file's content or meta is not the state the journal left."""
    return journaled is None or journaled != (found.hash, meta_hash(found.meta))


class FileStore:
    """A :class:`~agentmemory.Store` in a folder of Markdown files with a journal beside them.

    Safe for several threads and several processes (on one host, or on a file system with
    working hard links and ``O_APPEND``); readers never wait.

    Args:
        path: the folder; created, with its parents, when missing.
        max_entry_bytes: the content bound in UTF-8 bytes (default 4096), a property of the
            handle; must be positive.
        lock_timeout_s: how long a write waits for another writer, in seconds (default 2).
        clock: returns the time stamped on writes (aware UTC); times have microsecond precision
            and never go backwards along the journal (a clock behind the last record is clamped).
        tokenizer: the terms the in-memory BM25 index of :meth:`recall` uses.
        embedder: when given, a vector index is kept beside the files (Chroma, under
            ``.vectors/``, following the journal; :mod:`agentmemory.stores.markdown.vectors`) and
            :meth:`recall` is hybrid (BM25 + vectors, reciprocal rank fusion). Without one,
            recall is BM25 only.
        reindex: drop the vector index and make every vector again with ``embedder`` (to
            switch embedders).

    Raises:
        ValueError: ``max_entry_bytes`` under 1 or ``lock_timeout_s`` negative.
        OSError: the folder cannot be created.
        AgentMemoryError: the folder holds a sqlite store (``journal.sqlite3`` and no
            ``journal.jsonl``); nothing is written.
        StoreLockedError: (with ``embedder``) another process owns the vector index.
        EmbedderMismatchError: (with ``embedder``) the index was built with another embedder;
            open with that one, or with ``reindex=True``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
        lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
        clock: Callable[[], datetime] = utc_now,
        tokenizer: Tokenizer = DEFAULT_TOKENIZER,
        embedder: Embedder | None = None,
        reindex: bool = False,
    ) -> None:
        if max_entry_bytes < 1:
            raise ValueError(f"max_entry_bytes is {max_entry_bytes}; it must be at least 1")
        if lock_timeout_s < 0:
            raise ValueError(f"lock_timeout_s is {lock_timeout_s}; it must be 0 or more seconds")
        self._root = Path(path)
        if (self._root / SQLITE_JOURNAL).exists() and not (self._root / JOURNAL_NAME).exists():
            raise AgentMemoryError(
                f"agentmemory: {self._root} holds a sqlite store ({SQLITE_JOURNAL}); a Markdown "
                "folder needs a folder of its own: give a new folder (export_markdown(store, "
                "DIR) or 'agentmemory export --format markdown DIR' copies the entries there)"
            )
        self._root.mkdir(parents=True, exist_ok=True)
        self._limit = max_entry_bytes
        self._lock_timeout_s = float(lock_timeout_s)
        self._clock = clock
        self._mutex = _folder_mutex(self._root)
        self._cursor: Cursor | None = None
        self._closed = False
        self._lexicon: BM25Index[Entry] = BM25Index(tokenizer=tokenizer)
        self._lexicon_off: int | None = None  # journal offset the index has followed to
        self._lexicon_lock = threading.Lock()
        self._damage_seen: list[DamagedLine] = []
        self._index_cache: dict[str, dict[str, str]] = {}  # scope -> name -> description
        self._index_written: dict[str, bytes] = {}  # scope -> the INDEX.md bytes last written
        self._vectors: FolderVectors | None = None
        self._cursor_moved = False
        self._recovery: str | None = None
        # entry files (scope/name -> _FileStat) the journal agreed with at this handle's last
        # sweep or reconcile; None until then, when the first write looks at every file
        self._seen: dict[str, _FileStat] | None = None
        if (self._root / PURGE_MARKER).exists():
            try:  # finish or roll back a killed process's purge
                with self._writing() as cur:
                    self._save_cursor(cur)
            except (StoreLockedError, OSError) as err:  # a live purge, or a read-only folder
                log.warning("agentmemory: store %s: purge left unsettled: %s", self._root, err)
        if embedder is not None:
            from .vectors import FolderVectors

            self._vectors = FolderVectors(
                self._root, embedder, lock_timeout_s=self._lock_timeout_s, reindex=reindex
            )

    # -- properties --------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The folder."""
        return self._root

    @property
    def max_entry_bytes(self) -> int:
        """The content bound in UTF-8 bytes."""
        return self._limit

    @property
    def journal_path(self) -> Path:
        """``<folder>/journal.jsonl``."""
        return self._root / JOURNAL_NAME

    @property
    def state_path(self) -> Path:
        """``<folder>/.state.json``."""
        return self._root / STATE_NAME

    def entry_path(self, scope: str, name: str) -> Path:
        """``<folder>/<scope>/<name>.md`` (it need not exist).

        Raises :class:`~agentmemory.InvalidEntryError` when ``scope`` or ``name`` is not
        kebab-case (so no path outside the folder can be named).
        """
        check_scope(scope)
        check_scope(name, what="name")
        return self._root / scope / f"{name}{ENTRY_SUFFIX}"

    # -- reading files (no lock) ---------------------------------------------------------------

    def _read_file(self, scope: str, name: str) -> Entry | None:
        found = self._read_entry(scope, name)
        return None if found is None else found[0]

    def _read_entry(self, scope: str, name: str) -> tuple[Entry, _FileStat] | None:
        """The entry file ``scope/name`` and its :data:`_FileStat`, taken before the bytes are
        read (so a change made while reading shows as a change at the next look); ``None``
        when there is no such file."""
        path = self._root / scope / f"{name}{ENTRY_SUFFIX}"
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                data = f.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        seen = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        return parse_entry_file(scope, name, data, st.st_mtime_ns), seen

    def _scopes(self) -> builtins.list[str]:
        try:
            items = list(os.scandir(self._root))
        except FileNotFoundError:
            return []
        return sorted(d.name for d in items if valid_name(d.name) and d.is_dir())

    def _names(self, scope: str) -> builtins.list[str]:
        try:
            items = list(os.scandir(self._root / scope))
        except (FileNotFoundError, NotADirectoryError):
            return []
        names = []
        for d in items:
            stem = d.name[: -len(ENTRY_SUFFIX)] if d.name.endswith(ENTRY_SUFFIX) else ""
            if valid_name(stem) and d.is_file():
                names.append(stem)
        return sorted(names)

    def _read_scope(
        self, scope: str, seen: dict[str, _FileStat] | None = None
    ) -> builtins.list[Entry]:
        """The entry files of ``scope`` by name; each one's :data:`_FileStat` goes into
        ``seen`` (by ``scope/name``) when given."""
        out = []
        for name in self._names(scope):
            found = self._read_entry(scope, name)
            if found is not None:  # removed between the listing and the read
                out.append(found[0])
                if seen is not None:
                    seen[f"{scope}/{name}"] = found[1]
        return out

    def get(self, scope: str, name: str) -> Entry:
        """The entry file ``scope/name`` as it is now (a person's edit included).

        Raises :class:`~agentmemory.NotFoundError` when there is no such file (or the scope or
        name is not kebab-case, so no such file can be the store's).
        """
        self._check_open()
        e = self._read_file(scope, name) if valid_name(scope) and valid_name(name) else None
        if e is None:
            raise NotFoundError(scope, name)
        return e

    def list(self, scope: str) -> builtins.list[Entry]:
        """The entries of ``scope`` by name (byte order), read from their files; ``[]`` for a
        scope with no folder (or one that is not kebab-case)."""
        self._check_open()
        if not valid_name(scope):
            return []
        return self._read_scope(scope)

    def search(self, scopes: Sequence[str], query: str, limit: int = 0) -> builtins.list[Entry]:
        """Entries matching ``query`` by :func:`agentmemory.matches`, scopes in the order given
        and entries by name, at most ``limit`` when ``limit > 0``.

        Raises :class:`~agentmemory.InvalidEntryError` for a scope that is not kebab-case.
        """
        return search_entries(self, scopes, query, limit)

    # -- the journal ---------------------------------------------------------------------------

    def journal(self, after: int = 0) -> Iterator[Change]:
        """Yield every record with ``seq > after`` in journal order (``seq`` increasing).

        A damaged line (not a record: a torn write that a later append terminated, or a line
        someone broke) is skipped and logged as a warning on the ``agentmemory.stores.markdown.store``
        logger; :meth:`damaged_lines` lists them. A last line without ``\\n`` is not read.
        """
        self._check_open()
        for _, _, item in scan_journal(self.journal_path):
            if isinstance(item, DamagedLine):
                log.warning("%s: damaged journal line skipped: %s", self._root, item.describe())
            elif item.seq > after:
                yield item

    def damaged_lines(self) -> builtins.list[DamagedLine]:
        """Every complete journal line that is not a record, in file order (reads the whole
        journal)."""
        return [i for _, _, i in scan_journal(self.journal_path) if isinstance(i, DamagedLine)]

    def last_seq(self) -> int:
        """The ``seq`` of the journal's last whole record (0 when there is none)."""
        last = find_last_record(self.journal_path)
        return 0 if last is None else last.seq

    # -- the lock --------------------------------------------------------------------------------

    def lock_holder(self) -> LockHolder | None:
        """Who holds the folder's ``.lock`` now, or ``None`` when nobody (or nobody named)."""
        return read_holder(self._root)

    def break_lock(self) -> builtins.list[str]:
        """Remove ``.lock`` and any unfinished takeover claim; return the file names removed.

        Only for when no writer runs (a writer on another host died, or a takeover was cut
        short): breaking a live writer's lock lets two writers in.
        """
        return break_lock(self._root)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[Cursor]:
        """Hold the mutex and ``.lock``, and yield the cursor brought up to the journal's end."""
        self._check_open()
        if not self._mutex.acquire(timeout=self._lock_timeout_s):
            raise StoreLockedError(
                str(self._root),
                f"another thread of this process (pid {os.getpid()})",
                f"waited {self._lock_timeout_s:g} s; retry later",
            )
        try:
            lock = LockFile(self._root, timeout_s=self._lock_timeout_s)
            lock.acquire()
            try:
                if os.path.lexists(self._root / PURGE_MARKER):
                    self._settle_purge()
                yield self._load_cursor()
            finally:
                lock.release()
        finally:
            self._mutex.release()

    def _load_cursor(self) -> Cursor:
        """The cursor at the journal's end: this handle's, else ``.state.json``'s, checked
        against the journal (its head line, its length) and caught up by reading only what
        follows ``off``; rebuilt from the whole journal when none fits."""
        self._damage_seen = []
        self._cursor_moved = False
        head = journal_head(self.journal_path)
        try:
            size = self.journal_path.stat().st_size
        except FileNotFoundError:
            size = 0
        cur = self._cursor
        if cur is not None and not self.state_path.exists():
            self._cursor_moved = True  # deleted: write it again even when nothing else moves
        if cur is None or not self._fits(cur, head, size):
            cur = None
            with contextlib.suppress(OSError, ValueError):
                saved = Cursor.decode(self.state_path.read_bytes())
                if self._fits(saved, head, size):
                    cur = saved
        if cur is None:
            cur = Cursor(head=head)
            self._cursor_moved = True
        if cur.off < size:
            for _, end, item in scan_journal(self.journal_path, cur.off):
                if isinstance(item, DamagedLine):
                    self._damage_seen.append(item)
                    log.warning("%s: damaged journal line skipped: %s", self._root, item.describe())
                    cur.off = end
                else:
                    cur.apply(item, end)
                    self._note(item.entry)
                self._cursor_moved = True
        cur.head = head
        if cur.last_at is None and cur.seq:
            last = find_last_record(self.journal_path)
            cur.last_at = last.at if last is not None else None
        self._cursor = cur
        return cur

    def _fits(self, cur: Cursor, head: str, size: int) -> bool:
        if cur.off > size or (cur.off > 0 and cur.head != head):
            return False
        if cur.off == 0:
            return True
        try:
            with open(self.journal_path, "rb") as f:
                f.seek(cur.off - 1)
                return f.read(1) == b"\n"
        except OSError:
            return False

    def _save_cursor(self, cur: Cursor) -> None:
        if cur.off == 0 and not self.journal_path.exists():
            return
        write_atomic(self.state_path, cur.encode(), sync=False)

    def _now(self, cur: Cursor) -> datetime:
        now = parse_time(format_time(self._clock()))
        if cur.last_at is not None and now < cur.last_at:
            return cur.last_at
        return now

    # -- writes ----------------------------------------------------------------------------------

    def _journalable(self, found: Entry) -> str:
        """``""`` when ``found`` can be journaled, else why not."""
        try:
            check_entry(found, self._limit)
        except AgentMemoryError as err:
            return str(err)
        return ""

    def _reconciled(self, found: Entry, chain: str, seq: int, now: datetime) -> Change:
        path = self._root / found.scope / f"{found.name}{ENTRY_SUFFIX}"
        try:
            mtime = mtime_time(path.stat().st_mtime_ns)
        except OSError:
            mtime = now
        entry = found.copy(updated=mtime, deleted=False)
        return Change(
            seq=seq, entry=entry, prev=chain, replaced=chain, source=SOURCE_RECONCILED, at=now
        )

    def _removed(self, key: str, chain: str, seq: int, now: datetime, cur: Cursor) -> Change | None:
        """The reconciled tombstone of an entry whose file a person removed: its last whole
        record, deleted; ``None`` when the journal holds no whole record of it."""
        last = find_last_record(self.journal_path, before=cur.off, key=key)
        if last is None:
            return None
        tomb = last.entry.copy(updated=now, deleted=True)
        return Change(
            seq=seq, entry=tomb, prev=chain, replaced=chain, source=SOURCE_RECONCILED, at=now
        )

    def _commit(
        self,
        cur: Cursor,
        changes: builtins.list[Change],
        scopes: set[str],
        file_ops: Callable[[], None] | None = None,
    ) -> None:
        """Run ``file_ops`` (entry files), rewrite the INDEX.md of ``scopes``, append ``changes``
        in one write, advance and save the cursor, and keep the BM25 index current."""
        if file_ops is not None:
            file_ops()
        for c in changes:
            self._note(c.entry)
        for scope in sorted(scopes):
            self._write_index(scope)
        start = cur.off
        if changes:
            end = append_records(self.journal_path, changes)
            for c in changes:
                cur.apply(c, end)
            cur.head = journal_head(self.journal_path)
        if changes or self._cursor_moved:
            self._save_cursor(cur)
        self._follow(changes, start, cur.off)

    def _note(self, entry: Entry) -> None:
        """Keep the INDEX.md cache in step with one journaled state of an entry."""
        cached = self._index_cache.get(entry.scope)
        if cached is None:
            return
        if entry.deleted:
            cached.pop(entry.name, None)
        else:
            cached[entry.name] = entry.description

    def _write_index(self, scope: str) -> None:
        """Rewrite ``<scope>/INDEX.md``: the entry files the scope's folder lists now, with the
        descriptions this handle knows (read from the files on first use, then kept by the
        journal records it writes or reads, and by :meth:`reconcile`); a file it has not seen
        is read. So a write costs one folder listing, not one read per entry; a description a
        person changed in place shows once it is journaled."""
        folder = self._root / scope
        try:
            items = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return
        known = self._index_cache.setdefault(scope, {})
        seen: dict[str, str] = {}
        for d in items:
            stem = d.name[: -len(ENTRY_SUFFIX)] if d.name.endswith(ENTRY_SUFFIX) else ""
            description = known.get(stem)  # a known name is a valid one
            if description is None and not valid_name(stem):
                continue
            if not d.is_file():
                continue
            if description is None:
                e = self._read_file(scope, stem)
                if e is None:
                    continue
                description = e.description
            seen[stem] = description
        self._index_cache[scope] = seen
        data = render_index(scope, seen.items())
        index = folder / INDEX_NAME
        if self._index_written.get(scope) == data and index.exists():
            return  # nothing it lists changed
        write_atomic(index, data, sync=False)
        self._index_written[scope] = data

    def _plan(
        self,
        cur: Cursor,
        entry: Entry,
        found: Entry | None,
        journaled: tuple[str, str] | None,
        seq: int,
        now: datetime,
        *,
        if_hash: str | None = None,
        based_on: str | None = None,
        session: str | None = None,
    ) -> builtins.list[Change]:
        """The records a put of ``entry`` appends, numbered from ``seq``: a reconciled record of
        a person's change to the file first when there is one, then the put's own record.
        ``found`` is the entry file as it is (``None``: no file), ``journaled`` the state the
        journal left (``None``: not live). Raises what :func:`agentmemory.store.plan_put`
        raises; nothing is written here."""
        key = entry.key
        chain = journaled[0] if journaled else ""
        pre: builtins.list[Change] = []
        unjournalable = False
        if found is None and journaled is not None:
            gone = self._removed(key, chain, seq, now, cur)
            if gone is not None:
                pre.append(gone)
        elif found is not None and _differs(found, journaled):
            if self._journalable(found):
                unjournalable = True
            else:
                pre.append(self._reconciled(found, chain, seq, now))
        change = plan_put(
            entry,
            found,
            limit=self._limit,
            seq=seq + len(pre),
            now=now,
            if_hash=if_hash,
            based_on=based_on,
            session=session,
        )
        if pre:
            chain = "" if pre[-1].entry.deleted else pre[-1].entry.hash
        prev = change.prev
        if unjournalable and found is not None and prev == found.hash:
            prev = chain
        return [*pre, dataclasses.replace(change, prev=prev, replaced=chain)]

    def _write_files(self, written: dict[tuple[str, str], Entry]) -> None:
        for (scope, name), e in written.items():
            folder = self._root / scope
            folder.mkdir(exist_ok=True)
            write_atomic(folder / f"{name}{ENTRY_SUFFIX}", render_entry_file(e))

    def put(
        self,
        entry: Entry,
        *,
        if_hash: str | None = None,
        based_on: str | None = None,
        session: str | None = None,
    ) -> Change:
        """Create or replace the whole entry file and return the journal record it appended.

        See :meth:`agentmemory.Store.put` for the rule. The stored entry is the file as it is
        now: when a person edited it (or created it, or removed it) since the journal last
        recorded it, a ``"reconciled"`` record of the person's version is appended first, and
        this write's ``replaced`` is that version's hash; what a person changed in the other
        entry files is journaled first too, in ``scope/name`` order, as :meth:`reconcile` would
        (docs/filestore-format.md#a-persons-edit-is-journaled-first). A file the store cannot
        journal (empty, over the bound, bad meta) is not journaled: the chain keeps the
        journal's last state, and a write anchored in that file records the journal's last
        state as ``prev``.

        Raises:
            InvalidEntryError: the entry breaks a rule of :func:`agentmemory.check_entry`
                (checked before the lock is taken).
            EntryTooLargeError: content over ``max_entry_bytes``.
            ConflictError: ``if_hash`` is not the file's hash (``""``: there must be no file).
            StoreLockedError: another writer held the folder for over ``lock_timeout_s``.
        A refused put writes nothing.
        """
        check_entry(entry)
        with self._writing() as cur:
            now = self._now(cur)
            swept, seen, after = self._sweep(cur, now)
            records = self._plan(
                cur,
                entry,
                self._read_file(entry.scope, entry.name),
                after[entry.key] if entry.key in after else cur.entries.get(entry.key),
                cur.seq + 1 + len(swept),
                now,
                if_hash=if_hash,
                based_on=based_on,
                session=session,
            )
            change = records[-1]
            written = {(entry.scope, entry.name): change.entry}
            records = [*swept, *records]
            scopes = {entry.scope} | {c.entry.scope for c in swept}
            self._commit(cur, records, scopes, lambda: self._write_files(written))
            self._seen = seen
        self._index_vectors(records)
        return change.copy()

    def put_many(
        self, entries: Iterable[Entry], *, session: str | None = None
    ) -> builtins.list[Change]:
        """Put every entry unconditionally under ONE lock, for bulk import; return their records
        in the order given (with any reconciled records of a person's change in between, as
        :meth:`put` writes them, not returned).

        Every entry is checked (rules, then the bound against the file or the batch's earlier
        entry of that name) before anything is written. The entry files are written, each
        touched scope's INDEX.md once, and the records appended in one write. An empty
        iterable writes nothing.

        Raises:
            InvalidEntryError, EntryTooLargeError: the first entry that breaks a rule; nothing is
                written.
            StoreLockedError: another writer held the folder for over ``lock_timeout_s``.
        """
        batch = builtins.list(entries)
        for e in batch:
            check_entry(e)
        if not batch:
            return []
        with self._writing() as cur:
            now = self._now(cur)
            records, seen, after = self._sweep(cur, now)
            seq = cur.seq + 1 + len(records)
            files: dict[tuple[str, str], Entry | None] = {}
            states: dict[tuple[str, str], tuple[str, str] | None] = {}
            own: builtins.list[Change] = []
            for e in batch:
                k = (e.scope, e.name)
                if k not in files:
                    files[k] = self._read_file(e.scope, e.name)
                    states[k] = after[e.key] if e.key in after else cur.entries.get(e.key)
                planned = self._plan(cur, e, files[k], states[k], seq, now, session=session)
                records.extend(planned)
                own.append(planned[-1])
                seq += len(planned)
                files[k] = planned[-1].entry
                states[k] = (planned[-1].entry.hash, meta_hash(planned[-1].entry.meta))
            written = {k: f for k, f in files.items() if f is not None}
            scopes = {scope for scope, _ in written} | {c.entry.scope for c in records}
            self._commit(cur, records, scopes, lambda: self._write_files(written))
            self._seen = seen
        self._index_vectors(records)
        return [c.copy() for c in own]

    def scopes(self) -> builtins.list[str]:
        """The scopes with a folder (kebab-case names only), sorted."""
        self._check_open()
        return self._scopes()

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
        """Remove the entry file and append a tombstone (the last content and meta,
        ``deleted=True``); return the tombstone.

        A person's edit is journaled first, as for :meth:`put`; for a file the store cannot
        journal, the tombstone carries the journal's last record of the entry, or the file's
        content when the journal has none.

        Raises:
            NotFoundError: there is no entry file ``scope/name``; nothing is written.
            StoreLockedError: another writer held the folder for over ``lock_timeout_s``.
        """
        if not (valid_name(scope) and valid_name(name)):
            raise NotFoundError(scope, name)
        with self._writing() as cur:
            found = self._read_file(scope, name)
            if found is None:
                raise NotFoundError(scope, name)
            now = self._now(cur)
            swept, seen, after = self._sweep(cur, now)
            key = found.key
            journaled = after[key] if key in after else cur.entries.get(key)
            own = self._forget_records(
                cur, found, journaled, cur.seq + 1 + len(swept), now, session
            )
            path = self._root / scope / f"{name}{ENTRY_SUFFIX}"

            def remove_file() -> None:
                remove_durably(path)

            records = [*swept, *own]
            self._commit(cur, records, {scope} | {c.entry.scope for c in swept}, remove_file)
            self._seen = seen
        self._index_vectors(records)
        return records[-1].copy()

    def _forget_records(
        self,
        cur: Cursor,
        found: Entry,
        journaled: tuple[str, str] | None,
        seq: int,
        now: datetime,
        session: str | None,
    ) -> builtins.list[Change]:
        """The records a forget of the entry file ``found`` appends, numbered from ``seq``
        (``journaled``: the state the journal left it in): a reconciled record of a person's
        change first when the file can be journaled, then the tombstone (of the journal's last
        record when the file cannot be)."""
        key = found.key
        chain = journaled[0] if journaled else ""
        pre: builtins.list[Change] = []
        base = found
        if _differs(found, journaled):
            if self._journalable(found):
                last = (
                    find_last_record(self.journal_path, before=cur.off, key=key)
                    if journaled
                    else None
                )
                if last is not None and not last.entry.deleted:
                    base = last.entry
            else:
                pre.append(self._reconciled(found, chain, seq, now))
                chain = found.hash
        tomb = plan_forget(base, seq=seq + len(pre), now=now, session=session)
        return [*pre, dataclasses.replace(tomb, prev=chain, replaced=chain)]

    def _stat_files(
        self, known: dict[str, _FileStat] | None = None
    ) -> tuple[dict[str, _FileStat], builtins.list[str]]:
        """Every entry file of the folder, ``scope/name`` -> :data:`_FileStat` (one folder listing
        per scope and one ``stat`` per file; no file is opened), and the keys whose stat is not
        the one in ``known`` (every key when ``known`` is ``None``)."""
        out: dict[str, _FileStat] = {}
        changed: builtins.list[str] = []
        previous = known or {}
        suffix = len(ENTRY_SUFFIX)
        for scope in self._scopes():
            try:
                items = list(os.scandir(self._root / scope))
            except (FileNotFoundError, NotADirectoryError):
                continue
            prefix = scope + "/"
            for d in items:
                name = d.name
                if not name.endswith(ENTRY_SUFFIX):
                    continue
                key = prefix + name[:-suffix]
                before = previous.get(key)
                if before is None and not valid_name(name[:-suffix]):
                    continue
                try:
                    st = d.stat()
                except FileNotFoundError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    now = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                    out[key] = now
                    if now != before:
                        changed.append(key)
        return out, changed

    def _sweep(
        self, cur: Cursor, now: datetime, *, skip: str = ""
    ) -> tuple[builtins.list[Change], dict[str, _FileStat], dict[str, tuple[str, str] | None]]:
        """What a person changed by hand in the whole folder, for a write to journal first
        (docs/filestore-format.md#a-persons-edit-is-journaled-first): the reconciled records,
        numbered from ``cur.seq + 1`` in ``scope/name`` byte order (as :meth:`reconcile` would
        write them; entry ``skip`` left out), the files' :data:`_FileStat` to remember once they
        are committed, and the state each record leaves its entry in (``None``: tombstoned).

        Only files whose inode, size, modification or change time differ from what this handle
        saw at its last write or reconcile are opened, and entries the journal leaves live with
        no file; a handle's first write opens every file, as :meth:`reconcile` does. A file the
        store cannot journal is left alone (as :meth:`reconcile` leaves it)."""
        seen = self._seen
        files, changed = self._stat_files(seen)
        if seen is None:  # every file is read: keep the descriptions INDEX.md needs
            for scope in {k.partition("/")[0] for k in files}:
                self._index_cache.setdefault(scope, {})
        keys = set(changed)
        keys.update(k for k in cur.entries if k not in files)
        keys.discard(skip)
        seq = cur.seq
        changes: builtins.list[Change] = []
        after: dict[str, tuple[str, str] | None] = {}
        for key in sorted(keys, key=lambda k: k.encode()):
            journaled = cur.entries.get(key)
            chain = journaled[0] if journaled else ""
            scope, _, name = key.partition("/")
            read = self._read_entry(scope, name) if key in files else None
            if read is None:
                files.pop(key, None)
                if journaled is None:
                    continue
                gone = self._removed(key, chain, seq + 1, now, cur)
                if gone is not None:
                    seq += 1
                    changes.append(gone)
                    after[key] = None
                continue
            found, files[key] = read  # the stat as it was before the bytes were read
            cached = self._index_cache.get(scope)
            if cached is not None:
                cached[name] = found.description
            if not _differs(found, journaled) or self._journalable(found):
                continue
            seq += 1
            changes.append(self._reconciled(found, chain, seq, now))
            after[key] = (found.hash, meta_hash(found.meta))
        return changes, files, after

    def reconcile(self) -> Reconciliation:
        """Journal what a person changed by hand since the journal last recorded each entry.

        Every entry file is compared with the state the journal left (read from the cursor,
        not the whole journal): an edited file becomes a reconciled record of its content,
        meta and modification time; an added file a reconciled create; a removed file a
        reconciled tombstone carrying its last whole record (nothing, when the journal has no
        whole record of it). The records have ``source="reconciled"``, no session, one ``at``,
        ``prev == replaced ==`` the journal's last hash, and come in ``scope/name`` byte order.
        Touched scopes get their INDEX.md rewritten. A file the store cannot journal is left
        alone and listed in ``unjournaled``. Nothing to do writes nothing.

        Its cost grows with the number of entry files (it opens every one).

        Raises:
            StoreLockedError: another writer held the folder for over ``lock_timeout_s``.
        """
        with self._writing() as cur:
            seen: dict[str, _FileStat] = {}
            files: dict[str, Entry] = {}
            for scope in self._scopes():
                scanned = self._read_scope(scope, seen)
                self._index_cache[scope] = {e.name: e.description for e in scanned}
                for e in scanned:
                    files[e.key] = e
            now = self._now(cur)
            seq = cur.seq
            changes: builtins.list[Change] = []
            skipped: builtins.list[UnjournaledFile] = []
            for key in sorted(set(files) | set(cur.entries), key=lambda k: k.encode()):
                found = files.get(key)
                journaled = cur.entries.get(key)
                chain = journaled[0] if journaled else ""
                if found is None:
                    gone = self._removed(key, chain, seq + 1, now, cur)
                    if gone is not None:
                        changes.append(gone)
                        seq += 1
                    continue
                if not _differs(found, journaled):
                    continue
                reason = self._journalable(found)
                if reason:
                    path = self._root / found.scope / f"{found.name}{ENTRY_SUFFIX}"
                    skipped.append(UnjournaledFile(path, key, reason))
                    continue
                seq += 1
                changes.append(self._reconciled(found, chain, seq, now))
            self._commit(cur, changes, {c.entry.scope for c in changes})
            self._seen = seen
            done = Reconciliation(changes=changes, unjournaled=skipped, damaged=self._damage_seen)
        self._index_vectors(changes)
        return done

    # -- purge (docs/contract.md#purge-erasing-an-entry-for-good) ----------------------------

    @property
    def can_purge(self) -> bool:
        """Whether :meth:`purge` works here: always, for a Markdown folder."""
        return True

    @property
    def recovery(self) -> str | None:
        """What this handle did about a purge a killed process left (``.purge.json``):
        ``"rolled back ..."`` (the journal had not been replaced: nothing was purged),
        ``"finished ..."`` (it had: the entry file, INDEX.md, the cursor and the vectors were
        brought in step), or ``None`` (docs/filestore-format.md#a-purge-rewrites-the-journal)."""
        return self._recovery

    def purge(
        self, scope: str, name: str, *, reason: str, session: str | None = None
    ) -> PurgeReceipt:
        """Erase every content ``scope/name`` ever held from the folder; return the receipt.

        Under the lock: a live entry is forgotten first (a person's edit journaled as
        reconciled first, as :meth:`forget` does); every journal record of the entry is
        redacted (:func:`agentmemory.purge.redact_history`) and padded to its old length, a
        damaged line or torn tail holding a copy is blanked, the tombstone and the ``purged``
        record are appended, and the new journal replaces the old atomically (temporary file,
        fsync, rename, folder fsync); then the entry file is removed, INDEX.md and
        ``.state.json`` rewritten, and the vector index's collection for the scope rebuilt and
        its files scrubbed (docs/filestore-format.md#a-purge-rewrites-the-journal). A process
        killed midway leaves ``.purge.json``: the next write or open rolls the purge back
        (before the rename) or finishes it (after), and :attr:`recovery` says which.

        Raises:
            InvalidEntryError: ``scope`` or ``name`` not kebab-case, ``reason`` blank or over
                1024 bytes (field ``"reason"``); nothing is written.
            NotFoundError: neither the journal nor the folder has ``scope/name``.
            StoreLockedError: another writer held the folder for over ``lock_timeout_s``, or
                (for a handle without an embedder) another process owns ``.vectors``, which the
                purge must scrub; nothing is written.
            IndexWriteError: the journal and files are purged but the vector index could not be
                scrubbed (the cause is ``__cause__``); the next write or open finishes it.
        """
        check_purge(scope, name, reason)
        with self._writing() as cur:
            held = self._hold_vectors()
            try:
                return self._purge_locked(cur, scope, name, reason, session)
            finally:
                if held is not None:
                    from agentmemory.stores.chroma.clients import close_folder

                    close_folder(held)

    def _hold_vectors(self) -> Path | None:
        """For a handle without an embedder, open the folder's ``.vectors`` (so no other process
        can own it while the purge runs) and return it; ``None`` when there is nothing to hold.
        Raises :class:`~agentmemory.StoreLockedError` when another process owns it."""
        from .vectors import VECTORS_FOLDER

        folder = self._root / VECTORS_FOLDER
        if self._vectors is not None or not (folder / "chroma").is_dir():
            return None
        from agentmemory.stores.chroma.clients import open_folder

        open_folder(folder, self._lock_timeout_s)
        return folder

    def _purge_locked(
        self, cur: Cursor, scope: str, name: str, reason: str, session: str | None
    ) -> PurgeReceipt:
        key = f"{scope}/{name}"
        found = self._read_file(scope, name)
        if found is None and not any(
            isinstance(c, Change) and c.entry.key == key
            for _, _, c in scan_journal(self.journal_path)
        ):
            raise NotFoundError(scope, name)
        now = self._now(cur)
        swept, seen, _ = self._sweep(cur, now, skip=key)  # other hand edits, journaled first
        if swept:
            self._commit(cur, swept, {c.entry.scope for c in swept})
        self._seen = seen
        try:
            data = self.journal_path.read_bytes()
        except FileNotFoundError:
            data = b""
        lines = builtins.list(scan_journal(self.journal_path))
        history = [(off, c) for off, _, c in lines if isinstance(c, Change) and c.entry.key == key]
        seq = cur.seq + 1
        journaled = cur.entries.get(key)
        fresh = (
            [] if found is None else self._forget_records(cur, found, journaled, seq, now, session)
        )
        every = [c for _, c in history] + fresh
        redacted = redact_history(every)
        left = iter(redacted)  # redact_history leaves out redacted and purge records, in order
        mapped = [c if c.redacted or c.source == SOURCE_PURGED else next(left) for c in every]
        record = purge_record(
            scope,
            name,
            seq=seq + len(fresh),
            now=now,
            reason=reason,
            redacted=[c.seq for c in redacted],
            session=session,
        )
        appended = [*mapped[len(history) :], record]
        replace = {
            off: new for (off, old), new in zip(history, mapped, strict=False) if new is not old
        }
        rewrite = rewrite_journal(data, lines, replace, copy_finder(scope, name, every), appended)
        marker = PurgeMarker(
            key=key,
            pid=os.getpid(),
            seq=record.seq,
            journal=PurgeMarker.journal_id(self.journal_path),
            temp=f"{TEMP_PREFIX}purge-{secrets.token_hex(8)}",
            aside=f"{scope}/{TEMP_PREFIX}purge-{secrets.token_hex(8)}" if found else "",
            heads=rewrite.heads,
            padded=rewrite.padded,
        )
        write_atomic(self._root / PURGE_MARKER, marker.encode())
        if marker.aside:
            os.replace(self.entry_path(scope, name), self._root / marker.aside)
            fsync_dir(self._root / scope)
        if not rewrite.padded:  # offsets move: the cursors are rebuilt from the new journal
            from .vectors import CURSOR_NAME, VECTORS_FOLDER

            self.state_path.unlink(missing_ok=True)
            (self._root / VECTORS_FOLDER / CURSOR_NAME).unlink(missing_ok=True)
        temp = self._root / marker.temp
        write_synced(temp, rewrite.data)
        self._replace_journal(temp)
        # The purge stands from here; what follows is what an open would finish.
        self._finish_files(marker)
        self._save_cursor(self._load_cursor())
        try:
            vectors, scrubbed = self._purge_vectors(marker, self._lock_timeout_s)
        except Exception as err:
            raise IndexWriteError(str(self._root), appended, err) from err
        remove_durably(self._root / PURGE_MARKER)
        tomb = mapped[-1] if fresh else None
        done = [
            f"{JOURNAL_NAME}: {len(redacted)} records redacted"
            + (" (each padded to its old length)" if rewrite.padded else " (offsets moved)")
            + (f", {len(rewrite.blanked)} damaged lines blanked" if rewrite.blanked else "")
            + "; replaced atomically",
        ]
        if found is not None:
            done.append(f"{scope}/{name}{ENTRY_SUFFIX} removed")
        done += [f"{scope}/{INDEX_NAME} rewritten", f"{STATE_NAME} rewritten", *scrubbed]
        return PurgeReceipt(
            scope=scope,
            name=name,
            reason=reason,
            record=record.copy(),
            tombstone=None if tomb is None else tomb.copy(),
            redacted=tuple(c.seq for c in redacted),
            index_rows=0 if found is None else 1,
            vectors=vectors,
            rewritten=tuple(done),
        )

    def _replace_journal(self, temp: Path) -> None:
        """Rename the purge's new journal ``temp`` over ``journal.jsonl`` and fsync the folder:
        the moment a purge stands."""
        os.replace(temp, self.journal_path)
        fsync_dir(self._root)

    def _finish_files(self, marker: PurgeMarker) -> None:
        """After the journal was replaced: remove the entry file moved aside, rewrite the
        scope's INDEX.md, make this handle's cursor and BM25 index follow the new journal,
        and record in the marker that only the vectors are left."""
        if marker.aside:
            remove_durably(self._root / marker.aside)
        self._index_cache.get(marker.scope, {}).pop(marker.name, None)
        self._write_index(marker.scope)
        cur = self._cursor
        if not marker.padded:
            self._cursor = None
        elif cur is not None and cur.head == marker.heads[0]:
            cur.head = marker.heads[1]
        if not marker.padded:
            with self._lexicon_lock:
                self._lexicon_off = None
        next_phase = dataclasses.replace(marker, phase="vectors")
        write_atomic(self._root / PURGE_MARKER, next_phase.encode())

    def _purge_vectors(
        self, marker: PurgeMarker, timeout_s: float
    ) -> tuple[int, builtins.list[str]]:
        """The vector index's part of a purge: this handle's, or the folder's ``.vectors``
        opened for the purge (see :func:`agentmemory.stores.markdown.vectors.purge_folder_vectors`)."""
        if self._vectors is not None:
            return self._vectors.purge(
                marker.scope, marker.name, marker.heads, padded=marker.padded
            )
        from .vectors import VECTORS_FOLDER, purge_folder_vectors

        if not (self._root / VECTORS_FOLDER).is_dir():
            return 0, []
        return purge_folder_vectors(
            self._root,
            marker.scope,
            marker.name,
            marker.heads,
            padded=marker.padded,
            timeout_s=timeout_s,
        )

    def _settle_purge(self) -> None:
        """With the lock held: finish or roll back the purge ``.purge.json`` describes (a
        process killed midway left it; docs/filestore-format.md#a-purge-rewrites-the-journal)."""
        path = self._root / PURGE_MARKER
        try:
            marker = PurgeMarker.decode(path.read_bytes())
        except FileNotFoundError:
            return
        except ValueError as err:
            remove_durably(path)
            self._recovery = f"removed an unreadable {PURGE_MARKER} ({err}); nothing was changed"
            log.warning("agentmemory: store %s: %s", self._root, self._recovery)
            return
        who = f"{marker.key} (pid {marker.pid})"
        if marker.phase == "journal" and not marker.replaced(self.journal_path):
            (self._root / marker.temp).unlink(missing_ok=True)
            aside = self._root / marker.aside if marker.aside else None
            if aside is not None and aside.exists():
                target = self._root / marker.scope / f"{marker.name}{ENTRY_SUFFIX}"
                if target.exists():
                    aside.unlink()
                else:
                    os.replace(aside, target)
                    fsync_dir(target.parent)
            self._write_index(marker.scope)
            remove_durably(path)
            self._recovery = (
                f"rolled back an interrupted purge of {who}: the journal had not been "
                "replaced, nothing was purged; run the purge again"
            )
            log.warning("agentmemory: store %s: %s", self._root, self._recovery)
            return
        if marker.phase == "journal":
            self._finish_files(marker)
        try:
            # a retry (phase "vectors") does not wait for another owner of .vectors
            self._purge_vectors(marker, self._lock_timeout_s if marker.phase == "journal" else 0)
        except Exception as err:  # owned by another process, or Chroma failed: retried later
            self._recovery = (
                f"finished the journal part of an interrupted purge of {who}; the vector "
                f"index (.vectors) is still to be scrubbed, which the next write or open "
                f"retries ({type(err).__name__}: {err})"
            )
            log.warning("agentmemory: store %s: %s", self._root, self._recovery)
            return
        remove_durably(path)
        self._recovery = (
            f"finished an interrupted purge of {who}: the journal was already redacted; the "
            "entry file, INDEX.md, .state.json and the vector index were brought in step now"
        )
        log.warning("agentmemory: store %s: %s", self._root, self._recovery)

    def verify_erased(self, scope: str, name: str) -> ErasureCheck:
        """Check that no copy of what ``scope/name`` held remains in the folder.

        Looks at: the entry's journal records (each redacted, or a ``purged`` record), damaged
        journal lines and the torn tail naming the entry, the entry file and a copy moved aside
        by an unfinished purge, the scope's INDEX.md, ``.state.json``, this handle's BM25 index,
        an unfinished purge (``.purge.json``), and the vector index (the entry's vector, and
        ``.vectors/chroma/chroma.sqlite3``'s rows, free pages and dropped segment folders).
        Returns an :class:`~agentmemory.purge.ErasureCheck`; an entry never purged reports
        its unredacted records. Takes no lock.

        Raises :class:`~agentmemory.InvalidEntryError` when ``scope`` or ``name`` is not
        kebab-case.
        """
        self._check_open()
        check_scope(scope)
        check_scope(name, what="name")
        key = f"{scope}/{name}"
        records: builtins.list[Change] = []
        damaged = 0
        names = copy_finder(scope, name, [])
        try:
            data = self.journal_path.read_bytes()
        except FileNotFoundError:
            data = b""
        for off, end, item in scan_journal(self.journal_path):
            if isinstance(item, Change):
                if item.entry.key == key:
                    records.append(item)
            elif names(data[off : end - 1]):
                damaged += 1
        tail = data[data.rfind(b"\n") + 1 :]
        found = history_copies(records)
        if damaged:
            found.append(f"{damaged} damaged journal lines naming {key}")
        if tail and names(tail):
            found.append(f"the journal's torn last line names {key}")
        folder = self._root / scope
        if (folder / f"{name}{ENTRY_SUFFIX}").exists():
            found.append(f"the entry file {scope}/{name}{ENTRY_SUFFIX}")
        aside = (
            sorted(p.name for p in folder.glob(f"{TEMP_PREFIX}purge-*")) if folder.is_dir() else []
        )
        if aside:
            found.append(
                f"files moved aside by an unfinished purge in {scope}/: {', '.join(aside)}"
            )
        with contextlib.suppress(OSError):
            if f"- [{name}]({name}{ENTRY_SUFFIX})".encode() in (folder / INDEX_NAME).read_bytes():
                found.append(f"{scope}/{INDEX_NAME} lists it")
        with contextlib.suppress(OSError, ValueError):
            if key in Cursor.decode(self.state_path.read_bytes()).entries:
                found.append(f"{STATE_NAME} names it")
        with self._lexicon_lock:
            if self._lexicon_off is not None:
                docs = self._current_lexicon().documents([scope])
                if any(d.name == name for d in docs):
                    found.append("this handle's BM25 index")
        if (self._root / PURGE_MARKER).exists():
            found.append(f"an unfinished purge ({PURGE_MARKER})")
        looked = [
            f"journal records of {key} in {JOURNAL_NAME}",
            "damaged journal lines and the torn tail",
            f"the entry file {scope}/{name}{ENTRY_SUFFIX} and files moved aside",
            f"{scope}/{INDEX_NAME}",
            STATE_NAME,
            "this handle's BM25 index",
            f"an unfinished purge ({PURGE_MARKER})",
        ]
        from .vectors import VECTORS_FOLDER

        chroma = self._root / VECTORS_FOLDER / "chroma"
        if self._vectors is not None and self._vectors.holds(scope, name):
            found.append("a vector in .vectors")
        if chroma.is_dir():
            from agentmemory.stores.chroma.files import chroma_copies

            looked += [
                f"{VECTORS_FOLDER}/chroma/chroma.sqlite3 rows for {key} (embeddings, "
                "embeddings_queue) and free pages",
                f"segment folders under {VECTORS_FOLDER}/chroma/ not in its segments table",
            ]
            found += [f"{VECTORS_FOLDER}: {w}" for w in chroma_copies(chroma, key)]
        return ErasureCheck(scope, name, tuple(looked), tuple(found))

    # -- recall (an in-memory BM25 index, built on first use, following the journal) ---------

    def _follow(self, changes: builtins.list[Change], start: int, off: int) -> None:
        """Apply this handle's own records, appended at byte ``start``, to the BM25 index when
        it is built and has followed the journal that far; otherwise the next search reads them
        from the journal."""
        with self._lexicon_lock:
            if self._lexicon_off is None or self._lexicon_off != start:
                return
            for c in changes:
                if c.entry.deleted:
                    self._lexicon.remove(c.entry.scope, c.entry.name)
                else:
                    self._lexicon.put(c.entry)
            self._lexicon_off = off

    def _current_lexicon(self) -> BM25Index[Entry]:
        """The BM25 index, built from the entry files on first use and brought up to date with
        records other handles appended since (read from the journal, not the files)."""
        if self._lexicon_off is None:
            self._lexicon.clear()
            try:
                off = self.journal_path.stat().st_size
            except FileNotFoundError:
                off = 0
            for scope in self._scopes():
                for e in self._read_scope(scope):
                    self._lexicon.put(e)
            self._lexicon_off = off
            return self._lexicon
        try:
            size = self.journal_path.stat().st_size
        except FileNotFoundError:
            size = 0
        if size > self._lexicon_off:
            for _, end, item in scan_journal(self.journal_path, self._lexicon_off):
                if isinstance(item, Change):
                    if item.entry.deleted:
                        self._lexicon.remove(item.entry.scope, item.entry.name)
                    else:
                        self._lexicon.put(item.entry)
                self._lexicon_off = end
        return self._lexicon

    @property
    def embedder(self) -> Embedder | None:
        """The embedder of the vector index, or ``None`` when the store keeps no vectors."""
        return None if self._vectors is None else self._vectors.embedder

    def _index_vectors(self, changes: builtins.list[Change]) -> None:
        """Bring the vector index up to the journal after a write (outside the folder lock).

        Raises :class:`~agentmemory.IndexWriteError` (the write stands) when embedding or
        Chroma fails; the index catches up at the next write, search or open."""
        if self._vectors is None or not changes:
            return
        try:
            self._vectors.catch_up()
        except Exception as err:
            raise IndexWriteError(str(self._root), changes, err) from err

    def search_vector(
        self, vector: npt.ArrayLike, *, limit: int, scopes: Sequence[str]
    ) -> builtins.list[tuple[Entry, float]]:
        """The vector leg: at most ``limit`` ``(entry, cosine similarity)`` pairs of ``scopes``,
        nearest first; the entry is read from its file (a hit whose file is gone is dropped).
        The index first reads the journal records appended since it last looked.

        Raises:
            RecallModeError: the store keeps no vectors (opened without an embedder).
            ValueError: ``vector`` is not ``(dim,)`` for the embedder.
            InvalidEntryError: a scope that is not kebab-case.
        """
        self._check_open()
        if self._vectors is None:
            raise RecallModeError("vector", type(self).__name__, known=RECALL_MODES)
        out: builtins.list[tuple[Entry, float]] = []
        for scope, name, score in self._vectors.search_vector(vector, limit=limit, scopes=scopes):
            e = self._read_file(scope, name)
            if e is not None:
                out.append((e, score))
        return out

    def search_text(
        self, query: str, *, scopes: Sequence[str], limit: int
    ) -> builtins.list[tuple[Entry, float]]:
        """The lexical leg: at most ``limit`` ``(entry, BM25 score)`` pairs of ``scopes``, best
        first, every score above 0.

        The index (:class:`recallers.BM25Index`, in memory) is built from the entry files on
        first use, follows this handle's writes and reconciles, and reads the records other
        handles or processes appended from the journal before each search. A person's edit is
        seen after the next write (to any entry) or :meth:`reconcile`.

        Raises :class:`~agentmemory.InvalidEntryError` for a scope that is not kebab-case.
        """
        for s in scopes:
            check_scope(s)
        self._check_open()
        with self._lexicon_lock:
            found = self._current_lexicon().search_text(query, scopes=scopes, limit=limit)
            return [(e.copy(), score) for e, score in found]

    def superseding(self, scopes: Sequence[str]) -> builtins.list[Entry]:
        """The entries of ``scopes`` with a ``supersedes`` meta, by scope order then name, read
        from the in-memory index rather than the files (docs/kinds.md#out-of-date-on-purpose-only)."""
        self._check_open()
        with self._lexicon_lock:
            docs = self._current_lexicon().documents(scopes)
            found = [e.copy() for e in docs if (e.meta or {}).get("supersedes")]
        order = {s: i for i, s in enumerate(scopes)}
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
        """At most ``limit`` entries of ``scopes`` ranked for ``query``, best first: BM25 and,
        when the store keeps vectors, the vector leg fused by reciprocal rank fusion (``mode``
        ``"auto"`` is ``"hybrid"`` then, else ``"bm25"``); entries out of date on ``as_of``
        (default today) are left out unless ``include_superseded``
        (docs/kinds.md#out-of-date-on-purpose-only). See :func:`agentmemory.store.recall_entries`
        for the errors (:class:`~agentmemory.EmptyQueryError`, :class:`~agentmemory.InvalidEntryError`,
        ``ValueError``, :class:`~agentmemory.RecallModeError`)."""
        vector = None
        if self._vectors is not None:
            vector = VectorRecaller(self, self._vectors.embedder)
        return recall_entries(
            self,
            query,
            scopes=scopes,
            limit=limit,
            mode=mode,
            bm25=BM25Recaller(self),
            vector=vector,
            as_of=as_of,
            include_superseded=include_superseded,
        )

    # -- lifetime --------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise AgentMemoryError(
                f"agentmemory: store {self._root} is closed; open a new FileStore to use it"
            )

    def close(self) -> None:
        """Drop the in-memory index; idempotent. Later calls raise
        :class:`~agentmemory.AgentMemoryError`. (No lock is held between writes.)"""
        self._closed = True
        if self._vectors is not None:
            self._vectors.close()
        with self._lexicon_lock:
            self._lexicon.clear()
            self._lexicon_off = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FileStore({str(self._root)!r}, max_entry_bytes={self._limit})"
