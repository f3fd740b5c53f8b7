"""The ``Embedder`` protocol every embedder satisfies, and the row normalisation they share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder", "l2_normalize"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors.

    Attributes:
        name: stable identifier, also the registry key that builds it, e.g.
            ``"sentence-transformers:all-MiniLM-L6-v2"`` or ``"hashing:256"``.
        dim: number of columns of every matrix ``embed`` returns.
        fingerprint: ``name``, ``dim`` and the model's version or a digest of its weights, as one
            string. Two embedders with equal fingerprints give the same vectors for the same texts,
            so a store records it and refuses to open with an embedder whose fingerprint differs,
            unless ``embedders.same_vectors`` holds (the same weights through another runtime).

    Implementations batch internally and are safe to call from several threads at once.

    Optional windows: an embedder whose model reads a bounded input may also satisfy
    :class:`embedders.Windowed` (``windows(text)``, ``window_layout``), splitting a long text
    into overlapping windows that each fit, measured with its own tokenizer. Stores embed every
    window of an entry and score the entry by its best one; an embedder without them keeps
    working, one window (the whole text, truncated by its model) per entry
    (:func:`embedders.text_windows`, docs/recall.md#windows).
    """

    @property
    def name(self) -> str:
        """Stable identifier of this embedder (see the class docstring)."""
        ...

    @property
    def dim(self) -> int:
        """Number of dimensions of each vector."""
        ...

    @property
    def fingerprint(self) -> str:
        """``name``, ``dim`` and a model version or weight digest (see the class docstring)."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``, in order.

        Returns a ``(len(texts), dim)`` float32 array whose rows have L2 norm 1 (the hashing
        embedder may return an all-zero row for a text with no features; see its docstring).
        ``embed([])`` returns shape ``(0, dim)``.
        """
        ...


def l2_normalize(matrix: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Return ``matrix`` as a float32 ``(n, dim)`` array with each row scaled to L2 norm 1.

    All-zero rows stay all zero (they have no direction). A 1-D input is treated as one row.
    The input is not modified.
    """
    out = np.array(matrix, dtype=np.float32, copy=True, ndmin=2)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out
