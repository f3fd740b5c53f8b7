"""ChromaIndex: one store's vectors in a Chroma client, one collection per scope.

This module is the only one that talks to Chroma's collections. It knows scopes, entry names and
vectors; it knows nothing of the journal (which entries are live, what was applied): that is
:class:`~agentmemory.ChromaStore`'s job. The layout (docs/storage.md#one-collection-per-scope,
docs/storage.md#ids-and-metadata):

* each scope is its own collection ``<prefix>_<scope>``, cosine space, no embedding function
  (vectors are always given);
* a vector's id is ``"<scope>/<name>"`` and its metadata ``scope``, ``name``, ``hash`` (the
  entry's content hash) and ``text_hash`` (the hash of the text that was embedded).

Callers address vectors by entry (``scope`` plus entry ``name``), never by id: :meth:`upsert`
takes :class:`IndexRow` values, :meth:`delete` takes entry names, :meth:`query` and
:meth:`held` answer with entry names. So the id scheme is this module's alone: an entry indexed
as several vectors (one per window of its text) would change :func:`vector_id` and
:meth:`delete`, not the store (docs/storage.md#vectors-by-entry).

Collections are looked up once and cached per :class:`ChromaIndex`. When a cached collection
was deleted underneath (a :meth:`drop` by another handle or process), the call looks it up again
once.
"""

from __future__ import annotations

import builtins
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from .rules import check_scope, valid_name

__all__ = [
    "DEFAULT_COLLECTION_PREFIX",
    "MAX_PREFIX_CHARS",
    "MAX_QUERY_RESULTS",
    "STORE_PREFIX_DIGITS",
    "ChromaIndex",
    "IndexRow",
    "Neighbour",
    "check_prefix",
    "store_prefix",
    "vector_id",
]

DEFAULT_COLLECTION_PREFIX = "agentmemory"
"""The default prefix of collection names (``agentmemory_<scope>``)."""

STORE_PREFIX_DIGITS = 16
"""How many hex digits of a store's id name its collections on a shared server."""


def store_prefix(store_id: str) -> str:
    """The collection prefix of a store's vectors on a Chroma server it shares with others:
    ``am-`` and the first :data:`STORE_PREFIX_DIGITS` hex digits of the journal's store id (a
    UUID), so stores sharing one server never share a collection and every process of one
    store finds the same ones (docs/storage.md#one-collection-per-scope)."""
    return "am-" + store_id.replace("-", "")[:STORE_PREFIX_DIGITS]


MAX_QUERY_RESULTS = 10_000
"""The most neighbours one query asks a collection for. Chroma reads a query's results with one
SQL statement binding every id, and sqlite allows 32,766 bound variables: ``n_results=40000`` on a
big collection failed with "too many SQL variables". A vector leg therefore returns at most this
many entries per scope (docs/storage.md#one-collection-per-scope)."""

MAX_PREFIX_CHARS = 200
"""The longest collection prefix; with ``_`` and a 64-byte scope it stays under Chroma's 512."""

_PREFIX_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_SEPARATOR = "_"

_Result = TypeVar("_Result")

Metadata = dict[str, str | int | float | bool | None]


def vector_id(scope: str, name: str) -> str:
    """The id of the vector of entry ``scope/name``: ``"<scope>/<name>"``."""
    return f"{scope}/{name}"


def check_prefix(prefix: str) -> str:
    """Return ``prefix`` when it may prefix collection names: 1 to :data:`MAX_PREFIX_CHARS`
    letters, digits, ``-`` and ``_``, starting with a letter or digit.

    Raises:
        ValueError: any other value (naming it and the rule).
    """
    if (
        not isinstance(prefix, str)
        or len(prefix) > MAX_PREFIX_CHARS
        or _PREFIX_RE.fullmatch(prefix) is None
    ):
        raise ValueError(
            f"collection_prefix {prefix!r} must be 1 to {MAX_PREFIX_CHARS} "
            "characters of letters, digits, '-' and '_', starting with a letter or digit"
        )
    return prefix


def _entry_name(vid: str) -> str:
    """The entry name in a vector id (the part after the first ``/``)."""
    return vid.partition("/")[2]


