"""Reciprocal rank fusion of several legs (BM25 and vector) into one ranking.

``score(d) = sum over legs L that returned d of weight(L) / (k + rank_L(d))``, ranks from 1, with
``k = 60`` (Cormack, Clarke and Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and
individual Rank Learning Methods", SIGIR 2009). Each leg is asked for ``depth * limit`` candidates
(default ``depth = 1``: each leg is read exactly as deep as the answer, see :data:`DEFAULT_DEPTH`);
a document a leg did not return gets nothing from it. Ties break by the order of the requested
scopes, then by name (UTF-8 byte order), so the result is deterministic.

The parameters live in :class:`Fusion`, so a store or an experiment can change them without code.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Generic, TypeVar

from .errors import check_query
from .hits import Hit, LegScore
from .protocol import Keyed, Recaller

__all__ = [
    "DEFAULT_DEPTH",
    "DEFAULT_FUSION",
    "DEFAULT_RRF_K",
    "Fusion",
    "HybridRecaller",
    "NoLegAnsweredError",
    "fuse",
]

DEFAULT_RRF_K = 60
"""RRF's ``k`` (Cormack et al., SIGIR 2009)."""

DEFAULT_DEPTH = 1
"""Each leg is asked for ``DEFAULT_DEPTH * limit`` candidates: what it would answer alone.

Why 1 and not the ``3`` of the Go design (docs/recall.md#fusion-depth): with ``k = 60`` a document that both legs rank
anywhere in their first 60 outscores a document ranked first by one leg only (``2 / (60 + r) >
1 / 61`` for ``r < 62``). Read deeper than the answer, RRF therefore fills the answer with
documents both legs rank mediocre (agreement in the tails) ahead of either leg's confident top
hits; the weaker the leg, the more of its tail noise it brings (Bruch, Gai and Ingber, "An Analysis
of Fusion Functions for Hybrid Retrieval", ACM TOIS 2023, show RRF is sensitive to such choices and
not a parameter-free default). Read to ``limit``, agreement counts only among the documents each
leg would itself show, and a leg's own first hit still makes the answer. Measured with
all-MiniLM-L6-v2 and the default tokenizer (``benchmarks/README.md``, "Recall quality"; chosen on
one half of each set and confirmed on the other): LoCoMo Recall@10 0.658 at depth 3 and 0.680 at
depth 1 (BM25 alone 0.664), Recall@5 0.514 and 0.581; SciFact nDCG@10 0.724 and 0.719 (BM25 alone
0.691); depth 10 was worse than 3 on both."""

_log = logging.getLogger("recallers.hybrid")

KeyedT = TypeVar("KeyedT", bound=Keyed)


@dataclass(frozen=True, slots=True)
class Fusion:
    """The parameters of reciprocal rank fusion.

    Attributes:
        k: RRF's constant, >= 1 (default 60).
        depth: each leg is asked for ``depth * limit`` candidates, >= 1 (default 1).
        weights: a multiplier of each leg's ``1 / (k + rank)``, by leg name (``"bm25"``,
            ``"vector"``); a leg not named weighs 1.0; a leg weighing 0 is not asked at all.
        depths: a ``depth`` for particular legs, by leg name, overriding ``depth``.

    Raises:
        ValueError: ``k`` or a depth under 1, or a negative weight.
    """

    k: int = DEFAULT_RRF_K
    depth: int = DEFAULT_DEPTH
    weights: Mapping[str, float] = field(default_factory=dict)
    depths: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"RRF k is {self.k}; it must be at least 1 (60 is usual)")
        for leg, d in {"": self.depth, **self.depths}.items():
            if d < 1:
                where = f" of leg {leg!r}" if leg else ""
                raise ValueError(f"fusion depth{where} is {d}; it must be at least 1")
        for leg, w in self.weights.items():
            if w < 0:
                raise ValueError(f"fusion weight of leg {leg!r} is {w}; it must be 0 or more")
        object.__setattr__(self, "weights", MappingProxyType(dict(self.weights)))
        object.__setattr__(self, "depths", MappingProxyType(dict(self.depths)))

    def weight(self, leg: str) -> float:
        """The weight of ``leg`` (1.0 unless :attr:`weights` names it)."""
        return float(self.weights.get(leg, 1.0))

    def leg_limit(self, leg: str, limit: int) -> int:
        """How many candidates ``leg`` is asked for when the fusion returns ``limit``."""
        return self.depths.get(leg, self.depth) * limit


DEFAULT_FUSION = Fusion()
"""``Fusion()``: k 60, depth 1, every leg weighing 1 (plain RRF of what each leg answers)."""


