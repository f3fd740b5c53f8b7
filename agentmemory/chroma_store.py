"""ChromaStore: the sqlite journal (the truth) plus a Chroma vector index of it.

The store composes five parts, one module each:

* the journal, a :class:`~agentmemory.SqliteStore` in ``dir/journal.sqlite3`` (or any
  :class:`~agentmemory.journal_store.JournalStore` given as ``journal=``, such as a
  ``PostgresStore`` several hosts share; docs/storage.md#postgresql): every read of the store
  protocol, every write, and the index's own state (``store_state``);
* the vectors, a :class:`~agentmemory.chroma_index.ChromaIndex`: one collection per scope, one
  vector per live entry (docs/storage.md#the-chroma-index);
* :class:`~agentmemory.index_sync.IndexSync`: makes the index hold the journal's live state of
  given keys, and compares the two (:meth:`ChromaStore.verify`);
* the :class:`~agentmemory.index_cursor.IndexCursor`: how far the index has applied the journal
  (docs/storage.md#the-index-cursor);
* the process-wide registry (:mod:`agentmemory.chroma_registry`): one embedded client and folder
  lock per folder, one cursor per index, shared by the handles of a process
  (docs/storage.md#locks).

This module holds the rules between them: which embedder may open an index
(docs/storage.md#the-embedder-fingerprint), the write path (commit to the journal, then bring
the index in line with the journal's live state of the keys written, then mark the records
applied), replay and catch-up, vector search checked against the journal, repair and reindex. For several processes, see docs/storage.md#several-processes.
"""

from __future__ import annotations

import builtins
import logging
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Required, Self, TypedDict, Unpack

import numpy as np
import numpy.typing as npt

from embedders import Embedder, same_vectors
from recallers import (
    DEFAULT_FUSION,
    DEFAULT_RERANK_CANDIDATES,
    BM25Recaller,
    Fusion,
    Hit,
    VectorRecaller,
)

from .chroma_files import chroma_copies, scrub_chroma_folder
from .chroma_index import DEFAULT_COLLECTION_PREFIX, ChromaIndex, check_prefix
from .chroma_registry import (
    CHROMA_FOLDER,
    IndexKey,
    SharedIndex,
    close_folder,
    join_index,
    leave_index,
    open_folder,
)
from .entries import Change, Entry
from .erasure import ErasureCheck, PurgeReceipt, check_purge
from .errors import (
    AgentMemoryError,
    ChromaServerError,
    EmbedderMismatchError,
    IndexOutOfStepWarning,
    IndexWriteError,
    StoreLockedError,
)
from .folder_lock import DEFAULT_LOCK_TIMEOUT_S
from .index_cursor import IndexCursor
from .index_sync import IndexReport, IndexSync, embedding_text, text_hash
from .journal_store import JournalStore
from .mem_store import utc_now
from .rules import DEFAULT_MAX_ENTRY_BYTES, check_scope
from .sqlite_store import DEFAULT_BUSY_TIMEOUT_S, SqliteStore
from .store import RECALL_MODES, recall_entries, resolve_reranker

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

CATCH_UP_AFTER = 64
"""How many applied records may wait behind an unapplied one (another process's write, or a
write whose index update failed) before a write replays the gap itself."""

_STATE_NS = "chroma-index"

_Key = tuple[str, str]


