"""ChromaStore: the sqlite journal (the truth) plus a Chroma vector index of it.

Layout of an embedded store folder ``dir``::

    dir/journal.sqlite3   a SqliteStore: live entries, the journal, and the index's own state
    dir/chroma/           a chromadb.PersistentClient folder: one collection per scope
    dir/chroma.lock       names the one process that owns dir/chroma (see folder_lock.py)

Or, with ``client=`` (for example ``chromadb.HttpClient`` for a Chroma server), the collections
live in that client and only the journal is in ``dir``.

**One vector per live entry.** Id ``"scope/name"``; metadata ``scope``, ``name``, ``hash`` (the
content hash) and ``text_hash`` (:func:`content_hash` of :func:`embedding_text`, what was embedded);
cosine space; our embedder's vectors are always passed in (Chroma's default embedding function
downloads a model and is never used). Each scope has its own collection, ``<prefix>_<scope>``:
Chroma's ``where`` filter costs 350 to 520 ms per query at 100k entries here against about 5 ms
unfiltered (docs/storage.md#one-collection-per-scope), so scoping by collection keeps queries fast. A scope
never contains ``_``, so the name splits back into prefix and scope unambiguously, and several
stores with different prefixes can share one Chroma server.

**Index state in the journal.** ``store_state`` keys ``chroma-index:<kind>:<prefix>:cursor``,
``...:embedder`` (the fingerprint) and ``...:lost``, where ``<kind>`` is ``embedded`` or
``client``: a journal first indexed in its embedded folder and later opened over a server client
starts the server's index from the beginning (the first open replays the whole journal).

**Embedders.** A store opens with an embedder whose fingerprint is the recorded one, or gives
the same vectors by :func:`embedders.same_vectors` (the same model weights, dimension and
sequence limit through sentence-transformers or onnxruntime): a store indexed with one runtime
is searched and written with the other. The recorded fingerprint stays that of the embedder
that built the index (only :meth:`ChromaStore.reindex` records a new one), so it names what most
vectors were made with; the two runtimes' vectors agree to cosine > 0.999, not bit for bit.
Any other embedder is refused with :class:`~agentmemory.EmbedderMismatchError`.

**The write path.** ``put``/``forget``/``put_many`` commit to the journal first, then bring the
index in line with the journal's *live* state of the keys written (embed, upsert; delete on
forget, before ``forget`` returns), then mark the records applied. An index cursor (kept in the
journal's ``store_state``) advances only over a contiguous run of applied records, so it never
passes a record whose effect is not in the index, even with several threads writing. Opening
replays the records after the cursor, so a process killed between the two steps loses nothing.
A failed index update raises :class:`~agentmemory.IndexWriteError` (the write itself stands) and
is retried at the next write, at the next open, or by :meth:`ChromaStore.repair`.

Index updates read the live state under a per-index lock (and check it again after writing), so
two writers racing on one name can never leave the older text's vector behind.

**Processes.** Chroma's embedded client is not safe across processes (measured here: vectors
silently lost), so an embedded store's folder is owned by one process (a lock file naming it);
a second process gets :class:`~agentmemory.StoreLockedError` within ``lock_timeout_s``. Several
handles in one process share one client, one lock and one cursor. For several processes, run a
Chroma server and pass ``client=chromadb.HttpClient(...)``: the journal (sqlite) is safe for
several processes, and each process keeps the index in step for its own writes (and catches up
on the others' records it sees).
"""

from __future__ import annotations

import builtins
import logging
import os
import re
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from embedders import Embedder, same_vectors
from recallers import DEFAULT_FUSION, BM25Recaller, Fusion, Hit, VectorRecaller

from .entries import Change, Entry, content_hash
from .errors import (
    AgentMemoryError,
    EmbedderMismatchError,
    IndexOutOfStepError,
    IndexOutOfStepWarning,
    IndexWriteError,
)
from .folder_lock import DEFAULT_LOCK_TIMEOUT_S, FolderLock
from .mem_store import utc_now
from .rules import DEFAULT_MAX_ENTRY_BYTES, check_scope, valid_name
from .sqlite_store import DEFAULT_BUSY_TIMEOUT_S, SqliteStore
from .store import recall_entries

__all__ = [
    "CHROMA_FOLDER",
    "DEFAULT_COLLECTION_PREFIX",
    "JOURNAL_FILE",
    "ChromaStore",
    "IndexReport",
    "embedding_text",
]

logger = logging.getLogger(__name__)

JOURNAL_FILE = "journal.sqlite3"
"""The journal's file name inside an embedded store's folder."""

CHROMA_FOLDER = "chroma"
"""The Chroma ``PersistentClient`` folder's name inside an embedded store's folder."""

DEFAULT_COLLECTION_PREFIX = "agentmemory"
"""The default prefix of collection names (``agentmemory_<scope>``)."""

MAX_PREFIX_CHARS = 200
"""The longest collection prefix; with ``_`` and a 64-byte scope it stays under Chroma's 512."""

SYNC_CHUNK = 512
"""Entries embedded and upserted per step of a bulk write, replay or reindex (also kept under
the client's ``get_max_batch_size()``, 5,461 here)."""

CATCH_UP_AFTER = 64
"""How many applied records may wait behind an unapplied one (another process's write, or a
write whose index update failed) before a write replays the gap itself."""

SYNC_ROUNDS = 5
"""How often one index update re-reads and re-applies keys that another process changed while
it was writing them, before it gives up and leaves them to ``repair()``."""

_PREFIX_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_SEPARATOR = "_"
_STATE_NS = "chroma-index"

