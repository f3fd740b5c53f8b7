"""Atomic file replacement: a reader sees the old bytes or the new ones, never a mix.

The Markdown folder (:class:`~agentmemory.FileStore`, docs/filestore-format.md#atomic-writes)
writes every file it replaces this way: the bytes go to a temporary file in the same folder
(named ``.tmp-…``, which readers of the folder ignore), the temporary file is fsynced, renamed over
the target (``rename(2)`` is atomic within one file system), and the folder is fsynced so the
rename itself survives a power cut.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

__all__ = ["TEMP_PREFIX", "fsync_dir", "remove_durably", "write_atomic", "write_synced"]

TEMP_PREFIX = ".tmp-"
"""The name prefix of transient temporaries; readers of a Markdown folder skip such files."""


def fsync_dir(folder: Path) -> None:
    """fsync ``folder`` so a rename or unlink in it is durable; a no-op where the platform
    cannot open a folder (the write is then as durable as the file system makes renames)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Replace ``path`` with ``data`` (bytes) atomically.

    Writes ``<folder>/.tmp-<random>``, fsyncs it (when ``sync``), renames it over ``path`` and
    fsyncs the folder (when ``sync``). ``sync=False`` keeps the atomicity but not the durability,
    for derived files that are rebuilt when lost. The temporary file is removed on any failure.

    Raises:
        OSError: the folder cannot be written (missing, read-only, full disk); ``path`` is then
            unchanged.
    """
    folder = path.parent
    tmp = folder / f"{TEMP_PREFIX}{secrets.token_hex(8)}"
    _write_new(tmp, data, sync=sync)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sync:
        fsync_dir(folder)


def write_synced(path: Path, data: bytes) -> None:
    """Create ``path`` (it must not exist), write ``data`` (bytes) and fsync it: the first half
    of :func:`write_atomic`, for a caller that renames the file itself later (a purge's new
    journal, docs/filestore-format.md#a-purge-rewrites-the-journal). The file is removed on any
    failure.

    Raises:
        FileExistsError: ``path`` exists.
        OSError: the folder cannot be written (read-only, full disk).
    """
    _write_new(path, data, sync=True)


def _write_new(path: Path, data: bytes, *, sync: bool) -> None:
    """Create ``path`` (it must not exist), write all of ``data`` and fsync it when ``sync``;
    the file is removed on any failure."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise


def remove_durably(path: Path) -> bool:
    """Unlink ``path`` and fsync its folder; return ``False`` when it was already gone.

    Raises:
        OSError: the file exists but cannot be removed.
    """
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    fsync_dir(path.parent)
    return True
