"""Fusion of several legs (BM25 and vector) into one ranking: reciprocal rank fusion or a convex
combination of normalised scores.

Each leg is asked for :meth:`Fusion.leg_limit` candidates; a leg that repeats a document counts its
first (best) place only. Then, by :attr:`Fusion.method` (docs/recall.md#fusion-methods):

* ``"rrf"``, reciprocal rank fusion: ``score(d) = sum over legs L that returned d of
  w_L / (k + rank_L(d))``, ranks from 1, ``k = 60`` (Cormack, Clarke and Buettcher, "Reciprocal
  Rank Fusion outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009). It reads
  the ranks only and throws the scores away.
* ``"min-max"``, ``"z-score"`` and ``"theoretical-min-max"``, a convex combination of per-query
  normalised leg scores (Bruch, Gai and Ingber, "An Analysis of Fusion Functions for Hybrid
  Retrieval", ACM TOIS 2023): ``score(d) = sum over legs L of (w_L / W) * n_L(d)``, ``W`` the sum
  of the weights of the legs fused, and ``n_L`` one leg's raw scores over the candidates it
  returned for this query, normalised so its floor is 0:

  - min-max: ``(s - min) / (max - min)``, in [0, 1];
  - z-score: ``(s - min) / std``, the z-score ``(s - mean) / std`` shifted by the lowest
    candidate's z-score, so it is at least 0 (the shift adds the same amount to every document,
    so the order is the z-score's);
  - theoretical-min-max: ``(s - m_L) / (max - m_L)``, in [0, 1], ``m_L`` the lowest score the
    leg can give (:data:`THEORETICAL_MINIMUMS`: 0 for BM25, -1 for cosine), so a leg whose best
    candidate is weak stays weak (Bruch et al.'s TM2C2).

  ``min``, ``max``, ``mean`` and ``std`` (population) are over that leg's candidates; when they
  all score the same (one candidate, say) each gets 1. A document a leg did not return gets that
  leg's floor, 0: never a negative contribution.

Ties break by the order of the requested scopes, then by name (UTF-8 byte order), so the result is
deterministic. The hits' :attr:`Hit.method` names the method; :attr:`Fusion.min_score` drops
fused hits under a threshold in that method's own units (never a cosine).

The parameters live in :class:`Fusion`, so a store or an experiment can change them without code.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Generic, TypeVar

from .errors import NoLegAnsweredError, UnknownFusionMethodError, check_query
from .hits import LEG_BM25, LEG_VECTOR, Hit, LegScore
from .protocol import Keyed, Recaller

__all__ = [
    "DEFAULT_CANDIDATES",
    "DEFAULT_DEPTH",
    "DEFAULT_FUSION",
    "DEFAULT_RRF_K",
    "FUSION_METHODS",
    "THEORETICAL_MINIMUMS",
    "Fusion",
    "HybridRecaller",
    "fuse",
]

FUSION_METHODS = ("rrf", "min-max", "z-score", "theoretical-min-max")
"""The values :attr:`Fusion.method` takes (docs/recall.md#fusion-methods)."""

SCORE_METHODS = frozenset(FUSION_METHODS[1:])
"""The convex-combination methods (they read the legs' scores)."""

THEORETICAL_MINIMUMS: Mapping[str, float] = MappingProxyType({LEG_BM25: 0.0, LEG_VECTOR: -1.0})
"""The lowest raw score each leg can give: BM25 is a sum of non-negative terms (0), cosine
similarity is at least -1. ``"theoretical-min-max"`` normalises from these; a leg not named here
falls back to its lowest candidate (min-max)."""

DEFAULT_RRF_K = 60
"""RRF's ``k`` (Cormack et al., SIGIR 2009)."""

DEFAULT_DEPTH = 1
"""Each leg is asked for at least ``DEFAULT_DEPTH * limit`` candidates (docs/recall.md#fusion-depth)."""

DEFAULT_CANDIDATES = 0
"""Each leg is asked for at least this many candidates, whatever the ``limit``."""

_log = logging.getLogger("recallers.hybrid")

KeyedT = TypeVar("KeyedT", bound=Keyed)


@dataclass(frozen=True, slots=True)
class Fusion:
    """The parameters of a hybrid recall's fusion (docs/recall.md#fusion-methods).

    Attributes:
        method: one of :data:`FUSION_METHODS`: ``"rrf"`` (reciprocal rank fusion),
            ``"min-max"``, ``"z-score"`` or ``"theoretical-min-max"`` (a convex combination of
            normalised leg scores).
        k: RRF's constant, >= 1 (default 60); the score methods ignore it.
        depth: each leg is asked for ``depth * limit`` candidates, >= 1 (default 1).
        candidates: and for at least this many, whatever the limit, >= 0 (default 0): a score
            method normalises over a leg's candidates, so it wants more of them than the answer.
        weights: each leg's weight, by leg name (``"bm25"``, ``"vector"``); a leg not named
            weighs 1.0; a leg weighing 0 is not asked at all. RRF multiplies each leg's
            ``1 / (k + rank)`` by it; a score method divides each by the sum over the legs fused,
            so ``{"bm25": 0.6, "vector": 0.4}`` and ``{"bm25": 3, "vector": 2}`` are one setting.
        depths: a ``depth`` for particular legs, by leg name, overriding ``depth``.
        min_score: drop fused hits scoring under it, in the method's units (never a cosine):
            RRF scores lie in ``(0, sum of w_L / (k + 1)]`` (about 0.0328 at most for two legs
            of weight 1, 1/61 for one leg's first hit alone); min-max and theoretical-min-max
            in [0, 1] (1: best in every leg); z-score from 0 up, in standard deviations above
            each leg's lowest candidate. ``None`` (the default) keeps every hit. A cosine floor
            belongs on the vector leg (``VectorRecaller(min_score=...)``).

    Raises:
        UnknownFusionMethodError: ``method`` is not in :data:`FUSION_METHODS` (a ``ValueError``
            naming the value and the choices).
        ValueError: ``k`` or a depth under 1, ``candidates`` under 0, a negative or non-finite
            weight, or a ``min_score`` that is negative, not finite, or above
            1 for min-max and theoretical-min-max.
    """

    method: str = "rrf"
    k: int = DEFAULT_RRF_K
    depth: int = DEFAULT_DEPTH
    candidates: int = DEFAULT_CANDIDATES
    weights: Mapping[str, float] = field(default_factory=dict)
    depths: Mapping[str, int] = field(default_factory=dict)
    min_score: float | None = None

    def __post_init__(self) -> None:
        if self.method not in FUSION_METHODS:
            raise UnknownFusionMethodError(self.method, FUSION_METHODS)
        if self.k < 1:
            raise ValueError(f"RRF k is {self.k}; it must be at least 1 (60 is usual)")
        for leg, d in {"": self.depth, **self.depths}.items():
            if d < 1:
                where = f" of leg {leg!r}" if leg else ""
                raise ValueError(f"fusion depth{where} is {d}; it must be at least 1")
        if self.candidates < 0:
            raise ValueError(f"fusion candidates is {self.candidates}; it must be 0 or more")
        for leg, w in self.weights.items():
            if not (w >= 0 and math.isfinite(w)):
                raise ValueError(f"fusion weight of leg {leg!r} is {w}; it must be 0 or more")
        if self.min_score is not None:
            top = 1.0 if self.method in ("min-max", "theoretical-min-max") else math.inf
            if not (0 <= self.min_score <= top) or math.isnan(self.min_score):
                limit = "0 to 1" if top == 1.0 else "0 or more"
                raise ValueError(
                    f"fusion min_score is {self.min_score} for method {self.method!r}; it must "
                    f"be {limit} (see docs/recall.md#fusion-methods for each method's scale)"
                )
        object.__setattr__(self, "weights", MappingProxyType(dict(self.weights)))
        object.__setattr__(self, "depths", MappingProxyType(dict(self.depths)))

    def weight(self, leg: str) -> float:
        """The weight of ``leg`` (1.0 unless :attr:`weights` names it)."""
        return float(self.weights.get(leg, 1.0))

    def leg_limit(self, leg: str, limit: int) -> int:
        """How many candidates ``leg`` is asked for when the fusion returns ``limit``:
        ``max(depth * limit, candidates)``, ``depth`` the leg's own when :attr:`depths` names
        it."""
        return max(self.depths.get(leg, self.depth) * limit, self.candidates)


DEFAULT_FUSION = Fusion(method="z-score", candidates=20, weights={LEG_BM25: 0.75, LEG_VECTOR: 0.25})
"""The fusion a store uses unless told otherwise: a z-score convex combination, BM25 weighing 0.75
and the vector leg 0.25, each leg read 20 deep. Chosen on LoCoMo and SciFact; see
docs/recall.md#the-default-fusion. ``Fusion()`` with no arguments is plain RRF."""


def _normalised(method: str, leg: str, raw: Sequence[float]) -> list[float]:
    """One leg's raw scores (its candidates, best first) normalised by ``method`` (a score
    method), each at least 0; the leg's floor is 0 (module docstring)."""
    if method == "theoretical-min-max" and leg in THEORETICAL_MINIMUMS:
        low = THEORETICAL_MINIMUMS[leg]
    else:
        low = min(raw)
    if method == "z-score":
        mean = math.fsum(raw) / len(raw)
        spread = math.sqrt(math.fsum((s - mean) ** 2 for s in raw) / len(raw))
    else:
        spread = max(raw) - low
    if not spread > 0:
        return [1.0] * len(raw)
    return [max(0.0, (s - low) / spread) for s in raw]


def fuse(
    rankings: Mapping[str, Sequence[Hit[KeyedT]]],
    *,
    scopes: Sequence[str],
    limit: int,
    fusion: Fusion = DEFAULT_FUSION,
) -> list[Hit[KeyedT]]:
    """Fuse each leg's hits (best first, keyed by leg name) into at most ``limit`` hits.

    A document is identified by ``(scope, name)``; its :attr:`Hit.entry` is the one the first
    leg (in mapping order) that returned it gave. Its ``score`` is the fused score of
    ``fusion.method`` (module docstring), its ``method`` that method's name, and its ``legs``
    hold each leg's rank (its position in that leg's list, from 1) and raw score. Hits scoring
    under ``fusion.min_score`` are dropped. Order: score descending, then the document's scope
    in the order of ``scopes``, then name (UTF-8 byte order). A leg weighing 0 adds nothing.
    """
    if limit < 1:
        return []
    order = {s: i for i, s in enumerate(dict.fromkeys(scopes))}
    docs: dict[tuple[str, str], KeyedT] = {}
    scores: dict[tuple[str, str], float] = {}
    legs: dict[tuple[str, str], dict[str, LegScore]] = {}
    by_score = fusion.method in SCORE_METHODS
    total = sum(fusion.weight(leg) for leg in rankings)
    for leg, hits in rankings.items():
        w = fusion.weight(leg)
        firsts: list[tuple[tuple[str, str], int, float]] = []
        seen: set[tuple[str, str]] = set()
        for rank, hit in enumerate(hits, start=1):
            key = (hit.entry.scope, hit.entry.name)
            if key in seen:
                continue  # a leg that repeats a document counts its best rank only
            seen.add(key)
            raw = hit.legs[leg].score if leg in hit.legs else hit.score
            docs.setdefault(key, hit.entry)
            legs.setdefault(key, {})[leg] = LegScore(rank, raw)
            firsts.append((key, rank, raw))
        if by_score:
            share = w / total if total > 0 else 0.0
            values = (
                _normalised(fusion.method, leg, [raw for _, _, raw in firsts]) if firsts else []
            )
            for (key, _, _), value in zip(firsts, values, strict=True):
                scores[key] = scores.get(key, 0.0) + share * value
        else:
            for key, rank, _ in firsts:
                scores[key] = scores.get(key, 0.0) + w / (fusion.k + rank)
    kept = scores
    if fusion.min_score is not None:
        floor = fusion.min_score
        kept = {key: s for key, s in scores.items() if s >= floor}
    ranked = sorted(
        kept,
        key=lambda key: (-kept[key], order.get(key[0], len(order)), key[1].encode()),
    )
    return [
        Hit(
            entry=docs[key],
            score=kept[key],
            legs=MappingProxyType(legs[key]),
            method=fusion.method,
        )
        for key in ranked[:limit]
    ]


class HybridRecaller(Generic[KeyedT]):
    """The fusion of legs (module docstring); ``name`` is ``"hybrid"``.

    ``HybridRecaller([BM25Recaller(index), VectorRecaller(store, embedder)])`` is the hybrid of a
    store with vectors. A leg that raises is skipped (its error is logged on the
    ``recallers.hybrid`` logger at WARNING, and each hit names it in :attr:`Hit.unavailable`, leg
    to error message) and a leg that returns nothing adds nothing: the others still answer. Only
    when every leg raises does :meth:`recall` raise.

    Args:
        legs: the legs, each with a distinct ``name``; their order decides which leg's copy of a
            document a hit carries.
        fusion: the method, each leg's depth and weight (default :data:`DEFAULT_FUSION`).

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
        """At most ``limit`` fused hits of ``scopes``, best first (see :func:`fuse`). When a leg
        raised, every hit's :attr:`Hit.unavailable` maps that leg to its error's message (an empty
        list says nothing of it: the failure is in the log only).

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
        hits = fuse(rankings, scopes=scopes, limit=limit, fusion=self._fusion)
        if not errors:
            return hits
        failed = MappingProxyType({leg: _why(err) for leg, err in errors.items()})
        return [replace(h, unavailable=MappingProxyType({**h.unavailable, **failed})) for h in hits]


def _why(err: BaseException) -> str:
    """A failed leg's error as :attr:`Hit.unavailable` gives it: its message (its class name when
    it has none)."""
    return str(err) or type(err).__name__
