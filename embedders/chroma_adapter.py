"""Adapters between our ``Embedder`` and Chroma's ``EmbeddingFunction`` (chromadb >= 1.0), both ways.

chromadb is imported only when ``as_chroma_embedding_function`` is first called.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .protocol import Embedder, l2_normalize

__all__ = ["CHROMA_FUNCTION_NAME", "ChromaEmbedder", "as_chroma_embedding_function"]

CHROMA_FUNCTION_NAME = "agentmemory-embedder"
"""The ``name()`` our functions report to Chroma; their config is ``{"embedder": <name>}``."""


@functools.cache
def _function_class() -> type[Any]:
    """Define (once) our ``chromadb.EmbeddingFunction`` subclass and register it with Chroma."""
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
    from chromadb.utils.embedding_functions import register_embedding_function

    class EmbedderFunction(EmbeddingFunction[Documents]):
        """A Chroma embedding function that calls one of our embedders."""

        def __init__(self, embedder: Embedder) -> None:
            self.embedder = embedder

        def __call__(self, input: Documents) -> Embeddings:
            matrix = self.embedder.embed(list(input))
            return list(matrix)

        @staticmethod
        def name() -> str:
            return CHROMA_FUNCTION_NAME

        def get_config(self) -> dict[str, Any]:
            return {"embedder": self.embedder.name}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> EmbedderFunction:
            from .registry import get

            return EmbedderFunction(get(str(config["embedder"])))

        def default_space(self) -> Space:
            return "cosine"

        def supported_spaces(self) -> list[Space]:
            return ["cosine", "ip", "l2"]

    register_embedding_function(EmbedderFunction)  # type: ignore[no-untyped-call]
    return EmbedderFunction


def as_chroma_embedding_function(embedder: Embedder) -> Any:
    """Wrap ``embedder`` as a ``chromadb.EmbeddingFunction[Documents]``.

    Calling it with a list of texts returns one float32 numpy vector per text (Chroma's
    ``Embeddings``). ``name()`` is ``CHROMA_FUNCTION_NAME``; ``get_config()`` is
    ``{"embedder": embedder.name}`` and ``build_from_config`` rebuilds it through
    ``embedders.get``, so a collection created with it reopens with the same embedder in a process
    that has called this function (Chroma looks the name up in its own registry). The default
    space is cosine (rows are unit length). Imports chromadb on the first call.
    """
    return _function_class()(embedder)


class ChromaEmbedder:
    """Any Chroma ``EmbeddingFunction`` (callable on a list of texts) as an ``Embedder``.

    Args:
        fn: the Chroma embedding function.
        name: our name for it, e.g. ``"chroma:openai-text-embedding-3-small"``; used as ``name``.
        dim: its output dimension, if known; otherwise it is learnt by embedding one probe text
            the first time ``dim`` or ``fingerprint`` is read.
        batch_size: texts per call of ``fn``.

    ``embed`` converts the output to float32 and re-normalises each row to unit length (an
    all-zero row stays zero). Calls to ``fn`` are serialised by a lock, since a Chroma function
    need not be thread-safe. ``fingerprint`` holds ``name``, ``dim``, and ``fn.name()`` and
    ``fn.get_config()`` where the function provides them (the model and its settings).

    Raises ``ValueError`` from ``embed`` when ``fn`` returns the wrong number of vectors or a
    vector of another width than ``dim``.
    """

    def __init__(self, fn: Any, *, name: str, dim: int | None = None, batch_size: int = 64) -> None:
        if not callable(fn):
            raise TypeError(f"fn is a {type(fn).__name__}; pass a Chroma EmbeddingFunction")
        if not name:
            raise ValueError("name must be non-empty, e.g. 'chroma:default'")
        if batch_size < 1:
            raise ValueError(f"batch_size is {batch_size}; it must be at least 1")
        self._fn = fn
        self._name = name
        self._dim = dim
        self._batch_size = batch_size
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The name given at construction."""
        return self._name

    @property
    def dim(self) -> int:
        """Output dimension (given, or learnt from one probe call)."""
        if self._dim is None:
            with self._lock:
                probe = self._fn(["dimension probe"])
            self._dim = int(np.asarray(probe[0]).shape[-1])
        return self._dim

    @property
    def fingerprint(self) -> str:
        """``"<name>;dim=<dim>;chroma=<fn name>;config=<json of fn config>"``."""
        fn_name = "unknown"
        config: Any = None
        with contextlib.suppress(Exception):  # legacy functions lack name()/get_config()
            reported = self._fn.name()
            if isinstance(reported, str):
                fn_name = reported
            config = self._fn.get_config()
        if not isinstance(config, dict):
            config = None
        encoded = json.dumps(config, sort_keys=True, default=str)
        return f"{self._name};dim={self.dim};chroma={fn_name};config={encoded}"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Return a ``(len(texts), dim)`` float32 array, rows L2-normalised, in input order."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str; wrap it in a list")
        items = list(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        for start in range(0, len(items), self._batch_size):
            batch = items[start : start + self._batch_size]
            with self._lock:
                vectors = self._fn(batch)
            part = np.asarray([np.asarray(v, dtype=np.float32) for v in vectors], np.float32)
            if part.ndim != 2 or part.shape[0] != len(batch):
                raise ValueError(
                    f"Chroma function {self._name!r} returned {part.shape[0]} vectors "
                    f"for {len(batch)} texts"
                )
            parts.append(part)
        out = np.concatenate(parts)
        if out.shape[1] != self.dim:
            raise ValueError(
                f"Chroma function {self._name!r} returned {out.shape[1]}-dim vectors; "
                f"expected {self.dim}"
            )
        return l2_normalize(out)

    def __repr__(self) -> str:
        return f"ChromaEmbedder({self._fn!r}, name={self._name!r}, dim={self._dim})"
