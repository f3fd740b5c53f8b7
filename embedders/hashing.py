"""``HashingEmbedder``: deterministic feature hashing of words, no model, for tests and baselines."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from .protocol import l2_normalize
from .windows import WHOLE_TEXT, WINDOW_RULE, default_stride, word_windows

__all__ = ["DEFAULT_HASHING_DIM", "HASHING_VERSION", "HashingEmbedder", "hashing_words"]

DEFAULT_HASHING_DIM = 256
"""Default number of hash buckets (vector dimensions) of ``HashingEmbedder``."""

HASHING_VERSION = "blake2b-words-v1"
"""Names the word splitting and hash function; part of the fingerprint. Change it whenever the
vectors ``HashingEmbedder`` returns for some text change."""

_WORD = re.compile(r"\w+", re.UNICODE)


def hashing_words(text: str) -> list[str]:
    """Split ``text`` into the features ``HashingEmbedder`` counts: runs of Unicode word
    characters (letters, digits, underscore; regex ``\\w+``), case-folded with ``str.casefold``.

    ``"The cat's MAT!"`` gives ``["the", "cat", "s", "mat"]``.
    """
    return _WORD.findall(text.casefold())


@functools.lru_cache(maxsize=65536)
def _bucket(word: str, dim: int) -> int:
    # blake2b, not hash(): Python salts str hashes per process (PYTHONHASHSEED).
    digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % dim


class HashingEmbedder:
    """Feature hashing of words into ``dim`` buckets (the "hashing trick", Weinberger et al.,
    ICML 2009, without the sign hash so that counts never cancel).

    Each word of ``hashing_words(text)`` adds 1 to bucket ``blake2b-64(word) mod dim``; the counts
    are then scaled to L2 norm 1. The vectors are the same in every process and on every machine.
    Texts sharing no word have cosine 0 unless two of their words share a bucket.

    A text with no word characters (``""``, ``"!?"``) has no features: its row is all zeros, not
    unit length; its cosine to anything is 0 (or undefined, for stores that divide by norms).

    ``name`` is ``"hashing:<dim>"``; ``embedders.get("hashing:<dim>")`` builds it. Stateless apart
    from a shared word cache, so safe to call from several threads.

    Windows (docs/recall.md#windows): with ``window_words=None`` (the default) a text of any
    length is one window, as before windows existed. ``window_words=W`` splits a text of more
    than ``W`` words into windows of ``W`` words every ``window_stride`` words (default
    ``W // 2``), by the rule of :func:`embedders.windows.token_windows` with each word one
    token: cheap, deterministic windows for tests. The window does not change what ``embed``
    returns for a text, so it is not part of ``fingerprint``; it is ``window_layout``.

    Raises ``ValueError`` when ``dim`` is not a positive integer, or ``window_words`` /
    ``window_stride`` is not a positive integer (the stride at most the window).
    """

    def __init__(
        self,
        dim: int = DEFAULT_HASHING_DIM,
        *,
        window_words: int | None = None,
        window_stride: int | None = None,
    ) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(
                f"hashing embedder dim is {dim!r}; it must be a positive integer such as 256"
            )
        self._dim = dim
        stride = None
        if window_words is not None:
            stride = default_stride(window_words) if window_stride is None else window_stride
            if (
                not isinstance(window_words, int)
                or not isinstance(stride, int)
                or not 1 <= stride <= window_words
            ):
                raise ValueError(
                    f"hashing embedder window_words is {window_words!r} and window_stride "
                    f"{window_stride!r}; both must be positive integers, the stride at most "
                    "the window"
                )
        elif window_stride is not None:
            raise ValueError("hashing embedder window_stride needs window_words")
        self._window = window_words
        self._stride = stride

    @property
    def name(self) -> str:
        """``"hashing:<dim>"``."""
        return f"hashing:{self._dim}"

    @property
    def dim(self) -> int:
        """Number of hash buckets, the width of each vector."""
        return self._dim

    @property
    def fingerprint(self) -> str:
        """``"hashing:<dim>;dim=<dim>;version=blake2b-words-v1"`` (see ``HASHING_VERSION``)."""
        return f"{self.name};dim={self._dim};version={HASHING_VERSION}"

    @property
    def window_layout(self) -> str:
        """``"words:<W>/<stride>;<rule>"`` with a window, else ``"whole"`` (one window)."""
        if self._window is None:
            return WHOLE_TEXT
        return f"words:{self._window}/{self._stride};{WINDOW_RULE}"

    def windows(self, text: str) -> list[tuple[int, int]]:
        """The windows of ``text`` as character spans: ``[(0, len(text))]`` without a window
        or for a text of at most ``window_words`` words; else
        :func:`embedders.windows.word_windows`."""
        if self._window is None or self._stride is None:
            return [(0, len(text))]
        return word_windows(text, window=self._window, stride=self._stride)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Return a ``(len(texts), dim)`` float32 array, rows L2-normalised (all-zero for a text
        with no word; see the class docstring). Raises ``TypeError`` when an item is not a str."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str; wrap it in a list")
        counts = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"text {row} is a {type(text).__name__}, not a str")
            for word in hashing_words(text):
                counts[row, _bucket(word, self._dim)] += 1.0
        return l2_normalize(counts).reshape(len(texts), self._dim)

    def __repr__(self) -> str:
        if self._window is None:
            return f"HashingEmbedder(dim={self._dim})"
        return (
            f"HashingEmbedder(dim={self._dim}, window_words={self._window}, "
            f"window_stride={self._stride})"
        )
