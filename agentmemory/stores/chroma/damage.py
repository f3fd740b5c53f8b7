"""Damage and probe: finding a damaged vector index without crashing, and moving it aside so it
is rebuilt from the journal.

The vector index (``chroma/``) is derived from the journal, so a damaged one is rebuilt, never
repaired in place (docs/storage.md#a-damaged-vector-index).

The probe (:func:`probe_index`): a garbled HNSW segment file (``data_level0.bin``) makes Chroma's
native code crash the process that loads the collection (a segmentation fault: no exception to
catch). ``agentmemory verify`` and ``agentmemory reindex`` therefore first open the folder in a
child process and search every collection once; a child killed by a signal, or failing, marks
the index damaged, and the repair moves it aside and rebuilds it from the journal.

Moving it aside (:func:`move_index_aside`) renames it ``chroma.damaged-<UTC time>`` (kept as
evidence); running the probe when a store is opened for a repair
(:func:`agentmemory.opening.check_index_loads`) and reopening the store
(:func:`agentmemory.opening.open_store_moving_damage`) belong to opening a store.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from agentmemory.errors import IndexReadOnlyError, StoreLockedError

__all__ = [
    "DAMAGED_PREFIX",
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
    from .clients import FolderLock

    base = Path(folder)
    if not (base / "chroma").is_dir() and (base / ".vectors" / "chroma").is_dir():
        base = base / ".vectors"  # a Markdown folder keeps its index there, with its own lock
    old = base / "chroma"
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    aside = old.with_name(DAMAGED_PREFIX + stamp)
    with FolderLock.acquire(base, timeout_s=0.0, detail=HELD_DETAIL):
        old.rename(aside)
    return aside


READ_ONLY_STATUS = 3
"""The probe child's exit status when Chroma may not write the folder (not damaged)."""

LOCKED_STATUS = 4
"""The probe child's exit status when another process holds the folder (not damaged)."""

HELD_DETAIL = (
    "it is in use, not damaged: nothing was checked, moved or rebuilt; run this again after "
    "that process closes the store, or run 'agentmemory server start' so that every process "
    "shares one Chroma server"
)
"""What a check or a repair of an index another process holds says it did (nothing), and what
to do instead."""

PROBE_TIMEOUT_S = 120.0
"""How long the child process may take (it imports chromadb and loads every collection)."""

_CHILD = "import sys; from agentmemory.stores.chroma.damage import _probe_here; sys.exit(_probe_here(sys.argv[1]))"


def probe_index(folder: Path, *, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Open ``folder/chroma`` in a child process (taking the store's folder lock there) and search
    every collection once. Returns ``None`` when that worked or there is no ``chroma/``, else a
    one-line reason ("loading it crashed a probe process (SIGSEGV)"). Blocks for the child's
    run, most of it importing chromadb (its duration: docs/storage.md#a-damaged-vector-index).

    Raises:
        IndexReadOnlyError: the child found the folder's files may not be written (nothing is
            damaged; ``folder`` names the store).
        StoreLockedError: another process holds the folder (found before the child starts, or
            by the child): the index is in use, not damaged, and was not loaded.
    """
    from .clients import folder_holder

    if not (folder / "chroma").is_dir():
        return None
    holder = folder_holder(folder)
    if holder is not None:
        raise StoreLockedError(str(folder), holder, HELD_DETAIL)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(folder)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"loading it in a probe process took over {timeout_s:g} s"
    if done.returncode < 0:
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        return f"loading it crashed a probe process ({name})"
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        reason = (lines[-1] if lines else f"a probe process failed ({done.returncode})")[:300]
        if done.returncode == READ_ONLY_STATUS:
            raise IndexReadOnlyError(str(folder), "vector", reason)
        if done.returncode == LOCKED_STATUS:
            raise StoreLockedError(str(folder), reason, HELD_DETAIL)
        return reason
    return None


def _probe_here(folder: str) -> int:
    """The child's work: open the folder as a store would, search each collection once; the
    exit status (0 when it worked; 1 with the reason on stderr when Chroma could not open it)."""
    from agentmemory.errors import IndexDamagedError

    from .clients import close_folder, open_folder

    where = Path(folder)
    try:
        client = open_folder(where, timeout_s=5.0)
    except StoreLockedError as exc:  # taken since the parent looked: in use, not damaged
        print(exc.holder, file=sys.stderr)
        return LOCKED_STATUS
    except IndexDamagedError as exc:  # the reason alone: the parent wraps it in its own line
        print(exc.detail, file=sys.stderr)
        return READ_ONLY_STATUS if isinstance(exc, IndexReadOnlyError) else 1
    try:
        for listed in client.list_collections():
            name = listed if isinstance(listed, str) else listed.name
            col = client.get_collection(name, embedding_function=None)
            if col.count() == 0:
                continue
            first = col.get(limit=1, include=["embeddings"])
            vectors = first.get("embeddings")
            if vectors is None or len(vectors) == 0:
                continue
            col.query(query_embeddings=[vectors[0]], n_results=1)
    finally:
        close_folder(where)
    return 0
