"""The vector index's part of a purge: rebuilding a scope's collection so Chroma's files no
longer hold an erased entry's vector, and checking afterwards that no copy remains
(docs/contract.md#purge-erasing-an-entry-for-good, docs/storage.md#purge-and-the-files).

Chroma keeps a deleted vector in its segment files and write log until the collection goes, so
deleting the entry's vector is not enough: the scope's collection is copied out, dropped and
written again, and for an embedded folder the folder's files are scrubbed
(:mod:`agentmemory.stores.chroma.files`). A Chroma server's files are out of this process's reach.
"""

from __future__ import annotations

import builtins
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ...wording import counted
from .clients import scrub_on_close
from .files import chroma_copies, scrub_chroma_folder
from .index import ChromaIndex

__all__ = ["index_copies", "scrub_index"]


def scrub_index(
    index: ChromaIndex, scope: str, *, lock: AbstractContextManager[Any], folder: Path | None
) -> builtins.list[str]:
    """Rebuild ``scope``'s collection (:meth:`ChromaIndex.rebuild`) under the index's write
    ``lock``, then, for an embedded index whose Chroma folder is ``folder``, vacuum its
    ``chroma.sqlite3`` and remove orphaned segment folders (``folder`` ``None``: a server).
    Returns what was done, one line each, for a purge receipt."""
    with lock:
        kept = index.rebuild(scope)
        out = [
            f"Chroma collection {index.collection_name(scope)} rebuilt ({counted(kept, 'entry')})"
        ]
        if folder is None:
            out.append("Chroma server: its files are not reachable from this process")
            return out
        out += scrub_chroma_folder(folder)
        scrub_on_close(folder.parent)  # Chroma may write its HNSW files until it is closed
    return out


def index_copies(
    index: ChromaIndex, scope: str, name: str, *, folder: Path | None
) -> tuple[builtins.list[str], builtins.list[str]]:
    """Where the index may still hold a copy of ``scope/name`` and what is found there, as
    ``(looked, found)`` lines: the entry's vector in its collection, and for an embedded index
    whose Chroma folder is ``folder``, ``chroma.sqlite3``'s rows for its vector id (embeddings,
    write log), its free pages, and segment folders of dropped collections."""
    looked = [f"vector of {scope}/{name} in {index.collection_name(scope)}"]
    found: builtins.list[str] = []
    if index.named(scope, [name]):  # every window, whatever window 0 counts
        found.append("a vector in the index")
    if folder is not None:
        looked += [
            f"{folder.name}/chroma.sqlite3 rows for {scope}/{name} (embeddings, "
            "embeddings_queue) and free pages",
            f"segment folders under {folder.name}/ not in its segments table",
        ]
        found += chroma_copies(folder, f"{scope}/{name}")
    return looked, found