_Key = tuple[str, str]


def embedding_text(entry: Entry) -> str:
    """The text ChromaStore embeds for ``entry``: ``"<description>\\n\\n<content>"`` when the
    entry has a ``description`` meta value, else the content alone."""
    description = entry.description
    return f"{description}\n\n{entry.content}" if description else entry.content


def _text_hash(entry: Entry) -> str:
    return content_hash(embedding_text(entry))


def _state(entry: Entry | None) -> str | None:
    """What the index must hold for a key: the text hash of its live entry, or nothing."""
    return None if entry is None else _text_hash(entry)


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What :meth:`ChromaStore.verify` found, comparing the index with the journal.

    Attributes:
        ok: no key is missing, stale or extra.
        missing: keys (``"scope/name"``) live in the journal without a vector, sorted.
        stale: keys whose vector was made from other text than the live entry's, sorted.
        extra: keys with a vector that are not live in the journal (forgotten or unknown), sorted.
        live: number of live entries in the journal.
        indexed: number of vectors in the store's collections.
        cursor: the index cursor (every record up to this ``seq`` is applied).
        last_seq: the journal's last ``seq`` when the check began.
    """

    ok: bool
    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    live: int = 0
    indexed: int = 0
    cursor: int = 0
    last_seq: int = 0

    def __str__(self) -> str:
        if self.ok:
            return f"index ok: {self.indexed} vectors for {self.live} live entries"
        parts = []
        for label, keys in (
            ("missing", self.missing),
            ("stale", self.stale),
            ("extra", self.extra),
        ):
            if keys:
                shown = ", ".join(keys[:5]) + (", ..." if len(keys) > 5 else "")
                parts.append(f"{len(keys)} {label} ({shown})")
        return (
            f"index out of step: {'; '.join(parts)}; {self.indexed} vectors for {self.live} "
            "live entries; repair() or reindex() fixes it"
        )


@dataclass
class _Folder:
    """An embedded Chroma folder opened by this process: its client and its lock."""

    client: Any
    lock: FolderLock
    refs: int = 0


@dataclass
class _Index:
    """The index state every handle on one (journal, prefix, client) in this process shares."""

    client: Any
    fingerprint: str
    cursor: int
    persisted: int
    write_lock: threading.RLock = field(default_factory=threading.RLock)
    state_lock: threading.Lock = field(default_factory=threading.Lock)
    persist_lock: threading.Lock = field(default_factory=threading.Lock)
    applied: set[int] = field(default_factory=set)
    failed: set[int] = field(default_factory=set)
    collections: dict[str, Any] = field(default_factory=dict)
    refs: int = 0


_registry_lock = threading.Lock()
# Keyed by pid too: a child forked from a process with an open store never reuses its parent's
# client (it opens its own and meets the parent's folder lock).
_folders: dict[tuple[str, int], _Folder] = {}
_indexes: dict[tuple[str, str, int, int], _Index] = {}


def _chroma_settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


def _chroma_not_found() -> type[Exception]:
    from chromadb.errors import NotFoundError

    return NotFoundError


def _lock_detail() -> str:
    return (
        "one process at a time may open an embedded Chroma store (two processes writing one "
        "Chroma folder lose vectors); close it there, or run a Chroma server (chroma run) and "
        "open the store in every process with client=chromadb.HttpClient(...)"
    )


def _open_folder(folder: Path, timeout_s: float) -> _Folder:
    """This process's client and lock on the embedded folder ``folder`` (refcounted)."""
    key = (str(folder.resolve()), os.getpid())
    with _registry_lock:
        found = _folders.get(key)
        if found is None:
            lock = FolderLock.acquire(folder, timeout_s=timeout_s, detail=_lock_detail())
            try:
                import chromadb

                client = chromadb.PersistentClient(
                    path=str(folder / CHROMA_FOLDER), settings=_chroma_settings()
                )
            except BaseException:
                lock.release()
                raise
            found = _Folder(client=client, lock=lock)
            _folders[key] = found
        found.refs += 1
        return found


def _close_folder(folder: Path) -> None:
    key = (str(folder.resolve()), os.getpid())
    with _registry_lock:
        found = _folders.get(key)
        if found is None:
            return
        found.refs -= 1
        if found.refs > 0:
            return
        del _folders[key]
    try:
        close = getattr(found.client, "close", None)
        if close is not None:
            close()
    finally:
        found.lock.release()


