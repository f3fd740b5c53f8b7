"""A damaged vector index: finding it without crashing, moving it aside, rebuilding it.

The vector index (``chroma/``) is derived from the journal, so a damaged one is rebuilt, never
repaired in place (docs/storage.md#a-damaged-vector-index). Chroma reports some damage as an error
at open (:class:`~agentmemory.IndexDamagedError` with ``index`` ``"vector"``); a garbled HNSW
segment file instead kills the process that loads it, so :func:`check_index_loads` first loads
the folder in a child process (:func:`agentmemory.stores.chroma.probe.probe_index`).
:func:`open_store_moving_damage` is what ``agentmemory verify --repair`` and ``agentmemory
reindex`` open a store with: a damaged ``chroma/`` is moved aside to
``chroma.damaged-<UTC time>`` (kept as evidence) and the index rebuilt from the journal.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmemory.errors import IndexDamagedError, IndexReadOnlyError

if TYPE_CHECKING:
    from agentmemory.stores.markdown.store import FileStore

    from .store import ChromaStore

__all__ = [
    "DAMAGED_PREFIX",
    "MovedIndex",
    "check_index_loads",
    "move_index_aside",
    "open_store_moving_damage",
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


def check_index_loads(
    path: str | os.PathLike[str] | None = None,
    *,
    format: str | None = None,
    dsn: str | None = None,
) -> None:
    """Load the vector index of the store folder ``path`` (``None``: the default folder,
    :func:`agentmemory.opening.store_folder`) in a child process and search each collection
    once (:func:`agentmemory.stores.chroma.probe.probe_index`, about 2 s); nothing when it has no
    ``chroma/``, or when the store is not a folder (``path``, ``format`` and ``dsn`` name its
    journal as :func:`agentmemory.open_store` reads them: :func:`~agentmemory.opening.journal_dsn`).

    Raises:
        IndexDamagedError: ``index`` ``"vector"``, when the child crashed (a segmentation fault),
            failed or timed out: loading it in this process could kill it.
        NoStoreError: ``path`` is a file.
        ValueError: ``dsn`` together with ``path`` or ``format``.
    """
    from agentmemory.opening import journal_dsn, store_folder

    from .probe import probe_index

    if journal_dsn(path, format=format, dsn=dsn) is not None:
        return
    folder = store_folder(path)
    crashed = probe_index(folder)
    if crashed is not None:
        raise IndexDamagedError(str(folder), "vector", crashed)


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


def open_store_moving_damage(
    path: str | os.PathLike[str] | None = None, *, reindex: bool = False, **options: Any
) -> tuple[ChromaStore | FileStore, MovedIndex | None]:
    """Open the existing store ``path`` for a repair: :func:`check_index_loads`, then
    :func:`agentmemory.open_store` (``create=False``, ``reindex``, ``options``). When the index
    is damaged (the probe, or :class:`~agentmemory.IndexDamagedError` ``"vector"`` at open), move
    it aside (:func:`move_index_aside`) and open the store again with ``reindex=True``, which
    rebuilds it from the journal (docs/storage.md#a-damaged-vector-index).

    Returns the store (the caller closes it) and what was moved aside, or ``None`` when nothing
    was.

    Raises what :func:`agentmemory.open_store` raises (a damaged lexical index included), and
    ``OSError`` when the damaged folder cannot be moved.
    """
    from agentmemory.opening import open_store

    try:
        # never load a crashing index here: it would kill this process
        check_index_loads(path, format=options.get("format"), dsn=options.get("dsn"))
        found = open_store(
            path, create=False, reindex=reindex, journal_only_when_damaged=False, **options
        )
        return found, None
    except IndexDamagedError as exc:
        if exc.index != "vector" or isinstance(exc, IndexReadOnlyError):
            raise  # nothing to move aside: a read-only index is made writable, not rebuilt
        moved = MovedIndex(move_index_aside(exc.path), exc.detail)
    return open_store(path, create=False, reindex=True, **options), moved
