"""What a recall returns: :class:`Hit`, one ranked document with the detail of each leg."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Generic, TypeVar

__all__ = ["LEG_BM25", "LEG_VECTOR", "Hit", "LegScore", "ranked_hits"]

LEG_BM25 = "bm25"
"""Key of the lexical leg in :attr:`Hit.legs`."""

LEG_VECTOR = "vector"
"""Key of the vector leg in :attr:`Hit.legs`."""

D = TypeVar("D")


@dataclass(frozen=True, slots=True)
class LegScore:
    """Where one leg put a document.

    Attributes:
        rank: 1-based rank of the document in that leg's list (1 is its best).
        score: the leg's raw score: the Okapi BM25 score (unitless, > 0) for ``"bm25"``, the
            cosine similarity (-1 to 1) for ``"vector"``.
    """

    rank: int
    score: float


def _no_legs() -> Mapping[str, LegScore]:
    return MappingProxyType({})


def _nothing_missing() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Hit(Generic[D]):
    """One ranked document.

    Attributes:
        entry: the document (for a store, the live :class:`agentmemory.Entry`).
        score: the score the list is ordered by, in the units of :attr:`method`: a single leg's
            raw score (BM25, or cosine), or a hybrid's fused score (docs/recall.md#fusion-methods).
        legs: for each leg that returned the document, its rank and raw score, keyed
            ``"bm25"`` and ``"vector"``; a leg that did not return it is absent. Read-only.
        method: what made :attr:`score`: ``"bm25"`` or ``"vector"`` (one leg's raw score),
            a fusion method (``"rrf"``, ``"min-max"``, ``"z-score"``, ``"theoretical-min-max"``),
            or ``"rerank:<reranker name>"`` (a reranker's score); ``""`` when not said.
        unavailable: each leg that could not run, keyed as ``legs``, with why (for a store
            opened journal-only beside the process holding its vector index:
            ``{"vector": "the vector index of ... is held by pid 4242 ..."}``); empty when every
            leg ran.
    """

    entry: D
    score: float
    legs: Mapping[str, LegScore] = field(default_factory=_no_legs)
    method: str = ""
    unavailable: Mapping[str, str] = field(default_factory=_nothing_missing)


def ranked_hits(leg: str, ranked: Sequence[tuple[D, float]]) -> list[Hit[D]]:
    """Turn one leg's ``(document, raw score)`` pairs, best first, into hits whose ``score`` is
    the raw score, whose ``method`` is ``leg`` and whose ``legs`` hold
    ``{leg: LegScore(rank, score)}``, ranks from 1."""
    return [
        Hit(
            entry=doc,
            score=score,
            legs=MappingProxyType({leg: LegScore(rank, score)}),
            method=leg,
        )
        for rank, (doc, score) in enumerate(ranked, start=1)
    ]
