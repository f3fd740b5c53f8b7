"""The :class:`Store` protocol every store satisfies, and the write rule they share.

:func:`plan_put` and :func:`plan_forget` hold the contract of a write (check order, precondition,
what the journal record says) in one place; each store calls them under its own write lock with
the live entry it read, then persists the result however it persists things.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from datetime import date, datetime
from typing import Protocol, Self, runtime_checkable

import recallers
from recallers import (
    DEFAULT_FUSION,
    DEFAULT_RERANK_CANDIDATES,
    Fusion,
    Hit,
    HybridRecaller,
    Recaller,
    RerankedRecaller,
    Reranker,
    check_query,
    get_reranker,
)

from .entries import Change, Entry, content_hash
from .errors import AgentMemoryError, ConflictError, RecallModeError, RerankError
from .rules import check_entry, check_scope, check_size, matches
from .session import current_provenance, current_session
from .validity import InForceLeg, check_validity_meta, in_force_filter

__all__ = [
    "RECALL_MODES",
    "EmptyQueryError",
    "Store",
    "plan_forget",
    "plan_put",
    "recall_entries",
    "resolve_reranker",
    "search_entries",
]

RECALL_MODES = ("auto", "hybrid", "bm25", "vector")
"""The modes of ``Store.recall``."""


class EmptyQueryError(AgentMemoryError, recallers.EmptyQueryError):
    """A search query that is empty or only white space. Nothing was searched.

    Also a :class:`recallers.EmptyQueryError` (and so a ``ValueError``). It lives here, beside the
    store's query check, rather than in :mod:`agentmemory.errors`, so that module imports nothing
    (importing :mod:`recallers` there would pull the recall stack into every error import)."""

    def __init__(self, query: str = "") -> None:
        super().__init__(query)


@runtime_checkable
class Store(Protocol):
    """A scoped entry store with an append-only journal (docs/contract.md#the-store-protocol).

    Every implementation passes :mod:`agentmemory.testing`.
    """

    @property
    def max_entry_bytes(self) -> int:
        """The content bound ``put`` enforces, in UTF-8 bytes."""
        ...

    def get(self, scope: str, name: str) -> Entry:
        """Return the live entry; raise :class:`~agentmemory.NotFoundError` when there is none."""
        ...

    def list(self, scope: str) -> list[Entry]:
        """Return the live entries of ``scope`` sorted by name (byte order); ``[]`` for an unknown
        scope."""
        ...

    def put(
        self,
        entry: Entry,
        *,
        if_hash: str | None = None,
        based_on: str | None = None,
        session: str | None = None,
    ) -> Change:
        """Create or replace the whole entry and return the journal record it appended.

        Raises :class:`~agentmemory.InvalidEntryError`, then
        :class:`~agentmemory.EntryTooLargeError`, then :class:`~agentmemory.ConflictError`
        (``if_hash`` not the stored hash; ``""`` means "must not exist"). A refused put writes
        nothing.
        """
        ...

    def forget(self, scope: str, name: str, *, session: str | None = None) -> Change:
        """Write a tombstone keeping the last content; raise ``NotFoundError`` when not live."""
        ...

    def search(self, scopes: Sequence[str], query: str, limit: int = 0) -> builtins.list[Entry]:
        """Live entries of ``scopes`` matching ``query`` (see :func:`agentmemory.matches`), at most
        ``limit`` when ``limit > 0``."""
        ...

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
        """At most ``limit`` live entries of ``scopes`` ranked for ``query``, best first
        (docs/recall.md). ``mode``: ``"auto"`` (hybrid when the store keeps vectors, else BM25),
        ``"hybrid"``, ``"bm25"`` or ``"vector"``. Entries out of date today are left out;
        ``as_of`` (a ``date`` or ``"YYYY-MM-DD"``) judges another day, ``include_superseded``
        keeps every live entry (docs/kinds.md#out-of-date-on-purpose-only). See
        :func:`recall_entries` for the rules and errors every store shares."""
        ...

    def journal(self, after: int = 0) -> Iterator[Change]:
        """Yield every record with ``seq > after`` in order."""
        ...

    def close(self) -> None:
        """Release the store's resources; idempotent."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


def plan_put(
    entry: Entry,
    stored: Entry | None,
    *,
    limit: int,
    seq: int,
    now: datetime,
    if_hash: str | None = None,
    based_on: str | None = None,
    session: str | None = None,
    checked: bool = False,
) -> Change:
    """Check a put against the live entry ``stored`` and return the record it appends.

    Check order: invalid entry (:func:`~agentmemory.check_entry`, then the validity meta,
    docs/kinds.md#out-of-date-on-purpose-only), then size against ``limit`` (bytes), then the
    ``if_hash`` precondition (docs/contract.md#conditional-writes). ``prev`` is ``if_hash``, else ``based_on``, else
    the stored hash, else ``""``; ``replaced`` is the stored hash or ``""``. The returned record's
    entry has its own copy of meta, ``hash`` and ``updated == now``.

    ``checked``: the caller already ran :func:`~agentmemory.check_entry` on ``entry`` without a
    limit (a store checks before it takes its write lock), so only the size is checked here:
    each entry is validated once per put.

    Raises :class:`~agentmemory.InvalidEntryError`, :class:`~agentmemory.EntryTooLargeError` or
    :class:`~agentmemory.ConflictError`.
    """
    if not checked:
        check_entry(entry)
    check_validity_meta(entry)  # docs/kinds.md#out-of-date-on-purpose-only, before the size
    check_size(entry, limit, stored)
    have = stored.hash if stored is not None else ""
    if if_hash is not None and if_hash != have:
        raise ConflictError(entry.scope, entry.name, if_hash, have)
    if if_hash is not None:
        prev = if_hash
    elif based_on is not None:
        prev = based_on
    else:
        prev = have
    new = Entry(
        scope=entry.scope,
        name=entry.name,
        content=entry.content,
        meta=dict(entry.meta) if entry.meta else None,
        hash=content_hash(entry.content),
        updated=now,
        deleted=False,
    )
    where = current_provenance()
    return Change(
        seq=seq,
        entry=new,
        prev=prev,
        replaced=have,
        session=current_session(session),
        at=now,
        message=where.message,
        tool=where.tool,
        reason=where.reason,
    )


def plan_forget(stored: Entry, *, seq: int, now: datetime, session: str | None = None) -> Change:
    """Return the tombstone record for the live entry ``stored``: its last content and meta with
    ``deleted=True`` and ``updated == now``; ``prev == replaced ==`` its hash."""
    tomb = stored.copy(updated=now, deleted=True)
    where = current_provenance()
    return Change(
        seq=seq,
        entry=tomb,
        prev=stored.hash,
        replaced=stored.hash,
        session=current_session(session),
        at=now,
        message=where.message,
        tool=where.tool,
        reason=where.reason,
    )


class _Lists(Protocol):
    def list(self, scope: str) -> builtins.list[Entry]: ...


def search_entries(
    store: _Lists, scopes: Sequence[str], query: str, limit: int = 0
) -> builtins.list[Entry]:
    """The ``search`` every store shares: the live entries of ``scopes`` that
    :func:`agentmemory.matches` ``query`` (every word a case-insensitive substring of name, meta
    values or content; docs/contract.md#the-reference-search-predicate), scopes in the order given and entries by
    name (``store.list`` order), at most ``limit`` when ``limit > 0``.

    Raises :class:`~agentmemory.InvalidEntryError` for a scope that is not kebab-case (every
    scope is checked before any is read).
    """
    for s in scopes:
        check_scope(s)
    out: builtins.list[Entry] = []
    for s in scopes:
        for e in store.list(s):
            if matches(e, query):
                out.append(e)
                if 0 < limit <= len(out):
                    return out
    return out


def resolve_reranker(value: object) -> Reranker | None:
    """A store's ``reranker`` option as a reranker: ``None`` stays ``None``; a
    ``recallers.Reranker`` is kept; a ``str`` is a registry name (``"cross-encoder:<folder>"``,
    built by ``recallers.get_reranker``).

    Raises ``recallers.UnknownRerankerError`` (naming the value and the choices) for an unknown
    name, ``recallers.RerankerFolderError`` for a cross-encoder that is not a local model folder,
    and :class:`~agentmemory.RerankError` for anything else.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return get_reranker(value)
    if isinstance(value, Reranker):
        return value
    raise RerankError(
        value,
        "a reranker is a recallers.Reranker or its registry name, such as "
        "'cross-encoder:/path/to/model'",
    )


def _chosen_reranker(rerank: object, default: Reranker | None) -> Reranker | None:
    """The reranker a ``recall(rerank=...)`` uses (see :func:`recall_entries`)."""
    if rerank is None:
        return default
    if rerank is False:
        return None
    if rerank is True:
        if default is None:
            raise RerankError(
                rerank,
                "this store was opened without a reranker; open it with reranker=... "
                "(a recallers.Reranker or 'cross-encoder:<folder>'), or pass one as rerank=",
            )
        return default
    return resolve_reranker(rerank)


def recall_entries(
    store: object,
    query: str,
    *,
    scopes: Sequence[str],
    limit: int,
    mode: str,
    bm25: Recaller[Entry],
    vector: Recaller[Entry] | None = None,
    fusion: Fusion = DEFAULT_FUSION,
    rerank: object = None,
    reranker: Reranker | None = None,
    rerank_candidates: int = DEFAULT_RERANK_CANDIDATES,
    as_of: date | str | None = None,
    include_superseded: bool = False,
) -> builtins.list[Hit[Entry]]:
    """The recall rule every store shares: check the arguments, pick the legs, rank.

    A store's ``recall`` is one call; a store with vectors (``ChromaStore``) writes::

        return recall_entries(self, query, scopes=scopes, limit=limit, mode=mode,
                              bm25=BM25Recaller(self._journal),
                              vector=VectorRecaller(self, self.embedder), fusion=self._fusion)

    Checks, in order (nothing is searched when one fails):

    1. ``query`` is a ``str`` (``TypeError``) with a non-space character
       (:class:`~agentmemory.EmptyQueryError`: "query is empty; give one or more words"),
       checked here once: the legs and the hybrid get it as a :class:`recallers.Query` and do
       not check it again;
    2. ``scopes`` is a sequence of names, not one ``str`` (``TypeError``), each kebab-case
       (:class:`~agentmemory.InvalidEntryError`);
    3. ``limit`` is a positive ``int`` (``ValueError``);
    4. ``mode`` is one of :data:`RECALL_MODES`, and ``"hybrid"``/``"vector"`` only when ``vector``
       is given (:class:`~agentmemory.RecallModeError`, naming the store's class).

    5. ``rerank`` is ``None`` (the store's ``reranker``, off when it has none), ``False`` (off),
       ``True`` (the store's ``reranker``; :class:`~agentmemory.RerankError` when it has none),
       a ``recallers.Reranker`` or a reranker's registry name
       (``recallers.UnknownRerankerError`` naming the value and the choices when unknown).

    Then ``"auto"`` is ``"hybrid"`` when there is a vector leg, else ``"bm25"``; ``"bm25"`` and
    ``"vector"`` return that leg's hits (``score`` = its raw score), ``"hybrid"`` fuses both with
    :class:`recallers.HybridRecaller` (``fusion``, docs/recall.md#fusion-methods; a failing leg
    is logged and skipped). With a reranker, the first ``max(limit, rerank_candidates)`` of
    those are reordered by it (:class:`recallers.RerankedRecaller`,
    docs/recall.md#reranking). Repeated scopes count once; scopes without entries give ``[]``.

    Out of date (docs/kinds.md#out-of-date-on-purpose-only): unless ``include_superseded``, each
    leg returns only entries in force on ``as_of`` (default today, UTC), read deeper when it
    must (:class:`agentmemory.validity.InForceLeg`), so an entry out of date takes no place in
    a ranking. ``as_of`` that is not a day raises ``ValueError`` before anything is searched.
    """
    try:
        query = check_query(query)  # once: the legs and the hybrid take the Query as checked
    except recallers.EmptyQueryError:
        raise EmptyQueryError(query) from None
    if isinstance(scopes, str):
        raise TypeError(f"scopes must be a sequence of scope names, not the str {scopes!r}")
    wanted = builtins.list(dict.fromkeys(check_scope(s) for s in scopes))
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"recall limit is {limit!r}; it must be a positive integer such as 5")
    kind = type(store).__name__
    if mode not in RECALL_MODES:
        raise RecallModeError(str(mode), kind, known=RECALL_MODES)
    if mode == "auto":
        mode = "bm25" if vector is None else "hybrid"
    if mode != "bm25" and vector is None:
        raise RecallModeError(mode, kind, known=RECALL_MODES)
    if not include_superseded:
        keep = in_force_filter(store, wanted, as_of=as_of)
        bm25 = InForceLeg(bm25, keep)
        vector = InForceLeg(vector, keep) if vector is not None else None
    chosen = _chosen_reranker(rerank, reranker)
    recaller: Recaller[Entry]
    if mode == "bm25":
        recaller = bm25
    elif mode == "vector" and vector is not None:
        recaller = vector
    elif vector is not None:
        recaller = HybridRecaller([bm25, vector], fusion=fusion)
    if chosen is not None:
        recaller = RerankedRecaller(recaller, chosen, candidates=rerank_candidates)
    return recaller.recall(query, scopes=wanted, limit=limit)
