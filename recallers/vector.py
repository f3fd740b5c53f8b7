"""The vector leg, and an exact in-memory cosine index it can search.

:class:`VectorRecaller` embeds the query with an ``embedders.Embedder`` and asks a
:class:`~recallers.VectorSource` for the nearest documents (cosine similarity). A ``ChromaStore`` is
such a source; so is :class:`ExactVectorIndex`, a brute-force numpy index for tests, small stores
and benchmark baselines.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from .errors import check_query
from .hits import LEG_VECTOR, Hit, ranked_hits
from .protocol import Keyed, VectorSource
from .vector_query import vector_query

if TYPE_CHECKING:
    from embedders import Embedder

__all__ = ["ExactVectorIndex", "VectorRecaller"]

D = TypeVar("D")
KeyedT = TypeVar("KeyedT", bound=Keyed)


class VectorRecaller(Generic[D]):
    """The vector leg (``"vector"``): nearest neighbours of the embedded query, cosine.

    Args:
        source: the vector index to search (``ChromaStore``, :class:`ExactVectorIndex`).
        embedder: embeds the query; must be the embedder the index was built with.
        min_score: a cosine floor: hits below it are dropped before they reach a fusion
            (docs/recall.md#the-cosine-floor). ``None`` (the default) keeps every hit, negative
            similarities included.

    Each :class:`Hit` has ``score`` = the cosine similarity and ``legs = {"vector": ...}``.
    """

    def __init__(
        self, source: VectorSource[D], embedder: Embedder, *, min_score: float | None = None
    ) -> None:
        self._source = source
        self._embedder = embedder
        self._min_score = min_score

    @property
    def name(self) -> str:
        """``"vector"``."""
        return LEG_VECTOR

    @property
    def min_score(self) -> float | None:
        """The cosine floor, or ``None``."""
        return self._min_score

    def recall(self, query: str, *, scopes: Sequence[str], limit: int) -> list[Hit[D]]:
        """At most ``limit`` hits of ``scopes``, nearest first, none below ``min_score``.

        The query is cut to its first ``recallers.vector_query_bytes(embedder)`` bytes before
        it is embedded (103,168 for all-MiniLM-L6-v2's 256 word pieces), so its cost is bounded
        whatever its length (docs/recall.md#the-vector-query). A query the embedder maps to the
        zero vector (the hashing embedder on ``"?!"``) has no direction and returns ``[]``.
        Embedding errors propagate.

        Raises ``recallers.EmptyQueryError`` for an empty or white-space query."""
        check_query(query)
        if limit < 1 or not scopes:
            return []
        text = vector_query(str(query), self._embedder)
        vector = np.asarray(self._embedder.embed([text]), dtype=np.float32)[0]
        if not np.any(vector):
            return []
        found = self._source.search_vector(vector, limit=limit, scopes=scopes)
        if self._min_score is not None:
            floor = self._min_score
            found = [(doc, s) for doc, s in found if s >= floor]
        return ranked_hits(LEG_VECTOR, found)


@dataclass(slots=True)
class _ScopeVectors(Generic[KeyedT]):
    matrix: npt.NDArray[np.float32]
    docs: list[KeyedT] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)


class ExactVectorIndex(Generic[KeyedT]):
    """Brute-force cosine search over unit vectors held in numpy, one matrix per scope.

    A search multiplies the ``(n, dim)`` float32 matrix of each requested scope by the query
    (its cost at 100k entries: ``benchmarks/README.md``, "Recall") and keeps the best ``limit`` with
    ``argpartition``; it is exact. :meth:`put` and :meth:`remove` cost O(dim) (a removed row is
    replaced by the last one; the matrix grows by doubling). Not safe for concurrent use.

    Args:
        dim: the width of every vector.

    Raises:
        ValueError: ``dim`` under 1.
    """

    def __init__(self, dim: int) -> None:
        if dim < 1:
            raise ValueError(f"vector dim is {dim}; it must be at least 1")
        self._dim = dim
        self._scopes: dict[str, _ScopeVectors[KeyedT]] = {}

    @property
    def dim(self) -> int:
        """The width of every vector."""
        return self._dim

    def __len__(self) -> int:
        """The number of vectors held."""
        return sum(len(s.docs) for s in self._scopes.values())

    def put(self, doc: KeyedT, vector: npt.ArrayLike) -> None:
        """Hold ``vector`` (``(dim,)``, unit length; stored as float32) for ``doc``, replacing
        the one of the same ``(scope, name)``. Raises ``ValueError`` on another shape."""
        row_vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        if row_vec.shape != (self._dim,):
            raise ValueError(
                f"vector for {doc.scope}/{doc.name} has shape {row_vec.shape}, not ({self._dim},)"
            )
        sv = self._scopes.get(doc.scope)
        if sv is None:
            sv = _ScopeVectors(np.zeros((16, self._dim), np.float32))
            self._scopes[doc.scope] = sv
        row = sv.rows.get(doc.name)
        if row is None:
            row = len(sv.docs)
            if row == sv.matrix.shape[0]:
                grown = np.zeros((2 * row, self._dim), np.float32)
                grown[:row] = sv.matrix
                sv.matrix = grown
            sv.docs.append(doc)
            sv.rows[doc.name] = row
        else:
            sv.docs[row] = doc
        sv.matrix[row] = row_vec

    def put_many(self, docs: Sequence[KeyedT], vectors: npt.ArrayLike) -> None:
        """:meth:`put` each of ``docs`` with the matching row of ``vectors`` (``(n, dim)``)."""
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(docs), self._dim)
        for doc, vec in zip(docs, matrix, strict=True):
            self.put(doc, vec)

    def remove(self, scope: str, name: str) -> None:
        """Drop the vector of ``(scope, name)``; nothing happens when there is none."""
        sv = self._scopes.get(scope)
        if sv is None or name not in sv.rows:
            return
        row = sv.rows.pop(name)
        last = len(sv.docs) - 1
        if row != last:
            moved = sv.docs[last]
            sv.docs[row] = moved
            sv.matrix[row] = sv.matrix[last]
            sv.rows[moved.name] = row
        sv.docs.pop()
        if not sv.docs:
            del self._scopes[scope]

    def search_vector(
        self, vector: npt.NDArray[np.float32], *, limit: int, scopes: Sequence[str]
    ) -> list[tuple[KeyedT, float]]:
        """At most ``limit`` ``(document, cosine)`` pairs of ``scopes``, nearest first; ties by
        the order of ``scopes``, then name (UTF-8 byte order). ``vector`` is ``(dim,)``, unit
        length."""
        if limit < 1:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        found: list[tuple[float, int, bytes, KeyedT]] = []
        for order, scope in enumerate(dict.fromkeys(scopes)):
            sv = self._scopes.get(scope)
            if sv is None:
                continue
            n = len(sv.docs)
            sims = sv.matrix[:n] @ query
            if n > limit:
                top = np.argpartition(-sims, limit - 1)[:limit]
                # argpartition may cut inside a run of equal scores: take the whole run.
                cut = sims[top].min()
                top = np.flatnonzero(sims >= cut)
            else:
                top = np.arange(n)
            for i in top.tolist():
                doc = sv.docs[i]
                found.append((-float(sims[i]), order, doc.name.encode(), doc))
        best = heapq.nsmallest(limit, found, key=lambda t: (t[0], t[1], t[2]))
        return [(t[3], -t[0]) for t in best]
