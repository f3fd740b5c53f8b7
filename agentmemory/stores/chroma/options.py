"""ChromaStoreOptions: the keyword arguments of :class:`~agentmemory.ChromaStore` and
:meth:`~agentmemory.ChromaStore.open`, one list for both (docs/storage.md#the-modules-of-the-chroma-store)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Required, TypedDict

from embedders import Embedder
from recallers import Fusion

if TYPE_CHECKING:
    from recallers import Reranker

    from .journal_source import JournalStore

__all__ = ["OPTION_NAMES", "ChromaStoreOptions"]


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
        collection_prefix: collection names are ``<prefix>_<scope>``. Default: on a server
            this folder does not own (``chroma_url``, or a ``journal``), ``am-`` and 16 hex
            digits of the journal's store id, so stores sharing a server never share a
            collection; otherwise ``"agentmemory"`` (give stores sharing one ``client`` their
            own prefixes). docs/storage.md#one-collection-per-scope.
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
            ``rerank=False``: a ``recallers.Reranker`` or its registry name
            (``"cross-encoder:<folder>"``). ``None`` (the default): no rerank stage
            (docs/recall.md#reranking).
        rerank_candidates: how many hits the reranker reads per recall, >= 1 (default 20,
            ``recallers.DEFAULT_RERANK_CANDIDATES``).
        journal: the journal to index, instead of ``path/journal.sqlite3``: any
            :class:`~agentmemory.stores.chroma.journal_source.JournalStore`, such as a ``PostgresStore`` that
            several hosts share (docs/storage.md#postgresql). Needs ``client`` (a Chroma
            server); nothing is created at ``path``, which may then be ``None``. The store
            takes it over (``close`` closes it); ``max_entry_bytes``, ``busy_timeout_s`` and
            ``clock`` are the journal's own.
        shared: with no ``client``, start the folder's own Chroma server (``chroma run``,
            :mod:`agentmemory.stores.chroma.server`) when none runs, and connect to it. Without it,
            a server the folder records as running is used anyway, else the embedded client.
            Default ``False`` (docs/storage.md#several-processes).
        chroma_url: connect to the Chroma server at this URL (``http://host:port``) instead.
        journal_only_when_held: when another process holds the embedded folder, open the
            journal alone instead of raising :class:`~agentmemory.StoreLockedError`: writes
            land in the journal and its lexical index (each :class:`~agentmemory.Change`
            carries a ``note`` that the holder indexes it), and :meth:`ChromaStore.recall`
            runs the BM25 leg alone, each hit naming the missing leg. Default ``False``.
        journal_only_when_damaged: when Chroma cannot open the embedded folder's index
            (:class:`~agentmemory.errors.IndexDamagedError`, a truncated or garbled
            ``chroma.sqlite3``), open the journal alone instead of raising, as
            ``journal_only_when_held`` does: writes land in the journal with a ``note`` naming
            the cure, and :meth:`ChromaStore.recall` runs the BM25 leg, each hit naming the
            damaged vector leg (docs/storage.md#a-damaged-vector-index). Default ``False``.
        journal_only_when_unreachable: when the Chroma server (the folder's own, or
            ``chroma_url``) runs but does not answer within ``server_timeout_s``
            (:class:`~agentmemory.errors.ChromaServerTimeoutError`: stopped, or overloaded),
            open the journal alone instead of raising, as ``journal_only_when_held`` does;
            the next writer that reaches the server indexes what was written meanwhile
            (docs/storage.md#a-stuck-server). Default ``False``.
        server_timeout_s: how long each request to a Chroma server may wait for its answer,
            in seconds; ``None`` (the default) takes ``$AGENTMEMORY_CHROMA_TIMEOUT``, else
            :data:`~agentmemory.stores.chroma.server.SERVER_TIMEOUT_S` (30). A client given as
            ``client`` keeps its own.
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
    journal_only_when_damaged: bool
    journal_only_when_unreachable: bool
    server_timeout_s: float | None
    read_only: bool


OPTION_NAMES = ChromaStoreOptions.__required_keys__ | ChromaStoreOptions.__optional_keys__
"""Every option's name (an unknown one is a ``TypeError`` naming them)."""
