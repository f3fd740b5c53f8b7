"""The entry files of a Markdown folder as FileStore reads them, and the attributes every part of
FileStore shares.

:class:`FolderFiles` is the base of :class:`~agentmemory.stores.markdown.store.FileStore` and of
its parts (:mod:`.index_file`, :mod:`.lexicon`, :mod:`.writes`, :mod:`.reconcile`, :mod:`.purge`):
the folder's paths (docs/filestore-format.md#layout), the reads of entry files (no lock: every
file is replaced by an atomic rename, so a read sees the old file or the new one), and the
``stat`` of every entry file a write's sweep compares (:data:`FileStat`). It opens nothing
itself: the attributes below are set by ``FileStore.__init__``.
"""

from __future__ import annotations

import builtins
import os
import stat
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from agentmemory.entries import Entry
from agentmemory.errors import AgentMemoryError
from agentmemory.rules import check_scope, valid_name
from recallers import BM25Index

from .atomic_write import Undo
from .entry_file import ENTRY_SUFFIX, parse_entry_file
from .journal_file import JOURNAL_NAME, STATE_NAME, Cursor, DamagedLine
from .links import is_link, open_entry_file

if TYPE_CHECKING:
    from .vectors import FolderVectors

__all__ = ["FileStat", "FolderFiles"]

FileStat = tuple[int, int, int, int]
"""What a sweep compares of an entry file: ``(st_ino, st_size, st_mtime_ns, st_ctime_ns)``."""


class FolderFiles:
    """The folder's paths and the reads of its entry files (see the module docstring); the base
    of ``FileStore``."""

    _root: Path
    _limit: int
    _lock_timeout_s: float
    _clock: Callable[[], datetime]
    _mutex: threading.Lock
    _cursor: Cursor | None
    _closed: bool
    _lexicon: BM25Index[Entry]
    _lexicon_off: int | None  # journal offset the index has followed to
    _lexicon_lock: threading.Lock
    _damage_seen: builtins.list[DamagedLine]
    _index_cache: dict[str, dict[str, str]]  # scope -> name -> description
    _index_written: dict[str, bytes]  # scope -> the INDEX.md bytes last written
    _undo: Undo | None  # the files the write in progress replaced (a failed write restores them)
    _vectors: FolderVectors | None
    _cursor_moved: bool
    _recovery: str | None
    # entry files (scope/name -> FileStat) the journal agreed with at this handle's last sweep
    # or reconcile; None until then, when the first write looks at every file
    _seen: dict[str, FileStat] | None

    @property
    def journal_path(self) -> Path:
        """``<folder>/journal.jsonl``."""
        return self._root / JOURNAL_NAME

    @property
    def state_path(self) -> Path:
        """``<folder>/.state.json``."""
        return self._root / STATE_NAME

    def entry_path(self, scope: str, name: str) -> Path:
        """``<folder>/<scope>/<name>.md`` (it need not exist).

        Raises :class:`~agentmemory.InvalidEntryError` when ``scope`` or ``name`` is not
        kebab-case (so no path outside the folder can be named).
        """
        check_scope(scope)
        check_scope(name, what="name")
        return self._root / scope / f"{name}{ENTRY_SUFFIX}"

    def _check_open(self) -> None:
        if self._closed:
            raise AgentMemoryError(
                f"agentmemory: store {self._root} is closed; open a new FileStore to use it"
            )

    def _read_file(self, scope: str, name: str) -> Entry | None:
        found = self._read_entry(scope, name)
        return None if found is None else found[0]

    def _read_entry(self, scope: str, name: str) -> tuple[Entry, FileStat] | None:
        """The entry file ``scope/name`` and its :data:`FileStat`, taken before the bytes are
        read (so a change made while reading shows as a change at the next look); ``None``
        when there is no such file."""
        opened = open_entry_file(self._root, scope, name)  # a link is not followed
        if opened is None:
            return None
        data, st = opened
        seen = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        return parse_entry_file(scope, name, data, st.st_mtime_ns), seen

    def _linked(self, key: str) -> bool:
        """Whether entry ``scope/name``'s file or its scope folder is a symbolic link (a link
        is not an entry, and not a removal of one either: docs/filestore-format.md#links)."""
        scope, _, name = key.partition("/")
        return is_link(self._root / scope) or is_link(self._root / scope / f"{name}{ENTRY_SUFFIX}")

    def _scopes(self) -> builtins.list[str]:
        try:
            items = list(os.scandir(self._root))
        except FileNotFoundError:
            return []
        return sorted(
            d.name for d in items if valid_name(d.name) and d.is_dir(follow_symlinks=False)
        )

    def _names(self, scope: str) -> builtins.list[str]:
        try:
            items = list(os.scandir(self._root / scope))
        except (FileNotFoundError, NotADirectoryError):
            return []
        names = []
        for d in items:
            stem = d.name[: -len(ENTRY_SUFFIX)] if d.name.endswith(ENTRY_SUFFIX) else ""
            if valid_name(stem) and d.is_file(follow_symlinks=False):
                names.append(stem)
        return sorted(names)

    def _read_scope(
        self, scope: str, seen: dict[str, FileStat] | None = None
    ) -> builtins.list[Entry]:
        """The entry files of ``scope`` by name; each one's :data:`FileStat` goes into
        ``seen`` (by ``scope/name``) when given."""
        out = []
        for name in self._names(scope):
            found = self._read_entry(scope, name)
            if found is not None:  # removed between the listing and the read
                out.append(found[0])
                if seen is not None:
                    seen[f"{scope}/{name}"] = found[1]
        return out

    def _stat_files(
        self, known: dict[str, FileStat] | None = None
    ) -> tuple[dict[str, FileStat], builtins.list[str]]:
        """Every entry file of the folder, ``scope/name`` -> :data:`FileStat` (one folder listing
        per scope and one ``stat`` per file; no file is opened), and the keys whose stat is not
        the one in ``known`` (every key when ``known`` is ``None``)."""
        out: dict[str, FileStat] = {}
        changed: builtins.list[str] = []
        previous = known or {}
        suffix = len(ENTRY_SUFFIX)
        for scope in self._scopes():
            try:
                items = list(os.scandir(self._root / scope))
            except (FileNotFoundError, NotADirectoryError):
                continue
            prefix = scope + "/"
            for d in items:
                name = d.name
                if not name.endswith(ENTRY_SUFFIX):
                    continue
                key = prefix + name[:-suffix]
                before = previous.get(key)
                if before is None and not valid_name(name[:-suffix]):
                    continue
                try:
                    st = d.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    now = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                    out[key] = now
                    if now != before:
                        changed.append(key)
        return out, changed
