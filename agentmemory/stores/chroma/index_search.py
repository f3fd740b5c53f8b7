"""Vector search over a :class:`~agentmemory.stores.chroma.index.ChromaIndex`, checked against the
journal: the live entries nearest a query vector.

The index is derived and may hold vectors the journal no longer agrees with (an entry forgotten
or rewritten by another process since, an index update that failed). Every neighbour is
therefore looked up in the journal, and kept only when its entry is live and its vector was
made from the entry's current text (its ``text_hash``); the entry returned is the journal's.
When stale vectors had to be dropped, the scope is asked again, deeper
(docs/storage.md#vector-search-checked-against-the-journal).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from agentmemory.entries import Entry

from .index import ChromaIndex
from .journal_source import JournalStore
from .sync import text_hash

__all__ = ["nearest_live"]


def _scope_nearest(
    index: ChromaIndex,
    journal: JournalStore,
    scope: str,
    query: npt.NDArray[np.float32],
    limit: int,
) -> builtins.list[tuple[Entry, float]]:
    """Up to ``limit`` (entry, cosine similarity) of one scope, checked against the journal;
    asks Chroma for more when stale vectors had to be dropped."""
    want = limit
    while True:
        found = index.query(scope, query, want)
        live = journal.live_many([(scope, n.name) for n in found])
        good: builtins.list[tuple[Entry, float]] = []
        for n in found:
            e = live.get((scope, n.name))
            if e is None:
                continue
            if n.text_hash is not None and n.text_hash != text_hash(e):
                continue
            good.append((e, 1.0 - n.distance))
        if len(good) >= limit or len(found) < want:
            return good[:limit]
        want = want * 2 + (limit - len(good))


def nearest_live(
    index: ChromaIndex,
    journal: JournalStore,
    query: npt.NDArray[np.float32],
    *,
    scopes: Sequence[str],
    limit: int,
) -> builtins.list[tuple[Entry, float]]:
    """The at most ``limit`` live entries of ``scopes`` nearest the ``(dim,)`` float32
    ``query``, nearest first, each with its cosine similarity (``1 - cosine distance``,
    unitless, in [-1, 1]).

    ``scopes`` are kebab-case scope names, each searched in its own collection (no ``where``
    filter) for ``limit`` neighbours; ties break by the scope's position in ``scopes``, then by
    name (UTF-8 byte order). ``[]`` when ``limit`` is under 1. Chroma's errors propagate.
    """
    if limit < 1:
        return []
    order = {s: i for i, s in reversed(builtins.list(enumerate(scopes)))}
    hits: builtins.list[tuple[int, Entry, float]] = []
    for scope, position in sorted(order.items(), key=lambda kv: kv[1]):
        for e, score in _scope_nearest(index, journal, scope, query, limit):
            hits.append((position, e, score))
    hits.sort(key=lambda h: (-h[2], h[0], h[1].name.encode()))
    return [(e, score) for _, e, score in hits[:limit]]