def _not_found() -> type[Exception]:
    from chromadb.errors import NotFoundError

    return NotFoundError


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One entry's vector as :meth:`ChromaIndex.upsert` writes it.

    Attributes:
        name: the entry's name (the scope is given to ``upsert``).
        hash: the entry's content hash (``"sha256:<hex>"``).
        text_hash: the hash of the text that was embedded (``content_hash(embedding_text(e))``).
        vector: the ``(dim,)`` float32 embedding.
    """

    name: str
    hash: str
    text_hash: str
    vector: npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Neighbour:
    """One answer of :meth:`ChromaIndex.query`.

    Attributes:
        name: the entry's name.
        text_hash: the ``text_hash`` the vector was stored with (``None`` when it has none).
        distance: Chroma's cosine distance, ``1 - cosine similarity`` (unitless, in [0, 2]).
    """

    name: str
    text_hash: str | None
    distance: float


class ChromaIndex:
    """The collections of one store (one prefix) in one Chroma client. Safe for several threads.

    Args:
        client: a Chroma client (``chromadb.PersistentClient``, ``chromadb.HttpClient``).
        prefix: collection names are ``<prefix>_<scope>``: 1 to :data:`MAX_PREFIX_CHARS`
            letters, digits, ``-`` and ``_``, starting with a letter or digit.

    Raises:
        ValueError: a bad ``prefix`` (naming it and the rule).

    Every method that takes a scope raises :class:`~agentmemory.InvalidEntryError` for one that
    is not kebab-case, and lets Chroma's own errors through (except a collection missing, which
    reads as empty). A subclass may wrap :meth:`upsert`, :meth:`delete` or :meth:`query` (to
    count calls, or to fail them in a test; see ``ChromaStore.index_type``).
    """

    def __init__(self, client: Any, prefix: str = DEFAULT_COLLECTION_PREFIX) -> None:
        self._client = client
        self._prefix = check_prefix(prefix)
        self._lock = threading.Lock()
        self._collections: dict[str, Any] = {}

    @property
    def client(self) -> Any:
        """The Chroma client holding the collections."""
        return self._client

    @property
    def prefix(self) -> str:
        """The prefix of the collection names."""
        return self._prefix

    def max_batch_size(self) -> int:
        """The most vectors one Chroma call may carry (the client's ``get_max_batch_size()``;
        5,461 for Chroma 1.5.9, docs/storage.md#batches)."""
        return int(self._client.get_max_batch_size())

    def collection_name(self, scope: str) -> str:
        """The collection name of ``scope``: ``<prefix>_<scope>``."""
        return f"{self._prefix}{_SEPARATOR}{check_scope(scope)}"

    def scopes(self) -> builtins.list[str]:
        """The scopes that have a collection of this prefix in the client, sorted."""
        head = self._prefix + _SEPARATOR
        found = []
        for col in self._client.list_collections():
            name = col if isinstance(col, str) else col.name
            if name.startswith(head) and valid_name(name[len(head) :]):
                found.append(name[len(head) :])
        return sorted(found)

    # -- writes ------------------------------------------------------------------------------

    def upsert(self, scope: str, rows: Sequence[IndexRow]) -> None:
        """Write the vectors of ``rows`` into ``scope``'s collection (created when missing),
        replacing the vectors those entries had; one Chroma call (keep ``rows`` within
        :meth:`max_batch_size`). Nothing happens for ``[]``."""
        if not rows:
            return
        ids = [vector_id(scope, r.name) for r in rows]
        matrix = np.stack([r.vector for r in rows])
        metas: builtins.list[Metadata] = [
            {"scope": scope, "name": r.name, "hash": r.hash, "text_hash": r.text_hash} for r in rows
        ]

        def write(col: Any) -> None:
            col.upsert(ids=ids, embeddings=matrix, metadatas=metas)

        self._run(scope, write, create=True)

    def delete(self, scope: str, names: Sequence[str]) -> None:
        """Remove every vector of the entries ``names`` of ``scope``; names without a vector,
        and a scope without a collection, are no error."""
        if not names:
            return
        ids = [vector_id(scope, n) for n in names]

        def remove(col: Any) -> None:
            col.delete(ids=ids)

        self._run(scope, remove, create=False)

    def drop(self, scope: str) -> None:
        """Delete ``scope``'s collection and every vector in it (no error when there is none)."""
        name = self.collection_name(scope)
        with self._lock:
            self._collections.pop(scope, None)
        try:
            self._client.delete_collection(name)
        except _not_found():
            pass

    def rebuild(self, scope: str) -> int:
        """Copy ``scope``'s vectors (ids, ``(dim,)`` float32 embeddings, metadata) out, drop the
        collection and write them into a new one; return how many were copied (0, and nothing
        done, when the scope has no collection). Chroma keeps a deleted vector in its segment
        files and its write log until the collection goes; this is how a purge removes it
        (docs/storage.md#purge-and-the-files). A process killed between the drop and the
        writes leaves the scope's vectors missing; ``ChromaStore.repair`` embeds them again.
        """

        def fetch(col: Any) -> Any:
            return col.get(include=["embeddings", "metadatas"])

        got = self._run(scope, fetch, create=False)
        if got is None:
            return 0
        rows = [
            IndexRow(
                name=_entry_name(vid),
                hash=str((meta or {}).get("hash", "")),
                text_hash=str((meta or {}).get("text_hash", "")),
                vector=np.asarray(vec, dtype=np.float32),
            )
            for vid, vec, meta in zip(got["ids"], got["embeddings"], got["metadatas"], strict=True)
        ]
        self.drop(scope)
        step = max(1, self.max_batch_size())
        for start in range(0, len(rows), step):
            self.upsert(scope, rows[start : start + step])
        return len(rows)

    # -- reads -------------------------------------------------------------------------------

    def held(self, scope: str, names: Sequence[str]) -> dict[str, str]:
        """The ``text_hash`` of each of the entries ``names`` of ``scope`` that has a vector
        (``""`` for a vector without one), by name."""
        if not names:
            return {}
        ids = [vector_id(scope, n) for n in names]

        def fetch(col: Any) -> Any:
            return col.get(ids=ids, include=["metadatas"])

        got = self._run(scope, fetch, create=False)
        return {} if got is None else self._hashes(got)

    def iter_held(self, scope: str, batch: int) -> Iterator[dict[str, str]]:
        """Every vector of ``scope`` as ``{name: text_hash}``, ``batch`` vectors at a time (by
        Chroma's offset paging; nothing when the scope has no collection)."""
        offset = 0
        while True:

            def page(col: Any, offset: int = offset) -> Any:
                return col.get(include=["metadatas"], limit=batch, offset=offset)

            got = self._run(scope, page, create=False)
            if got is None or not got["ids"]:
                return
            yield self._hashes(got)
            offset += len(got["ids"])
            if len(got["ids"]) < batch:
                return

    def query(
        self, scope: str, vector: npt.NDArray[np.float32], n: int
    ) -> builtins.list[Neighbour]:
        """The at most ``n`` vectors of ``scope`` nearest the ``(dim,)`` float32 ``vector``,
        nearest first (Chroma's HNSW search: approximate); ``[]`` when the scope has no
        collection. ``n`` is capped at :data:`MAX_QUERY_RESULTS`."""
        n = min(n, MAX_QUERY_RESULTS)

        def run(col: Any) -> Any:
            return col.query(
                query_embeddings=vector[None, :], n_results=n, include=["metadatas", "distances"]
            )

        got = self._run(scope, run, create=False)
        if got is None:
            return []
        ids = got["ids"][0]
        metas = (got["metadatas"] or [[]])[0]
        dists = (got["distances"] or [[]])[0]
        out = []
        for vid, meta, dist in zip(ids, metas, dists, strict=False):
            held = (meta or {}).get("text_hash")
            out.append(
                Neighbour(_entry_name(vid), None if held is None else str(held), float(dist))
            )
        return out

    def count(self, scope: str) -> int:
        """The number of vectors in ``scope``'s collection (0 when there is none)."""

        def size(col: Any) -> int:
            return int(col.count())

        got = self._run(scope, size, create=False)
        return 0 if got is None else int(got)

    # -- collections -------------------------------------------------------------------------

    @staticmethod
    def _hashes(got: Any) -> dict[str, str]:
        return {
            _entry_name(vid): str((meta or {}).get("text_hash", ""))
            for vid, meta in zip(got["ids"], got["metadatas"] or [], strict=False)
        }

    def _collection(self, scope: str, *, create: bool) -> Any:
        """The scope's collection (cached), created when ``create``; ``None`` when it does not
        exist and ``create`` is false."""
        with self._lock:
            found = self._collections.get(scope)
        if found is not None:
            return found
        name = self.collection_name(scope)
        if create:
            found = self._client.get_or_create_collection(
                name,
                embedding_function=None,
                configuration={"hnsw": {"space": "cosine"}},
                metadata={"agentmemory-scope": scope},
            )
        else:
            try:
                found = self._client.get_collection(name, embedding_function=None)
            except _not_found():
                return None
        with self._lock:
            self._collections[scope] = found
        return found

    def _run(self, scope: str, action: Callable[[Any], _Result], *, create: bool) -> _Result | None:
        """``action(collection)``, or ``None`` when the scope has no collection (and
        ``create`` is false). When the cached collection was deleted underneath (a drop by
        another handle or process), look it up again once."""
        col = self._collection(scope, create=create)
        if col is None:
            return None
        try:
            return action(col)
        except _not_found():
            with self._lock:
                self._collections.pop(scope, None)
            col = self._collection(scope, create=create)
            return None if col is None else action(col)
