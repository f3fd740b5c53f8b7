"""ChromaStore: the sqlite journal (the truth) plus a Chroma vector index of it.

The store composes these parts, one module each (docs/storage.md#the-modules-of-the-chroma-store):

* the journal, a :class:`~agentmemory.SqliteStore` in ``dir/journal.sqlite3`` (or any
  :class:`~agentmemory.stores.chroma.journal_source.JournalStore` given as ``journal=``, such as a
  ``PostgresStore`` several hosts share; docs/storage.md#postgresql): every read of the store
  protocol, every write, and the index's own state (``store_state``);
* the vectors, a :class:`~agentmemory.stores.chroma.index.ChromaIndex`: one collection per scope, one
  vector per window of each live entry (docs/storage.md#the-chroma-index, docs/recall.md#windows);
* :mod:`agentmemory.stores.chroma.sync`: :class:`~agentmemory.stores.chroma.sync.IndexSync` makes the
  index hold the journal's live state of given keys, and compares the two
  (:meth:`ChromaStore.verify`); ``nearest_live`` is vector search checked against the journal;
* :mod:`agentmemory.stores.chroma.cursor`: the :class:`~agentmemory.stores.chroma.cursor.IndexCursor`,
  how far the index has applied the journal (docs/storage.md#the-index-cursor), the index's keys
  in the journal's state and the rule of which embedder may open it
  (docs/storage.md#the-embedder-fingerprint); and the
  :class:`~agentmemory.stores.chroma.follow.IndexFollower`, which uses it to keep the index in step:
  replay, catch-up, other processes' writes, verify, repair and reindex;
* :mod:`agentmemory.stores.chroma.erase`: the index's part of a purge;
* the process-wide registry (:mod:`agentmemory.stores.chroma.clients`): one embedded client and folder
  lock per folder, one cursor per index, shared by the handles of a process
  (docs/storage.md#locks).

This module composes them: opening (embedded, on a server, or journal-only beside another
process's hold) and the store protocol. The class is put together from parts, each a module of
this package: :mod:`.core` (the handle's state, its guards, and the write path: commit to the
journal, then bring the index in line with the journal's live state of the keys written, then
mark the records applied), :mod:`.purge` (purge, its recovery, ``verify_erased``) and
:mod:`.upkeep` (``verify``, ``repair``, ``reindex``). For several processes, see
docs/storage.md#several-processes.
"""

from __future__ import annotations

import builtins
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self, Unpack

import numpy as np
import numpy.typing as npt

from agentmemory.entries import Change, Entry
from agentmemory.errors import (
    ChromaServerTimeoutError,
    EmbedderMismatchError,
    IndexDamagedError,
    IndexReadOnlyError,
    StoreFullError,
    StoreLockedError,
)
from agentmemory.forget_session import last_written_by
from agentmemory.recall import RECALL_MODES, recall_entries, resolve_reranker
from agentmemory.rules import DEFAULT_MAX_ENTRY_BYTES, check_scope
from agentmemory.stores.base import StoreBase, utc_now
from agentmemory.stores.sqlite.store import DEFAULT_BUSY_TIMEOUT_S, SqliteStore
from embedders import Embedder, same_vectors, window_layout
from embedders.preload import start_loading
from embedders.recent import remembering
from recallers import DEFAULT_FUSION, DEFAULT_RERANK_CANDIDATES, BM25Recaller, Hit, VectorRecaller

from .clients import (
    CHROMA_FOLDER,
    IndexKey,
    SharedIndex,
    close_folder,
    join_index,
    leave_index,
    open_folder,
)
from .cursor import IndexCursor, IndexStateKeys, check_embedder
from .folder_lock import DEFAULT_LOCK_TIMEOUT_S
from .follow import IndexFollower
from .index import DEFAULT_COLLECTION_PREFIX, ChromaIndex, check_prefix, store_prefix
from .journal_source import JournalStore
from .options import OPTION_NAMES, ChromaStoreOptions
from .purge import Purging
from .sync import IndexReport, IndexSync, embedding_text, nearest_live
from .upkeep import IndexUpkeep

if TYPE_CHECKING:
    from recallers import Reranker

