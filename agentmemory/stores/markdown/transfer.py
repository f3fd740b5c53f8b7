"""Export any store's live entries as a Markdown folder, and import one into any store.

Imported by whoever uses it (``from agentmemory.stores.markdown.transfer import export_markdown``), not
by ``import agentmemory``.

A Markdown folder is the layout of :class:`~agentmemory.FileStore` (docs/filestore-format.md#layout):
one ``<scope>/<name>.md`` per entry. :func:`export_markdown` writes a new folder from a store's
live entries (one journal record per entry, session ``export``); :func:`import_markdown` reads a
folder's entry files into a store, checking every one first so that nothing is written when one
cannot be stored. Content and meta survive the round trip byte for byte.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from agentmemory.entries import Change, Entry
from agentmemory.errors import AgentMemoryError, NotFoundError
from agentmemory.rules import check_entry
from agentmemory.store import Store

from .journal_file import JOURNAL_NAME
from .store import FileStore

__all__ = [
    "TRANSFER_BATCH",
    "export_markdown",
    "import_markdown",
    "is_markdown_folder",
    "live_entries",
]

TRANSFER_BATCH = 200
"""Entries written per ``put_many`` (one journal transaction each) by :func:`export_markdown` and
:func:`import_markdown`, and per ``progress`` call."""


def is_markdown_folder(path: str | Path) -> bool:
    """Whether ``path`` is a Markdown folder: a folder holding ``journal.jsonl``."""
    return (Path(path) / JOURNAL_NAME).is_file()


def live_entries(store: Any) -> Iterator[Entry]:
    """Every live entry of ``store``, by scope then name (byte order).

    A store with a ``scopes()`` method (:class:`~agentmemory.FileStore`,
    :class:`~agentmemory.SqliteStore`) is listed scope by scope; any other
    :class:`~agentmemory.Store` is read through its journal: the keys it leaves live, each
    read with ``get``.
    """
    scopes = getattr(store, "scopes", None)
    if callable(scopes):
        for scope in sorted(scopes()):
            yield from store.list(scope)
        return
    live: dict[str, tuple[str, str]] = {}
    for c in store.journal():
        if c.entry.deleted:
            live.pop(c.entry.key, None)
        else:
            live[c.entry.key] = (c.entry.scope, c.entry.name)
    for key in sorted(live, key=lambda k: k.encode()):
        scope, name = live[key]
        try:
            yield store.get(scope, name)
        except NotFoundError:
            continue


def export_markdown(
    store: Store,
    folder: str | Path,
    *,
    scopes: Sequence[str] = (),
    session: str = "export",
    progress: Callable[[int], object] | None = None,
) -> list[Change]:
    """Write ``store``'s live entries (of ``scopes``, every scope when empty) as a new Markdown
    folder at ``folder``; return the records of the folder's journal (one create per entry,
    under ``session``). ``progress``, when given, is called with the number of entries written
    after each :data:`TRANSFER_BATCH` of them.

    The folder's entry bound is the larger of the store's and its largest entry, so every live
    entry fits.

    Raises:
        AgentMemoryError: ``folder`` exists and is not empty (nothing is written; export to a new
            folder).
        OSError: the folder cannot be written.
    """
    target = Path(folder)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise AgentMemoryError(
            f"agentmemory: cannot export to {target}: it exists and is not an empty folder; "
            "give a new folder"
        )
    wanted = set(scopes)
    entries = [
        Entry(e.scope, e.name, e.content, e.meta)
        for e in live_entries(store)
        if not wanted or e.scope in wanted
    ]
    limit = max([store.max_entry_bytes, *(e.size for e in entries)])
    written: list[Change] = []
    with FileStore(target, max_entry_bytes=limit) as out:
        for i in range(0, len(entries), TRANSFER_BATCH):
            chunk = entries[i : i + TRANSFER_BATCH]
            written.extend(out.put_many(chunk, session=session))
            if progress is not None:
                progress(len(chunk))
    return written


def import_markdown(
    folder: str | Path,
    store: Store,
    *,
    session: str = "import",
    progress: Callable[[int], object] | None = None,
    total: Callable[[int], object] | None = None,
) -> builtins.list[Change]:
    """Put every entry file of the Markdown folder ``folder`` into ``store`` (by scope, then
    name), under ``session``; return the records written. The folder is only read.

    Every entry is checked against ``store``'s rules and bound first; nothing is written when
    one fails. Entries ``store`` already holds with the same content and meta are skipped (no
    record), so importing the same folder again writes nothing, and an import stopped midway
    (a full disk) is finished by running it again. A store with ``put_many`` gets batches of
    :data:`TRANSFER_BATCH` (one transaction each for SqliteStore). ``total``, when given, is
    called once with the number of entries to write, after the checks; ``progress`` with the
    number written after each batch.

    Raises:
        AgentMemoryError: ``folder`` is not a folder, or holds an entry file ``store`` cannot
            hold (invalid, or over its bound; the message names the file and the rule, and the
            :class:`~agentmemory.InvalidEntryError` or :class:`~agentmemory.EntryTooLargeError`
            is the ``__cause__``). Nothing is written.
    """
    source = Path(folder)
    if not source.is_dir():
        raise AgentMemoryError(
            f"agentmemory: cannot import {source}: it is not a folder; give a Markdown folder "
            "(one <scope>/<name>.md per entry)"
        )
    reader = FileStore(source)
    entries = [Entry(e.scope, e.name, e.content, e.meta) for e in live_entries(reader)]
    for e in entries:
        try:
            check_entry(e, store.max_entry_bytes)
        except AgentMemoryError as err:
            path = reader.entry_path(e.scope, e.name)
            raise AgentMemoryError(
                f"agentmemory: cannot import {path}: {err}; fix or remove the file, then import "
                "again (nothing was imported)"
            ) from err
    entries = [e for e in entries if not _stored_unchanged(store, e)]
    if total is not None:
        total(len(entries))
    put_many = getattr(store, "put_many", None)
    written: builtins.list[Change] = []
    for i in range(0, len(entries), TRANSFER_BATCH):
        chunk = entries[i : i + TRANSFER_BATCH]
        if callable(put_many):
            written.extend(put_many(chunk, session=session))
        else:
            written.extend(store.put(e, session=session) for e in chunk)
        if progress is not None:
            progress(len(chunk))
    return written


def _stored_unchanged(store: Store, entry: Entry) -> bool:
    """Whether ``store`` holds ``entry`` live with the same content and meta (an import skips
    it, so importing the same folder twice journals nothing the second time)."""
    try:
        stored = store.get(entry.scope, entry.name)
    except NotFoundError:
        return False
    return stored.content == entry.content and (stored.meta or None) == (entry.meta or None)
