"""The recall rule every store shares, in one place: the query checked once, the scopes checked
once, the validity leg, the reranker chosen, the legs picked and ranked.

A store's ``recall`` is one call of :func:`recall_entries` with its legs (docs/recall.md);
:func:`search_entries` is the reference ``search`` (docs/contract.md#the-reference-search-predicate).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from datetime import date
from typing import Protocol

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
    ranked_hits,
)

from .entries import Entry
from .errors import EmptyQueryError, RecallModeError, RerankError
from .rules import check_scope, matches
from .validity import MAX_WIDENING, in_force_filter

__all__ = [
    "RECALL_MODES",
    "InForceLeg",
    "recall_entries",
    "resolve_reranker",
    "search_entries",
]

RECALL_MODES = ("auto", "hybrid", "bm25", "vector")
"""The modes of ``Store.recall``."""


class _Lists(Protocol):
    def list(self, scope: str) -> builtins.list[Entry]: ...


def search_entries(
    store: _Lists, scopes: Sequence[str], query: str, limit: int = 0
) -> builtins.list[Entry]:
    """The ``search`` every store shares: the live entries of ``scopes`` that
    :func:`agentmemory.rules.matches` ``query`` (every word a case-insensitive substring of name, meta
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
    and :class:`~agentmemory.errors.RerankError` for anything else.
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
       is given (:class:`~agentmemory.errors.RecallModeError`, naming the store's class).

    5. ``rerank`` is ``None`` (the store's ``reranker``, off when it has none), ``False`` (off),
       ``True`` (the store's ``reranker``; :class:`~agentmemory.errors.RerankError` when it has none),
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
    must (:class:`InForceLeg`), so an entry out of date takes no place in
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


class InForceLeg:
    """A recall leg that returns only hits a predicate keeps, as if the others were not indexed.

    It asks the leg it wraps for ``limit`` hits and, while some were dropped and the leg had
    more, asks again 4 times as deep, up to :data:`MAX_WIDENING` times ``limit``; the ranks it
    reports are those among the kept hits, from 1, and scores are the leg's own.
    """

    def __init__(self, leg: Recaller[Entry], keep: Callable[[Entry], bool]) -> None:
        self._leg = leg
        self._keep = keep

    @property
    def name(self) -> str:
        """The wrapped leg's name (``"bm25"``, ``"vector"``)."""
        return self._leg.name

    def recall(self, query: str, *, scopes: Sequence[str], limit: int) -> list[Hit[Entry]]:
        """At most ``limit`` kept hits of ``scopes``, best first (the leg's errors propagate)."""
        depth = limit
        while True:
            hits = self._leg.recall(query, scopes=scopes, limit=depth)
            kept = [h for h in hits if self._keep(h.entry)]
            if len(kept) >= limit or len(hits) < depth or depth >= limit * MAX_WIDENING:
                break
            depth = min(depth * 4, limit * MAX_WIDENING)
        return ranked_hits(self.name, [(h.entry, _raw(h, self.name)) for h in kept[:limit]])


def _raw(hit: Hit[Entry], leg: str) -> float:
    return hit.legs[leg].score if leg in hit.legs else hit.score
