"""The rerank stage: a reranker reorders the first candidates of another recaller.

:class:`RerankedRecaller` asks its inner recaller (a hybrid, or one leg) for
``max(limit, candidates)`` hits, has a reranker (:class:`recallers.Reranker`: a cross-encoder that
reads the query and each document together) score each of them, and returns the ``limit`` best
by that score (docs/recall.md#reranking). The text a reranker reads is :func:`rerank_text`: what
the vector leg embeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Generic, TypeVar

import numpy as np

from .errors import check_query
from .hits import Hit, LegScore
from .protocol import Document, Recaller, Reranker

__all__ = ["DEFAULT_RERANK_CANDIDATES", "RerankedRecaller", "rerank_text"]

DEFAULT_RERANK_CANDIDATES = 20
"""How many of the inner recaller's first hits a reranker reads (and reorders) per query. A
cross-encoder reads each (query, document) pair in full, so its cost grows with this number
(``benchmarks/README.md`` has the cost per query); 20 covers the answer sizes agents ask for
(5 by default, 10 in the evaluation) with room for the reranker to lift a document from below
them."""

DocT = TypeVar("DocT", bound=Document)


def rerank_text(doc: Document) -> str:
    """The text a reranker reads for ``doc``: ``"<description>\\n\\n<content>"`` when it has a
    description, else the content (what the vector leg embeds)."""
    return f"{doc.description}\n\n{doc.content}" if doc.description else doc.content


class RerankedRecaller(Generic[DocT]):
    """A recaller whose first ``candidates`` hits a reranker reorders; ``name`` is the inner
    recaller's.

    Each returned hit keeps the inner hit's ``entry`` and ``legs``; its ``score`` is the
    reranker's score (float, the model's scale) and its ``method`` is
    ``"rerank:<reranker name>"``; ``legs`` gains the inner ranking under the inner hit's
    ``method`` (for example ``"min-max"``: its rank and fused score) unless a leg of that name is
    there already. Equal reranker scores keep the inner order.

    Args:
        inner: the recaller whose hits are reordered (a ``HybridRecaller``, a leg).
        reranker: scores (query, text) pairs (:class:`recallers.Reranker`).
        candidates: how many of the inner hits are read, >= 1 (default
            :data:`DEFAULT_RERANK_CANDIDATES`); a recall asks the inner recaller for
            ``max(limit, candidates)``.

    Raises:
        ValueError: ``candidates`` under 1.
    """

    def __init__(
        self,
        inner: Recaller[DocT],
        reranker: Reranker,
        *,
        candidates: int = DEFAULT_RERANK_CANDIDATES,
    ) -> None:
        if candidates < 1:
            raise ValueError(f"rerank candidates is {candidates}; it must be at least 1")
        self._inner = inner
        self._reranker = reranker
        self._candidates = candidates

    @property
    def name(self) -> str:
        """The inner recaller's name (``"hybrid"``, ``"bm25"``, ``"vector"``)."""
        return self._inner.name

    @property
    def candidates(self) -> int:
        """How many inner hits are reranked."""
        return self._candidates

    def recall(self, query: str, *, scopes: Sequence[str], limit: int) -> list[Hit[DocT]]:
        """At most ``limit`` hits of ``scopes``, best first by the reranker's score.

        Raises ``recallers.EmptyQueryError`` for an empty query (nothing is searched), what the
        inner recaller raises, and ``ValueError`` when the reranker returns another shape than
        one score per text. The reranker is not called when the inner recaller finds nothing.
        """
        query = check_query(query)  # a Query: the inner recaller does not check it again
        if limit < 1 or not scopes:
            return []
        hits = self._inner.recall(query, scopes=scopes, limit=max(limit, self._candidates))
        if not hits:
            return []
        scores = np.asarray(self._reranker.rerank(query, [rerank_text(h.entry) for h in hits]))
        if scores.shape != (len(hits),):
            raise ValueError(
                f"reranker {self._reranker.name!r} returned shape {scores.shape} for "
                f"{len(hits)} texts; it must return one score per text"
            )
        order = sorted(range(len(hits)), key=lambda i: (-float(scores[i]), i))
        method = f"rerank:{self._reranker.name}"
        out: list[Hit[DocT]] = []
        for i in order[:limit]:
            hit = hits[i]
            legs = dict(hit.legs)
            if hit.method and hit.method not in legs:
                legs[hit.method] = LegScore(i + 1, hit.score)
            out.append(
                Hit(
                    entry=hit.entry,
                    score=float(scores[i]),
                    legs=MappingProxyType(legs),
                    method=method,
                    unavailable=hit.unavailable,
                )
            )
        return out