__all__ = [
    "CHROMA_FOLDER",
    "DEFAULT_COLLECTION_PREFIX",
    "JOURNAL_FILE",
    "ChromaStore",
    "ChromaStoreOptions",
    "IndexReport",
    "embedding_text",
]

logger = logging.getLogger(__name__)

JOURNAL_FILE = "journal.sqlite3"
"""The journal's file name inside an embedded store's folder."""

SYNC_CHUNK = 512
"""Entries embedded and upserted per step of a bulk write, replay or reindex (also kept under
the client's ``get_max_batch_size()``; docs/storage.md#batches)."""


class ChromaStore(Purging, IndexUpkeep, StoreBase):
    """A :class:`~agentmemory.Store` with vector search: a :class:`~agentmemory.SqliteStore`
    journal plus a Chroma index holding one vector per window of each live entry (see the module
    docstring).

    ``ChromaStore(path, **options)`` is the same as :meth:`open` (the options are
    :class:`ChromaStoreOptions`). Safe for several threads; one process per embedded folder
    (docs/storage.md#several-processes). Every method of the store protocol reads and writes
    the journal; ``put``, ``forget`` and ``put_many`` also update the index before they return.
    """

    index_type: ClassVar[type[ChromaIndex]] = ChromaIndex
    """The class that talks to Chroma. A subclass of the store may set a subclass of
    :class:`~agentmemory.stores.chroma.index.ChromaIndex` here (a test's, to count Chroma calls or to
    fail them between the journal commit and the index update); each handle makes its own."""

    def __init__(
        self, path: str | os.PathLike[str] | None, **options: Unpack[ChromaStoreOptions]
    ) -> None:
        unknown = sorted(set(options) - OPTION_NAMES)
        if unknown:
            raise TypeError(
                f"ChromaStore got unexpected keyword arguments {', '.join(unknown)}; it takes "
                f"{', '.join(sorted(OPTION_NAMES))}"
            )
        embedder = options.get("embedder")
        if not isinstance(embedder, Embedder):
            raise TypeError(
                f"embedder is a {type(embedder).__name__}, not an Embedder (name, dim, "
                "fingerprint, embed); build one with embedders.get(name)"
            )
        client = options.get("client")
        given_prefix = options.get("collection_prefix")
        journal = options.get("journal")
        if journal is not None and client is None:
            raise ValueError(
                f"ChromaStore over the journal {journal.where} needs client= (a Chroma server "
                "client, chromadb.HttpClient): an embedded index is one process's folder"
            )
        if journal is None and path is None:
            raise TypeError("ChromaStore needs a folder path, or journal= and client=")
        self._dir = Path(path) if path is not None else None
        self._where = str(path) if path is not None else journal.where if journal else ""
        # the same text embedded twice in a row (a save's duplicate check, then its put) costs
        # one model call
        self._embedder: Embedder = remembering(embedder)
        self._given_embedder = embedder
        # the model loads beside the index's opening (chromadb's import is most of it), not after
        start_loading(embedder)
        self._pid = os.getpid()
        self._fusion = options.get("fusion", DEFAULT_FUSION)
        self._reranker = resolve_reranker(options.get("reranker"))
        self._rerank_candidates = options.get("rerank_candidates", DEFAULT_RERANK_CANDIDATES)
        if self._rerank_candidates < 1:
            raise ValueError(
                f"rerank_candidates is {self._rerank_candidates}; it must be at least 1"
            )
        self._closed = False
        self._shared: SharedIndex | None = None
        self._opened_folder = False
        self._read_only = options.get("read_only", False)
        self._server: str | None = None  # the server, in words, when this store connected one
        self._unavailable: str | None = None  # why there is no vector index (journal-only)
        self._held_elsewhere = False
        self._write_note = ""  # what a journal-only write's Change.note says
        if given_prefix is not None:
            check_prefix(given_prefix)  # before anything is opened
        if client is None:
            from .server import store_client

            try:
                found = store_client(
                    self._dir if journal is None else None,
                    url=options.get("chroma_url"),
                    shared=options.get("shared", False),
                    timeout_s=options.get("server_timeout_s"),
                )
            except ChromaServerTimeoutError as stuck:
                if not options.get("journal_only_when_unreachable", False):
                    raise
                found = None
                self._server = stuck.where
                self._unavailable = (
                    f"the Chroma server {stuck.where} holding the vector index of {self._where} "
                    f"did not answer within {stuck.timeout_s:g} s (is it stopped or overloaded?)"
                )
                self._write_note = (
                    "the write is in the journal and its lexical index; the vector index on the "
                    f"Chroma server {stuck.where} is brought up to date from the journal by the "
                    "next write once the server answers"
                )
            if found is not None:
                client, self._server = found
        self._embedded = client is None and self._unavailable is None
        # A server this folder does not own may hold other stores' collections: name ours after
        # the journal's id (docs/storage.md#one-collection-per-scope).
        by_store_id = journal is not None or bool(options.get("chroma_url"))
        if journal is None:
            assert self._dir is not None
            self._dir.mkdir(parents=True, exist_ok=True)
        if self._embedded:
            assert self._dir is not None
            try:
                client = open_folder(
                    self._dir, options.get("lock_timeout_s", DEFAULT_LOCK_TIMEOUT_S)
                )
                self._opened_folder = True
            except StoreLockedError as held:
                if not options.get("journal_only_when_held", False):
                    raise
                self._held_elsewhere = True
                self._unavailable = (
                    f"the vector index of {self._where} is held by {held.holder} (an embedded "
                    "Chroma folder is opened by one process at a time)"
                )
                self._write_note = (
                    "the write is in the journal and its lexical index; the vector index is "
                    f"brought up to date by the process holding it ({held.holder})"
                )
            except StoreFullError as full:
                if not options.get("journal_only_when_damaged", False):
                    raise
                # a full disk is not damage: reads go on from the journal, and nothing is
                # moved aside or rebuilt (docs/storage.md#a-full-disk)
                self._unavailable = (
                    f"the disk holding {self._where} is full ({full.detail}); the vector index "
                    "opens again once some space is free"
                )
                self._write_note = (
                    "the write is in the journal and its lexical index; the vector index could "
                    "not be opened on a full disk and catches up once some space is free"
                )
            except IndexDamagedError as damaged:
                if damaged.index != "vector" or not options.get("journal_only_when_damaged", False):
                    raise
                self._journal_only(damaged)
        try:
            self._journal: JournalStore = journal or SqliteStore(
                self._folder() / JOURNAL_FILE,
                max_entry_bytes=options.get("max_entry_bytes", DEFAULT_MAX_ENTRY_BYTES),
                busy_timeout_s=options.get("busy_timeout_s", DEFAULT_BUSY_TIMEOUT_S),
                clock=options.get("clock", utc_now),
            )
            prefix = given_prefix or (
                store_prefix(self._journal.store_id) if by_store_id else DEFAULT_COLLECTION_PREFIX
            )
            self._keys = IndexStateKeys(embedded=self._embedded, prefix=prefix)
            if self._unavailable is None:
                self._index = self.index_type(client, prefix, where=self._where)
        except BaseException:
            if journal is None and getattr(self, "_journal", None) is not None:
                self._journal.close()
            if self._opened_folder:
                close_folder(self._folder())
            raise
        if self._unavailable is not None:
            return
        index = self._index
        try:
            self._batch = max(1, min(SYNC_CHUNK, index.max_batch_size()))
            self._attach(options.get("reindex", False))
        except IndexDamagedError as damaged:  # found while replaying: vectors of another width
            if damaged.index != "vector" or not options.get("journal_only_when_damaged", False):
                self.close()
                raise
            shared, self._shared = self._shared, None
            try:
                if shared is not None:
                    leave_index(self._index_key(), shared)
            finally:
                if self._opened_folder:
                    self._opened_folder = False
                    close_folder(self._folder())
            self._journal_only(damaged)
        except BaseException:
            self.close()
            raise

    def _journal_only(self, damaged: IndexDamagedError) -> None:
        """Serve the journal alone because the vector index is damaged or may not be written
        (docs/storage.md#a-damaged-vector-index): say why, and what a write's note says."""
        cure = f"run 'agentmemory verify --repair --path {self._where}'"
        if isinstance(damaged, IndexReadOnlyError):
            state = "may not be written here"
            cure = f"make {self._where}/chroma writable, then {cure}"
        else:
            state = "is damaged"
        self._unavailable = (
            f"the vector index of {self._where} {state} ({damaged.detail}); {cure} to "
            "bring it up to date from the journal"
        )
        self._write_note = (
            f"the write is in the journal and its lexical index; the vector index {state}: "
            f"{cure} to bring it up to date from the journal, this write included"
        )

    @classmethod
    def open(
        cls, path: str | os.PathLike[str] | None, **options: Unpack[ChromaStoreOptions]
    ) -> Self:
        """Open (or create) the store in folder ``path`` and bring its index up to date.

        ``path`` is the store's folder (created when missing): ``journal.sqlite3`` and, when
        no ``client`` is given, the embedded Chroma folder ``chroma/``. The options are those
        of :class:`ChromaStoreOptions` (``embedder`` is required).

        Opening replays the journal records the index cursor has not seen (a crash between a
        journal commit and its index update loses nothing). When the index lacks whole scopes
        that the journal holds (for example, its Chroma folder was deleted), opening warns with
        :class:`~agentmemory.errors.IndexOutOfStepWarning`, and keeps warning until ``reindex()`` or
        a clean ``repair()``; the store works meanwhile, and vector search misses those entries.

        Raises:
            TypeError: ``embedder`` is missing or not an :class:`embedders.Embedder`, or an
                option that is not one of :class:`ChromaStoreOptions`.
            ValueError: a bad ``collection_prefix`` or ``max_entry_bytes``, or
                ``rerank_candidates`` under 1.
            recallers.UnknownRerankerError: ``reranker`` names no registered reranker (the
                message names the value and the choices); ``recallers.RerankerFolderError``:
                a cross-encoder that is not a local model folder.
            EmbedderMismatchError: the store was indexed with an embedder that gives other
                vectors (names both); open it with that embedder, or with ``reindex=True``.
            StoreLockedError: another process holds the embedded folder (names it), or the
                journal stayed locked for ``busy_timeout_s``.
            StoreFormatError: ``journal.sqlite3`` is not a journal of ours.
        """
        return cls(path, **options)

    # -- opening -----------------------------------------------------------------------------

    def _index_key(self) -> IndexKey:
        self._need_index()
        place = str(self._dir.resolve()) if self._dir is not None else self._where
        return (place, self._index.prefix, id(self._index.client), self._pid)

    def _attach(self, reindex: bool) -> None:
        """Join (or set up) this process's shared index state, then check and replay."""
        given = self._embedder.fingerprint

        def check(shared: SharedIndex) -> None:
            if not same_vectors(shared.fingerprint, given):
                raise EmbedderMismatchError(self._where, shared.fingerprint, given)

        def create() -> SharedIndex:
            fingerprint = check_embedder(
                self._journal, self._keys, given, reindex=reindex, where=self._where
            )
            cursor = IndexCursor.load(self._journal, self._keys.cursor)
            return SharedIndex(fingerprint=fingerprint, cursor=cursor)

        shared, fresh = join_index(self._index_key(), check=check, create=create)
        self._shared = shared
        sync = IndexSync(
            self._journal,
            self._index,
            self._embedder,
            batch=self._batch,
            lock=shared.write_lock,
            where=self._where,
        )
        place = (
            f"its Chroma folder {self._folder() / CHROMA_FOLDER}"
            if self._embedded
            else "its collections on the Chroma server"
        )
        self._follower = IndexFollower(
            self._journal, self._index, sync, shared, self._keys, where=self._where, place=place
        )
        if reindex:
            self.reindex()
        elif fresh and not (self._read_only and not self._embedded):
            # a reader on a server leaves indexing to the writers (docs/storage.md#reads-do-not-write)
            layout = window_layout(self._embedder)
            self._follower.adopt_layout(layout)
            self._follower.warn_lost()
            self._follower.replay()
            self._follower.warn_shorter_journal()
            # an index made before windows (or with other windows) re-embeds its long entries
            self._follower.relayout(layout, batch=self._batch)
        self._finish_purge()

    # -- properties --------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The store's folder.

        Raises:
            AgentMemoryError: the store indexes a ``journal=`` given to it and has no folder
                (see :attr:`where`).
        """
        return self._folder()

    @property
    def where(self) -> str:
        """The store's folder, or its journal's database (``journal=``), for messages."""
        return self._where

    @property
    def embedder(self) -> Embedder:
        """The embedder that makes this store's vectors (and should embed its queries)."""
        return self._given_embedder

    @property
    def collection_prefix(self) -> str:
        """The prefix of this store's collection names (an error for a journal-only handle)."""
        self._need_index()
        return self._index.prefix

    @property
    def client(self) -> Any:
        """The Chroma client holding the collections (shared by the handles of this process;
        an error for a journal-only handle)."""
        self._need_index()
        return self._index.client

    @property
    def journal_store(self) -> JournalStore:
        """The journal under this store (the source of truth): a
        :class:`~agentmemory.SqliteStore`, or the ``journal=`` it was opened with.
        Writes made through it directly bypass the index until the store catches up."""
        return self._journal

    @property
    def max_entry_bytes(self) -> int:
        """The content bound in UTF-8 bytes."""
        return self._journal.max_entry_bytes

    @property
    def index_cursor(self) -> int:
        """Every journal record up to this ``seq`` is applied to the index (an error for a
        journal-only handle)."""
        return self._cursor().position

    def collection_name(self, scope: str) -> str:
        """The Chroma collection name of ``scope``: ``<prefix>_<scope>``.

        Raises :class:`~agentmemory.InvalidEntryError` for a scope that is not kebab-case.
        """
        self._need_index()
        return self._index.collection_name(scope)

    # -- the store protocol: reads -------------------------------------------------------------

    def get(self, scope: str, name: str) -> Entry:
        """Return the live entry; raise :class:`~agentmemory.NotFoundError` when there is none."""
        return self._journal.get(scope, name)

    def list(self, scope: str) -> builtins.list[Entry]:
        """The live entries of ``scope`` sorted by name (UTF-8 byte order); ``[]`` when none."""
        return self._journal.list(scope)

    def scopes(self) -> builtins.list[str]:
        """The scopes holding at least one live entry, sorted (byte order); ``[]`` when none:
        the journal's (:meth:`agentmemory.SqliteStore.scopes`), so a scope whose entries were
        all forgotten is not listed, whatever collections the index holds."""
        return self._journal.scopes()

    def search(self, scopes: Sequence[str], query: str, limit: int = 0) -> builtins.list[Entry]:
        """The reference word search of :meth:`agentmemory.SqliteStore.search` (every word in
        name, meta values or content, any case), at most ``limit`` when ``limit > 0``."""
        return self._journal.search(scopes, query, limit)

    def last_written_by(
        self, session_id: str, scopes: Sequence[str]
    ) -> tuple[dict[tuple[str, str], str], builtins.list[str]]:
        """:func:`agentmemory.forget_session.last_written_by` of the journal: the live entries
        of ``scopes`` whose last record ``session_id`` wrote, and the scopes without a record
        (docs/kinds.md#forgetting-a-session)."""
        return last_written_by(self._journal, session_id, scopes)

    def superseding(self, scopes: Sequence[str]) -> builtins.list[Entry]:
        """The live entries of ``scopes`` with a ``supersedes`` meta, the journal's
        (docs/kinds.md#out-of-date-on-purpose-only)."""
        return self._journal.superseding(scopes)

    def recall(
        self,
        query: str,
        *,
        scopes: Sequence[str],
        limit: int = 5,
        mode: str = "auto",
        rerank: bool | Reranker | str | None = None,
        as_of: date | str | None = None,
        include_superseded: bool = False,
    ) -> builtins.list[Hit[Entry]]:
        """At most ``limit`` live entries of ``scopes`` ranked for ``query``, best first.

        ``mode``: ``"auto"`` and ``"hybrid"`` fuse the BM25 leg (the journal's FTS5 index) with
        the vector leg (:meth:`search_vector` of the query embedded by :attr:`embedder`) by the
        store's ``fusion`` (docs/recall.md#fusion-methods); ``"bm25"`` and ``"vector"`` return
        one leg, its raw score as ``score``. Each hit reports every leg's rank and raw score,
        and in ``method`` what made its score.

        ``rerank``: ``None`` uses the store's ``reranker`` (none by default: no rerank stage);
        ``False`` skips it; ``True`` requires it; a ``recallers.Reranker`` or a registry name
        uses that one. A reranker reorders the first ``max(limit, rerank_candidates)`` hits
        (docs/recall.md#reranking).

        Raises :class:`~agentmemory.EmptyQueryError`, :class:`~agentmemory.InvalidEntryError`
        (a scope), ``ValueError`` (``limit`` under 1), :class:`~agentmemory.errors.RecallModeError`
        (an unknown mode) and :class:`~agentmemory.errors.RerankError` (``rerank=True`` without a
        reranker), before searching; see :func:`agentmemory.recall.recall_entries`.
        """
        self._check_open()
        if self._unavailable is not None:
            asked = mode
            if mode in RECALL_MODES and mode != "bm25":
                mode = "bm25"  # the one leg there is; each hit names the one missing
            hits = recall_entries(
                self,
                query,
                scopes=scopes,
                limit=limit,
                mode=mode,
                bm25=BM25Recaller(self._journal),
                rerank=rerank,
                reranker=self._reranker,
                rerank_candidates=self._rerank_candidates,
                as_of=as_of,
                include_superseded=include_superseded,
            )
            if asked == "bm25":
                return hits
            why = {"vector": self._unavailable}
            return [replace(h, unavailable=why) for h in hits]
        if not (self._read_only and not self._embedded):
            try:
                self._follower.absorb()
            except Exception as err:  # the search still runs on what the index holds
                logger.warning(
                    "agentmemory: store %s: could not index other processes' writes before "
                    "this search (%s: %s); retried at the next call",
                    self._dir,
                    type(err).__name__,
                    err,
                )
        return recall_entries(
            self,
            query,
            scopes=scopes,
            limit=limit,
            mode=mode,
            bm25=BM25Recaller(self._journal),
            vector=VectorRecaller(self, self._embedder),
            fusion=self._fusion,
            rerank=rerank,
            reranker=self._reranker,
            rerank_candidates=self._rerank_candidates,
            as_of=as_of,
            include_superseded=include_superseded,
        )

    @property
    def reranker(self) -> Reranker | None:
        """The store's reranker (``None``: no rerank stage unless a recall passes one)."""
        return self._reranker

    @property
    def vector_unavailable(self) -> str | None:
        """Why this handle has no vector index (opened journal-only beside the holder of the
        embedded folder), or ``None`` when it has one."""
        return self._unavailable

    @property
    def server(self) -> str | None:
        """The Chroma server this handle uses, in words (``http://127.0.0.1:PORT (pid N)``
        for the folder's own, else the URL), or ``None`` (embedded, or a given client)."""
        return self._server

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
        return self._after_commit([change])[0]

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
        return self._after_commit([change])[0]

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
            return self._after_commit(changes)
        return changes

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
        self._need_index()
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
        wanted = [check_scope(s) for s in scopes]
        return nearest_live(self._index, self._journal, query, scopes=wanted, limit=limit)

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the journal and release this handle's share of the index and (embedded) of the
        folder: the last handle in the process closes the client and releases the folder lock.
        Idempotent. A user-supplied client is left open."""
        if self._closed:
            return
        self._closed = True
        if os.getpid() != self._pid:  # a forked child: the parent's client and lock are not ours
            self._shared = None
            self._opened_folder = False
            return
        shared, self._shared = self._shared, None
        try:
            if shared is not None:
                leave_index(self._index_key(), shared)
            journal = getattr(self, "_journal", None)
            if journal is not None:
                journal.close()
        finally:
            if self._opened_folder:
                self._opened_folder = False
                close_folder(self._folder())

    def __repr__(self) -> str:
        if self._unavailable is not None:
            return f"ChromaStore({self._where!r}, embedder={self._embedder.name!r}, journal only)"
        where = "embedded" if self._embedded else (self._server or "client")
        return (
            f"ChromaStore({self._where!r}, embedder={self._embedder.name!r}, "
            f"prefix={self._index.prefix!r}, {where})"
        )
