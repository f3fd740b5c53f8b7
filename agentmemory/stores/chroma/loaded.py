"""Which segment files last loaded cleanly: the probe runs only when they changed behind our back
(docs/storage.md#a-damaged-vector-index).

A garbled HNSW segment file crashes the process that loads it (SIGSEGV, nothing to catch), so an
embedded folder is probed in a child process (:func:`agentmemory.stores.chroma.damage.probe_index`)
before this process loads it, unless its segment files are exactly as they were when a process
of ours last closed the folder cleanly or probed it. That record, ``chroma.loaded.json`` beside
``chroma.lock``, holds each segment file's name, size and modification time (ns): a ``stat`` per
file, read once per open. A process killed while it held the folder, a copy from elsewhere, a
person's edit or a disk error changes the files without changing the record, and the next open
probes (about 2 s) before it loads them.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

__all__ = ["LOADED_FILE", "loaded_cleanly", "record_loaded", "segment_files"]

LOADED_FILE = "chroma.loaded.json"
"""The record, in the folder that holds ``chroma/`` (a store folder, or a Markdown folder's
``.vectors``)."""

SegmentFiles = dict[str, list[int]]
"""``"<segment folder>/<file>"`` -> ``[size in bytes, mtime in ns]``."""


def segment_files(folder: Path) -> SegmentFiles:
    """Every file in the segment folders of ``folder/chroma`` (the sub-folders, where Chroma keeps
    each collection's HNSW files; ``chroma.sqlite3`` fails with an error, not a crash, so it is
    left out), by name, with its size and modification time."""
    out: SegmentFiles = {}
    try:
        segments = [d for d in os.scandir(folder / "chroma") if d.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return out
    for seg in segments:
        try:
            files = list(os.scandir(seg.path))
        except OSError:
            continue
        for f in files:
            with contextlib.suppress(OSError):
                st = f.stat(follow_symlinks=False)
                out[f"{seg.name}/{f.name}"] = [st.st_size, st.st_mtime_ns]
    return out


def loaded_cleanly(folder: Path) -> bool:
    """Whether ``folder/chroma``'s segment files are those :func:`record_loaded` last recorded,
    or there are none (nothing that could crash a loader); ``False`` without a record."""
    found = segment_files(folder)
    if not found:
        return True
    try:
        recorded = json.loads((folder / LOADED_FILE).read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(recorded, dict) and recorded.get("files") == found


def record_loaded(folder: Path) -> None:
    """Record ``folder/chroma``'s segment files as loading cleanly (called under the folder lock,
    after a clean close or a probe that passed). A record that cannot be written (a full disk, a
    read-only folder) is left as it was: the next open probes."""
    data = json.dumps({"files": segment_files(folder)}, sort_keys=True).encode()
    target = folder / LOADED_FILE
    tmp = folder / f".{LOADED_FILE}.{os.getpid()}"
    try:
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
