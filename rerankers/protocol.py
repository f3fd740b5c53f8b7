"""The ``Reranker`` protocol every reranker satisfies (docs/recall.md#reranking)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Reranker"]


@runtime_checkable
class Reranker(Protocol):
    """Scores how well each text answers a query, reading both together (a cross-encoder).

    Attributes:
        name: stable identifier, also the registry key that builds it, e.g.
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