class ChromaStore:
    """A :class:`~agentmemory.Store` with vector search: a :class:`~agentmemory.SqliteStore`
    journal plus a Chroma index holding one vector per live entry (see the module docstring).

    Open one with :meth:`open`. Safe for several threads; see the module docstring for
    processes. Every method of the store protocol reads and writes the journal; ``put``,
    ``forget`` and ``put_many`` also update the index before they return.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        embedder: Embedder,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
        client: Any = None,
        collection_prefix: str = DEFAULT_COLLECTION_PREFIX,
        reindex: bool = False,
        lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        clock: Callable[[], datetime] = utc_now,
        fusion: Fusion = DEFAULT_FUSION,
        _fault_after_commit: Callable[[Sequence[Change]], None] | None = None,
    ) -> None:
        """Open (or create) the store in folder ``path``; the same as :meth:`open`."""
        if not isinstance(embedder, Embedder):
            raise TypeError(
                f"embedder is a {type(embedder).__name__}, not an Embedder (name, dim, "
                "fingerprint, embed); build one with embedders.get(name)"
            )
        if (
            not isinstance(collection_prefix, str)
            or len(collection_prefix) > MAX_PREFIX_CHARS
            or _PREFIX_RE.fullmatch(collection_prefix) is None
        ):
            raise ValueError(
                f"collection_prefix {collection_prefix!r} must be 1 to {MAX_PREFIX_CHARS} "
                "characters of letters, digits, '-' and '_', starting with a letter or digit"
            )
        self._dir = Path(path)
        self._embedder = embedder
        self._prefix = collection_prefix
        self._embedded = client is None
        self._pid = os.getpid()
        self._fusion = fusion
        self._fault_after_commit = _fault_after_commit
        self._closed = False
        kind = "embedded" if self._embedded else "client"
        self._state_keys = {
            k: f"{_STATE_NS}:{kind}:{collection_prefix}:{k}" for k in ("cursor", "embedder", "lost")
        }
        self._folder: _Folder | None = None
        self._index: _Index | None = None
        self._dir.mkdir(parents=True, exist_ok=True)
        if self._embedded:
            self._folder = _open_folder(self._dir, lock_timeout_s)
            client = self._folder.client
        self._client = client
        try:
            self._journal = SqliteStore(
                self._dir / JOURNAL_FILE,
                max_entry_bytes=max_entry_bytes,
                busy_timeout_s=busy_timeout_s,
                clock=clock,
            )
        except BaseException:
            if self._folder is not None:
                _close_folder(self._dir)
            raise
        try:
            self._batch = max(1, min(SYNC_CHUNK, int(client.get_max_batch_size())))
            self._attach(reindex)
        except BaseException:
            self.close()
            raise

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        embedder: Embedder,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
        client: Any = None,
        collection_prefix: str = DEFAULT_COLLECTION_PREFIX,
        reindex: bool = False,
        lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        clock: Callable[[], datetime] = utc_now,
        fusion: Fusion = DEFAULT_FUSION,
        _fault_after_commit: Callable[[Sequence[Change]], None] | None = None,
    ) -> Self:
        """Open (or create) the store in folder ``path`` and bring its index up to date.

        Args:
            path: the store's folder (created when missing): ``journal.sqlite3`` and, when
                ``client`` is ``None``, the embedded Chroma folder ``chroma/``.
            embedder: makes the vectors; its ``fingerprint`` is recorded with a new store. An
                existing store takes its recorded embedder or one that gives the same vectors
                (:func:`embedders.same_vectors`: the same model through the other runtime), and
                keeps its recorded fingerprint.
            max_entry_bytes: the content bound in UTF-8 bytes (default 4096).
            client: a Chroma client to hold the collections (``chromadb.HttpClient`` for a
                server); ``None`` opens the embedded ``PersistentClient`` in ``path/chroma``,
                owned by this process.
            collection_prefix: collection names are ``<prefix>_<scope>``; give stores sharing
                one Chroma server different prefixes.
            reindex: rebuild the index from the journal with ``embedder`` (needed to switch
                embedders; embeds every live entry).
            lock_timeout_s: how long to wait for another process's hold on an embedded folder,
                in seconds.
            busy_timeout_s: how long a journal write waits for another writer, in seconds.
            clock: the time stamped on writes (for tests).
            fusion: the parameters of :meth:`recall`'s hybrid (``recallers.Fusion``; RRF with
                k = 60 by default).
            _fault_after_commit: private, for tests only: called with the journal records of
                each write of this handle after the journal commit and before the index update
                (to raise, or to kill the process, between the two steps). Other handles on the
                same folder are not affected.

        Opening replays the journal records the index cursor has not seen (a crash between a
        journal commit and its index update loses nothing). When the index lacks whole scopes
        that the journal holds (for example, its Chroma folder was deleted), opening warns with
        :class:`~agentmemory.IndexOutOfStepWarning`, and keeps warning until ``reindex()`` or
        a clean ``repair()``; the store works meanwhile, and vector search misses those entries.

        Raises:
            TypeError: ``embedder`` is not an :class:`embedders.Embedder`.
            ValueError: a bad ``collection_prefix`` or ``max_entry_bytes``.
            EmbedderMismatchError: the store was indexed with an embedder that gives other
                vectors (names both); open it with that embedder, or with ``reindex=True``.
            StoreLockedError: another process holds the embedded folder (names it), or the
                journal stayed locked for ``busy_timeout_s``.
            StoreFormatError: ``journal.sqlite3`` is not a journal of ours.
        """
        return cls(
            path,
            embedder=embedder,
            max_entry_bytes=max_entry_bytes,
            client=client,
            collection_prefix=collection_prefix,
            reindex=reindex,
            lock_timeout_s=lock_timeout_s,
            busy_timeout_s=busy_timeout_s,
            clock=clock,
            fusion=fusion,
            _fault_after_commit=_fault_after_commit,
        )

    # -- opening -----------------------------------------------------------------------------

    def _attach(self, reindex: bool) -> None:
        """Join (or set up) this process's shared index state, then check and replay."""
        given = self._embedder.fingerprint
        key = (str(self._dir.resolve()), self._prefix, id(self._client), self._pid)
        with _registry_lock:
            index = _indexes.get(key)
            if index is not None:
                if not same_vectors(index.fingerprint, given):
                    raise EmbedderMismatchError(str(self._dir), index.fingerprint, given)
                index.refs += 1
                self._index = index
                fresh = False
            else:
                stored = self._journal.get_state(self._state_keys["embedder"])
                if stored is not None and not reindex and not same_vectors(stored, given):
                    raise EmbedderMismatchError(str(self._dir), stored, given)
                cursor = int(self._journal.get_state(self._state_keys["cursor"]) or "0")
                index = _Index(
                    client=self._client,
                    fingerprint=given if stored is None or reindex else stored,
                    cursor=cursor,
                    persisted=cursor,
                    refs=1,
                )
                _indexes[key] = index
                self._index = index
                fresh = True
                if stored is None:
                    self._journal.set_state(self._state_keys["embedder"], given)
        if reindex:
            self.reindex()
        elif fresh:
            self._check_lost()
            self._replay()

    def _check_lost(self) -> None:
        """Warn when the index lacks scopes the journal has live entries in (and remember it)."""
        index = self._idx()
        lost_key = self._state_keys["lost"]
        lost = self._journal.get_state(lost_key)
        if not lost and index.cursor > 0:
            absent = sorted(set(self._journal.scopes()) - set(self._collection_scopes()))
            missing = self._journal.scopes_written_by(index.cursor, absent) if absent else []
            if missing:
                lost = ", ".join(missing)
                self._journal.set_state(lost_key, lost)
        if lost:
            where = (
                f"its Chroma folder {self._dir / CHROMA_FOLDER}"
                if self._embedded
                else "its collections on the Chroma server"
            )
            warnings.warn(
                f"agentmemory: store {self._dir}: the vector index has lost scopes {lost} "
                f"({self._journal.live_count()} live entries in the journal; was {where} "
                "deleted?); vector search misses them until you call reindex() or repair() "
                "(both embed what is missing), or open the store with reindex=True",
                IndexOutOfStepWarning,
                stacklevel=2,
            )

    def _replay(self) -> None:
        """Apply every journal record after the cursor (last state per key wins)."""
        index = self._idx()
        with index.state_lock:
            start = index.cursor
        records = list(self._journal.journal(start))
        if not records:
            return
        self._sync([(c.entry.scope, c.entry.name) for c in records], check_index=True)
        self._mark_applied(c.seq for c in records)

    # -- properties --------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The store's folder."""
        return self._dir

    @property
    def embedder(self) -> Embedder:
        """The embedder that makes this store's vectors (and should embed its queries)."""
        return self._embedder

    @property
    def collection_prefix(self) -> str:
        """The prefix of this store's collection names."""
        return self._prefix

    @property
    def client(self) -> Any:
        """The Chroma client holding the collections (shared by the handles of this process)."""
        return self._client

    @property
    def journal_store(self) -> SqliteStore:
        """The :class:`~agentmemory.SqliteStore` journal under this store (the source of truth).
        Writes made through it directly bypass the index until the store catches up."""
        return self._journal

    @property
    def max_entry_bytes(self) -> int:
        """The content bound in UTF-8 bytes."""
        return self._journal.max_entry_bytes

    @property
    def index_cursor(self) -> int:
        """Every journal record up to this ``seq`` is applied to the index."""
        return self._idx().cursor

    def collection_name(self, scope: str) -> str:
        """The Chroma collection name of ``scope``: ``<prefix>_<scope>``.

        Raises :class:`~agentmemory.InvalidEntryError` for a scope that is not kebab-case.
        """
        return f"{self._prefix}{_SEPARATOR}{check_scope(scope)}"

    # -- the store protocol: reads -------------------------------------------------------------

    def get(self, scope: str, name: str) -> Entry:
        """Return the live entry; raise :class:`~agentmemory.NotFoundError` when there is none."""
        return self._journal.get(scope, name)

    def list(self, scope: str) -> builtins.list[Entry]:
        """The live entries of ``scope`` sorted by name (UTF-8 byte order); ``[]`` when none."""
        return self._journal.list(scope)

    def search(self, scopes: Sequence[str], query: str, limit: int = 0) -> builtins.list[Entry]:
        """The reference word search of :meth:`agentmemory.SqliteStore.search` (every word in
        name, meta values or content, any case), at most ``limit`` when ``limit > 0``."""
        return self._journal.search(scopes, query, limit)

    def recall(
        self, query: str, *, scopes: Sequence[str], limit: int = 5, mode: str = "auto"
    ) -> builtins.list[Hit[Entry]]:
        """At most ``limit`` live entries of ``scopes`` ranked for ``query``, best first.

        ``mode``: ``"auto"`` and ``"hybrid"`` fuse the BM25 leg (the journal's FTS5 index) with
        the vector leg (:meth:`search_vector` of the query embedded by :attr:`embedder`) by
        reciprocal rank fusion (``fusion``, k = 60; Cormack, Clarke and Buettcher, SIGIR 2009);
        ``"bm25"`` and ``"vector"`` return one leg, its raw score as ``score``. Each hit reports
        every leg's rank and raw score.

        Raises :class:`~agentmemory.EmptyQueryError`, :class:`~agentmemory.InvalidEntryError`
        (a scope), ``ValueError`` (``limit`` under 1) and :class:`~agentmemory.RecallModeError`
        (an unknown mode); see :func:`agentmemory.store.recall_entries`.
        """
        self._check_open()
        return recall_entries(
            self,
            query,
            scopes=scopes,
            limit=limit,
            mode=mode,
            bm25=BM25Recaller(self._journal),
            vector=VectorRecaller(self, self._embedder),
            fusion=self._fusion,
        )

    def journal(self, after: int = 0) -> Iterator[Change]:
        """Yield every journal record with ``seq > after`` in order."""
        return self._journal.journal(after)

    def last_seq(self) -> int:
        """The journal's highest ``seq``; 0 when it is empty."""
        return self._journal.last_seq()

    # -- the store protocol: writes ------------------------------------------------------------

    def put(
        self,
        entry: Entry,
        *,
        if_hash: str | None = None,
        based_on: str | None = None,
        session: str | None = None,
    ) -> Change:
        """Create or replace the whole entry, update its vector, and return the journal record.

        See :meth:`agentmemory.Store.put` for the rule; the entry's vector is replaced before
        this returns.

        Raises:
            InvalidEntryError, EntryTooLargeError, ConflictError: the write was refused; nothing
                was written.
            StoreLockedError: another writer held the journal past ``busy_timeout_s``.
            IndexWriteError: the write is in the journal but its vector was not updated (the
                cause is attached); the index catches up later.
        """
        self._check_open()
        change = self._journal.put(entry, if_hash=if_hash, based_on=based_on, session=session)
        self._after_commit([change])
        return change

    def forget(self, scope: str, name: str, *, session: str | None = None) -> Change:
        """Write a tombstone and remove the entry's vector before returning; return the record.

        Raises:
            NotFoundError: no live entry ``scope/name``; nothing is written.
            StoreLockedError: another writer held the journal past ``busy_timeout_s``.
            IndexWriteError: the tombstone is in the journal but the vector was not removed
                (vector search still never returns the entry: hits are checked against the
                journal).
        """
        self._check_open()
        change = self._journal.forget(scope, name, session=session)
        self._after_commit([change])
        return change

    def put_many(
        self, entries: Iterable[Entry], *, session: str | None = None
    ) -> builtins.list[Change]:
        """Put every entry unconditionally in one journal transaction, then index them in batches
        of up to :data:`SYNC_CHUNK` (embedded together, upserted under the client's maximum
        batch size). Returns the records in the order given.

        Raises:
            InvalidEntryError, EntryTooLargeError: the first entry that breaks a rule; nothing is
                written.
            StoreLockedError: another writer held the journal past ``busy_timeout_s``.
            IndexWriteError: the entries are in the journal but not all their vectors were made.
        """
        self._check_open()
        changes = self._journal.put_many(entries, session=session)
        if changes:
            self._after_commit(changes)
        return changes

    def _after_commit(self, changes: Sequence[Change]) -> None:
        """Bring the index in line with the journal for the keys just written, then mark their
        records applied; on failure, keep them for the next catch-up and raise IndexWriteError."""
        index = self._idx()
        try:
            if self._fault_after_commit is not None:
                self._fault_after_commit(changes)
            self._sync([(c.entry.scope, c.entry.name) for c in changes], check_index=False)
        except Exception as err:
            with index.state_lock:
                index.failed.update(c.seq for c in changes if c.seq > index.cursor)
            raise IndexWriteError(str(self._dir), changes, err) from err
        self._mark_applied(c.seq for c in changes)
        try:
            self._catch_up()
        except Exception as err:  # the caller's own write succeeded; say so, and go on
            logger.warning(
                "agentmemory: store %s: index catch-up failed (%s: %s); retried later",
                self._dir,
                type(err).__name__,
                err,
            )

    # -- the index cursor --------------------------------------------------------------------

    def _mark_applied(self, seqs: Iterable[int]) -> None:
        """Record ``seqs`` as applied; advance the cursor over the contiguous applied run and
        persist it."""
        index = self._idx()
        with index.state_lock:
            for s in seqs:
                index.failed.discard(s)
                if s > index.cursor:
                    index.applied.add(s)
            start = index.cursor
            while index.cursor + 1 in index.applied:
                index.cursor += 1
                index.applied.discard(index.cursor)
            advanced = index.cursor != start
        if advanced:
            self._persist_cursor()

    def _persist_cursor(self) -> None:
        """Write the cursor to the journal's ``store_state`` when it moved (never backwards: one
        writer at a time, always the latest value). A failure is logged: a cursor persisted late
        only means more replay at the next open."""
        index = self._idx()
        with index.persist_lock:
            with index.state_lock:
                value = index.cursor
            if value <= index.persisted:
                return
            try:
                self._journal.set_state(self._state_keys["cursor"], str(value))
            except Exception as err:
                logger.warning(
                    "agentmemory: store %s: could not record the index cursor %d (%s: %s); "
                    "the next open replays from the last one recorded",
                    self._dir,
                    value,
                    type(err).__name__,
                    err,
                )
                return
            index.persisted = value

    def _reset_cursor(self, seq: int) -> None:
        """Every record up to ``seq`` is now applied (after a rebuild or a clean repair)."""
        index = self._idx()
        with index.state_lock:
            if seq > index.cursor:
                index.cursor = seq
            index.applied = {s for s in index.applied if s > index.cursor}
            index.failed = {s for s in index.failed if s > index.cursor}
        self._mark_applied(())
        self._persist_cursor()

    def _catch_up(self, *, force: bool = False) -> None:
        """Apply the records the cursor is stuck behind (failed index updates, or other
        processes' writes), when there are failures or many applied records wait behind them.
        Errors are logged, not raised: the caller's own write already succeeded."""
        index = self._idx()
        with index.state_lock:
            if not force and not index.failed and len(index.applied) < CATCH_UP_AFTER:
                return
            start = index.cursor
            done = set(index.applied)
            top = max(done | index.failed, default=start)
        if force:
            top = self._journal.last_seq()
        records: builtins.list[Change] = []
        for c in self._journal.journal(start):
            if c.seq > top:
                break
            if c.seq not in done:
                records.append(c)
        if not records:
            return
        try:
            self._sync([(c.entry.scope, c.entry.name) for c in records], check_index=True)
        except Exception as err:
            if force:
                raise
            logger.warning(
                "agentmemory: store %s: could not catch the vector index up on %d journal "
                "records after seq %d (%s: %s); it is retried at the next write and open",
                self._dir,
                len(records),
                start,
                type(err).__name__,
                err,
            )
            return
        self._mark_applied(c.seq for c in records)

    # -- collections -------------------------------------------------------------------------

    def _collection(self, scope: str, *, create: bool) -> Any:
        """The scope's collection (cached), created when ``create``; ``None`` when it does not
        exist and ``create`` is false."""
        index = self._idx()
        with index.state_lock:
            found = index.collections.get(scope)
        if found is not None:
            return found
        name = self.collection_name(scope)
        if create:
            found = self._client.get_or_create_collection(
                name,
                embedding_function=None,
                configuration={"hnsw": {"space": "cosine"}},
                metadata={"agentmemory-scope": scope},
            )
        else:
            try:
                found = self._client.get_collection(name, embedding_function=None)
            except _chroma_not_found():
                return None
        with index.state_lock:
            index.collections[scope] = found
        return found

    def _forget_collection(self, scope: str) -> None:
        index = self._idx()
        with index.state_lock:
            index.collections.pop(scope, None)

    def _collection_scopes(self) -> builtins.list[str]:
        """The scopes that have a collection of this store's prefix in the client."""
        head = self._prefix + _SEPARATOR
        scopes = []
        for col in self._client.list_collections():
            name = col if isinstance(col, str) else col.name
            if name.startswith(head) and valid_name(name[len(head) :]):
                scopes.append(name[len(head) :])
        return sorted(scopes)

    def _retry_missing(self, scope: str, action: Callable[[Any], Any], *, create: bool) -> Any:
        """Run ``action(collection)``; when the cached collection was deleted underneath us (a
        reindex by another process), look it up again once."""
        col = self._collection(scope, create=create)
        if col is None:
            return None
        try:
            return action(col)
        except _chroma_not_found():
            self._forget_collection(scope)
            col = self._collection(scope, create=create)
            return None if col is None else action(col)

    # -- keeping the index in line with the journal -------------------------------------------

    def _embed(self, entries: Sequence[Entry]) -> dict[_Key, tuple[str, npt.NDArray[np.float32]]]:
        """Vectors for ``entries`` by key, with the text hash each was made from."""
        out: dict[_Key, tuple[str, npt.NDArray[np.float32]]] = {}
        dim = self._embedder.dim
        for start in range(0, len(entries), self._batch):
            part = entries[start : start + self._batch]
            texts = [embedding_text(e) for e in part]
            matrix = np.asarray(self._embedder.embed(texts), dtype=np.float32)
            if matrix.shape != (len(part), dim):
                raise ValueError(
                    f"embedder {self._embedder.name} returned an array of shape {matrix.shape} "
                    f"for {len(part)} texts; expected ({len(part)}, {dim})"
                )
            for e, text, row in zip(part, texts, matrix, strict=True):
                out[(e.scope, e.name)] = (content_hash(text), row)
        return out

    def _indexed(self, keys: Sequence[_Key]) -> dict[_Key, str]:
        """The text hash the index holds for each of ``keys`` that has a vector."""
        by_scope: dict[str, builtins.list[str]] = {}
        for scope, name in keys:
            by_scope.setdefault(scope, []).append(name)
        out: dict[_Key, str] = {}
        for scope, names in by_scope.items():
            ids = [f"{scope}/{n}" for n in names]

            def fetch(col: Any, ids: builtins.list[str] = ids) -> Any:
                return col.get(ids=ids, include=["metadatas"])

            got = self._retry_missing(scope, fetch, create=False)
            if got is None:
                continue
            for vid, meta in zip(got["ids"], got["metadatas"] or [], strict=False):
                name = vid.partition("/")[2]
                out[(scope, name)] = str((meta or {}).get("text_hash", ""))
        return out

    def _sync(self, keys: Sequence[_Key], *, check_index: bool) -> None:
        """Make the index hold exactly the journal's live state of ``keys``, :data:`SYNC_CHUNK`
        keys at a time. With ``check_index``, keys the index already holds right are skipped
        (nothing is embedded for them)."""
        todo = builtins.list(dict.fromkeys(keys))
        for start in range(0, len(todo), self._batch):
            self._sync_chunk(todo[start : start + self._batch], check_index=check_index)

    def _sync_chunk(self, keys: builtins.list[_Key], *, check_index: bool) -> None:
        live = self._journal.live_many(keys)
        if check_index:
            have = self._indexed(keys)
            keys = [k for k in keys if have.get(k) != _state(live.get(k))]
            if not keys:
                return
        # Embed outside the lock (the slow part); re-read the live state under it, so that of two
        # writers racing on one key the later journal state is what the index keeps.
        vectors = self._embed([live[k] for k in keys if k in live])
        index = self._idx()
        with index.write_lock:
            for _ in range(SYNC_ROUNDS):
                now = self._journal.live_many(keys)
                redo = [e for k, e in now.items() if vectors.get(k, ("",))[0] != _text_hash(e)]
                if redo:
                    vectors.update(self._embed(redo))
                self._apply(keys, now, vectors)
                after = self._journal.live_many(keys)
                keys = [k for k in keys if _state(now.get(k)) != _state(after.get(k))]
                if not keys:
                    return
        raise IndexOutOfStepError(
            f"agentmemory: store {self._dir}: entries {', '.join(f'{s}/{n}' for s, n in keys)} "
            f"changed in the journal during each of {SYNC_ROUNDS} index updates (another process "
            "writing them?); call repair() when the writes settle"
        )

    def _apply(
        self,
        keys: Sequence[_Key],
        live: dict[_Key, Entry],
        vectors: dict[_Key, tuple[str, npt.NDArray[np.float32]]],
    ) -> None:
        """Upsert the vectors of the live keys and delete the others, one call per scope."""
        ups: dict[str, builtins.list[_Key]] = {}
        dels: dict[str, builtins.list[str]] = {}
        for k in keys:
            if k in live:
                ups.setdefault(k[0], []).append(k)
            else:
                dels.setdefault(k[0], []).append(f"{k[0]}/{k[1]}")
        for scope, ids in dels.items():

            def delete(col: Any, ids: builtins.list[str] = ids) -> None:
                col.delete(ids=ids)

            self._retry_missing(scope, delete, create=False)
        for scope, found in ups.items():
            entries = [live[k] for k in found]
            ids = [f"{e.scope}/{e.name}" for e in entries]
            matrix = np.stack([vectors[k][1] for k in found])
            metas: builtins.list[dict[str, str | int | float | bool | None]] = [
                {"scope": e.scope, "name": e.name, "hash": e.hash, "text_hash": vectors[k][0]}
                for k, e in zip(found, entries, strict=True)
            ]

            def upsert(
                col: Any,
                ids: builtins.list[str] = ids,
                matrix: npt.NDArray[np.float32] = matrix,
                metas: builtins.list[dict[str, str | int | float | bool | None]] = metas,
            ) -> None:
                col.upsert(ids=ids, embeddings=matrix, metadatas=metas)

            self._retry_missing(scope, upsert, create=True)

    # -- vector search -----------------------------------------------------------------------

    def search_vector(
        self,
        vector: npt.ArrayLike,
        *,
        limit: int,
        scopes: Sequence[str],
    ) -> builtins.list[tuple[Entry, float]]:
        """The live entries of ``scopes`` nearest ``vector``, nearest first, at most ``limit``
        (``[]`` when ``limit`` is under 1).

        ``vector`` is a ``(dim,)`` (or ``(1, dim)``) array, embedded with :attr:`embedder`
        (``store.embedder.embed([query])[0]``). The score is the cosine similarity,
        ``1 - cosine distance`` (unitless, in [-1, 1]). Ties break by the scope's position in
        ``scopes``, then by name. Each scope is its own collection (no ``where`` filter), and
        every hit is checked against the journal: a vector whose entry was forgotten or
        rewritten since is never returned (the entry is returned from the journal, not from
        Chroma). Scopes without entries contribute nothing.

        Raises:
            ValueError: ``vector`` has another shape.
            TypeError: ``scopes`` is a single ``str``, or ``limit`` is not an int.
            InvalidEntryError: a scope that is not kebab-case.
        """
        self._check_open()
        if isinstance(scopes, str):
            raise TypeError(f"scopes must be a sequence of scope names, not the str {scopes!r}")
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"limit is {limit!r}; it must be an int")
        dim = self._embedder.dim
        query = np.asarray(vector, dtype=np.float32)
        if query.ndim == 2 and query.shape[0] == 1:
            query = query[0]
        if query.shape != (dim,):
            raise ValueError(
                f"vector has shape {query.shape}; this store's embedder "
                f"{self._embedder.name} makes ({dim},) vectors"
            )
        order = {check_scope(s): i for i, s in reversed(builtins.list(enumerate(scopes)))}
        if limit < 1:
            return []
        hits: builtins.list[tuple[int, Entry, float]] = []
        for scope, position in sorted(order.items(), key=lambda kv: kv[1]):
            for e, score in self._query_scope(scope, query, limit):
                hits.append((position, e, score))
        hits.sort(key=lambda h: (-h[2], h[0], h[1].name.encode()))
        return [(e, score) for _, e, score in hits[:limit]]

    def _query_scope(
        self, scope: str, query: npt.NDArray[np.float32], limit: int
    ) -> builtins.list[tuple[Entry, float]]:
        """Up to ``limit`` (entry, similarity) of one scope, checked against the journal; asks
        Chroma for more when stale vectors had to be dropped."""
        want = limit
        while True:

            def run(col: Any, n: int = want) -> Any:
                return col.query(
                    query_embeddings=query[None, :], n_results=n, include=["metadatas", "distances"]
                )

            got = self._retry_missing(scope, run, create=False)
            if got is None:
                return []
            ids = got["ids"][0]
            metas = (got["metadatas"] or [[]])[0]
            dists = (got["distances"] or [[]])[0]
            names = [vid.partition("/")[2] for vid in ids]
            live = self._journal.live_many([(scope, n) for n in names])
            good: builtins.list[tuple[Entry, float]] = []
            for name, meta, dist in zip(names, metas, dists, strict=False):
                e = live.get((scope, name))
                if e is None:
                    continue
                held = (meta or {}).get("text_hash")
                if held is not None and held != _text_hash(e):
                    continue
                good.append((e, 1.0 - float(dist)))
            if len(good) >= limit or len(ids) < want:
                return good[:limit]
            want = want * 2 + (limit - len(good))

    # -- checking and rebuilding ---------------------------------------------------------------

    def _all_indexed(self) -> dict[_Key, str]:
        """Every vector in this store's collections: key to text hash."""
        out: dict[_Key, str] = {}
        for scope in self._collection_scopes():
            offset = 0
            while True:

                def page(col: Any, offset: int = offset) -> Any:
                    return col.get(include=["metadatas"], limit=self._batch, offset=offset)

                got = self._retry_missing(scope, page, create=False)
                if got is None or not got["ids"]:
                    break
                for vid, meta in zip(got["ids"], got["metadatas"] or [], strict=False):
                    out[(scope, vid.partition("/")[2])] = str((meta or {}).get("text_hash", ""))
                offset += len(got["ids"])
                if len(got["ids"]) < self._batch:
                    break
        return out

    def verify(self) -> IndexReport:
        """Compare the index with the journal; returns an :class:`IndexReport`.

        Reads every live entry and every vector's metadata (seconds at 100k entries). Writes
        made while it runs may show up as missing or stale. Changes nothing.
        """
        self._check_open()
        last = self._journal.last_seq()
        live: dict[_Key, str] = {}
        for batch in self._journal.iter_live(self._batch):
            for e in batch:
                live[(e.scope, e.name)] = _text_hash(e)
        indexed = self._all_indexed()

        def keys(found: Iterable[_Key]) -> builtins.list[str]:
            return sorted(f"{s}/{n}" for s, n in found)

        missing = keys(k for k in live if k not in indexed)
        extra = keys(k for k in indexed if k not in live)
        stale = keys(k for k, h in live.items() if k in indexed and indexed[k] != h)
        return IndexReport(
            ok=not (missing or stale or extra),
            missing=missing,
            stale=stale,
            extra=extra,
            live=len(live),
            indexed=len(indexed),
            cursor=self._idx().cursor,
            last_seq=last,
        )

    def repair(self) -> IndexReport:
        """Apply what the cursor has not seen, then fix every key :meth:`verify` finds missing,
        stale or extra (embedding only those). Returns the report of a second verify; when it
        is clean, the cursor moves to the journal's end and the lost-index warning stops.

        Raises what the embedder or Chroma raise; the index is then no worse than before.
        """
        self._check_open()
        head = self._journal.last_seq()
        self._catch_up(force=True)
        found = self.verify()
        wrong = [*found.missing, *found.stale, *found.extra]
        if wrong:
            pairs: builtins.list[_Key] = []
            for key in wrong:
                scope, _, name = key.partition("/")
                pairs.append((scope, name))
            self._sync(pairs, check_index=False)
        after = self.verify()
        if after.ok:
            self._reset_cursor(head)
            self._clear_lost()
        return after

    def reindex(self) -> int:
        """Rebuild the index from the journal with this store's embedder: drop the store's
        collections, embed every live entry, and record the embedder's fingerprint. Returns the
        number of entries indexed.

        Writes made meanwhile (by any handle) are kept: they wait for the collections to be
        dropped, then land in the new ones. Vector search sees a partial index until it ends.
        The cursor is set back to 0 (and the new fingerprint recorded) before anything is
        dropped, so a rebuild cut short finishes at the next open, which replays the whole
        journal and embeds only what is still missing.
        """
        self._check_open()
        index = self._idx()
        with index.write_lock:
            head = self._journal.last_seq()
            with index.state_lock:
                index.cursor = 0
                index.applied.clear()
                index.failed.clear()
            with index.persist_lock:
                self._journal.set_state(self._state_keys["cursor"], "0")
                index.persisted = 0
            self._journal.set_state(self._state_keys["embedder"], self._embedder.fingerprint)
            index.fingerprint = self._embedder.fingerprint
            for scope in self._collection_scopes():
                try:
                    self._client.delete_collection(self.collection_name(scope))
                except _chroma_not_found():
                    pass
            with index.state_lock:
                index.collections.clear()
        count = 0
        for batch in self._journal.iter_live(self._batch):
            self._sync_chunk([(e.scope, e.name) for e in batch], check_index=False)
            count += len(batch)
        self._reset_cursor(head)
        self._clear_lost()
        return count

    def _clear_lost(self) -> None:
        if self._journal.get_state(self._state_keys["lost"]):
            self._journal.set_state(self._state_keys["lost"], "")

    # -- lifetime ----------------------------------------------------------------------------

    def _idx(self) -> _Index:
        index = self._index
        if index is None:
            raise AgentMemoryError(
                f"agentmemory: store {self._dir} is closed; open a new ChromaStore to use it"
            )
        return index

    def _check_open(self) -> None:
        if self._closed:
            raise AgentMemoryError(
                f"agentmemory: store {self._dir} is closed; open a new ChromaStore to use it"
            )
        if self._embedded and os.getpid() != self._pid:
            raise AgentMemoryError(
                f"agentmemory: store {self._dir} was opened by process {self._pid}, and this "
                f"process ({os.getpid()}) was forked from it; an embedded Chroma folder is not "
                "safe across processes: open the store here after the parent closes it, or use "
                "a Chroma server (client=chromadb.HttpClient(...))"
            )

    def close(self) -> None:
        """Close the journal and release this handle's share of the index and (embedded) of the
        folder: the last handle in the process closes the client and releases the folder lock.
        Idempotent. A user-supplied client is left open."""
        if self._closed:
            return
        self._closed = True
        if os.getpid() != self._pid:  # a forked child: the parent's client and lock are not ours
            self._index = self._folder = None
            return
        index, self._index = self._index, None
        try:
            if index is not None:
                with _registry_lock:
                    index.refs -= 1
                    if index.refs <= 0:
                        key = (str(self._dir.resolve()), self._prefix, id(self._client), self._pid)
                        if _indexes.get(key) is index:
                            del _indexes[key]
            journal = getattr(self, "_journal", None)
            if journal is not None:
                journal.close()
        finally:
            if self._folder is not None:
                self._folder = None
                _close_folder(self._dir)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "embedded" if self._embedded else "client"
        return (
            f"ChromaStore({str(self._dir)!r}, embedder={self._embedder.name!r}, "
            f"prefix={self._prefix!r}, {where})"
        )
