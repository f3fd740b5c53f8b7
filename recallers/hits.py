"""What a recall returns: :class:`Hit`, one ranked document with the detail of each leg."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Generic, TypeVar

__all__ = [
    "LEG_BM25",
    "LEG_VECTOR",
    "NEGLIGIBLE_BM25",
    "NEGLIGIBLE_BM25_NOTE",
    "Hit",
    "LegScore",
    "ranked_hits",
    "shown_score",
]

LEG_BM25 = "bm25"
"""Key of the lexical leg in :attr:`Hit.legs`."""

LEG_VECTOR = "vector"
"""Key of the vector leg in :attr:`Hit.legs`."""

NEGLIGIBLE_BM25 = 1e-3
"""BM25 scores above 0 and below this are shown as ``"<0.001"`` (:func:`shown_score`). A score
this small comes from words found in half the entries or more, whose idf is floored at
``recallers.IDF_FLOOR`` (1e-6): in a store of two entries, any word in one of them
(``docs/recall.md#scores-near-zero``). Every other score is far above it (the smallest positive
idf of a store of ``N`` entries is about ``1 / N``)."""

NEGLIGIBLE_BM25_NOTE = (
    "BM25 <0.001: every matching word is in about half the entries or more, so it barely "
    "counts (usual in a store of a few entries; the ranking still holds: docs/recall.md"
    "#scores-near-zero)"
)
"""The one line a listing prints under its hits when it showed a BM25 score as ``"<0.001"``."""

D = TypeVar("D")


def shown_score(method: str, score: float) -> str:
    """``score`` as a person reads it: 4 significant digits (``f"{score:.4g}"``), except a BM25
    score (``method`` ``"bm25"``) above 0 and below :data:`NEGLIGIBLE_BM25`, shown as
    ``"<0.001"`` instead of a figure like ``1.814e-06`` that looks like a fault (print
    :data:`NEGLIGIBLE_BM25_NOTE` with it). Machine-readable output keeps the raw score."""
    if method == LEG_BM25 and 0 < score < NEGLIGIBLE_BM25:
        return "<0.001"
    return f"{score:.4g}"


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
            ``{"vector": "the vector index of ... is held by pid 4242 ..."}``; for a hybrid leg
            that raised, its error's message); empty when every leg ran.
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
