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

The class is put together from parts, each a module of this package: :mod:`.files` (the paths,
the reads of entry files, the attributes the parts share), :mod:`.index_file` (INDEX.md),
:mod:`.lexicon` (the in-memory BM25 index), :mod:`.writes` (the lock, the cursor, the commit of
a write), :mod:`.reconcile` (journaling a person's edits) and :mod:`.purge`. This module holds
the Store API.
"""

from __future__ import annotations

import builtins
import dataclasses
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from agentmemory.entries import Change, Entry
from agentmemory.errors import (
    AgentMemoryError,
    IndexDamagedError,
    IndexReadOnlyError,
    NotFoundError,
    RecallModeError,
    StoreFullError,
    StoreLockedError,
)
from agentmemory.recall import RECALL_MODES, search_entries
from agentmemory.rules import DEFAULT_MAX_ENTRY_BYTES, check_entry, valid_name
from agentmemory.store import plan_put
from agentmemory.stores.base import StoreBase, by_scope_then_name, checked_batch, utc_now
from recallers import (
    DEFAULT_TOKENIZER,
    BM25Index,
    BM25Recaller,
    Recaller,
    Tokenizer,
    VectorRecaller,
)

from .atomic_write import Undo, remove_durably, write_atomic
from .entry_file import ENTRY_SUFFIX, meta_hash, render_entry_file
from .files import FileStat
from .journal_file import JOURNAL_NAME, Cursor, DamagedLine, find_last_record, scan_journal
from .journal_rewrite import PURGE_MARKER
from .links import check_scope_folder, check_store_files
from .lock_file import DEFAULT_LOCK_TIMEOUT_S, LockHolder, break_lock, read_holder
from .purge import Purging
from .reconcile import differs

if TYPE_CHECKING:
    import numpy.typing as npt

    from embedders import Embedder


__all__ = ["FileStore"]

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


class FileStore(Purging, StoreBase):
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
            :meth:`recall` is hybrid (BM25 + vectors, fused by the default fusion). Without one,
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
        journal_only_when_damaged: bool = False,
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
        check_store_files(self._root)
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
        self._undo: Undo | None = None
        self._vectors: FolderVectors | None = None
        self._unavailable: str | None = None
        self._cursor_moved = False
        self._recovery: str | None = None
        # entry files (scope/name -> FileStat) the journal agreed with at this handle's last
        # sweep or reconcile; None until then, when the first write looks at every file
        self._seen: dict[str, FileStat] | None = None
        if (self._root / PURGE_MARKER).exists():
            try:  # finish or roll back a killed process's purge
                with self._writing() as cur:
                    self._save_cursor(cur)
            except (StoreLockedError, OSError) as err:  # a live purge, or a read-only folder
                log.warning("agentmemory: store %s: purge left unsettled: %s", self._root, err)
        if embedder is not None:
            from .vectors import FolderVectors

            try:
                self._vectors = FolderVectors(
                    self._root, embedder, lock_timeout_s=self._lock_timeout_s, reindex=reindex
                )
            except IndexDamagedError as exc:
                if not journal_only_when_damaged:
                    raise
                # as SqliteStore's folder does: the journal and BM25 serve, the vectors wait for
                # the repair (docs/storage.md#a-damaged-vector-index)
                self._unavailable = (
                    f"the vector index may not be written here ({exc.detail}); searches use "
                    "BM25 until the folder is writable"
                    if isinstance(exc, IndexReadOnlyError)
                    else f"the vector index is damaged ({exc.detail}); run 'agentmemory verify "
                    f"--repair --path {self._root}' to rebuild it from the journal"
                )
                log.warning("agentmemory: store %s: %s", self._root, self._unavailable)
            except StoreFullError as exc:
                if not journal_only_when_damaged:
                    raise
                self._unavailable = (  # not damage: nothing to move aside (docs/storage.md#a-full-disk)
                    f"the disk holding {self._root} is full ({exc.detail}); the vector index "
                    "opens again once some space is free"
                )
                log.warning("agentmemory: store %s: %s", self._root, self._unavailable)

    @property
    def vector_unavailable(self) -> str | None:
        """Why this handle searches without its vector index (``.vectors`` could not be opened:
        it opened the journal alone, as ``journal_only_when_damaged`` allows), or ``None``."""
        return self._unavailable

    # -- properties --------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The folder."""
        return self._root

    # -- reading (no lock) ---------------------------------------------------------------------

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
        """Entries matching ``query`` by :func:`agentmemory.rules.matches`, scopes in the order given
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

    # -- writes ----------------------------------------------------------------------------------

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
        elif found is not None and differs(found, journaled):
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
        for scope in sorted({scope for scope, _ in written}):  # before any file is written
            check_scope_folder(self._root, scope)
        for (scope, name), e in written.items():
            folder = self._root / scope
            folder.mkdir(exist_ok=True)
            path = folder / f"{name}{ENTRY_SUFFIX}"
            if self._undo is not None:
                self._undo.keep(path)
            write_atomic(path, render_entry_file(e))

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
        batch = checked_batch(entries)
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
                if self._undo is not None:
                    self._undo.keep(path)
                remove_durably(path)

            records = [*swept, *own]
            self._commit(cur, records, {scope} | {c.entry.scope for c in swept}, remove_file)
            self._seen = seen
        self._index_vectors(records)
        return records[-1].copy()

    # -- recall -----------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder | None:
        """The embedder of the vector index, or ``None`` when the store keeps no vectors."""
        return None if self._vectors is None else self._vectors.embedder

    def vectors_missing(self) -> builtins.list[str]:
        """Keys (``"scope/name"``) of the entries the journal leaves live that the vector index
        holds no vector of, after it caught up with the journal; ``[]`` when the store keeps no
        vectors. Reads only (``agentmemory verify`` on a Markdown folder)."""
        self._check_open()
        if self._vectors is None:
            return []
        with self._mutex:
            keys = list(self._load_cursor().entries)
        live: dict[str, builtins.list[str]] = {}
        for key in keys:
            scope, _, name = key.partition("/")
            live.setdefault(scope, []).append(name)
        return self._vectors.missing(live)

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

    def superseding(self, scopes: Sequence[str]) -> builtins.list[Entry]:
        """The entries of ``scopes`` with a ``supersedes`` meta, by scope order then name, read
        from the in-memory index rather than the files (docs/kinds.md#out-of-date-on-purpose-only)."""
        self._check_open()
        with self._lexicon_lock:
            docs = self._current_lexicon().documents(scopes)
            found = [e.copy() for e in docs if (e.meta or {}).get("supersedes")]
        return by_scope_then_name(found, scopes)

    def _recall_legs(self) -> tuple[Recaller[Entry], Recaller[Entry] | None]:
        """BM25 over the folder's in-memory index and, when the folder keeps vectors
        (``.vectors``), the vector leg: ``recall`` (:class:`~agentmemory.stores.base.StoreBase`)
        fuses them by the default fusion (docs/recall.md#the-default-fusion)."""
        vector = None
        if self._vectors is not None:
            vector = VectorRecaller(self, self._vectors.query_embedder)
        return BM25Recaller(self), vector

    # -- lifetime --------------------------------------------------------------------------------

    def close(self) -> None:
        """Drop the in-memory index; idempotent. Later calls raise
        :class:`~agentmemory.AgentMemoryError`. (No lock is held between writes.)"""
        self._closed = True
        if self._vectors is not None:
            self._vectors.close()
        with self._lexicon_lock:
            self._lexicon.clear()
            self._lexicon_off = None

    def __repr__(self) -> str:
        return f"FileStore({str(self._root)!r}, max_entry_bytes={self._limit})"
