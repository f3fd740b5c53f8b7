"""Importing torch for a local model: the environment a sentence-transformers model (an embedder
or a cross-encoder) is loaded in, offline, quiet, with a set number of threads."""

from __future__ import annotations

import os
from typing import Any

__all__ = ["import_torch"]


def import_torch(threads: int) -> Any:
    """Set the Hugging Face environment for a local model unless the caller set it
    (``HF_HUB_OFFLINE=1``: nothing is downloaded; ``TOKENIZERS_PARALLELISM=false``;
    ``HF_HUB_DISABLE_PROGRESS_BARS=1``), import torch, set its intra-op threads to ``threads``
    (``torch.set_num_threads``) and return the module.

    Raises:
        ImportError: torch is not installed.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import torch

    torch.set_num_threads(threads)
    return torch