class ChromaStoreOptions(TypedDict, total=False):
    """The keyword arguments of :class:`ChromaStore` and :meth:`ChromaStore.open` (only
    ``embedder`` is required).

    Keys:
        embedder: makes the vectors; its ``fingerprint`` is recorded with a new store. An
            existing store takes its recorded embedder or one that gives the same vectors
            (:func:`embedders.same_vectors`: the same model through the other runtime), and
            keeps its recorded fingerprint.
        max_entry_bytes: the content bound in UTF-8 bytes (default 4096).
        client: a Chroma client to hold the collections (``chromadb.HttpClient`` for a server);
            ``None`` (the default) opens the embedded ``PersistentClient`` in ``path/chroma``,
            owned by this process.
        collection_prefix: collection names are ``<prefix>_<scope>`` (default
            ``"agentmemory"``); give stores sharing one Chroma server different prefixes.
        reindex: rebuild the index from the journal with ``embedder`` (needed to switch
            embedders; embeds every live entry). Default ``False``.
        lock_timeout_s: how long to wait for another process's hold on an embedded folder, in
            seconds (default 2).
        busy_timeout_s: how long a journal write waits for another writer, in seconds
            (default 5).
        clock: the time stamped on writes (for tests; default the UTC wall clock).
        fusion: the parameters of :meth:`ChromaStore.recall`'s hybrid (``recallers.Fusion``,
            docs/recall.md#fusion-methods; default ``recallers.DEFAULT_FUSION``).
        reranker: reorders the first ``rerank_candidates`` hits of every
            :meth:`ChromaStore.recall` (``memory_search`` too) unless a recall says
            ``rerank=False``: a ``rerankers.Reranker`` or its registry name
            (``"cross-encoder:<folder>"``). ``None`` (the default): no rerank stage
            (docs/recall.md#reranking).
        rerank_candidates: how many hits the reranker reads per recall, >= 1 (default 20,
            ``recallers.DEFAULT_RERANK_CANDIDATES``).
        journal: the journal to index, instead of ``path/journal.sqlite3``: any
            :class:`~agentmemory.journal_store.JournalStore`, such as a ``PostgresStore`` that
            several hosts share (docs/storage.md#postgresql). Needs ``client`` (a Chroma
            server); nothing is created at ``path``, which may then be ``None``. The store
            takes it over (``close`` closes it); ``max_entry_bytes``, ``busy_timeout_s`` and
            ``clock`` are the journal's own.
        shared: with no ``client``, start the folder's own Chroma server (``chroma run``,
            :mod:`agentmemory.chroma_server`) when none runs, and connect to it. Without it,
            a server the folder records as running is used anyway, else the embedded client.
            Default ``False`` (docs/storage.md#several-processes).
        chroma_url: connect to the Chroma server at this URL (``http://host:port``) instead.
        journal_only_when_held: when another process holds the embedded folder, open the
            journal alone instead of raising :class:`~agentmemory.StoreLockedError`: writes
            land in the journal and its lexical index (each :class:`~agentmemory.Change`
            carries a ``note`` that the holder indexes it), and :meth:`ChromaStore.recall`
            runs the BM25 leg alone, each hit naming the missing leg. Default ``False``.
        read_only: open to read: no replay of journal records into the index and no catch-up
            on search (another process owns that work). Writes still index themselves.
            Default ``False``.
    """

    embedder: Required[Embedder]
    max_entry_bytes: int
    client: Any
    collection_prefix: str
    reindex: bool
    lock_timeout_s: float
    busy_timeout_s: float
    clock: Callable[[], datetime]
    fusion: Fusion
    journal: JournalStore
    reranker: Reranker | str | None
    rerank_candidates: int
    shared: bool
    chroma_url: str | None
    journal_only_when_held: bool
    read_only: bool


_OPTION_NAMES = ChromaStoreOptions.__required_keys__ | ChromaStoreOptions.__optional_keys__


