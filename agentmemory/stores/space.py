"""Telling a full disk from damage (docs/storage.md#a-full-disk).

A full disk shows itself in many forms: ``ENOSPC`` or ``EDQUOT`` from a write, sqlite's
``SQLITE_FULL``, but also sqlite's bare "disk I/O error" when it cannot grow its WAL or shared
memory file, and Chroma's own errors that wrap either. None of these means the files are damaged,
and a repair that moves an index aside on a full disk only makes things worse. :func:`is_full`
answers from the error when it says so and, for an I/O error that does not, from the free space
left on the folder's file system (:func:`out_of_space`).
"""

from __future__ import annotations

import errno
import os

__all__ = ["FULL_ERRNOS", "LOW_SPACE_BYTES", "is_full", "out_of_space"]

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
"""The ``errno`` values of a write refused for want of space (the disk, or the user's quota)."""

LOW_SPACE_BYTES = 1 << 20
"""Free space (bytes) below which an I/O error on a store's files is taken for a full disk:
1 MiB, more than one sqlite page, WAL frame batch or Chroma segment write needs."""

_WORDS = ("no space left", "disk is full", "database or disk is full", "quota exceeded")


def out_of_space(path: str | os.PathLike[str]) -> bool:
    """Whether the file system holding ``path`` (or its nearest existing parent) has less than
    :data:`LOW_SPACE_BYTES` or no inode left for an unprivileged writer (``statvfs``'s
    ``f_bavail`` and ``f_favail``). ``False`` when it cannot be asked."""
    where = os.path.abspath(os.fspath(path))
    while not os.path.exists(where):
        parent = os.path.dirname(where)
        if parent == where:
            return False
        where = parent
    try:
        st = os.statvfs(where)
    except OSError:
        return False
    no_inodes = st.f_files > 0 and st.f_favail == 0
    return st.f_bavail * st.f_frsize < LOW_SPACE_BYTES or no_inodes


def is_full(err: BaseException, path: str | os.PathLike[str]) -> bool:
    """Whether ``err`` (or an error it was raised from) is a write refused for want of space on
    the file system of ``path``: an ``OSError`` with an errno of :data:`FULL_ERRNOS`, a message
    saying the disk is full, or an I/O error while that file system is out of space."""
    seen: set[int] = set()
    cause: BaseException | None = err
    io_error = False
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError) and cause.errno in FULL_ERRNOS:
            return True
        text = str(cause).lower()
        if any(w in text for w in _WORDS):
            return True
        bare = isinstance(cause, OSError) and cause.errno in (None, errno.EIO)
        io_error = io_error or "i/o error" in text or bare
        cause = cause.__cause__ or cause.__context__
    return io_error and out_of_space(path)
