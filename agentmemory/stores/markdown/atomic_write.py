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

__all__ = ["TEMP_PREFIX", "Undo", "fsync_dir", "remove_durably", "write_atomic", "write_synced"]

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


class Undo:
    """Puts entry files and ``INDEX.md`` back as they were when a write fails before its
    journal record lands (a full disk), so a refused write leaves no file ahead of the journal
    for the next write to journal as a person's edit (docs/storage.md#a-full-disk).

    :meth:`keep` hard-links a file aside before it is replaced or removed (no data is copied,
    so it works on a full disk); :meth:`restore` puts every kept file back and removes the files
    that did not exist; :meth:`drop` forgets the kept copies once the record landed.
    """

    def __init__(self) -> None:
        self._kept: list[tuple[Path, Path | None]] = []

    def keep(self, path: Path) -> None:
        """Remember ``path`` as it is now (absent included), before it is written or removed."""
        if any(p == path for p, _ in self._kept):
            return
        aside: Path | None = path.with_name(f"{TEMP_PREFIX}undo-{secrets.token_hex(8)}")
        assert aside is not None
        try:
            os.link(path, aside)
        except FileNotFoundError:
            aside = None
        self._kept.append((path, aside))

    def restore(self) -> None:
        """Put every kept file back as it was; best effort (a step that fails is skipped)."""
        for path, aside in reversed(self._kept):
            with contextlib.suppress(OSError):
                if aside is None:
                    path.unlink(missing_ok=True)
                elif path.exists() and os.path.samefile(aside, path):
                    aside.unlink()  # never replaced (rename of a file onto itself does nothing)
                else:
                    os.replace(aside, path)
        self._kept = []

    def drop(self) -> None:
        """Forget the kept copies (the write landed)."""
        for _, aside in self._kept:
            if aside is not None:
                with contextlib.suppress(OSError):
                    aside.unlink()
        self._kept = []
