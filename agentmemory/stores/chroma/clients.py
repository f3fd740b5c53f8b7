"""Clients: what the ChromaStore handles of one process share.

An embedded folder is opened once per process: the first handle takes the folder lock
(:mod:`.folder_lock`) and opens the ``chromadb.PersistentClient``, after probing its segment files
in a child process when they changed behind our back (:mod:`.loaded`, :mod:`.probe`); later handles
share both; the last to close closes the client and releases the lock (:func:`open_folder`,
:func:`close_folder`). The handles on one index (the same journal file, collection prefix and
client) share one :class:`SharedIndex`: the embedder fingerprint, the :class:`IndexCursor` and
the lock that serialises index updates. Both registries are keyed by process id too, so a child
forked from a process with an open store never reuses its parent's client or cursor (it opens its
own, and meets the parent's folder lock).
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentmemory.errors import (
    IndexDamagedError,
    IndexReadOnlyError,
    StoreFormatError,
    StoreFullError,
)
from agentmemory.stores.space import is_full

from .cursor import IndexCursor
from .files import scrub_chroma_folder, zero_hnsw_slack
from .folder_lock import (
    LOCK_FILE_NAME,
    FolderLock,
)
from .loaded import loaded_cleanly, record_loaded
from .probe import probe_index

__all__ = [
    "CHROMA_FOLDER",
    "IndexKey",
    "SharedIndex",
    "close_folder",
    "join_index",
    "leave_index",
    "open_folder",
    "open_unlocked",
    "scrub_on_close",
]

log = logging.getLogger(__name__)

CHROMA_FOLDER = "chroma"
"""The Chroma ``PersistentClient`` folder's name inside an embedded store's folder."""

SCRUB_PENDING_NAME = "chroma.scrub-pending"
"""Beside ``chroma/``: a scrub a purge asked for failed (:func:`_scrub_closed`); the next
:func:`open_folder` of any process scrubs the folder before Chroma loads it, then removes it."""

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


def open_folder(folder: Path, timeout_s: float, *, probe: bool = True) -> Any:
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
            try:
                lock = FolderLock.acquire(folder, timeout_s=timeout_s, detail=_lock_detail())
            except OSError as err:  # a read-only mount: the index cannot be opened, not damaged
                if err.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                    raise
                detail = f"{err.strerror}: {folder / LOCK_FILE_NAME} cannot be made"
                raise IndexReadOnlyError(str(folder), "vector", detail) from err
            try:
                _check_inside(folder)
                _scrub_pending(folder)
                clean = loaded_cleanly(folder)
                if probe and not clean:
                    _probe_held(folder)
                    clean = True
                # what a holder killed before its close left, or what the probe child's load
                # wrote; only the capacity changed, so files that loaded still load
                if _zero_capacity(folder, "opening") and clean:
                    record_loaded(folder)
                client = open_unlocked(folder)
            except BaseException:
                lock.release()
                raise
            found = _Folder(client=client, lock=lock)
            _folders[key] = found
        found.refs += 1
        return found.client


def open_unlocked(folder: Path) -> Any:
    """A new ``chromadb.PersistentClient`` on ``folder/chroma``, telemetry off, with no lock
    taken and nothing shared: for the probe child whose parent holds the lock, and for
    :func:`open_folder` once it holds it.

    Raises:
        StoreFullError: the disk is full (not damage).
        IndexReadOnlyError: Chroma may not write the folder.
        IndexDamagedError: Chroma cannot open it (a truncated or garbled ``chroma.sqlite3``).
    """
    import chromadb

    index = folder / CHROMA_FOLDER
    if index.exists() and not index.is_dir():
        raise IndexDamagedError(str(folder), "vector", f"{index} is a file, not Chroma's folder")
    try:
        return chromadb.PersistentClient(
            path=str(folder / CHROMA_FOLDER), settings=_chroma_settings()
        )
    except Exception as err:  # a damaged or unreadable chroma/: derived data
        _forget_failed_client()
        detail = (str(err).strip().splitlines() or [type(err).__name__])[-1][:300]
        if is_full(err, folder):  # a full disk is not damage: nothing to move aside
            raise StoreFullError(str(folder), detail) from err
        if _read_only(err, detail):
            raise IndexReadOnlyError(str(folder), "vector", detail) from err
        raise IndexDamagedError(str(folder), "vector", detail) from err


def _probe_held(folder: Path) -> None:
    """Probe ``folder/chroma`` in a child process while this process holds its lock
    (:func:`agentmemory.stores.chroma.probe.probe_index`, ``held=True``): its segment files
    changed since a process of ours last loaded them (:mod:`.loaded`), and a garbled one would
    crash this process. Records them when the child did not crash (an ordinary error meets this
    process as an exception, and verify finds it); raises
    :class:`~agentmemory.errors.IndexDamagedError` when it crashed or timed out, so the caller
    opens the journal alone instead of dying."""
    crashed = probe_index(folder, held=True, crash_only=True)
    if crashed is None:
        record_loaded(folder)
        return
    raise IndexDamagedError(str(folder), "vector", crashed)


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
        else:
            _zero_capacity(folder, "closing")
        record_loaded(folder)  # as this process leaves them, they load (.loaded)
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
    except Exception as err:  # sqlite busy or I/O: the next open scrubs again
        log.warning("agentmemory: could not scrub %s after closing it: %s", folder, err)
        try:
            (folder / SCRUB_PENDING_NAME).write_text(f"{type(err).__name__}: {err}\n")
        except OSError as also:
            log.warning("agentmemory: could not mark %s for a scrub: %s", folder, also)


def _zero_capacity(folder: Path, when: str) -> int:
    """Zero the HNSW files' unused capacity (:func:`~.files.zero_hnsw_slack`, no fsync: the
    next open zeroes again what a crash kept from the disk) with the folder lock held and no
    client of this process open on it; return the bytes written. Called at every last close,
    after the client closed, and at every open, before this process's client loads the folder.
    Chroma writes a segment whose elements are still in its log, capacity and all, from the heap
    of the process that loads it (its first search or write there), so while a process has the
    folder open its files may hold its heap; once it closes they do not, whatever that heap held
    (docs/storage.md#purge-and-the-files). A failure is logged, not raised (0): the next open or
    close zeroes it again."""
    try:
        return zero_hnsw_slack(folder / CHROMA_FOLDER, sync=False)
    except OSError as err:
        log.warning(
            "agentmemory: could not zero the HNSW capacity of %s %s it: %s", folder, when, err
        )
        return 0


def _scrub_pending(folder: Path) -> None:
    """With the folder lock held, before Chroma loads ``folder/chroma``: finish a scrub a
    purge asked for and could not do (:data:`SCRUB_PENDING_NAME`), then remove the mark. A scrub
    that fails again leaves the mark and is logged; the folder still opens."""
    mark = folder / SCRUB_PENDING_NAME
    if not mark.exists():
        return
    try:
        scrub_chroma_folder(folder / CHROMA_FOLDER)
    except Exception as err:  # busy or I/O again: the next open retries
        log.warning("agentmemory: the pending scrub of %s failed again: %s", folder, err)
        return
    mark.unlink(missing_ok=True)


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
