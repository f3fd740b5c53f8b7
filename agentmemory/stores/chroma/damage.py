"""Damage: moving a damaged vector index aside so it is rebuilt from the journal.

The vector index (``chroma/``) is derived from the journal, so a damaged one is rebuilt, never
repaired in place (docs/storage.md#a-damaged-vector-index). Finding it without crashing is the
probe's (:mod:`.probe`, re-exported here: :func:`probe_index`).

Moving it aside (:func:`move_index_aside`) renames it ``chroma.damaged-<UTC time>`` (kept as
evidence); running the probe when a store is opened for a repair
(:func:`agentmemory.opening.check_index_loads`) and reopening the store
(:func:`agentmemory.opening.open_store_moving_damage`) belong to opening a store.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from .folder_lock import FolderLock
from .probe import HELD_DETAIL, PROBE_TIMEOUT_S, READ_ONLY_STATUS, probe_index

__all__ = [
    "DAMAGED_PREFIX",
    "HELD_DETAIL",
    "PROBE_TIMEOUT_S",
    "READ_ONLY_STATUS",
    "MovedIndex",
    "move_index_aside",
    "probe_index",
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

    The rename happens under the store's folder lock, taken without waiting: an index another
    process holds is in use, not damaged, and is never moved (docs/storage.md#locked-is-not-damaged).

    Raises:
        StoreLockedError: another process (or another handle of this one) holds the folder;
            nothing was moved.
        OSError: the rename fails (no ``chroma/``, a name already taken).
    """
    base = Path(folder)
    if not (base / "chroma").is_dir() and (base / ".vectors" / "chroma").is_dir():
        base = base / ".vectors"  # a Markdown folder keeps its index there, with its own lock
    old = base / "chroma"
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    aside = old.with_name(DAMAGED_PREFIX + stamp)
    with FolderLock.acquire(base, timeout_s=0.0, detail=HELD_DETAIL):
        old.rename(aside)
    return aside
