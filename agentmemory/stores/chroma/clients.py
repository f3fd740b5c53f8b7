"""Clients and folder lock: what the ChromaStore handles of one process share, and the lock that
lets one process at a time own an embedded folder.

The folder lock (:class:`FolderLock`): Chroma's embedded client is not safe across processes
(two processes writing one folder lose vectors silently while ``count()`` still looks right;
docs/storage.md#the-folder-lock), so an embedded :class:`~agentmemory.ChromaStore` takes this lock
on its folder before it opens the client. The lock is ``flock(2)`` on a small file in the folder
(``LOCK_EX | LOCK_NB``), so the kernel drops it the moment its holder exits, however it exits: a
holder killed with SIGKILL leaves a lock file that the next opener simply takes over. The file's
text names the holder (pid, host, since) so the error a second process gets can say who holds
the folder. The file is never deleted (deleting a file others may be waiting on lets two
processes each lock a different inode); a taker checks that the file it locked is still the one
at the path. ``flock`` is per open file, not per process: a second :class:`FolderLock` on the
same folder in the same process is refused too, so the handles of one process share one lock.

The clients: an embedded folder is opened once per process: the first handle takes the folder
lock and opens the ``chromadb.PersistentClient``; later handles share both; the last to close
closes the client and releases the lock (:func:`open_folder`, :func:`close_folder`). The handles
on one index (the same journal file, collection prefix and client) share one
:class:`SharedIndex`: the embedder fingerprint, the :class:`IndexCursor` and the lock that
serialises index updates. Both registries are keyed by process id too, so a child forked from a
process with an open store never reuses its parent's client or cursor (it opens its own, and
meets the parent's folder lock).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

from agentmemory.errors import (
    IndexDamagedError,
    IndexReadOnlyError,
    StoreFormatError,
    StoreFullError,
    StoreLockedError,
)
from agentmemory.stores.processes import pid_exists
from agentmemory.stores.space import is_full
from agentmemory.wire import format_time

from .cursor import IndexCursor
from .files import scrub_chroma_folder

__all__ = [
    "CHROMA_FOLDER",
    "DEFAULT_LOCK_TIMEOUT_S",
    "LOCK_FILE_NAME",
    "FolderLock",
    "IndexKey",
    "SharedIndex",
    "close_folder",
    "describe_holder",
    "folder_holder",
    "join_index",
    "leave_index",
    "open_folder",
    "scrub_on_close",
]

log = logging.getLogger(__name__)

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


CHROMA_FOLDER = "chroma"
"""The Chroma ``PersistentClient`` folder's name inside an embedded store's folder."""

IndexKey = tuple[str, str, int, int]
"""(resolved journal folder, collection prefix, ``id(client)``, process id)."""


@dataclass
class _Folder:
    """An embedded Chroma folder opened by this process: its client and its lock."""

    client: Any
    lock: FolderLock
    refs: int = 0
    scrub: bool = False


@dataclass
class SharedIndex:
    """The index state every handle on one (journal, prefix, client) in this process shares.

    Attributes:
        fingerprint: the embedder fingerprint the index was built with.
        cursor: how far the index has applied the journal.
        write_lock: held while an index update reads the journal and writes Chroma, so that of
            two writers racing on one entry the later journal state is what the index keeps.
        refs: the open handles (managed by :func:`join_index` and :func:`leave_index`).
    """

    fingerprint: str
    cursor: IndexCursor
    write_lock: threading.RLock = field(default_factory=threading.RLock)
    refs: int = 0


_lock = threading.Lock()
_folders: dict[tuple[str, int], _Folder] = {}
# The folders a purge asked to scrub in this process (resolved path, process id): this process's
# heap may hold their erased text for as long as it runs, so every last close scrubs them again.
_purged: set[tuple[str, int]] = set()
_indexes: dict[IndexKey, SharedIndex] = {}


def _chroma_settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


def _lock_detail() -> str:
    return (
        "one process at a time may open an embedded Chroma store (two processes writing one "
        "Chroma folder lose vectors); close it there, or run a Chroma server (chroma run) and "
        "open the store in every process with client=chromadb.HttpClient(...)"
    )


def _check_inside(folder: Path) -> None:
    """Refuse a ``chroma/`` that is a symbolic link or resolves outside ``folder``: the folder
    lock covers the store's folder only, so a linked index could be written by two stores at once
    (docs/storage.md#the-folder-lock)."""
    index = folder / CHROMA_FOLDER
    target = index.resolve()
    if index.is_symlink() or not target.is_relative_to(folder.resolve()):
        raise StoreFormatError(
            str(folder),
            f"its {CHROMA_FOLDER}/ is a link to {target}, outside the folder its lock covers; "
            f"replace the link by the folder itself (move {target} into {folder})",
        )


def _forget_failed_client() -> None:
    """Drop chromadb's per-process cache of clients, which keeps a client whose start failed
    (its next start on the same path would then fail with "no attribute 'bindings'")."""
    try:
        from chromadb.api.shared_system_client import SharedSystemClient

        SharedSystemClient.clear_system_cache()
    except Exception:  # an older or newer chromadb without that cache: nothing to drop
        return


def _read_only(err: BaseException, detail: str) -> bool:
    """Whether Chroma failed to open a folder because it may not write there (sqlite's
    ``SQLITE_READONLY``, code 8, "attempt to write a readonly database"; or a refused file)."""
    return (
        isinstance(err, PermissionError) or "readonly database" in detail or "(code: 8)" in detail
    )


def open_folder(folder: Path, timeout_s: float) -> Any:
    """This process's ``chromadb.PersistentClient`` on ``folder/chroma``, telemetry off; the
    first call takes the folder lock (waiting up to ``timeout_s`` seconds), later calls share
    it. Pair each call with :func:`close_folder`.

    Raises:
        StoreLockedError: another process holds the folder (names it).
        IndexDamagedError: Chroma cannot open ``folder/chroma`` (a truncated or garbled
            ``chroma.sqlite3``, a folder it may not read); the cure, ``agentmemory verify
            --repair``, moves it aside and rebuilds it from the journal.
            :class:`~agentmemory.errors.IndexReadOnlyError` (a subclass) when it may not write there.
    """
    key = (str(folder.resolve()), os.getpid())
    with _lock:
        found = _folders.get(key)
        if found is None:
            lock = FolderLock.acquire(folder, timeout_s=timeout_s, detail=_lock_detail())
            try:
                _check_inside(folder)
                import chromadb

                client = chromadb.PersistentClient(
                    path=str(folder / CHROMA_FOLDER), settings=_chroma_settings()
                )
            except StoreFormatError:
                lock.release()
                raise
            except Exception as err:  # a damaged or unreadable chroma/: derived data
                lock.release()
                _forget_failed_client()
                detail = (str(err).strip().splitlines() or [type(err).__name__])[-1][:300]
                if is_full(err, folder):  # a full disk is not damage: nothing to move aside
                    raise StoreFullError(str(folder), detail) from err
                if _read_only(err, detail):
                    raise IndexReadOnlyError(str(folder), "vector", detail) from err
                raise IndexDamagedError(str(folder), "vector", detail) from err
            except BaseException:
                lock.release()
                raise
            found = _Folder(client=client, lock=lock)
            _folders[key] = found
        found.refs += 1
        return found.client


def close_folder(folder: Path) -> None:
    """Release one :func:`open_folder` of ``folder``; the last closes the client and releases
    the folder lock. Nothing happens for a folder this process has not opened."""
    key = (str(folder.resolve()), os.getpid())
    with _lock:
        found = _folders.get(key)
        if found is None:
            return
        found.refs -= 1
        if found.refs > 0:
            return
        del _folders[key]
        scrub = found.scrub or key in _purged
    try:
        close = getattr(found.client, "close", None)
        if close is not None:
            close()
        if scrub:
            _scrub_closed(folder)
    finally:
        found.lock.release()


def scrub_on_close(folder: Path) -> None:
    """Scrub ``folder/chroma`` again (:func:`agentmemory.stores.chroma.files.scrub_chroma_folder`)
    whenever this process's last :func:`close_folder` of ``folder`` has closed its client,
    before the folder lock is released: now, and at every later close of the folder in this
    process. A purge calls it: Chroma may write its HNSW files after the purge's own scrub
    (their unused capacity from this process's heap, which holds the erased text) until its
    client is closed, and a client this process opens later writes from the same heap
    (docs/storage.md#purge-and-the-files)."""
    key = (str(folder.resolve()), os.getpid())
    with _lock:
        _purged.add(key)
        found = _folders.get(key)
        if found is not None:
            found.scrub = True


def _scrub_closed(folder: Path) -> None:
    """The scrub :func:`scrub_on_close` asked for; a failure is logged, not raised (the
    client is closed already, and the purge's receipt stands)."""
    try:
        scrub_chroma_folder(folder / CHROMA_FOLDER)
    except Exception as err:  # sqlite busy or I/O: the next purge or open scrubs again
        log.warning("agentmemory: could not scrub %s after closing it: %s", folder, err)


def join_index(
    key: IndexKey,
    *,
    check: Callable[[SharedIndex], None],
    create: Callable[[], SharedIndex],
) -> tuple[SharedIndex, bool]:
    """The shared state of index ``key`` and whether it was just created: ``check(shared)``
    runs on an existing one (it may raise, and then nothing is joined); ``create()`` makes a
    new one. Both run under the registry lock. Pair with :func:`leave_index`."""
    with _lock:
        shared = _indexes.get(key)
        if shared is not None:
            check(shared)
            shared.refs += 1
            return shared, False
        shared = create()
        shared.refs = 1
        _indexes[key] = shared
        return shared, True


def leave_index(key: IndexKey, shared: SharedIndex) -> None:
    """Release one :func:`join_index`; the last handle removes the state from the registry."""
    with _lock:
        shared.refs -= 1
        if shared.refs <= 0 and _indexes.get(key) is shared:
            del _indexes[key]