def fuse(
    rankings: Mapping[str, Sequence[Hit[KeyedT]]],
    *,
    scopes: Sequence[str],
    limit: int,
    fusion: Fusion = DEFAULT_FUSION,
) -> list[Hit[KeyedT]]:
    """Fuse each leg's hits (best first, keyed by leg name) into at most ``limit`` hits.

    A document is identified by ``(scope, name)``; its :attr:`Hit.entry` is the one the first
    leg (in mapping order) that returned it gave. Its ``score`` is the weighted RRF sum and its
    ``legs`` hold each leg's rank (its position in that leg's list, from 1) and raw score.
    Order: score descending, then the document's scope in the order of ``scopes``, then name
    (UTF-8 byte order).
    """
    if limit < 1:
        return []
    order = {s: i for i, s in enumerate(dict.fromkeys(scopes))}
    docs: dict[tuple[str, str], KeyedT] = {}
    scores: dict[tuple[str, str], float] = {}
    legs: dict[tuple[str, str], dict[str, LegScore]] = {}
    for leg, hits in rankings.items():
        w = fusion.weight(leg)
        for rank, hit in enumerate(hits, start=1):
            key = (hit.entry.scope, hit.entry.name)
            if key in legs and leg in legs[key]:
                continue  # a leg that repeats a document counts its best rank only
            raw = hit.legs[leg].score if leg in hit.legs else hit.score
            docs.setdefault(key, hit.entry)
            scores[key] = scores.get(key, 0.0) + w / (fusion.k + rank)
            legs.setdefault(key, {})[leg] = LegScore(rank, raw)
    ranked = sorted(
        scores,
        key=lambda key: (-scores[key], order.get(key[0], len(order)), key[1].encode()),
    )
    return [
        Hit(entry=docs[key], score=scores[key], legs=MappingProxyType(legs[key]))
        for key in ranked[:limit]
    ]


class NoLegAnsweredError(RuntimeError):
    """Every leg of a :class:`HybridRecaller` raised; ``errors`` holds each leg's error by name,
    and the last one is also the ``__cause__``."""

    def __init__(self, errors: Mapping[str, BaseException]) -> None:
        self.errors = dict(errors)
        detail = "; ".join(f"{leg}: {type(e).__name__}: {e}" for leg, e in self.errors.items())
        super().__init__(f"every recall leg failed ({detail}); fix the first, or use one leg")


class HybridRecaller(Generic[KeyedT]):
    """Reciprocal rank fusion over legs (module docstring); ``name`` is ``"hybrid"``.

    ``HybridRecaller([BM25Recaller(index), VectorRecaller(store, embedder)])`` is the hybrid of a
    store with vectors. A leg that raises is skipped (its error is logged on the
    ``recallers.hybrid`` logger at WARNING) and a leg that returns nothing adds nothing: the others
    still answer. Only when every leg raises does :meth:`recall` raise.

    Args:
        legs: the legs, each with a distinct ``name``; their order decides which leg's copy of a
            document a hit carries.
        fusion: RRF's ``k``, each leg's depth and weight (default ``Fusion()``: k 60, depth 1,
            weights 1).

    Raises:
        ValueError: no legs, or two legs with one name.
    """

    def __init__(
        self, legs: Sequence[Recaller[KeyedT]], *, fusion: Fusion = DEFAULT_FUSION
    ) -> None:
        if not legs:
            raise ValueError("a HybridRecaller needs at least one leg, such as a BM25Recaller")
        names = [leg.name for leg in legs]
        if len(set(names)) != len(names):
            raise ValueError(f"hybrid legs must have distinct names, got {names}")
        self._legs = list(legs)
        self._fusion = fusion

    @property
    def name(self) -> str:
        """``"hybrid"``."""
        return "hybrid"

    @property
    def fusion(self) -> Fusion:
        """The fusion parameters."""
        return self._fusion

    def recall(self, query: str, *, scopes: Sequence[str], limit: int) -> list[Hit[KeyedT]]:
        """At most ``limit`` fused hits of ``scopes``, best first (see :func:`fuse`).

        Raises:
            recallers.EmptyQueryError: an empty or white-space query (no leg is asked).
            NoLegAnsweredError: every leg asked raised.
        """
        check_query(query)
        if limit < 1 or not scopes:
            return []
        rankings: dict[str, list[Hit[KeyedT]]] = {}
        errors: dict[str, BaseException] = {}
        for leg in self._legs:
            if self._fusion.weight(leg.name) == 0:
                continue
            try:
                rankings[leg.name] = leg.recall(
                    query, scopes=scopes, limit=self._fusion.leg_limit(leg.name, limit)
                )
            except Exception as err:  # one leg failing must not sink the others
                _log.warning("recall leg %s failed for %r: %r", leg.name, query, err)
                errors[leg.name] = err
        if errors and not rankings:
            raise NoLegAnsweredError(errors) from list(errors.values())[-1]
        return fuse(rankings, scopes=scopes, limit=limit, fusion=self._fusion)
