"""The vector index of a Markdown folder: Chroma collections beside the files, following the
journal (docs/filestore-format.md#the-vector-index).

:class:`~agentmemory.FileStore` opened with an embedder keeps the vectors of every live entry
(one per window of its text, docs/recall.md#windows) in an embedded Chroma client under ``<folder>/.vectors/`` (a hidden folder, so never a scope), one
collection per scope as :class:`~agentmemory.stores.chroma.index.ChromaIndex` lays them out. The index
follows ``journal.jsonl``: its cursor, ``.vectors/cursor.json``, records the journal offset it has
applied, the journal's head hash, the embedder's fingerprint and its window layout (a folder
indexed with another layout, or before windows, is indexed again from the start when it opens). :meth:`FolderVectors.catch_up`
reads the records after the offset (only those), keeps each entry's last state, and embeds and
upserts the live ones and deletes the forgotten ones. A person's edit reaches the index once it is
journaled (the next write to any entry, or ``reconcile()``).

Like every embedded Chroma folder, ``.vectors`` is owned by one process at a time (a lock naming
the holder, docs/storage.md#the-folder-lock); other processes may still write the folder (without
an embedder), and the owner catches up on their records before each search.
"""

from __future__ import annotations

import builtins
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agentmemory.entries import Change, Entry
from agentmemory.errors import EmbedderMismatchError, IndexDamagedError, StoreFullError
from agentmemory.progress import announce_indexing
from agentmemory.rules import check_scope
from agentmemory.stores.chroma.clients import (
    CHROMA_FOLDER,
    close_folder,
    open_folder,
    scrub_on_close,
)
from agentmemory.stores.chroma.files import scrub_chroma_folder
from agentmemory.stores.chroma.index import DEFAULT_COLLECTION_PREFIX, ChromaIndex, IndexRow
from agentmemory.stores.chroma.sync import embed_entries
from agentmemory.wording import counted
from embedders import WHOLE_TEXT, Embedder, same_vectors, window_layout
from embedders.preload import start_loading
from embedders.recent import remembering

from .atomic_write import write_atomic
from .journal_file import JOURNAL_NAME, journal_head, scan_journal

__all__ = ["VECTORS_FOLDER", "FolderVectors", "purge_folder_vectors"]

VECTORS_FOLDER = ".vectors"
"""The folder, inside a Markdown folder, that holds the Chroma index and its cursor."""

CURSOR_NAME = "cursor.json"

EMBED_BATCH = 256
"""Entries embedded (and upserted) per call while catching up."""


