"""The probe: finding a vector index that would crash its loader, without crashing
(docs/storage.md#a-damaged-vector-index).

A garbled HNSW segment file (``data_level0.bin``) makes Chroma's native code crash the process
that loads the collection (a segmentation fault: no exception to catch). :func:`probe_index`
therefore opens the folder in a child process (:mod:`.probe_child`) and searches every collection
once; a child killed by a signal, or failing, marks the index damaged. ``agentmemory verify`` and
``reindex`` probe first, and every open of an embedded folder whose segment files changed since
a process of ours last loaded them does too (:mod:`.loaded`), so save and search never die with
a signal.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from agentmemory.errors import IndexReadOnlyError, StoreLockedError

from .folder_lock import folder_holder

__all__ = ["HELD_DETAIL", "LOCKED_STATUS", "PROBE_TIMEOUT_S", "READ_ONLY_STATUS", "probe_index"]

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

_CHILD = (
    "import sys; from agentmemory.stores.chroma.probe_child import probe_here; "
    "sys.exit(probe_here(sys.argv[1], held=sys.argv[2:] == ['held']))"
)


def probe_index(
    folder: Path,
    *,
    timeout_s: float = PROBE_TIMEOUT_S,
    held: bool = False,
    crash_only: bool = False,
) -> str | None:
    """Open ``folder/chroma`` in a child process (taking the store's folder lock there, unless
    ``held``: the caller holds it, and the child then opens the folder without it) and search
    every collection once. With ``crash_only``, a child that failed with an ordinary error (one
    the caller would meet as an exception, not a crash) counts as loading. Returns ``None`` when that worked or there is no ``chroma/``, else a
    one-line reason ("loading it crashed a probe process (SIGSEGV)"). Blocks for the child's
    run, most of it importing chromadb (its duration: docs/storage.md#a-damaged-vector-index).

    Raises:
        IndexReadOnlyError: the child found the folder's files may not be written (nothing is
            damaged; ``folder`` names the store).
        StoreLockedError: another process holds the folder (found before the child starts, or
            by the child): the index is in use, not damaged, and was not loaded.
    """
    if not (folder / "chroma").is_dir():
        return None
    holder = None if held else folder_holder(folder)
    if holder is not None:
        raise StoreLockedError(str(folder), holder, HELD_DETAIL)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(folder), *(["held"] if held else [])],
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
        return None if crash_only else reason
    return None
