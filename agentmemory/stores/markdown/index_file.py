"""``<scope>/INDEX.md``, the scope's live entries one line each, as FileStore rewrites it after a
write (docs/filestore-format.md#layout; the line format is :func:`.entry_file.render_index`).

A handle keeps each scope's descriptions in memory (read from the files on first use, then kept
by the journal records it writes or reads), so a rewrite costs one folder listing, and the bytes
it last wrote, so an unchanged INDEX.md is not written again.
"""

from __future__ import annotations

import os

from agentmemory.entries import Entry
from agentmemory.rules import valid_name

from .atomic_write import write_atomic
from .entry_file import ENTRY_SUFFIX, INDEX_NAME, render_index
from .files import FolderFiles

__all__ = ["IndexFile"]


class IndexFile(FolderFiles):
    """The INDEX.md of each scope and the descriptions it lists (a part of ``FileStore``)."""

    def _note(self, entry: Entry) -> None:
        """Keep the INDEX.md cache in step with one journaled state of an entry."""
        cached = self._index_cache.get(entry.scope)
        if cached is None:
            return
        if entry.deleted:
            cached.pop(entry.name, None)
        else:
            cached[entry.name] = entry.description

    def _write_index(self, scope: str) -> None:
        """Rewrite ``<scope>/INDEX.md``: the entry files the scope's folder lists now, with the
        descriptions this handle knows (read from the files on first use, then kept by the
        journal records it writes or reads, and by :meth:`reconcile`); a file it has not seen
        is read. So a write costs one folder listing, not one read per entry; a description a
        person changed in place shows once it is journaled."""
        folder = self._root / scope
        try:
            items = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return
        known = self._index_cache.setdefault(scope, {})
        seen: dict[str, str] = {}
        for d in items:
            stem = d.name[: -len(ENTRY_SUFFIX)] if d.name.endswith(ENTRY_SUFFIX) else ""
            description = known.get(stem)  # a known name is a valid one
            if description is None and not valid_name(stem):
                continue
            if not d.is_file(follow_symlinks=False):  # a link is not an entry
                continue
            if description is None:
                e = self._read_file(scope, stem)
                if e is None:
                    continue
                description = e.description
            seen[stem] = description
        self._index_cache[scope] = seen
        data = render_index(scope, seen.items())
        index = folder / INDEX_NAME
        if self._index_written.get(scope) == data and index.exists():
            return  # nothing it lists changed
        if self._undo is not None:
            self._undo.keep(index)
        write_atomic(index, data, sync=False)
        self._index_written[scope] = data