class ChromaStore:
    """A :class:`~agentmemory.Store` with vector search: a :class:`~agentmemory.SqliteStore`
    journal plus a Chroma index holding one vector per live entry (see the module docstring).

    ``ChromaStore(path, **options)`` is the same as :meth:`open` (the options are
    :class:`ChromaStoreOptions`). Safe for several threads; one process per embedded folder
    (docs/storage.md#several-processes). Every method of the store protocol reads and writes
    the journal; ``put``, ``forget`` and ``put_many`` also update the index before they return.
    """

    index_type: ClassVar[type[ChromaIndex]] = ChromaIndex
    """The class that talks to Chroma. A subclass of the store may set a subclass of
    :class:`~agentmemory.chroma_index.ChromaIndex` here (a test's, to count Chroma calls or to
    fail them between the journal commit and the index update); each handle makes its own."""

    def __init__(
        self, path: str | os.PathLike[str] | None, **options: Unpack[ChromaStoreOptions]
    ) -> None:
        unknown = sorted(set(options) - _OPTION_NAMES)
        if unknown:
            raise TypeError(
                f"ChromaStore got unexpected keyword arguments {', '.join(unknown)}; it takes "
                f"{', '.join(sorted(_OPTION_NAMES))}"
            )
        embedder = options.get("embedder")
        if not isinstance(embedder, Embedder):
            raise TypeError(
                f"embedder is a {type(embedder).__name__}, not an Embedder (name, dim, "
                "fingerprint, embed); build one with embedders.get(name)"
            )
        client = options.get("client")
        prefix = options.get("collection_prefix", DEFAULT_COLLECTION_PREFIX)
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
        self._embedder = embedder
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
        self._holder = ""  # the process holding the embedded folder, in words (journal-only)
        check_prefix(prefix)  # before anything is opened
        if client is None:
            client = self._server_client(options)
        self._embedded = client is None
        kind = "embedded" if self._embedded else "client"
        self._state_keys = {
            k: f"{_STATE_NS}:{kind}:{prefix}:{k}" for k in ("cursor", "embedder", "lost")
        }
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
                self._holder = held.holder
                self._unavailable = (
                    f"the vector index of {self._where} is held by {held.holder} (an embedded "
                    "Chroma folder is opened by one process at a time)"
                )
        try:
            if self._unavailable is None:
                self._index = self.index_type(client, prefix)
            self._journal: JournalStore = journal or SqliteStore(
                self._folder() / JOURNAL_FILE,
                max_entry_bytes=options.get("max_entry_bytes", DEFAULT_MAX_ENTRY_BYTES),
                busy_timeout_s=options.get("busy_timeout_s", DEFAULT_BUSY_TIMEOUT_S),
                clock=options.get("clock", utc_now),
            )
        except BaseException:
            if self._opened_folder:
                close_folder(self._folder())
            raise
        if self._unavailable is not None:
            return
        index = self._index
        try:
            self._batch = max(1, min(SYNC_CHUNK, index.max_batch_size()))
            self._attach(options.get("reindex", False))
        except BaseException:
            self.close()
            raise

    def _server_client(self, options: ChromaStoreOptions) -> Any:
        """The HttpClient of ``chroma_url``, or of the folder's own server (started when
        ``shared`` and none runs); ``None`` for the embedded client."""
        from .chroma_server import connect_url, folder_client

        url = options.get("chroma_url")
        if url:
            self._server = url
            return connect_url(url)
        if self._dir is None:  # journal= over another backend: the client is given
            return None
        found = folder_client(self._dir, start=options.get("shared", False))
        if found is None:
            return None
        client, record = found
        self._server = record.describe()
        return client

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
        :class:`~agentmemory.IndexOutOfStepWarning`, and keeps warning until ``reindex()`` or
        a clean ``repair()``; the store works meanwhile, and vector search misses those entries.

        Raises:
            TypeError: ``embedder`` is missing or not an :class:`embedders.Embedder`, or an
                option that is not one of :class:`ChromaStoreOptions`.
            ValueError: a bad ``collection_prefix`` or ``max_entry_bytes``, or
                ``rerank_candidates`` under 1.
            rerankers.UnknownRerankerError: ``reranker`` names no registered reranker (the
                message names the value and the choices); ``rerankers.RerankerFolderError``:
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
            stored = self._journal.get_state(self._state_keys["embedder"])
            if stored is not None and not reindex and not same_vectors(stored, given):
                raise EmbedderMismatchError(self._where, stored, given)
            if stored is None and not reindex:
                # A folder's first index on a server (or embedded after one) takes the embedder
                # of the folder's other index: one folder, one embedder.
                sibling = self._journal.get_state(self._sibling_embedder_key())
                if sibling is not None and not same_vectors(sibling, given):
                    raise EmbedderMismatchError(self._where, sibling, given)
            cursor = IndexCursor.load(self._journal, self._state_keys["cursor"])
            if stored is None:
                self._journal.set_state(self._state_keys["embedder"], given)
            return SharedIndex(
                fingerprint=given if stored is None or reindex else stored, cursor=cursor
            )

        self._shared, fresh = join_index(self._index_key(), check=check, create=create)
        self._sync = IndexSync(
            self._journal,
            self._index,
            self._embedder,
            batch=self._batch,
            lock=self._shared.write_lock,
            where=self._where,
        )
        if reindex:
            self.reindex()
        elif fresh and not (self._read_only and not self._embedded):
            # a reader on a server leaves indexing to the writers (docs/storage.md#reads-do-not-write)
            self._check_lost()
            self._replay()
        self._finish_purge()

    def _sibling_embedder_key(self) -> str:
        """The embedder state key of this folder's other kind of index (embedded or client)."""
        kind = "client" if self._embedded else "embedded"
        return f"{_STATE_NS}:{kind}:{self._index.prefix}:embedder"

    def _check_lost(self) -> None:
        """Warn when the index lacks scopes the journal has live entries in (and remember it)."""
        cursor = self._cursor().position
        lost_key = self._state_keys["lost"]
        lost = self._journal.get_state(lost_key)
        if not lost and cursor > 0:
            absent = sorted(set(self._journal.scopes()) - set(self._index.scopes()))
            missing = self._journal.scopes_written_by(cursor, absent) if absent else []
            if missing:
                lost = ", ".join(missing)
                self._journal.set_state(lost_key, lost)
        if lost:
            where = (
                f"its Chroma folder {self._folder() / CHROMA_FOLDER}"
                if self._embedded
                else "its collections on the Chroma server"
            )
            warnings.warn(
                f"agentmemory: store {self._where}: the vector index has lost scopes {lost} "
                f"({self._journal.live_count()} live entries in the journal; was {where} "
                "deleted?); vector search misses them until you call reindex() or repair() "
                "(both embed what is missing), or open the store with reindex=True",
                IndexOutOfStepWarning,
                stacklevel=2,
            )

    def _replay(self) -> None:
        """Apply every journal record after the cursor (last state per key wins)."""
        records = list(self._journal.journal(self._cursor().position))
        if not records:
            return
        self._sync.sync([(c.entry.scope, c.entry.name) for c in records], check_index=True)
        self._mark_applied(c.seq for c in records)

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

    def _folder(self) -> Path:
        if self._dir is None:
            raise AgentMemoryError(
                f"agentmemory: store {self._where} has no folder: it indexes the journal it was "
                "given (journal=) on a Chroma server"
            )
        return self._dir

    @property
    def embedder(self) -> Embedder:
        """The embedder that makes this store's vectors (and should embed its queries)."""
        return self._embedder

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

    def search(self, scopes: Sequence[str], query: str, limit: int = 0) -> builtins.list[Entry]:
        """The reference word search of :meth:`agentmemory.SqliteStore.search` (every word in
        name, meta values or content, any case), at most ``limit`` when ``limit > 0``."""
        return self._journal.search(scopes, query, limit)

    def last_written_by(
        self, session_id: str, scopes: Sequence[str]
    ) -> tuple[dict[tuple[str, str], str], builtins.list[str]]:
        """See :meth:`agentmemory.SqliteStore.last_written_by`: the journal's index when it has
        one, else one pass over the journal (docs/kinds.md#forgetting-a-session)."""
        finder = getattr(self._journal, "last_written_by", None)
        if callable(finder):
            found: tuple[dict[tuple[str, str], str], builtins.list[str]] = finder(
                session_id, scopes
            )
            return found
        wanted = set(scopes)
        last: dict[tuple[str, str], Change] = {}
        seen: set[str] = set()
        for c in self._journal.journal():
            seen.add(c.entry.scope)
            if c.entry.scope in wanted:
                last[(c.entry.scope, c.entry.name)] = c
        live = {
            k: c.entry.hash
            for k, c in last.items()
            if c.session == session_id and not c.entry.deleted
        }
        return live, [s for s in dict.fromkeys(scopes) if s not in seen]

    def superseding(self, scopes: Sequence[str]) -> builtins.list[Entry]:
        """The live entries of ``scopes`` with a ``supersedes`` meta: the journal's index when
        it has one, else its lists (docs/kinds.md#out-of-date-on-purpose-only)."""
        finder = getattr(self._journal, "superseding", None)
        if callable(finder):
            found: builtins.list[Entry] = finder(scopes)
            return found
        return [
            e
            for s in dict.fromkeys(scopes)
            for e in self._journal.list(s)
            if (e.meta or {}).get("supersedes")
        ]

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
        ``False`` skips it; ``True`` requires it; a ``rerankers.Reranker`` or a registry name
        uses that one. A reranker reorders the first ``max(limit, rerank_candidates)`` hits
        (docs/recall.md#reranking).

        Raises :class:`~agentmemory.EmptyQueryError`, :class:`~agentmemory.InvalidEntryError`
        (a scope), ``ValueError`` (``limit`` under 1), :class:`~agentmemory.RecallModeError`
        (an unknown mode) and :class:`~agentmemory.RerankError` (``rerank=True`` without a
        reranker), before searching; see :func:`agentmemory.store.recall_entries`.
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
            )
            if asked == "bm25":
                return hits
            why = {"vector": self._unavailable}
            return [replace(h, unavailable=why) for h in hits]
        if not (self._read_only and not self._embedded):
            try:
                self._absorb()
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

    def forget_session(
        self, session_id: str, scopes: Sequence[str], *, reason: str | None = None
    ) -> builtins.list[Change]:
        """Tombstone the live entries of ``scopes`` whose last record ``session_id`` wrote, one
        journal record each: :func:`agentmemory.forget_session` on this store
        (docs/kinds.md#forgetting-a-session). Refuses an empty or unknown scope list and an
        empty session id with :class:`~agentmemory.InvalidEntryError`, writing nothing."""
        from .forget_session import forget_session

        return forget_session(self, session_id, scopes, reason=reason)

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

    def _after_commit(self, changes: Sequence[Change]) -> builtins.list[Change]:
        """Bring the index in line with the journal for the keys just written, then mark their
        records applied, then index what other processes wrote (:meth:`_absorb`); on failure,
        keep them for the next catch-up and raise IndexWriteError. Journal-only, return the
        records with a ``note`` that the holder indexes them."""
        if self._unavailable is not None:
            note = (
                "the write is in the journal and its lexical index; the vector index is brought "
                f"up to date by the process holding it ({self._holder})"
            )
            return [replace(c, note=note) for c in changes]
        cursor = self._cursor()
        # The journal state just committed, last record per key: the index is written from it
        # without reading the rows back, and checked against the journal once after writing.
        known = {(c.entry.scope, c.entry.name): c.entry for c in changes}
        try:
            self._sync.sync(builtins.list(known), check_index=False, known=known)
        except Exception as err:
            cursor.mark_failed(c.seq for c in changes)
            cause: BaseException = err
            if self._server is not None:
                cause = ChromaServerError(self._server, self._server_down(err))
            raise IndexWriteError(self._where, changes, cause) from cause
        self._mark_applied(c.seq for c in changes)
        try:
            self._catch_up()
            self._absorb()
        except Exception as err:  # the caller's own write succeeded; say so, and go on
            logger.warning(
                "agentmemory: store %s: index catch-up failed (%s: %s); retried later",
                self._where,
                type(err).__name__,
                err,
            )
        return builtins.list(changes)

    def _server_down(self, err: BaseException) -> str:
        """What to do when the server failed a request with ``err``."""
        how = (
            f"restart it with 'agentmemory server start --path {self._dir}'"
            if self._server is not None and self._server.endswith(")")
            else "restart it"
        )
        return (
            f"the request failed ({type(err).__name__}: {err}); {how}; the journal keeps every "
            "write and the index catches up from it once the server answers"
        )

    def _absorb(self) -> None:
        """Index the journal records this index has not applied (other processes' writes, or
        failed updates), when the journal has any: one ``max(seq)`` read when it has none, so
        every search and write can afford it (docs/storage.md#several-processes)."""
        cursor = self._cursor()
        top = self._journal.last_seq()
        if top <= cursor.position:
            return
        plan = cursor.catch_up(after=0, force=True)
        if plan is None:  # pragma: no cover - force always plans
            return
        records = [
            c for c in self._journal.journal(plan.start) if c.seq <= top and c.seq not in plan.done
        ]
        if records:
            self._sync.sync([(c.entry.scope, c.entry.name) for c in records], check_index=True)
            self._mark_applied(c.seq for c in records)

    # -- the index cursor --------------------------------------------------------------------

    # -- purge (docs/contract.md#purge-erasing-an-entry-for-good) ----------------------------

    def purge(
        self, scope: str, name: str, *, reason: str, session: str | None = None
    ) -> PurgeReceipt:
        """Erase every content ``scope/name`` ever held, from the journal and the index.

        The journal purge is :meth:`agentmemory.SqliteStore.purge` (tombstone when live,
        records redacted, lexical row removed, ``purged`` record, file vacuumed and its WAL
        truncated). Then the entry's vector is deleted and the scope's collection rebuilt
        (Chroma keeps deleted vectors in its segment files and write log until the collection
        goes), and, for an embedded folder, ``chroma.sqlite3`` is vacuumed with
        ``secure_delete`` and segment folders of dropped collections are removed
        (docs/storage.md#purge-and-the-files). The scope is recorded as pending in the journal's
        state first, so a process killed midway has the next open finish the index part.

        Raises:
            InvalidEntryError: ``scope`` or ``name`` not kebab-case, ``reason`` blank or over
                1024 bytes; nothing is written.
            NotFoundError: the journal has no record of ``scope/name``.
            StoreLockedError: another writer held the journal past ``busy_timeout_s``.
        """
        self._check_open()
        check_purge(scope, name, reason)
        pending = self._state_keys["cursor"].rpartition(":")[0] + ":purge"
        journal_purge = getattr(self._journal, "purge", None)
        if journal_purge is None:
            raise AgentMemoryError(
                f"agentmemory: store {self._where}: its journal ({type(self._journal).__name__}) "
                "cannot purge yet; only a SqliteStore journal can"
            )
        self._journal.set_state(pending, scope)
        receipt: PurgeReceipt = journal_purge(scope, name, reason=reason, session=session)
        vectors = len(self._index.held(scope, [name]))
        written = [c for c in (receipt.tombstone, receipt.record) if c is not None]
        self._after_commit(written)
        rewritten = self._scrub_index(scope)
        self._journal.set_state(pending, "")
        return PurgeReceipt(
            scope=receipt.scope,
            name=receipt.name,
            reason=receipt.reason,
            record=receipt.record,
            tombstone=receipt.tombstone,
            redacted=receipt.redacted,
            index_rows=receipt.index_rows,
            vectors=vectors,
            rewritten=(*receipt.rewritten, *rewritten),
        )

    @property
    def can_purge(self) -> bool:
        """Whether :meth:`purge` works here: the journal has a purge (a SqliteStore journal
        does; a PostgresStore journal does not yet)."""
        return hasattr(self._journal, "purge")

    def _scrub_index(self, scope: str) -> builtins.list[str]:
        """Rebuild ``scope``'s collection, then vacuum the embedded folder's sqlite and remove
        orphaned segment folders; return what was done."""
        shared = self._shared_index()
        with shared.write_lock:
            kept = self._index.rebuild(scope)
            out = [f"Chroma collection {self.collection_name(scope)} rebuilt ({kept} vectors)"]
            if not self._embedded:
                out.append("Chroma server: its files are not reachable from this process")
                return out
            assert self._dir is not None  # an embedded index has a folder
            out += scrub_chroma_folder(self._dir / CHROMA_FOLDER)
        return out

    def _finish_purge(self) -> None:
        """Finish the index part of a purge a killed process left (the journal part finished
        or rolled back when the journal opened)."""
        pending = self._state_keys["cursor"].rpartition(":")[0] + ":purge"
        scope = self._journal.get_state(pending)
        if not scope:
            return
        self._scrub_index(scope)
        report = self.repair()
        self._journal.set_state(pending, "")
        logger.warning(
            "agentmemory: store %s: finished the index part of an interrupted purge in scope "
            "%s (collection rebuilt, %s)",
            self._dir,
            scope,
            "index in step" if report.ok else str(report),
        )

    @property
    def recovery(self) -> str | None:
        """What opening the journal did about an interrupted purge (see
        :attr:`agentmemory.SqliteStore.recovery`), or ``None``."""
        found = getattr(self._journal, "recovery", None)
        return found if isinstance(found, str) else None

    def verify_erased(self, scope: str, name: str) -> ErasureCheck:
        """Check that no copy of ``scope/name``'s content remains: the journal's places
        (:meth:`agentmemory.SqliteStore.verify_erased`), the entry's vector, and for an
        embedded folder ``chroma.sqlite3``'s rows for the vector id (embeddings, write log),
        its free pages, and segment folders of dropped collections."""
        self._check_open()
        journal_check = getattr(self._journal, "verify_erased", None)
        if journal_check is None:
            raise AgentMemoryError(
                f"agentmemory: store {self._where}: its journal ({type(self._journal).__name__}) "
                "cannot check erasure yet; only a SqliteStore journal can"
            )
        base: ErasureCheck = journal_check(scope, name)
        looked = [*base.looked, f"vector of {scope}/{name} in {self.collection_name(scope)}"]
        found = list(base.found)
        if self._index.held(scope, [name]):
            found.append("a vector in the index")
        if self._embedded:
            assert self._dir is not None
            folder = self._dir / CHROMA_FOLDER
            looked += [
                f"{folder.name}/chroma.sqlite3 rows for {scope}/{name} (embeddings, "
                "embeddings_queue) and free pages",
                f"segment folders under {folder.name}/ not in its segments table",
            ]
            found += chroma_copies(folder, f"{scope}/{name}")
        return ErasureCheck(scope, name, tuple(looked), tuple(found))

    def _mark_applied(self, seqs: Iterable[int]) -> None:
        """Record ``seqs`` as applied; when the cursor advanced, hand it to the journal to
        persist with its next write transaction (or at close), so a write costs one
        transaction, not two: a cursor persisted late only means more replay at the next
        open (docs/storage.md#persisting-the-cursor)."""
        if self._cursor().mark_applied(seqs):
            self._save_cursor(deferred=True)

    def _save_cursor(self, *, deferred: bool = False) -> None:
        """Persist the cursor (``deferred``: with the journal's next write transaction); a
        failure is logged: a cursor persisted late only means more replay at the next open."""
        cursor = self._cursor()
        try:
            cursor.save(self._journal, deferred=deferred)
        except Exception as err:
            logger.warning(
                "agentmemory: store %s: could not record the index cursor %d (%s: %s); "
                "the next open replays from the last one recorded",
                self._where,
                cursor.position,
                type(err).__name__,
                err,
            )

    def _reset_cursor(self, seq: int) -> None:
        """Every record up to ``seq`` is now applied (after a rebuild or a clean repair)."""
        self._cursor().reset(seq)
        self._save_cursor()

    def _catch_up(self, *, force: bool = False) -> None:
        """Apply the records the cursor is stuck behind (failed index updates, or other
        processes' writes), when there are failures or many applied records wait behind them.
        Errors are logged, not raised (unless ``force``): the caller's own write succeeded."""
        plan = self._cursor().catch_up(after=CATCH_UP_AFTER, force=force)
        if plan is None:
            return
        top = self._journal.last_seq() if force else plan.top
        records: builtins.list[Change] = []
        for c in self._journal.journal(plan.start):
            if c.seq > top:
                break
            if c.seq not in plan.done:
                records.append(c)
        if not records:
            return
        try:
            self._sync.sync([(c.entry.scope, c.entry.name) for c in records], check_index=True)
        except Exception as err:
            if force:
                raise
            logger.warning(
                "agentmemory: store %s: could not catch the vector index up on %d journal "
                "records after seq %d (%s: %s); it is retried at the next write and open",
                self._where,
                len(records),
                plan.start,
                type(err).__name__,
                err,
            )
            return
        self._mark_applied(c.seq for c in records)

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
            found = self._index.query(scope, query, want)
            live = self._journal.live_many([(scope, n.name) for n in found])
            good: builtins.list[tuple[Entry, float]] = []
            for n in found:
                e = live.get((scope, n.name))
                if e is None:
                    continue
                if n.text_hash is not None and n.text_hash != text_hash(e):
                    continue
                good.append((e, 1.0 - n.distance))
            if len(good) >= limit or len(found) < want:
                return good[:limit]
            want = want * 2 + (limit - len(good))

    # -- checking and rebuilding ---------------------------------------------------------------

    def verify(self) -> IndexReport:
        """Compare the index with the journal; returns an :class:`IndexReport`.

        Reads every live entry and every vector's metadata (seconds at 100k entries). Writes
        made while it runs may show up as missing or stale. Changes nothing.
        """
        self._check_open()
        self._need_index()
        return self._sync.compare(cursor=self._cursor().position)

    def repair(self, *, keep: Iterable[str] = ()) -> IndexReport:
        """Apply what the cursor has not seen, then fix every key :meth:`verify` finds missing,
        stale or extra (embedding only those). Returns the report of a second verify; when it
        is clean, the cursor moves to the journal's end and the lost-index warning stops.

        ``keep``: extra keys (``"scope/name"``) whose vectors stay, for example those of entries
        the journal never had (``SqliteStore.never_journaled``), kept as evidence that the
        journal lost records (docs/storage.md#a-journal-shorter-than-its-index).

        Raises what the embedder or Chroma raise; the index is then no worse than before.
        """
        self._check_open()
        self._need_index()
        head = self._journal.last_seq()
        self._catch_up(force=True)
        found = self.verify()
        kept = set(keep)
        wrong = [*found.missing, *found.stale, *(k for k in found.extra if k not in kept)]
        if wrong:
            pairs: builtins.list[_Key] = []
            for key in wrong:
                scope, _, name = key.partition("/")
                pairs.append((scope, name))
            self._sync.sync(pairs, check_index=False)
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
        self._need_index()
        shared = self._shared_index()
        with shared.write_lock:
            head = self._journal.last_seq()
            shared.cursor.rewind(self._journal)
            self._journal.set_state(self._state_keys["embedder"], self._embedder.fingerprint)
            shared.fingerprint = self._embedder.fingerprint
            for scope in self._index.scopes():
                self._index.drop(scope)
        count = 0
        for batch in self._journal.iter_live(self._batch):
            self._sync.sync([(e.scope, e.name) for e in batch], check_index=False)
            count += len(batch)
        self._reset_cursor(head)
        self._clear_lost()
        return count

    def _clear_lost(self) -> None:
        if self._journal.get_state(self._state_keys["lost"]):
            self._journal.set_state(self._state_keys["lost"], "")

    # -- lifetime ----------------------------------------------------------------------------

    def _need_index(self) -> None:
        """Refuse an index operation on a journal-only handle, saying why."""
        if self._unavailable is not None:
            raise AgentMemoryError(
                f"agentmemory: store {self._where}: {self._unavailable}; this process opened the "
                "journal alone, so it cannot search, check or rebuild the vectors: do it in the "
                "holder, or after it closes, or run 'agentmemory server start' so that every "
                "process shares one Chroma server"
            )

    def _shared_index(self) -> SharedIndex:
        self._need_index()
        shared = self._shared
        if shared is None:
            raise AgentMemoryError(
                f"agentmemory: store {self._where} is closed; open a new ChromaStore to use it"
            )
        return shared

    def _cursor(self) -> IndexCursor:
        return self._shared_index().cursor

    def _check_open(self) -> None:
        if self._closed:
            raise AgentMemoryError(
                f"agentmemory: store {self._where} is closed; open a new ChromaStore to use it"
            )
        if self._embedded and os.getpid() != self._pid:
            raise AgentMemoryError(
                f"agentmemory: store {self._where} was opened by process {self._pid}, and this "
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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._unavailable is not None:
            return f"ChromaStore({self._where!r}, embedder={self._embedder.name!r}, journal only)"
        where = "embedded" if self._embedded else (self._server or "client")
        return (
            f"ChromaStore({self._where!r}, embedder={self._embedder.name!r}, "
            f"prefix={self._index.prefix!r}, {where})"
        )
