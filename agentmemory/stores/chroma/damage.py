"""A damaged vector index: moving it aside, so it is rebuilt from the journal.

The vector index (``chroma/``) is derived from the journal, so a damaged one is rebuilt, never
repaired in place (docs/storage.md#a-damaged-vector-index). :func:`move_index_aside` renames it
``chroma.damaged-<UTC time>`` (kept as evidence); finding the damage without crashing
(:func:`agentmemory.opening.check_index_loads`) and reopening the store
(:func:`agentmemory.opening.open_store_moving_damage`) belong to opening a store.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DAMAGED_PREFIX",
    "MovedIndex",
    "move_index_aside",
]

DAMAGED_PREFIX = "chroma.damaged-"
"""A damaged ``chroma/`` is renamed ``chroma.damaged-<UTC time, %Y%m%dT%H%M%SZ>`` beside it."""


@dataclass(frozen=True, slots=True)
class MovedIndex:
    """A damaged vector index that was moved aside before its store was rebuilt.

    Attributes:
        aside: the folder ``chroma/`` was renamed to (``<store>/chroma.damaged-<UTC time>``).
        detail: why it was found damaged (what Chroma or the probe process said).
    """

    aside: Path
    detail: str


def move_index_aside(folder: str | os.PathLike[str], *, now: float | None = None) -> Path:
    """Rename the store folder's ``chroma/`` to ``chroma.damaged-<UTC time>`` (:data:`DAMAGED_PREFIX`;
    ``now`` in seconds since the epoch, default the current time) and return the new path.

    Raises ``OSError`` when the rename fails (no ``chroma/``, a name already taken).
    """
    old = Path(folder) / "chroma"
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    aside = old.with_name(DAMAGED_PREFIX + stamp)
    old.rename(aside)
    return aside