_LOCKS: dict[str, threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()


def _folder_lock(folder: Path) -> threading.RLock:
    """The one lock every :class:`FolderVectors` of this process on ``folder`` shares, so that
    a purge's rebuild and scrub never race another handle's catch-up on the same collections."""
    key = str(folder.resolve())
    with _LOCKS_GUARD:
        found = _LOCKS.get(key)
        if found is None:
            found = _LOCKS[key] = threading.RLock()
        return found


def _purge_index(index: ChromaIndex, folder: Path, scope: str, name: str) -> builtins.list[str]:
    """Delete ``scope/name``'s vector, rebuild the scope's collection (Chroma keeps a deleted
    vector in its segment files and write log until the collection goes) and scrub the Chroma
    folder's files (docs/storage.md#purge-and-the-files); return what was done."""
    if index.named(scope, [name]):
        index.delete(scope, [name])
    kept = index.rebuild(scope)
    scrub_on_close(folder)
    out = [
        f".vectors: Chroma collection {index.collection_name(scope)} rebuilt ({counted(kept, 'vector')})"
    ]
    return out + [f".vectors/{line}" for line in scrub_chroma_folder(folder / CHROMA_FOLDER)]


def purge_folder_vectors(
    root: Path, scope: str, name: str, heads: tuple[str, str], *, padded: bool, timeout_s: float
) -> tuple[int, builtins.list[str]]:
    """A purge's part in the vector index of a Markdown folder opened without an embedder:
    open ``root/.vectors`` (waiting up to ``timeout_s`` seconds for the process that owns it),
    delete ``scope/name``'s vector, rebuild the scope's collection, scrub the Chroma files, and
    make ``cursor.json`` follow the rewritten journal (its head moved from ``heads[0]`` to
    ``heads[1]``; when the rewrite moved offsets, ``padded`` false, every collection is dropped
    and the cursor removed, so the next owner indexes the journal again). Returns the vectors
    removed and one line per thing done; ``(0, [])`` when the folder keeps no Chroma index.

    Raises:
        StoreLockedError: another process owns ``.vectors``.
        IndexDamagedError: Chroma cannot open the folder.
    """
    folder = root / VECTORS_FOLDER
    if not (folder / CHROMA_FOLDER).is_dir():
        return 0, []
    client = open_folder(folder, timeout_s)
    try:
        with _folder_lock(folder):
            index = ChromaIndex(client, DEFAULT_COLLECTION_PREFIX, where=str(root))
            held = len(index.held(scope, [name]))
            cursor = folder / CURSOR_NAME
            if padded:
                try:
                    saved = json.loads(cursor.read_bytes())
                except (OSError, ValueError):
                    saved = None
                if isinstance(saved, dict) and saved.get("head") == heads[0]:
                    saved["head"] = heads[1]
                    write_atomic(cursor, (json.dumps(saved) + "\n").encode(), sync=False)
            else:
                for s in index.scopes():
                    index.drop(s)
                cursor.unlink(missing_ok=True)
            return held, _purge_index(index, folder, scope, name)
    finally:
        close_folder(folder)


class FolderVectors:
    """The Chroma index of one Markdown folder, kept in step with its journal.

    Args:
        root: the Markdown folder.
        embedder: makes the vectors (``embed(texts) -> (n, dim) float32``); a folder indexed with
            another embedder is refused unless :func:`embedders.same_vectors` holds, or
            ``reindex`` is true (every vector is then made again).
        lock_timeout_s: how long to wait for another process that owns ``.vectors``, in seconds.
        reindex: drop the index and rebuild it with ``embedder``.

    Raises:
        StoreLockedError: another process owns ``.vectors``.
        EmbedderMismatchError: the index was built with another embedder.
    """

    def __init__(
        self, root: Path, embedder: Embedder, *, lock_timeout_s: float, reindex: bool = False
    ) -> None:
        self._root = root
        self._folder = root / VECTORS_FOLDER
        self._folder.mkdir(exist_ok=True)
        self._given = embedder
        # a save's duplicate check embeds the new text as a query, then the put embeds it again
        self._embedder: Embedder = remembering(embedder)
        start_loading(embedder)  # beside the index's opening, not after (embedders.preload)
        self._lock = _folder_lock(self._folder)
        try:
            client = open_folder(self._folder, lock_timeout_s)
        except IndexDamagedError as exc:  # name the store (the folder), not its .vectors
            raise type(exc)(str(root), exc.index, exc.detail) from exc
        except StoreFullError as exc:
            raise StoreFullError(str(root), exc.detail) from exc
        self._closed = False
        try:
            self._index = ChromaIndex(client, DEFAULT_COLLECTION_PREFIX, where=str(root))
            saved = self._read_cursor()
            given = embedder.fingerprint
            recorded = saved.get("embedder") if saved else None
            if isinstance(recorded, str) and not reindex and not same_vectors(recorded, given):
                raise EmbedderMismatchError(str(root), recorded, given)
            self._fingerprint = recorded if isinstance(recorded, str) and not reindex else given
            self._layout = window_layout(embedder)
            relayout = saved is not None and saved.get("windows", WHOLE_TEXT) != self._layout
            self._off = int(saved.get("off", 0)) if saved and not reindex else 0
            self._head = str(saved.get("head", "")) if saved and not reindex else ""
            if reindex or saved is None or relayout:
                self._drop_all()
            self.catch_up()
        except BaseException:
            close_folder(self._folder)
            raise

    @property
    def embedder(self) -> Embedder:
        """The embedder of queries and entries, as it was given."""
        return self._given

    @property
    def query_embedder(self) -> Embedder:
        """:attr:`embedder` remembering its last few vectors (:class:`embedders.recent.RecentVectors`):
        what the vector leg embeds queries with, so a text embedded as a query and then put costs
        one model call."""
        return self._embedder

    @property
    def offset(self) -> int:
        """The journal offset (bytes) the index has applied."""
        return self._off

    def _read_cursor(self) -> dict[str, Any] | None:
        try:
            d = json.loads((self._folder / CURSOR_NAME).read_bytes())
        except (OSError, ValueError):
            return None
        return d if isinstance(d, dict) else None

    def _save_cursor(self) -> None:
        data = {
            "off": self._off,
            "head": self._head,
            "embedder": self._fingerprint,
            "windows": self._layout,
        }
        write_atomic(self._folder / CURSOR_NAME, (json.dumps(data) + "\n").encode(), sync=False)

    def _drop_all(self) -> None:
        for scope in self._index.scopes():
            self._index.drop(scope)
        self._off = 0

    def catch_up(self, *, announce: bool = True) -> int:
        """Apply the journal records after the cursor; return how many were read. With
        ``announce``, many entries to embed are said first (:func:`agentmemory.progress.announce_indexing`);
        a write's own catch-up passes ``False``: its caller shows its own progress.

        A journal that is not the one the cursor was made for (another first line, or shorter
        than the offset) is applied from its start, after every collection is dropped.
        Embedding and Chroma errors propagate (the cursor then stays where it was, so the next
        call retries).
        """
        with self._lock:
            journal = self._root / JOURNAL_NAME
            try:
                size = journal.stat().st_size
            except FileNotFoundError:
                size = 0
            if size == self._off and self._off > 0:
                return 0
            head = journal_head(journal)
            if self._off > size or (self._off > 0 and head != self._head):
                self._drop_all()
            last: dict[tuple[str, str], Change] = {}
            end = self._off
            read = 0
            for _, stop, item in scan_journal(journal, self._off):
                end = stop
                if isinstance(item, Change):
                    last[(item.entry.scope, item.entry.name)] = item
                    read += 1
            if end == self._off and head == self._head:
                return 0
            self._apply(last, announce=announce)
            self._off, self._head = end, head
            self._save_cursor()
            return read

    def _apply(self, last: dict[tuple[str, str], Change], *, announce: bool) -> None:
        gone: dict[str, builtins.list[str]] = {}
        live: builtins.list[Entry] = []
        for (scope, name), c in sorted(last.items()):
            if c.entry.deleted:
                gone.setdefault(scope, []).append(name)
            else:
                live.append(c.entry)
        if announce:
            announce_indexing(
                str(self._root), len(live), "journal records its .vectors index lacks"
            )
        for scope, names in gone.items():
            # only vectors it holds: a delete of an absent id would still write the id to
            # Chroma's write log, where a purged entry must leave no trace
            held = self._index.held(scope, names)
            self._index.delete(scope, [n for n in names if n in held])
        for i in range(0, len(live), EMBED_BATCH):
            chunk = live[i : i + EMBED_BATCH]
            vectors = embed_entries(self._embedder, chunk, batch=EMBED_BATCH)
            rows: dict[str, builtins.list[IndexRow]] = {}
            for e in chunk:
                text_hash, matrix = vectors[(e.scope, e.name)]
                rows.setdefault(e.scope, []).append(IndexRow(e.name, e.hash, text_hash, matrix))
            for scope, scope_rows in rows.items():
                self._index.upsert(scope, scope_rows)

    def purge(
        self, scope: str, name: str, heads: tuple[str, str], *, padded: bool
    ) -> tuple[int, builtins.list[str]]:
        """A purge's part here, after the journal was rewritten: follow the new journal (its
        head moved from ``heads[0]`` to ``heads[1]``; offsets kept when ``padded``, else every
        vector is made again from the journal's start), delete ``scope/name``'s vector, rebuild
        the scope's collection and scrub the Chroma files (:func:`purge_folder_vectors` without
        opening the folder). Returns the vectors removed and one line per thing done.

        Embedding and Chroma errors propagate (the purge's marker then stays, and the next
        write or open finishes this part)."""
        with self._lock:
            held = len(self._index.held(scope, [name]))
            if not padded:
                self._drop_all()
                self._head = ""
            elif self._head == heads[0]:
                self._head = heads[1]
            self.catch_up()
            out = _purge_index(self._index, self._folder, scope, name)
            self._save_cursor()
            return held, out

    def holds(self, scope: str, name: str) -> bool:
        """Whether the index holds a vector of ``scope/name`` (as it is now, without catching
        up)."""
        with self._lock:
            return bool(self._index.held(scope, [name]))

    def missing(self, live: dict[str, builtins.list[str]]) -> builtins.list[str]:
        """Those of ``live`` (scope -> entry names) the index holds no vector of, as
        ``"scope/name"`` in byte order, after catching up with the journal."""
        self.catch_up()
        out: builtins.list[str] = []
        with self._lock:
            for scope, names in live.items():
                held = self._index.held(scope, names)
                out += [f"{scope}/{n}" for n in names if n not in held]
        return sorted(out, key=lambda k: k.encode())

    def search_vector(
        self, vector: npt.ArrayLike, *, limit: int, scopes: Sequence[str]
    ) -> builtins.list[tuple[str, str, float]]:
        """The at most ``limit`` entries of ``scopes`` nearest the ``(dim,)`` ``vector``, as
        ``(scope, name, cosine similarity)``, nearest first, each scored by its nearest window
        (:meth:`ChromaIndex.query`); ties by the scope's position in ``scopes``, then name.
        Catches up with the journal first.

        Raises:
            ValueError: ``vector`` is not ``(dim,)`` (or ``(1, dim)``) for the embedder.
            InvalidEntryError: a scope that is not kebab-case.
        """
        query = np.asarray(vector, dtype=np.float32)
        if query.ndim == 2 and query.shape[0] == 1:
            query = query[0]
        if query.shape != (self._embedder.dim,):
            raise ValueError(
                f"vector has shape {query.shape}; the embedder {self._embedder.name} makes "
                f"({self._embedder.dim},) vectors"
            )
        order = {check_scope(s): i for i, s in reversed(list(enumerate(scopes)))}
        if limit < 1:
            return []
        self.catch_up()
        hits: builtins.list[tuple[float, int, str, str]] = []
        with self._lock:
            for scope, position in order.items():
                for n in self._index.query(scope, query, limit):
                    hits.append((1.0 - n.distance, position, scope, n.name))
        hits.sort(key=lambda h: (-h[0], h[1], h[3].encode()))
        return [(scope, name, score) for score, _, scope, name in hits[:limit]]

    def close(self) -> None:
        """Release ``.vectors`` (the last handle of the process closes the client); idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        close_folder(self._folder)
