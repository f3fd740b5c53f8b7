"""An embedder that remembers the vectors of the last few texts it embedded one call at a time,
so the same text embedded twice in a row costs one model call (a save's near-duplicate check
embeds the new text as a query, then the save embeds it for the index:
docs/contract.md#near-duplicates-at-save-time)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .protocol import Embedder

__all__ = ["RECENT_CALL_TEXTS", "RECENT_TEXTS", "RecentVectors", "remembering"]

RECENT_TEXTS = 16
"""How many texts' vectors :class:`RecentVectors` keeps, the least recently used dropped first."""

RECENT_CALL_TEXTS = 4
"""Only calls of at most this many texts are remembered (a query, a save's windows); a bulk
import's batches are not, so they cost nothing extra."""


class RecentVectors:
    """``inner`` with a memory of the vectors of its last :data:`RECENT_TEXTS` texts.

    ``embed(texts)`` returns what ``inner.embed(texts)`` returns, row for row (a remembered row
    is the one ``inner`` made for that text in an earlier call of at most
    :data:`RECENT_CALL_TEXTS` texts; an embedder is deterministic, so it is the same vector);
    texts not remembered are embedded in one call to ``inner``. Every other attribute
    (``name``, ``dim``, ``fingerprint``, ``windows``, ...) is ``inner``'s. Safe from several
    threads at once.
    """

    def __init__(self, inner: Embedder, size: int = RECENT_TEXTS) -> None:
        self._inner = inner
        self._size = size
        self._rows: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def inner(self) -> Embedder:
        """The embedder this one remembers for."""
        return self._inner

    @property
    def name(self) -> str:
        """``inner.name``."""
        return self._inner.name

    @property
    def dim(self) -> int:
        """``inner.dim``."""
        return self._inner.dim

    @property
    def fingerprint(self) -> str:
        """``inner.fingerprint``."""
        return self._inner.fingerprint

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):  # copy and pickle probe before __init__ has run
            raise AttributeError(attr)
        return getattr(self._inner, attr)

    def __getstate__(self) -> dict[str, Any]:
        return {"inner": self._inner, "size": self._size}  # not the lock, not the memory

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["inner"], state["size"])  # type: ignore[misc]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """``inner.embed(texts)``, remembered rows taken from memory (see the class docstring)."""
        texts = list(texts)
        if not texts or len(texts) > RECENT_CALL_TEXTS:
            return self._inner.embed(texts)
        with self._lock:
            known = {t: self._rows[t] for t in texts if t in self._rows}
            for t in known:
                self._rows.move_to_end(t)
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if not missing:
            return np.stack([known[t] for t in texts]).astype(np.float32, copy=False)
        made = np.asarray(self._inner.embed(missing), dtype=np.float32)
        if made.shape != (len(missing), self._inner.dim):
            return self._inner.embed(texts)  # let the caller see the embedder's own shape error
        fresh = {t: made[i].copy() for i, t in enumerate(missing)}
        with self._lock:
            for t, row in fresh.items():
                self._rows[t] = row
                self._rows.move_to_end(t)
            while len(self._rows) > self._size:
                self._rows.popitem(last=False)
        rows = {**known, **fresh}
        return np.stack([rows[t] for t in texts]).astype(np.float32, copy=False)


class _WindowedRecentVectors(RecentVectors):
    """:class:`RecentVectors` of an embedder with windows: its ``windows`` and
    ``window_layout`` are real attributes here, since ``isinstance(x, embedders.Windowed)``
    looks attributes up statically from Python 3.12 (``__getattr__`` is not consulted)."""

    @property
    def window_layout(self) -> str:
        """``inner.window_layout``."""
        return str(self._inner.window_layout)  # type: ignore[attr-defined]

    def windows(self, text: str) -> list[tuple[int, int]]:
        """``inner.windows(text)``."""
        return list(self._inner.windows(text))  # type: ignore[attr-defined]


def remembering(inner: Embedder, size: int = RECENT_TEXTS) -> RecentVectors:
    """``inner`` with a memory of its last ``size`` texts' vectors (:class:`RecentVectors`),
    an :class:`embedders.Windowed` one when ``inner`` is."""
    from .windows import Windowed

    if isinstance(inner, Windowed):
        return _WindowedRecentVectors(inner, size)
    return RecentVectors(inner, size)
