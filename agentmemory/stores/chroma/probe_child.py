"""The probe's child process: load each collection of a folder and search it once
(:func:`agentmemory.stores.chroma.probe.probe_index` runs it as ``python -c``; nothing imports it).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agentmemory.errors import IndexDamagedError, IndexReadOnlyError, StoreLockedError

from .clients import close_folder, open_folder, open_unlocked
from .probe import LOCKED_STATUS, READ_ONLY_STATUS

__all__ = ["probe_here"]


def probe_here(folder: str, *, held: bool = False) -> int:
    """The child's work: open the folder as a store would (without its lock when the parent
    ``held`` it), search each collection once; the exit status (0 when it worked; 1 with the
    reason on stderr when Chroma could not open it)."""
    where = Path(folder)
    if held:
        try:
            _search_each(open_unlocked(where))
        except IndexDamagedError as exc:
            print(exc.detail, file=sys.stderr)
            return READ_ONLY_STATUS if isinstance(exc, IndexReadOnlyError) else 1
        return 0
    try:
        client = open_folder(where, timeout_s=5.0, probe=False)
    except StoreLockedError as exc:  # taken since the parent looked: in use, not damaged
        print(exc.holder, file=sys.stderr)
        return LOCKED_STATUS
    except IndexDamagedError as exc:  # the reason alone: the parent wraps it in its own line
        print(exc.detail, file=sys.stderr)
        return READ_ONLY_STATUS if isinstance(exc, IndexReadOnlyError) else 1
    try:
        _search_each(client)
    finally:
        close_folder(where)
    return 0


def _search_each(client: Any) -> None:
    """Load each collection of ``client`` and search it once with one of its own vectors."""
    for listed in client.list_collections():
        name = listed if isinstance(listed, str) else listed.name
        col = client.get_collection(name, embedding_function=None)
        if col.count() == 0:
            continue
        first = col.get(limit=1, include=["embeddings"])
        vectors = first.get("embeddings")
        if vectors is None or len(vectors) == 0:
            continue
        col.query(query_embeddings=[vectors[0]], n_results=1)
