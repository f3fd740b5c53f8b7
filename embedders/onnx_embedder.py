"""``OnnxEmbedder``: the same sentence-transformers model run through onnxruntime, exported once
to ONNX and cached, for a fast cold start (no torch import once the export is cached)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .model_folder import (
    check_run_options,
    read_model_folder,
    resolve_model,
    weight_files,
    weights_digest,
)
from .protocol import l2_normalize
from .windows import TokenWindows

__all__ = [
    "CACHE_DIR_ENV",
    "DEFAULT_ONNX_BATCH_SIZE",
    "DEFAULT_ONNX_THREADS",
    "ONNX_OPSET",
    "OnnxEmbedder",
    "default_cache_dir",
    "export_onnx",
]

CACHE_DIR_ENV = "AGENTMEMORY_CACHE_DIR"
"""Environment variable that overrides the cache folder (``default_cache_dir``)."""

DEFAULT_ONNX_BATCH_SIZE = 32
"""Texts per onnxruntime call."""

DEFAULT_ONNX_THREADS = 1
"""onnxruntime intra-op threads; one, as for torch, on a shared 2-core machine
(docs/recall.md#threads)."""

ONNX_OPSET = 17
"""ONNX opset of the export (``torch.onnx.export(..., opset_version=17, dynamo=False)``)."""

_DIGESTS_FILE = "digests.json"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def default_cache_dir() -> Path:
    """``$AGENTMEMORY_CACHE_DIR`` when set and non-empty, else
    ``platformdirs.user_cache_dir("agentmemory")`` (``~/.cache/agentmemory`` on Linux)."""
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("agentmemory"))


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _recorded_digest(folder: Path, cache_dir: Path) -> str:
    """The weights digest of ``folder``, remembered in ``<cache_dir>/onnx/digests.json`` by the
    weight files' sizes and modification times, so that a cold start reads no weights."""
    record_file = cache_dir / "onnx" / _DIGESTS_FILE
    stats = sorted(
        [p.relative_to(folder).as_posix(), p.stat().st_size, p.stat().st_mtime_ns]
        for p in weight_files(folder)
    )
    key = str(folder.resolve())
    try:
        records: dict[str, Any] = json.loads(record_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        records = {}
    entry = records.get(key)
    if isinstance(entry, dict) and entry.get("stats") == stats and "digest" in entry:
        return str(entry["digest"])
    digest = weights_digest(folder)
    records[key] = {"stats": stats, "digest": digest}
    # a read-only cache only costs the digest again next time
    with contextlib.suppress(OSError):
        _write_atomically(record_file, json.dumps(records, indent=1).encode("utf-8"))
    return digest


def export_onnx(folder: Path, out_file: Path) -> Path:
    """Export the transformer of the model in ``folder`` to ``out_file`` (ONNX, fp32).

    Inputs ``input_ids``, ``attention_mask`` (and ``token_type_ids`` when the model takes them),
    int64 ``(batch, sequence)``; output ``token_embeddings``, float32 ``(batch, sequence, dim)``.
    Uses ``torch.onnx.export(..., dynamo=False, opset_version=17)``, which needs torch, transformers
    and the ``onnx`` package (``ModuleNotFoundError`` naming it when absent). Written to a temporary file and renamed, so a reader never sees half
    a file and two processes exporting at once both succeed. Returns ``out_file``.
    """
    import importlib.util
    import inspect

    if importlib.util.find_spec("onnx") is None:
        raise ModuleNotFoundError(
            "exporting the model to ONNX needs the 'onnx' package (pip install onnx); "
            "it is needed once per model, later runs use the cached export"
        )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(
        str(folder), local_files_only=True, attn_implementation="eager"
    )
    model.eval()
    takes = set(inspect.signature(model.forward).parameters)
    names = [n for n in _INPUTS if n in takes]

    class _TokenEmbeddings(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *args: Any) -> Any:
            return self.inner(**dict(zip(names, args, strict=True))).last_hidden_state

    dummy = tuple(torch.ones((2, 8), dtype=torch.int64) for _ in names)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out_file.parent, prefix=out_file.name + ".", suffix=".tmp")
    os.close(fd)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            # tracer notes about Python-level branches that are constant for BERT-style models
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _TokenEmbeddings(model),
                dummy,
                tmp,
                input_names=names,
                output_names=["token_embeddings"],
                dynamic_axes={
                    **{n: {0: "batch", 1: "sequence"} for n in names},
                    "token_embeddings": {0: "batch", 1: "sequence"},
                },
                opset_version=ONNX_OPSET,
                dynamo=False,
            )
        os.replace(tmp, out_file)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out_file


