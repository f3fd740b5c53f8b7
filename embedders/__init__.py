"""embedders: turn texts into unit-length vectors, behind one small protocol and a registry.

``embedders.get(DEFAULT_EMBEDDER)`` gives the packaged all-MiniLM-L6-v2 (the default model)
through sentence-transformers; ``embedders.get(ONNX_EMBEDDER)`` (``"onnx:all-MiniLM-L6-v2"``)
runs the same model through onnxruntime (same vectors, faster cold start; the runtime agentmemory
opens stores with first); ``"hashing"`` / ``"hashing:<dim>"`` is a deterministic model-free
baseline for tests. Families take an argument: ``"sentence-transformers:<folder or hub id>"``,
``"onnx:<folder>"``.

``text_windows(embedder, text)`` splits a text into the overlapping windows the embedder's model
can read whole (``Windowed``; one window for an embedder without them), and
``window_layout(embedder)`` names how (docs/recall.md#windows).

``same_vectors(a, b)`` says whether two embedder fingerprints give the same vectors: equal ones,
or the same model weights run through sentence-transformers and through onnxruntime.

Importing this package imports numpy only: torch, sentence-transformers, onnxruntime and chromadb
are imported on first use. This package imports nothing else of ours.
"""

from __future__ import annotations

import typing

from .chroma_adapter import ChromaEmbedder, as_chroma_embedding_function
from .errors import EmbedderError, UnknownEmbedderError
from .fingerprint import INTERCHANGEABLE_RUNTIMES, fingerprint_fields, same_vectors
from .hashing import DEFAULT_HASHING_DIM, HashingEmbedder
from .model_folder import PACKAGED_MODEL_NAME, packaged_model_path, weights_digest
from .onnx_embedder import CACHE_DIR_ENV, OnnxEmbedder, default_cache_dir, export_onnx
from .protocol import Embedder, l2_normalize
from .registry import EmbedderFactory, get, names, register
from .sentence_transformer import SentenceTransformerEmbedder
from .windows import WHOLE_TEXT, TokenWindows, Windowed, text_windows, token_windows, window_layout

if typing.TYPE_CHECKING:  # annotations only: the package binds no name it does not export
    from pathlib import Path
    from typing import Any

DEFAULT_EMBEDDER = f"sentence-transformers:{PACKAGED_MODEL_NAME}"
"""Registry name of the default model, the packaged all-MiniLM-L6-v2 (384 dimensions), run
through sentence-transformers (the reference runtime, on torch). Which runtime a store opens
with is not decided here: agentmemory's one rule (``agentmemory.opening.choose_embedder``)
takes :data:`ONNX_EMBEDDER` first and this name when onnxruntime cannot run the model."""

ONNX_EMBEDDER = f"onnx:{PACKAGED_MODEL_NAME}"
"""Registry name of the same model, the packaged all-MiniLM-L6-v2, run through onnxruntime: the
same vectors as :data:`DEFAULT_EMBEDDER` (:func:`same_vectors`; cosine > 0.999, not bit for bit)
with a faster cold start (``benchmarks/README.md``, "Embedders")."""


def _hashing(dim: str | int = DEFAULT_HASHING_DIM, **kwargs: Any) -> Embedder:
    try:
        width = int(dim)
    except ValueError:
        raise ValueError(
            f"hashing embedder name needs an integer dimension, as 'hashing:256'; got {dim!r}"
        ) from None
    return HashingEmbedder(width, **kwargs)


def _sentence_transformers(model: str | Path | None = None, **kwargs: Any) -> Embedder:
    return SentenceTransformerEmbedder(model, **kwargs)


def _onnx(model: str | Path | None = None, **kwargs: Any) -> Embedder:
    return OnnxEmbedder(model, **kwargs)


register("hashing", _hashing)
register("sentence-transformers", _sentence_transformers)
register(DEFAULT_EMBEDDER, _sentence_transformers)
register("onnx", _onnx)
register(ONNX_EMBEDDER, _onnx)

__all__ = [
    "CACHE_DIR_ENV",
    "DEFAULT_EMBEDDER",
    "DEFAULT_HASHING_DIM",
    "INTERCHANGEABLE_RUNTIMES",
    "ONNX_EMBEDDER",
    "PACKAGED_MODEL_NAME",
    "WHOLE_TEXT",
    "ChromaEmbedder",
    "Embedder",
    "EmbedderError",
    "EmbedderFactory",
    "HashingEmbedder",
    "OnnxEmbedder",
    "SentenceTransformerEmbedder",
    "TokenWindows",
    "UnknownEmbedderError",
    "Windowed",
    "as_chroma_embedding_function",
    "default_cache_dir",
    "export_onnx",
    "fingerprint_fields",
    "get",
    "l2_normalize",
    "names",
    "packaged_model_path",
    "register",
    "same_vectors",
    "text_windows",
    "token_windows",
    "weights_digest",
    "window_layout",
]
