"""The folder lock: one process at a time owns an embedded Chroma folder
(docs/storage.md#the-folder-lock).

Chroma's embedded client is not safe across processes (two processes writing one folder lose
vectors silently while ``count()`` still looks right), so an embedded
:class:`~agentmemory.ChromaStore` takes this lock on its folder before it opens the client. The lock
is ``flock(2)`` on a small file in the folder (``LOCK_EX | LOCK_NB``), so the kernel drops it the
moment its holder exits, however it exits: a holder killed with SIGKILL leaves a lock file that the
next opener simply takes over. The file's text names the holder (pid, host, since) so the error a
second process gets can say who holds the folder. The file is never deleted (deleting a file
others may be waiting on lets two processes each lock a different inode); a taker checks that the
file it locked is still the one at the path. ``flock`` is per open file, not per process: a second
:class:`FolderLock` on the same folder in the same process is refused too, so the handles of one
process share one lock (:mod:`.clients`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Self

from agentmemory.errors import StoreLockedError
from agentmemory.stores.processes import pid_exists
from agentmemory.wire import format_time

__all__ = [
    "DEFAULT_LOCK_TIMEOUT_S",
    "LOCK_FILE_NAME",
    "FolderLock",
    "describe_holder",
    "folder_holder",
]

LOCK_FILE_NAME = "chroma.lock"
"""The lock file's name inside the folder it guards."""

DEFAULT_LOCK_TIMEOUT_S = 2.0
"""How long :meth:`FolderLock.acquire` retries a held lock before raising, in seconds."""

_RETRY_PAUSE_S = 0.05


def describe_holder(text: str) -> str:
    """Turn a lock file's text into words for an error message.

    ``'{"pid": 4242, "host": "laptop", "since": "2026-09-20T10:00:03Z"}'`` gives
    ``"pid 4242 on host laptop since 2026-09-20T10:00:03Z"``; when the host is this one and the pid
    is not running, ``" (not running; a process it forked may still hold the lock)"`` is added.
    Text that is not such JSON gives ``""`` (holder unknown).
    """
    try:
        info = json.loads(text)
    except ValueError:
        return ""
    if not isinstance(info, dict) or not isinstance(info.get("pid"), int):
        return ""
    pid = int(info["pid"])
    host = str(info.get("host", "?"))
    words = f"pid {pid} on host {host}"
    if info.get("since"):
        words += f" since {info['since']}"
    if host == socket.gethostname() and not pid_exists(pid):
        words += " (not running; a process it forked may still hold the lock)"
    return words


def folder_holder(folder: str | os.PathLike[str]) -> str | None:
    """Who holds ``folder``'s lock now, in words (:func:`describe_holder`), or ``None`` when no
    process does (or the folder has no lock file). Creates nothing; takes the lock for an instant
    only when it is free. A handle of this process counts as a holder too (``flock`` locks
    belong to open files, not processes)."""
    path = Path(folder) / LOCK_FILE_NAME
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return describe_holder(_read_text(path)) or "another process (it has not named itself yet)"
    except OSError:
        return None
    finally:
        os.close(fd)  # closing the file releases a lock taken here
    return None


class FolderLock:
    """An exclusive lock on ``folder``, held by this process until :meth:`release`.

    Build one with :meth:`acquire`. The lock file is ``folder / LOCK_FILE_NAME`` and, while held,
    holds ``{"pid": ..., "host": ..., "since": ...}`` (JSON, ``since`` RFC 3339 UTC).

    POSIX only (``fcntl.flock``); on a network file system the lock is only as good as the
    file system's ``flock``.
    """

    def __init__(self, folder: Path, fd: int) -> None:
        """Wrap an already locked file descriptor; use :meth:`acquire` instead."""
        self._folder = folder
        self._fd: int | None = fd

    @property
    def folder(self) -> Path:
        """The folder this lock guards."""
        return self._folder

    @property
    def path(self) -> Path:
        """The lock file."""
        return self._folder / LOCK_FILE_NAME

    @property
    def held(self) -> bool:
        """Whether this object still holds the lock."""
        return self._fd is not None

    @classmethod
    def acquire(
        cls,
        folder: str | os.PathLike[str],
        *,
        timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
        detail: str = "",
    ) -> Self:
        """Lock ``folder`` (created when missing) for this process and record this process as
        the holder.

        A lock file left by a holder that is no longer running is taken over at once (the kernel
        released its lock when it exited). A lock held by a live process is retried every 50 ms
        for up to ``timeout_s`` seconds.

        Raises:
            StoreLockedError: another holder kept the lock for ``timeout_s`` seconds; its
                ``holder`` names it (``"pid 4242 on host laptop since ..."``) and ``detail``
                is appended to the message (say there what the caller can do).
            OSError: the folder or the lock file cannot be created or opened.
        """
        where = Path(folder)
        where.mkdir(parents=True, exist_ok=True)
        path = where / LOCK_FILE_NAME
        deadline = time.monotonic() + max(timeout_s, 0.0)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() >= deadline:
                    holder = describe_holder(_read_text(path))
                    raise StoreLockedError(
                        str(where),
                        holder or "another process (it has not named itself yet)",
                        detail,
                    ) from None
                time.sleep(_RETRY_PAUSE_S)
                continue
            except BaseException:
                os.close(fd)
                raise
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # the file was replaced or removed after we opened it: lock the new one
                os.close(fd)
                continue
            lock = cls(where, fd)
            lock._write_holder()
            return lock

    def _write_holder(self) -> None:
        assert self._fd is not None
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": format_time(datetime.now(UTC)),
        }
        data = json.dumps(info).encode()
        os.ftruncate(self._fd, 0)
        try:
            os.pwrite(self._fd, data, 0)
        except OSError as err:  # a full disk: the flock holds; the holder goes unnamed
            if err.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise

    def holder(self) -> str:
        """The holder the lock file names now, in words (see :func:`describe_holder`)."""
        return describe_holder(_read_text(self.path))

    def release(self) -> None:
        """Clear the holder from the lock file and release the lock; idempotent."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"FolderLock({str(self._folder)!r}, held={self.held})"


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
