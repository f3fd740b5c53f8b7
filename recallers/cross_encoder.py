"""``CrossEncoderReranker``: a sentence-transformers ``CrossEncoder`` loaded from a local folder
(docs/recall.md#reranking).

Importing this module imports numpy only: torch and sentence-transformers are imported on the
first ``rerank``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from embedders.torch_runtime import import_torch

from .errors import RerankerFolderError

__all__ = [
    "DEFAULT_RERANK_BATCH_SIZE",
    "DEFAULT_RERANK_THREADS",
    "CrossEncoderReranker",
]

DEFAULT_RERANK_BATCH_SIZE = 32
"""(query, text) pairs per forward pass (sentence-transformers' own default)."""

DEFAULT_RERANK_THREADS = 1
"""Torch intra-op threads, as the embedders use (docs/recall.md#threads)."""


class CrossEncoderReranker:
    """Reranks with a sentence-transformers ``CrossEncoder`` read from a local folder, offline.

    Args:
        folder: the model folder (``config.json``, weights, tokenizer files), as
            ``CrossEncoder.save_pretrained`` or ``transformers``' ``save_pretrained`` writes it.
        device: torch device, ``"cpu"`` by default.
        threads: torch intra-op threads, set with ``torch.set_num_threads`` when the model loads
            (process-wide); ``None`` means :data:`DEFAULT_RERANK_THREADS` (1).
        batch_size: pairs per forward pass.
        max_length: word pieces read per (query, text) pair; ``None`` keeps the model's own.

    ``name`` is ``"cross-encoder:<folder>"`` (``recallers.get_reranker(name)`` builds it again). torch and
    sentence-transformers are imported, and the model loaded, on the first ``rerank``. The model
    must give one score per pair (``num_labels`` 1). ``rerank`` is serialised by a lock.

    Raises:
        RerankerFolderError: ``folder`` is not an existing folder with a ``config.json`` (a hub
            name such as ``"cross-encoder/ms-marco-MiniLM-L-6-v2"`` is refused here, before any
            import).
        ValueError: ``batch_size``, ``threads`` or ``max_length`` under 1.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        device: str = "cpu",
        threads: int | None = None,
        batch_size: int = DEFAULT_RERANK_BATCH_SIZE,
        max_length: int | None = None,
    ) -> None:
        given = os.fspath(folder)
        path = Path(given).expanduser()
        if not path.exists():
            raise RerankerFolderError(given, "is not an existing folder")
        if not path.is_dir():
            raise RerankerFolderError(given, "is a file, not a folder")
        if not (path / "config.json").is_file():
            raise RerankerFolderError(given, "has no config.json")
        for label, value in (("batch_size", batch_size), ("threads", threads)):
            if value is not None and value < 1:
                raise ValueError(f"reranker {label} is {value}; it must be at least 1")
        if max_length is not None and max_length < 1:
            raise ValueError(f"reranker max_length is {max_length}; it must be at least 1")
        self._folder = path.resolve()
        self._device = device
        self._threads = DEFAULT_RERANK_THREADS if threads is None else threads
        self._batch_size = batch_size
        self._max_length = max_length
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()

    @property
    def name(self) -> str:
        """``"cross-encoder:<absolute folder>"``."""
        return f"cross-encoder:{self._folder}"

    @property
    def folder(self) -> Path:
        """The model folder, absolute."""
        return self._folder

    def _load(self) -> Any:
        """Import sentence-transformers and load the model once; returns it.

        Raises ``ValueError`` when the model gives more than one score per pair."""
        if self._model is not None:
            return self._model
        with self._load_lock:
            if self._model is None:
                import_torch(self._threads)
                from sentence_transformers import CrossEncoder

                model = CrossEncoder(
                    str(self._folder),
                    device=self._device,
                    max_length=self._max_length,
                    local_files_only=True,
                )
                labels = int(model.config.num_labels)
                if labels != 1:
                    raise ValueError(
                        f"cross-encoder {str(self._folder)!r} gives {labels} scores per pair; a "
                        "reranker needs a model with num_labels 1 (one relevance score)"
                    )
                self._model = model
        return self._model

    def rerank(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Score each of ``texts`` against ``query`` (see :class:`recallers.Reranker`).

        Returns a ``(len(texts),)`` float32 array, the model's score of each (query, text) pair
        (its logit passed through the model's activation: a sigmoid, in 0 to 1, for a model
        saved without another). Pairs longer than ``max_length`` are truncated. The first call
        loads the model (seconds). Raises ``TypeError`` when ``texts`` is one str or holds a
        non-str, or ``query`` is not a str.
        """
        if not isinstance(query, str):
            raise TypeError(f"query is a {type(query).__name__}, not a str")
        if isinstance(texts, str):
            raise TypeError("rerank takes a sequence of texts, not one str; wrap it in a list")
        items = list(texts)
        for i, text in enumerate(items):
            if not isinstance(text, str):
                raise TypeError(f"text {i} is a {type(text).__name__}, not a str")
        if not items:
            return np.zeros((0,), dtype=np.float32)
        model = self._load()
        with self._run_lock:
            scores = model.predict(
                [(query, t) for t in items],
                batch_size=self._batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
            )
        return np.asarray(scores, dtype=np.float32).reshape(len(items))

    def __repr__(self) -> str:
        return (
            f"CrossEncoderReranker({str(self._folder)!r}, device={self._device!r}, "
            f"threads={self._threads}, batch_size={self._batch_size})"
        )
