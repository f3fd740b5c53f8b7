"""Loading an embedder's model while its caller does other work (docs/recall.md#loading-the-model).

An embedder whose model loads on its first text may satisfy :class:`Preloading`:
``start_loading()`` begins that load in a background thread and returns at once, and the first
``embed`` waits for it instead of starting its own. A store calls :func:`start_loading` as it
opens, so a command's first search pays for the larger of the two (its vector index's opening,
the model's load), not their sum. An embedder without the method (hashing, a plain callable) is
left alone.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .protocol import Embedder

__all__ = ["Preloading", "start_loading"]


@runtime_checkable
class Preloading(Protocol):
    """An embedder that can load its model ahead of its first text."""

    def start_loading(self) -> bool:
        """Begin loading the model in a background thread, once; return ``True`` when a load
        was started, ``False`` when there was nothing to do (already loaded or loading) or the
        load cannot be done in the background (an export that imports torch first). Never
        raises for a model that fails to load: the first ``embed`` raises that error as it
        would have without this call."""
        ...


def start_loading(embedder: Embedder) -> bool:
    """``embedder.start_loading()`` when ``embedder`` is :class:`Preloading`, else ``False``."""
    if isinstance(embedder, Preloading):
        return embedder.start_loading()
    return False