class OnnxEmbedder:
    """Embeds with a sentence-transformers model (Transformer + mean Pooling [+ Normalize]) run
    through onnxruntime: tokenizers for word pieces, the exported transformer for token vectors,
    then mean pooling over the attention mask and L2 normalisation in numpy, as
    sentence-transformers does (Reimers and Gurevych, EMNLP 2019). Vectors match
    ``SentenceTransformerEmbedder`` for the same model to cosine > 0.999 (tested).

    Args:
        model: ``None`` or ``"all-MiniLM-L6-v2"`` for the packaged model, or a local folder.
        cache_dir: where exports are kept; ``None`` means ``default_cache_dir()`` (the
            ``AGENTMEMORY_CACHE_DIR`` variable, else the user cache folder). The export lands in
            ``<cache_dir>/onnx/<model>-<weights digest>/model.onnx``.
        threads: onnxruntime intra-op threads (``None``: ``DEFAULT_ONNX_THREADS``, 1).
        batch_size: texts per onnxruntime call (texts are sorted by length first, as
            sentence-transformers does, so padding stays short).
        max_seq_length: truncate to this many word pieces, special tokens included; ``None`` keeps
            the model's ``sentence_bert_config.json`` value (256 for all-MiniLM-L6-v2; its
            ``tokenizer.json`` says 128, which sentence-transformers overrides).
        window_stride: word pieces between the starts of a long text's windows (``windows``);
            ``None`` means half the window (docs/recall.md#windows).

    Windows: ``windows(text)`` splits a text longer than ``max_seq_length`` minus the special
    tokens into overlapping windows measured with the folder's ``tokenizer.json`` (the
    tokenizer ``embed`` uses), exactly as ``SentenceTransformerEmbedder`` does for the same
    folder, so the two runtimes share a ``window_layout``.

    The first ``embed`` exports the model if the cache has no export for these weights (imports
    torch once, 5 to 25 s here, announced by one line on stderr); otherwise it imports
    only onnxruntime and tokenizers. Safe to call from several threads (the session runs
    concurrently; tokenization takes a lock).

    Raises ``ValueError`` when ``model`` is not a local folder, or its pipeline is not mean
    pooling over a transformer, or an option is not positive.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        cache_dir: str | Path | None = None,
        threads: int | None = None,
        batch_size: int = DEFAULT_ONNX_BATCH_SIZE,
        max_seq_length: int | None = None,
        window_stride: int | None = None,
    ) -> None:
        check_run_options(batch_size=batch_size, threads=threads, max_seq_length=max_seq_length)
        if window_stride is not None and window_stride < 1:
            raise ValueError(f"window_stride is {window_stride}; it must be at least 1")
        self._model_name, folder = resolve_model(model)
        if folder is None:
            raise ValueError(
                f"the ONNX embedder needs a local model folder; {self._model_name!r} is not one "
                "(download it first, or use SentenceTransformerEmbedder for a hub model id)"
            )
        info = read_model_folder(folder)
        if not info.mean_pooling_only or info.dim is None:
            raise ValueError(
                f"the ONNX embedder runs Transformer + mean Pooling models only; {folder} has "
                "another pipeline (see its modules.json); use SentenceTransformerEmbedder"
            )
        self._folder = folder
        self._dim: int = info.dim
        self._do_lower_case = info.do_lower_case
        self._max_seq_length = max_seq_length or info.max_seq_length or 512
        self._cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else None
        self._threads = DEFAULT_ONNX_THREADS if threads is None else threads
        self._batch_size = batch_size
        self._digest: str | None = None
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: list[str] = []
        self._load_lock = threading.Lock()
        self._loader: threading.Thread | None = None
        self._loader_lock = threading.Lock()  # not _load_lock, which a load holds throughout
        self._tokenize_lock = threading.Lock()
        self._windows = TokenWindows(folder / "tokenizer.json", self._max_seq_length, window_stride)

    @property
    def name(self) -> str:
        """``"onnx:<model>"``, e.g. ``"onnx:all-MiniLM-L6-v2"``."""
        return f"onnx:{self._model_name}"

    @property
    def dim(self) -> int:
        """Output dimension, read from the model folder (384 for all-MiniLM-L6-v2)."""
        return self._dim

    @property
    def max_seq_length(self) -> int:
        """Inputs are truncated to this many word pieces, special tokens included."""
        return self._max_seq_length

    @property
    def window_layout(self) -> str:
        """``"tokens:<window>/<stride>;<rule>"`` (``"tokens:254/127;win-1"`` for
        all-MiniLM-L6-v2)."""
        return self._windows.layout

    def windows(self, text: str) -> list[tuple[int, int]]:
        """The windows of ``text`` as character spans (``embedders.Windowed.windows``):
        ``[(0, len(text))]`` when it fits the model's input."""
        return self._windows.windows(text)

    @property
    def cache_dir(self) -> Path:
        """The cache folder in use (see the class docstring)."""
        return self._cache_dir if self._cache_dir is not None else default_cache_dir()

    @property
    def weights_digest(self) -> str:
        """``"sha256:<hex>"`` of the model's weight files (remembered in the cache folder)."""
        if self._digest is None:
            self._digest = _recorded_digest(self._folder, self.cache_dir)
        return self._digest

    @property
    def onnx_path(self) -> Path:
        """Where the export for these weights is (or will be) cached."""
        safe = _UNSAFE.sub("_", Path(self._model_name).name or "model")
        hex_digest = self.weights_digest.removeprefix("sha256:")
        return self.cache_dir / "onnx" / f"{safe}-{hex_digest[:16]}" / "model.onnx"

    @property
    def fingerprint(self) -> str:
        """``"<name>;dim=<dim>;weights=sha256:<hex>;max_seq_length=<n>"``; the ``weights`` part
        equals ``SentenceTransformerEmbedder``'s for the same model folder."""
        return (
            f"{self.name};dim={self._dim};weights={self.weights_digest};"
            f"max_seq_length={self._max_seq_length}"
        )

    def start_loading(self) -> bool:
        """Begin opening the onnxruntime session and the tokenizer in a background thread
        (``embedders.Preloading``), when the export is cached and nothing has loaded them yet;
        return whether a thread was started. The first :meth:`embed` waits for that load rather
        than starting its own. A first run, which must export with torch, is left to
        :meth:`embed`: importing torch beside another thread's imports is not safe. A load that
        fails is raised by :meth:`embed`, not here. The thread is not a daemon, so an interpreter
        that exits meanwhile waits for it (a fraction of a second) rather than kill it inside
        onnxruntime."""
        with self._loader_lock:
            if self._session is not None or self._loader is not None:
                return False
            try:
                if not self.onnx_path.is_file():
                    return False
            except OSError:  # the model folder cannot be read: embed says so
                return False
            self._loader = threading.Thread(
                target=self._load_quietly, name="agentmemory-model-load", daemon=False
            )
            self._loader.start()
            return True

    def _load_quietly(self) -> None:
        """:meth:`_load`, for :meth:`start_loading`'s thread: an error is left to :meth:`embed`,
        which loads again and raises it."""
        with contextlib.suppress(Exception):
            self._load()

    def _load(self) -> tuple[Any, Any]:
        """Export if needed, then open the session and tokenizer once; returns both."""
        if self._session is not None:
            return self._session, self._tokenizer
        with self._load_lock:
            if self._session is None:
                path = self.onnx_path
                if not path.is_file():
                    # the one wait of a first run (about 10 to 25 s): say what and why, once,
                    # on stderr (stdout may be a program's: --json, an MCP server's protocol)
                    sys.stderr.write(
                        f"agentmemory: exporting {self._model_name} to ONNX for onnxruntime, "
                        f"once per model (about 5-25 s; later starts load {path} without "
                        "torch)\n"
                    )
                    sys.stderr.flush()
                    export_onnx(self._folder, path)
                import onnxruntime
                from tokenizers import Tokenizer

                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self._threads
                options.inter_op_num_threads = 1
                options.log_severity_level = 3
                session = onnxruntime.InferenceSession(
                    str(path), sess_options=options, providers=["CPUExecutionProvider"]
                )
                tokenizer = Tokenizer.from_file(str(self._folder / "tokenizer.json"))
                padding = tokenizer.padding or {}
                tokenizer.enable_truncation(max_length=self._max_seq_length)
                tokenizer.enable_padding(
                    pad_id=int(padding.get("pad_id", 0)),
                    pad_type_id=int(padding.get("pad_type_id", 0)),
                    pad_token=str(padding.get("pad_token", "[PAD]")),
                )
                self._input_names = [i.name for i in session.get_inputs()]
                self._tokenizer = tokenizer
                self._session = session
        return self._session, self._tokenizer

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Return a ``(len(texts), dim)`` float32 array, rows L2-normalised, in input order.

        The first call opens (and, once per cache, exports) the model. Raises ``TypeError`` when
        ``texts`` is a single str or holds a non-str.
        """
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str; wrap it in a list")
        items = list(texts)
        for i, text in enumerate(items):
            if not isinstance(text, str):
                raise TypeError(f"text {i} is a {type(text).__name__}, not a str")
        out = np.zeros((len(items), self._dim), dtype=np.float32)
        if not items:
            return out
        session, tokenizer = self._load()
        if self._do_lower_case:
            items = [t.lower() for t in items]
        order = sorted(range(len(items)), key=lambda i: -len(items[i]))
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            with self._tokenize_lock:
                encodings = tokenizer.encode_batch([items[i] for i in chunk])
            feeds = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
            }
            (tokens,) = session.run(["token_embeddings"], {n: feeds[n] for n in self._input_names})
            mask = feeds["attention_mask"].astype(np.float32)[:, :, None]
            summed = (tokens * mask).sum(axis=1)
            counts = np.clip(mask.sum(axis=1), 1e-9, None)
            out[chunk] = summed / counts
        return l2_normalize(out)

    def __repr__(self) -> str:
        return (
            f"OnnxEmbedder({self._model_name!r}, threads={self._threads}, "
            f"batch_size={self._batch_size}, cache_dir={self._cache_dir!r})"
        )
