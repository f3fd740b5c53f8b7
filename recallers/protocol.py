"""The small protocols recallers rank through; stores satisfy them structurally.

recallers never imports agentmemory: a document is anything with ``scope``, ``name``,
``content`` and ``description`` (an ``agentmemory.Entry`` is one), and an index is anything with
``search_text`` or ``search_vector``. Identity is the pair ``(scope, name)``. A
:class:`Reranker` scores (query, text) pairs for the rerank stage (docs/recall.md#reranking).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

from .hits import Hit

__all__ = ["Document", "Keyed", "LexicalSource", "Recaller", "Reranker", "VectorSource"]

D = TypeVar("D")


@runtime_checkable
class Keyed(Protocol):
    """Anything that names one document: a kebab-case ``scope`` and a ``name`` unique in it."""

    @property
    def scope(self) -> str:
        """The scope (for example ``"user"``)."""
        ...

    @property
    def name(self) -> str:
        """The name, unique within the scope."""
        ...


@runtime_checkable
class Document(Keyed, Protocol):
    """A document BM25 reads: its ``name``, ``description`` and ``content``, in that order."""

    @property
    def content(self) -> str:
        """The text of the document."""
        ...

    @property
    def description(self) -> str:
        """A one-line summary, ``""`` when there is none."""
        ...


@runtime_checkable
class LexicalSource(Protocol[D]):
    """A lexical index that scores documents against a query with its own tokenizer."""

    def search_text(
        self, query: str, *, scopes: Sequence[str], limit: int
    ) -> list[tuple[D, float]]:
        """At most ``limit`` ``(document, score)`` pairs of ``scopes``, best first, every score
        above 0 (a document sharing no term with the query is not returned)."""
        ...


@runtime_checkable
class VectorSource(Protocol[D]):
    """A vector index (for example ``agentmemory.ChromaStore``)."""

    def search_vector(
        self, vector: npt.NDArray[np.float32], *, limit: int, scopes: Sequence[str]
    ) -> list[tuple[D, float]]:
        """At most ``limit`` ``(document, cosine similarity)`` pairs of ``scopes``, nearest first.
        ``vector`` is ``(dim,)`` float32, unit length."""
        ...


@runtime_checkable
class Recaller(Protocol[D]):
    """One way of ranking documents for a query: a leg (``"bm25"``, ``"vector"``) or a fusion of
    legs (``"hybrid"``)."""

    @property
    def name(self) -> str:
        """The leg's key in :attr:`Hit.legs` (``"bm25"``, ``"vector"``), or ``"hybrid"``."""
        ...

    def recall(self, query: str, *, scopes: Sequence[str], limit: int) -> list[Hit[D]]:
        """At most ``limit`` hits from ``scopes``, best first; ``[]`` when nothing matches.

        Raises ``recallers.EmptyQueryError`` for an empty or white-space query."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """Scores how well each text answers a query, reading both together (a cross-encoder); the
    rerank stage (:class:`recallers.RerankedRecaller`) reorders a recall's first hits by it
    (docs/recall.md#reranking).

    Attributes:
        name: stable identifier, also the registry key that builds it
            (:func:`recallers.get_reranker`), e.g.
            ``"cross-encoder:/models/ms-marco-MiniLM-L-6-v2"``.

    Implementations are safe to call from several threads at once.
    """

    @property
    def name(self) -> str:
        """Stable identifier of this reranker (see the class docstring)."""
        ...

    def rerank(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Score each of ``texts`` against ``query``, in order.

        Returns a ``(len(texts),)`` float32 array: higher is more relevant; the scale is the
        model's own (a cross-encoder's logit), comparable within one call only.
        ``rerank(q, [])`` returns shape ``(0,)``.
        """
        ...
