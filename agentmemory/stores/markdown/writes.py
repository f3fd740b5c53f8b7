"""The write path under FileStore: the lock, the cursor, and the commit of a write.

Writes are serialised by the ``.lock`` file (:mod:`.lock_file`) across processes and by a mutex
across the threads of one process (:meth:`FolderWrites._writing`, which also settles a purge a
killed process left, :meth:`.purge.Purging._settle_purge`). The cursor (``.state.json``,
:class:`.journal_file.Cursor`) is checked against the journal's head line and length and caught
up by reading what follows it. A commit runs the entry-file operations, rewrites INDEX.md,
appends the records in one write, saves the cursor and keeps the BM25 index current; the vector
index follows outside the lock (docs/filestore-format.md#layout).
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import logging
import os
from collections.abc import Callable, Iterator
from datetime import datetime

from agentmemory.entries import Change
from agentmemory.errors import IndexWriteError, StoreFullError, StoreIOError, StoreLockedError
from agentmemory.stores.space import is_full
from agentmemory.wire import format_time, parse_time

from .atomic_write import Undo, write_atomic
from .index_file import IndexFile
from .journal_file import (
    Cursor,
    DamagedLine,
    append_records,
    find_last_record,
    journal_head,
    scan_journal,
)
from .journal_rewrite import PURGE_MARKER
from .lexicon import FolderLexicon
from .links import check_store_files
from .lock_file import LockFile

__all__ = ["FolderWrites"]

log = logging.getLogger("agentmemory.stores.markdown.store")


class FolderWrites(IndexFile, FolderLexicon):
    """The lock, the cursor and the commit of a write (a part of ``FileStore``)."""

    def _settle_purge(self) -> None:
        """With the lock held: finish or roll back a killed process's purge
        (:class:`.purge.Purging` does it)."""
        raise NotImplementedError

    @contextlib.contextmanager
    def _writing(self) -> Iterator[Cursor]:
        """Hold the mutex and ``.lock``, and yield the cursor brought up to the journal's end."""
        self._check_open()
        if not self._mutex.acquire(timeout=self._lock_timeout_s):
            raise StoreLockedError(
                str(self._root),
                f"another thread of this process (pid {os.getpid()})",
                f"waited {self._lock_timeout_s:g} s; retry later",
            )
        try:
            lock = LockFile(self._root, timeout_s=self._lock_timeout_s)
            try:
                lock.acquire()
            except OSError as err:
                if is_full(err, self._root):  # no room for the lock's text: nothing written
                    raise StoreFullError(str(self._root), str(err)) from err
                if err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):  # a read-only mount
                    raise StoreIOError(str(self._root), "read-only", str(err)) from err
                raise
            try:
                check_store_files(self._root)  # a link made since the open is refused too
                if os.path.lexists(self._root / PURGE_MARKER):
                    self._settle_purge()
                yield self._load_cursor()
            finally:
                lock.release()
        finally:
            self._mutex.release()

    def _load_cursor(self) -> Cursor:
        """The cursor at the journal's end: this handle's, else ``.state.json``'s, checked
        against the journal (its head line, its length) and caught up by reading only what
        follows ``off``; rebuilt from the whole journal when none fits."""
        self._damage_seen = []
        self._cursor_moved = False
        head = journal_head(self.journal_path)
        try:
            size = self.journal_path.stat().st_size
        except FileNotFoundError:
            size = 0
        cur = self._cursor
        if cur is not None and not self.state_path.exists():
            self._cursor_moved = True  # deleted: write it again even when nothing else moves
        if cur is None or not self._fits(cur, head, size):
            cur = None
            with contextlib.suppress(OSError, ValueError):
                saved = Cursor.decode(self.state_path.read_bytes())
                if self._fits(saved, head, size):
                    cur = saved
        if cur is None:
            cur = Cursor(head=head)
            self._cursor_moved = True
        if cur.off < size:
            for _, end, item in scan_journal(self.journal_path, cur.off):
                if isinstance(item, DamagedLine):
                    self._damage_seen.append(item)
                    log.warning("%s: damaged journal line skipped: %s", self._root, item.describe())
                    cur.off = end
                else:
                    cur.apply(item, end)
                    self._note(item.entry)
                self._cursor_moved = True
        cur.head = head
        if cur.last_at is None and cur.seq:
            last = find_last_record(self.journal_path)
            cur.last_at = last.at if last is not None else None
        self._cursor = cur
        return cur

    def _fits(self, cur: Cursor, head: str, size: int) -> bool:
        if cur.off > size or (cur.off > 0 and cur.head != head):
            return False
        if cur.off == 0:
            return True
        try:
            with open(self.journal_path, "rb") as f:
                f.seek(cur.off - 1)
                return f.read(1) == b"\n"
        except OSError:
            return False

    def _save_cursor(self, cur: Cursor) -> None:
        if cur.off == 0 and not self.journal_path.exists():
            return
        write_atomic(self.state_path, cur.encode(), sync=False)

    def _now(self, cur: Cursor) -> datetime:
        now = parse_time(format_time(self._clock()))
        if cur.last_at is not None and now < cur.last_at:
            return cur.last_at
        return now

    def _commit(
        self,
        cur: Cursor,
        changes: builtins.list[Change],
        scopes: set[str],
        file_ops: Callable[[], None] | None = None,
    ) -> None:
        """Run ``file_ops`` (entry files), rewrite the INDEX.md of ``scopes``, append ``changes``
        in one write, advance and save the cursor, and keep the BM25 index current.

        A step before the append that fails (a full disk) puts the files back as they were
        (:class:`Undo`) and raises, so nothing of the write stays; on a full disk the error is
        :class:`~agentmemory.errors.StoreFullError`. Once the records landed the write stands:
        a ``.state.json`` that cannot be saved lags (logged) and is caught up from the journal
        by the next look (docs/storage.md#a-full-disk)."""
        start = cur.off
        self._undo = undo = Undo()
        try:
            if file_ops is not None:
                file_ops()
            for c in changes:
                self._note(c.entry)
            for scope in sorted(scopes):
                self._write_index(scope)
            end = append_records(self.journal_path, changes) if changes else start
        except OSError as err:
            undo.restore()
            for scope in scopes:  # rebuilt from the files at the next write
                self._index_cache.pop(scope, None)
                self._index_written.pop(scope, None)
            if is_full(err, self._root):
                raise StoreFullError(str(self._root), str(err)) from err
            raise
        finally:
            self._undo = None
        undo.drop()
        if changes:
            for c in changes:
                cur.apply(c, end)
            with contextlib.suppress(OSError):
                cur.head = journal_head(self.journal_path)
        if changes or self._cursor_moved:
            try:
                self._save_cursor(cur)
            except OSError as err:  # derived: the next look reads the journal past it
                log.warning("%s: .state.json not saved (%s); it catches up later", self._root, err)
        self._follow(changes, start, cur.off)

    def _index_vectors(self, changes: builtins.list[Change]) -> None:
        """Bring the vector index up to the journal after a write (outside the folder lock).

        Raises :class:`~agentmemory.IndexWriteError` (the write stands) when embedding or
        Chroma fails; the index catches up at the next write, search or open."""
        if self._vectors is None or not changes:
            return
        try:
            self._vectors.catch_up(announce=False)  # the writer shows its own progress
        except Exception as err:
            raise IndexWriteError(str(self._root), changes, err) from err
