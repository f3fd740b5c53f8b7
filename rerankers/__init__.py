"""rerankers: reorder a recall's best candidates by reading each with the query, behind one small
protocol and a registry, as embedders are (docs/recall.md#reranking).

``rerankers.get("cross-encoder:/models/ms-marco-MiniLM-L-6-v2")`` builds a
:class:`CrossEncoderReranker` over that local folder; a store opened with ``reranker=`` (or a
``recall(..., rerank=...)``) reorders its first candidates by it. Nothing here downloads: a
cross-encoder loads from a local folder only.

Importing this package imports numpy and recallers only: torch and sentence-transformers are
imported on first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .cross_encoder import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_THREADS,
    CrossEncoderReranker,
    RerankerFolderError,
)
from .protocol import Reranker
from .registry import RerankerFactory, UnknownRerankerError, get, names, register


def _cross_encoder(folder: str | Path, **kwargs: Any) -> Reranker:
    return CrossEncoderReranker(folder, **kwargs)


register("cross-encoder", _cross_encoder, argument="<folder>")

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_THREADS",
    "CrossEncoderReranker",
    "Reranker",
    "RerankerFactory",
    "RerankerFolderError",
    "UnknownRerankerError",
    "get",
    "names",
    "register",
]
