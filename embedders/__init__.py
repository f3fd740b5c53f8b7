"""embedders: turn texts into unit-length vectors, behind one small protocol and a registry.

``embedders.get(DEFAULT_EMBEDDER)`` gives the packaged all-MiniLM-L6-v2 through
sentence-transformers; ``"onnx:all-MiniLM-L6-v2"`` runs the same model through onnxruntime (faster
cold start); ``"hashing"`` / ``"hashing:<dim>"`` is a deterministic model-free baseline for tests.

Importing this package imports numpy only: torch, sentence-transformers, onnxruntime and chromadb
are imported on first use. This package imports nothing else of ours.
"""

from __future__ import annotations

from typing import Any

from .hashing import DEFAULT_HASHING_DIM, HashingEmbedder
from .protocol import Embedder, l2_normalize
from .registry import EmbedderFactory, UnknownEmbedderError, get, names, register

DEFAULT_EMBEDDER = "sentence-transformers:all-MiniLM-L6-v2"
"""Registry name of the default embedder: the packaged all-MiniLM-L6-v2 (384 dimensions)."""


def _hashing(dim: str | int = DEFAULT_HASHING_DIM, **kwargs: Any) -> Embedder:
    try:
        width = int(dim)
    except ValueError:
        raise ValueError(
            f"hashing embedder name needs an integer dimension, as 'hashing:256'; got {dim!r}"
        ) from None
    return HashingEmbedder(width, **kwargs)


register("hashing", _hashing)

__all__ = [
    "DEFAULT_EMBEDDER",
    "DEFAULT_HASHING_DIM",
    "Embedder",
    "EmbedderFactory",
    "HashingEmbedder",
    "UnknownEmbedderError",
    "get",
    "l2_normalize",
    "names",
    "register",
]
