"""ChromaIndex: one store's vectors in a Chroma client, one collection per scope.

This module is the only one that talks to Chroma's collections. It knows scopes, entry names and
vectors; it knows nothing of the journal (which entries are live, what was applied): that is
:class:`~agentmemory.ChromaStore`'s job. The layout (docs/storage.md#one-collection-per-scope,
docs/storage.md#ids-and-metadata):

* each scope is its own collection ``<prefix>_<scope>``, cosine space, no embedding function
  (vectors are always given);
* an entry is one vector per window of its text (docs/recall.md#windows): window 0's id is
  ``"<scope>/<name>"`` (the id every vector had before windows, so older stores stay valid),
  window ``k``'s ``"<scope>/<name>#<k>"`` (``#`` is never in a name); each vector's metadata is
  ``name``, ``text_hash`` (the hash of the entry's whole embedded text, cut to
  :data:`TEXT_HASH_CHARS`), and for an entry of two windows or more ``window`` (its number) and
  ``windows`` (the entry's count). A vector without ``window`` / ``windows`` (an entry of one
  window, or written before windows) is window 0 of 1; one written before the cut holds
  ``scope``, ``hash`` and the whole ``text_hash`` too, reads the same (its ``text_hash`` is cut
  on read) and loses them when it is next written.

Callers address vectors by entry (``scope`` plus entry ``name``), never by id: :meth:`upsert`
takes :class:`IndexRow` values (one ``(w, dim)`` matrix per entry), :meth:`delete` takes entry
names and removes every window, and :meth:`query`, :meth:`held`, :meth:`iter_held`,
:meth:`count` and :meth:`rebuild` answer per entry. So the id scheme is this module's alone
(docs/storage.md#vectors-by-entry).

Collections are looked up once and cached per :class:`ChromaIndex`. When a cached collection
was deleted underneath (a :meth:`drop` by another handle or process), the call looks it up again
once.
"""

from __future__ import annotations

import builtins
import contextlib
import math
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from agentmemory.errors import IndexDamagedError
from agentmemory.rules import check_scope, valid_name

__all__ = [
    "CROWDED_SPREAD",
    "DEFAULT_COLLECTION_PREFIX",
    "MAX_PREFIX_CHARS",
    "MAX_QUERY_RESULTS",
    "SELF_SEARCH_DEPTH",
    "STORE_PREFIX_DIGITS",
    "TEXT_HASH_CHARS",
    "TIE_DISTANCE",
    "ChromaIndex",
    "IndexRow",
    "Neighbour",
    "SelfSearch",
    "check_prefix",
    "chroma_damage",
    "short_text_hash",
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
big collection failed with "too many SQL variables". A vector leg therefore returns at most as
many entries per scope as the first this many vectors hold (docs/storage.md#one-collection-per-scope)."""

SELF_SEARCH_DEPTH = 10
"""How deep :meth:`ChromaIndex.self_search` looks for an entry's own vector (docs/storage.md#self-queries)."""

CROWDED_SPREAD = 1.5
"""Vectors per entry in a scope's last answer above which :meth:`ChromaIndex.query` reads ids
and distances first and the chosen windows' metadata after (docs/storage.md#vectors-by-entry)."""

TIE_DISTANCE = 1e-6
"""Cosine distance at or under which two vectors are the same: a self-query that returns such a
neighbour found the vector, whichever of the identical ones came back."""

MAX_PREFIX_CHARS = 200
"""The longest collection prefix; with ``_`` and a 64-byte scope it stays under Chroma's 512."""

_PREFIX_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_SEPARATOR = "_"

_Result = TypeVar("_Result")

Metadata = dict[str, str | int | float | bool | None]

SelfSearch = Literal["found", "missed", "lost"]
"""What :meth:`ChromaIndex.self_search` says of one entry."""


TEXT_HASH_CHARS = 39
"""How much of a ``text_hash`` a vector keeps: ``"sha256:"`` and the first 128 bits in hex. It
tells a vector of other text from a current one (no secret rests on it), in 32 fewer hex digits
than the whole hash, on every vector (docs/storage.md#ids-and-metadata)."""


def short_text_hash(value: str) -> str:
    """``value``, a ``text_hash``, as a vector keeps it (its first :data:`TEXT_HASH_CHARS`
    characters); a shorter value is returned whole."""
    return value[:TEXT_HASH_CHARS]


def vector_id(scope: str, name: str, window: int = 0) -> str:
    """The id of window ``window`` of entry ``scope/name``: ``"<scope>/<name>"`` for window 0,
    ``"<scope>/<name>#<window>"`` for the others."""
    return f"{scope}/{name}" if window == 0 else f"{scope}/{name}#{window}"


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
    """The entry name in a vector id (after the first ``/``, before any ``#``)."""
    return vid.partition("/")[2].partition("#")[0]


def _windows_of(meta: Any) -> tuple[int, int]:
    """``(window, windows)`` of a vector's metadata; ``(0, 1)`` without them (an entry of one
    window, or a vector written before windows)."""
    meta = meta or {}
    return int(meta.get("window", 0) or 0), max(1, int(meta.get("windows", 1) or 1))


_DAMAGE_WORDS = (
    "database disk image is malformed",
    "(code: 11)",
    "file is not a database",
    "(code: 26)",
)


_WIDTH = re.compile(r"expecting embedding with dimension of (\d+), got (\d+)")


def chroma_damage(err: BaseException) -> str | None:
    """What is wrong, in one line, when ``err`` says the index cannot serve this store: Chroma's
    sqlite file is damaged (sqlite's ``SQLITE_CORRUPT``, code 11, or ``SQLITE_NOTADB``, code 26:
    the last line of its message), or its vectors are of another width than the store's
    embedder makes (built with another embedder, its journal since replaced); else ``None``."""
    text = str(err)
    width = _WIDTH.search(text)
    if width is not None:
        return (
            f"its vectors have {width.group(1)} dimensions and the store's embedder makes "
            f"{width.group(2)}: it was built with another embedder"
        )
    if not any(w in text for w in _DAMAGE_WORDS):
        return None
    return (text.strip().splitlines() or [type(err).__name__])[-1][:300]


def _not_found() -> type[Exception]:
    from chromadb.errors import NotFoundError

    return NotFoundError


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One entry's vectors as :meth:`ChromaIndex.upsert` writes them.

    Attributes:
        name: the entry's name (the scope is given to ``upsert``).
        hash: the entry's content hash (``"sha256:<hex>"``); not stored with the vectors
            (nothing reads it there), kept so a row says which version it was made from.
        text_hash: the hash of the whole text that was embedded
            (``content_hash(embedding_text(e))``), the same on every window; stored cut to
            :data:`TEXT_HASH_CHARS` characters.
        vectors: the ``(w, dim)`` float32 embeddings of the entry's ``w`` windows, in order
            (docs/recall.md#windows); a ``(dim,)`` vector is taken as one window.

    Raises:
        ValueError: ``vectors`` is not 1-D or 2-D, or has no row.
    """

    name: str
    hash: str
    text_hash: str
    vectors: npt.NDArray[np.float32]

    def __post_init__(self) -> None:
        matrix = np.asarray(self.vectors, dtype=np.float32)
        if matrix.ndim == 1:
            matrix = matrix[None, :]
        if matrix.ndim != 2 or matrix.shape[0] < 1:
            raise ValueError(
                f"IndexRow {self.name!r}: vectors has shape {matrix.shape}; it must be "
                "(windows, dim) with at least one window"
            )
        object.__setattr__(self, "vectors", matrix)

    @property
    def windows(self) -> int:
        """The number of windows (rows of ``vectors``)."""
        return int(self.vectors.shape[0])


@dataclass(frozen=True, slots=True)
class Neighbour:
    """One answer of :meth:`ChromaIndex.query`: an entry, scored by its nearest window.

    Attributes:
        name: the entry's name.
        text_hash: the ``text_hash`` the window was stored with, cut to
            :data:`TEXT_HASH_CHARS` (``None`` when it has none).
        distance: Chroma's cosine distance of the entry's nearest window,
            ``1 - cosine similarity`` (unitless, in [0, 2]).
        window: that window's number (0 for the start of the text).
    """

    name: str
    text_hash: str | None
    distance: float
    window: int = 0


@dataclass(slots=True)
class _Seen:
    """What a scan found of one entry's windows."""

    text_hash: str = ""
    windows: int = 0  # the count window 0 records (0: no window 0)
    found: dict[int, tuple[str, int]] = field(default_factory=dict)

    def held(self) -> str:
        """The entry's text hash when its windows are whole and agree, else ``""``."""
        if self.windows < 1 or set(self.found) != set(range(self.windows)):
            return ""
        if any(v != (self.text_hash, self.windows) for v in self.found.values()):
            return ""
        return self.text_hash


class ChromaIndex:
    """The collections of one store (one prefix) in one Chroma client. Safe for several threads.

    Args:
        client: a Chroma client (``chromadb.PersistentClient``, ``chromadb.HttpClient``).
        prefix: collection names are ``<prefix>_<scope>``: 1 to :data:`MAX_PREFIX_CHARS`
            letters, digits, ``-`` and ``_``, starting with a letter or digit.
        where: the store the index belongs to, for the errors' messages.

    Raises:
        ValueError: a bad ``prefix`` (naming it and the rule).

    Every method that takes a scope raises :class:`~agentmemory.InvalidEntryError` for one that
    is not kebab-case, :class:`~agentmemory.errors.IndexDamagedError` (``"vector"``) when Chroma
    finds its own database damaged in the middle of a call ("database disk image is malformed":
    docs/storage.md#a-damaged-vector-index), and lets Chroma's other errors through (except a
    collection missing, which reads as empty). A subclass may wrap :meth:`upsert`, :meth:`delete` or :meth:`query` (to
    count calls, or to fail them in a test; see ``ChromaStore.index_type``).
    """

    def __init__(
        self, client: Any, prefix: str = DEFAULT_COLLECTION_PREFIX, *, where: str = "the store"
    ) -> None:
        self._client = client
        self._where = where
        self._prefix = check_prefix(prefix)
        self._lock = threading.Lock()
        self._collections: dict[str, Any] = {}
        self._spread: dict[str, float] = {}  # vectors per distinct entry in a scope's answers
        self._max_batch: int | None = None

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
        if self._max_batch is None:
            self._max_batch = max(1, int(self._client.get_max_batch_size()))
        return self._max_batch

    def collection_name(self, scope: str) -> str:
        """The collection name of ``scope``: ``<prefix>_<scope>``."""
        return f"{self._prefix}{_SEPARATOR}{check_scope(scope)}"

    def scopes(self) -> builtins.list[str]:
        """The scopes that have a collection of this prefix in the client, sorted."""
        head = self._prefix + _SEPARATOR
        found = []
        with self._damage_as_error():
            listed = self._client.list_collections()
        for col in listed:
            name = col if isinstance(col, str) else col.name
            if name.startswith(head) and valid_name(name[len(head) :]):
                found.append(name[len(head) :])
        return sorted(found)

    # -- writes ------------------------------------------------------------------------------

    def upsert(self, scope: str, rows: Sequence[IndexRow]) -> None:
        """Write every window of ``rows`` into ``scope``'s collection (created when missing),
        replacing the vectors those entries had. An entry that had more windows than it has
        now loses the surplus first (their ids come from the count window 0 records), so a
        process stopped midway leaves window 0's count naming them and a replay removes them.
        Entries are written whole, several per Chroma call within :meth:`max_batch_size`
        vectors. Nothing happens for ``[]``."""
        if not rows:
            return
        counts = self.window_counts(scope, [r.name for r in rows])
        surplus = [
            vector_id(scope, r.name, k)
            for r in rows
            for k in range(r.windows, counts.get(r.name, 0))
        ]
        if surplus:
            self._run(scope, lambda col: col.delete(ids=surplus), create=False)
        step = self.max_batch_size()
        part: builtins.list[IndexRow] = []
        size = 0
        for r in rows:
            if part and size + r.windows > step:
                self._write(scope, part)
                part, size = [], 0
            part.append(r)
            size += r.windows
        self._write(scope, part)

    def _write(self, scope: str, rows: Sequence[IndexRow]) -> None:
        """One Chroma upsert of every window of ``rows``."""
        ids: builtins.list[str] = []
        metas: builtins.list[Metadata] = []
        for r in rows:
            whole = r.windows == 1  # one window: no window keys, read as window 0 of 1
            for k in range(r.windows):
                ids.append(vector_id(scope, r.name, k))
                metas.append(
                    {
                        "name": r.name,  # what a forget's and a purge's delete selects by
                        "text_hash": short_text_hash(r.text_hash),
                        # an upsert merges metadata: None removes a key the vector held
                        # before (an older layout's, or the windows of a longer text) and
                        # stores nothing on a new id
                        "window": None if whole else k,
                        "windows": None if whole else r.windows,
                        "scope": None,
                        "hash": None,
                    }
                )
        matrix = np.concatenate([r.vectors for r in rows])

        def write(col: Any) -> None:
            col.upsert(ids=ids, embeddings=matrix, metadatas=metas)

        self._run(scope, write, create=True)

    def delete(self, scope: str, names: Sequence[str], *, by_name: bool = True) -> None:
        """Remove every vector whose metadata names one of the entries ``names`` of ``scope``
        (a ``where`` on ``name``, 512 names per Chroma call); names without a vector, and a
        scope without a collection, are no error.

        By name, not by the window count window 0 records (which would be one read, then one
        delete by id; the two costs: docs/storage.md#ids-and-metadata):
        two writers of one entry on a Chroma server can interleave so that window 0 counts
        fewer windows than the collection holds, and a forget or a purge must remove those
        too. ``by_name`` is kept for callers that pass it; both values delete by name."""
        del by_name
        if not names:
            return
        wanted = builtins.list(dict.fromkeys(names))
        step = 512
        for start in range(0, len(wanted), step):
            part = wanted[start : start + step]

            def remove_named(col: Any, part: builtins.list[str] = part) -> None:
                col.delete(where={"name": {"$in": part}})

            self._run(scope, remove_named, create=False)

    def named(self, scope: str, names: Sequence[str]) -> dict[str, int]:
        """How many vectors of ``scope`` name each of the entries ``names`` in their metadata
        (every window, whatever window 0 counts), for those with at least one, by name; a
        ``where`` on ``name``, 512 names per Chroma call. What a purge counts and checks."""
        out: dict[str, int] = {}
        wanted = builtins.list(dict.fromkeys(names))
        step = 512
        for start in range(0, len(wanted), step):
            part = wanted[start : start + step]

            def fetch(col: Any, part: builtins.list[str] = part) -> Any:
                return col.get(where={"name": {"$in": part}}, include=[])

            got = self._run(scope, fetch, create=False)
            for vid in [] if got is None else got["ids"]:
                name = _entry_name(vid)
                out[name] = out.get(name, 0) + 1
        return out

    def drop(self, scope: str) -> None:
        """Delete ``scope``'s collection and every vector in it (no error when there is none)."""
        name = self.collection_name(scope)
        with self._lock:
            self._collections.pop(scope, None)
        try:
            with self._damage_as_error():
                self._client.delete_collection(name)
        except _not_found():
            pass

    def rebuild(self, scope: str) -> int:
        """Copy ``scope``'s vectors (ids, ``(dim,)`` float32 embeddings, metadata, every
        window) out, drop the collection and write them into a new one; return how many
        entries were copied (0, and nothing done, when the scope has no collection). Chroma
        keeps a deleted vector in its segment files and its write log until the collection
        goes; this is how a purge removes it (docs/storage.md#purge-and-the-files). A process
        killed between the drop and the writes leaves the scope's vectors missing;
        ``ChromaStore.repair`` embeds them again.
        """

        def fetch(col: Any) -> Any:
            return col.get(include=["embeddings", "metadatas"])

        got = self._run(scope, fetch, create=False)
        if got is None:
            return 0
        ids = builtins.list(got["ids"])
        metas = builtins.list(got["metadatas"] or [])
        vectors = np.asarray(got["embeddings"], dtype=np.float32)
        self.drop(scope)
        step = self.max_batch_size()
        for start in range(0, len(ids), step):
            part = slice(start, start + step)

            def write(col: Any, part: slice = part) -> None:
                col.upsert(ids=ids[part], embeddings=vectors[part], metadatas=metas[part])

            self._run(scope, write, create=True)
        return len({_entry_name(vid) for vid in ids})

    # -- reads -------------------------------------------------------------------------------

    def window_counts(self, scope: str, names: Sequence[str]) -> dict[str, int]:
        """The window count window 0 of each of the entries ``names`` records, for those that
        have a window 0 (1 for a vector written before windows), by name. One Chroma read."""
        if not names:
            return {}
        ids = [vector_id(scope, n) for n in dict.fromkeys(names)]

        def fetch(col: Any) -> Any:
            return col.get(ids=ids, include=["metadatas"])

        got = self._run(scope, fetch, create=False)
        if got is None:
            return {}
        return {
            _entry_name(vid): _windows_of(meta)[1]
            for vid, meta in zip(got["ids"], got["metadatas"] or [], strict=False)
        }

    def held(self, scope: str, names: Sequence[str]) -> dict[str, str]:
        """The ``text_hash`` of each of the entries ``names`` of ``scope`` that has a vector,
        by name: ``""`` for a vector without one, and for an entry whose windows are not whole
        (a window missing, or windows of other texts or counts), which reads as stale. Two
        Chroma reads at most (window 0, then the other windows of multi-window entries)."""
        if not names:
            return {}
        ids = [vector_id(scope, n) for n in dict.fromkeys(names)]

        def fetch(col: Any, ids: builtins.list[str] = ids) -> Any:
            return col.get(ids=ids, include=["metadatas"])

        got = self._run(scope, fetch, create=False)
        if got is None:
            return {}
        seen: dict[str, _Seen] = {}
        more: builtins.list[str] = []
        self._collect(got, seen)
        for name, s in seen.items():
            more += [vector_id(scope, name, k) for k in range(1, s.windows)]
        step = MAX_QUERY_RESULTS  # ids per read: sqlite binds each as a variable
        for start in range(0, len(more), step):
            part = more[start : start + step]

            def fetch_part(col: Any, part: builtins.list[str] = part) -> Any:
                return fetch(col, part)

            rest = self._run(scope, fetch_part, create=False)
            if rest is not None:
                self._collect(rest, seen)
        return {name: s.held() for name, s in seen.items()}

    @staticmethod
    def _collect(got: Any, seen: dict[str, _Seen]) -> None:
        """Add a Chroma ``get`` answer (ids and metadata) to ``seen``, by entry."""
        for vid, meta in zip(got["ids"], got["metadatas"] or [], strict=False):
            s = seen.setdefault(_entry_name(vid), _Seen())
            window, windows = _windows_of(meta)
            held = short_text_hash(str((meta or {}).get("text_hash", "")))
            s.found[window] = (held, windows)
            if window == 0:
                s.text_hash, s.windows = held, windows

    def iter_held(self, scope: str, batch: int) -> Iterator[dict[str, str]]:
        """Every entry of ``scope`` with a vector, as ``{name: text_hash}`` pages of at most
        ``batch`` entries (``""`` for an entry without a hash or whose windows are not whole,
        as :meth:`held` says); nothing when the scope has no collection. An entry's windows
        may lie anywhere in Chroma's order, so the scope's metadata is read first (by offset
        paging, ``batch`` vectors at a time) and the pages come after."""
        seen: dict[str, _Seen] = {}
        offset = 0
        while True:

            def page(col: Any, offset: int = offset) -> Any:
                return col.get(include=["metadatas"], limit=batch, offset=offset)

            got = self._run(scope, page, create=False)
            if got is None or not got["ids"]:
                break
            self._collect(got, seen)
            offset += len(got["ids"])
            if len(got["ids"]) < batch:
                break
        names = sorted(seen)
        for start in range(0, len(names), max(1, batch)):
            yield {n: seen[n].held() for n in names[start : start + max(1, batch)]}

    def query(
        self, scope: str, vector: npt.NDArray[np.float32], n: int
    ) -> builtins.list[Neighbour]:
        """The at most ``n`` entries of ``scope`` whose windows are nearest the ``(dim,)``
        float32 ``vector``, nearest first, each scored by its nearest window (its first place
        in Chroma's ranked answer: HNSW search, approximate); ``[]`` when the scope has no
        collection (docs/storage.md#vectors-by-entry).

        The first ask is for ``n`` times the vectors per entry of the scope's last answer (1 at
        first), so a scope of long entries usually needs one ask. When windows of one entry
        crowd the answer, Chroma is asked again for more neighbours (at least twice as many)
        until ``n`` entries are found, the collection is exhausted, or
        :data:`MAX_QUERY_RESULTS` vectors were asked for. Reading an answer's metadata costs time
        per vector (docs/storage.md#vectors-by-entry): while answers hold at most
        :data:`CROWDED_SPREAD` vectors per entry the metadata comes with the answer (one call,
        as before windows); beyond, Chroma is asked for ids and distances only and the chosen
        windows' metadata is read by id (one more call). A window that vanished between the
        two calls (a concurrent write) is dropped."""
        if n < 1:
            return []
        spread = self._spread.get(scope, 1.0)
        want = min(MAX_QUERY_RESULTS, max(n, math.ceil(n * spread)))
        with_meta = spread <= CROWDED_SPREAD
        while True:
            include = ["metadatas", "distances"] if with_meta else ["distances"]

            def run(col: Any, want: int = want, include: builtins.list[str] = include) -> Any:
                return col.query(query_embeddings=vector[None, :], n_results=want, include=include)

            got = self._run(scope, run, create=False)
            if got is None:
                return []
            ids = got["ids"][0]
            dists = (got["distances"] or [[]])[0]
            metas = (got["metadatas"] or [[]])[0] if with_meta else [None] * len(ids)
            best: dict[str, tuple[str, float, Any]] = {}
            for vid, dist, meta in zip(ids, dists, metas, strict=False):
                best.setdefault(_entry_name(vid), (vid, float(dist), meta))
            if best and len(ids) >= want:
                self._spread[scope] = len(ids) / len(best)
            if len(best) >= n or len(ids) < want or want >= MAX_QUERY_RESULTS:
                break
            want = min(MAX_QUERY_RESULTS, 2 * want + (n - len(best)))
            with_meta = False
        chosen = builtins.list(best.items())[:n]
        found: dict[str, Any] = {vid: meta for _, (vid, _, meta) in chosen}
        if not with_meta:
            wanted = builtins.list(found)

            def fetch(col: Any) -> Any:
                return col.get(ids=wanted, include=["metadatas"])

            metas_got = self._run(scope, fetch, create=False)
            found = (
                {}
                if metas_got is None
                else dict(zip(metas_got["ids"], metas_got["metadatas"] or [], strict=False))
            )
        out = []
        for name, (vid, dist, _) in chosen:
            if vid not in found:
                continue
            held = (found[vid] or {}).get("text_hash")
            window = int(vid.rpartition("#")[2]) if "#" in vid else 0
            held = None if held is None else short_text_hash(str(held))
            out.append(Neighbour(name, held, dist, window))
        return out

    def self_search(
        self, scope: str, names: Sequence[str], *, depth: int = SELF_SEARCH_DEPTH
    ) -> dict[str, SelfSearch]:
        """Search ``scope`` with the own window-0 vector of each of the entries ``names``, read
        back from Chroma by id, and say for each (docs/storage.md#self-queries):

        * ``"found"``: the entry is among the first ``depth`` neighbours, or a neighbour is
          identical to its vector (within :data:`TIE_DISTANCE`: identical texts cannot be told
          apart);
        * ``"missed"``: it is not (HNSW search is approximate);
        * ``"lost"``: Chroma lists the vector but cannot read it back or search with it (what a
          lost or damaged segment file does; any error of the read counts, so a passing
          server error reads as lost too).

        An entry with no window 0 any more (forgotten since the sample was taken) is
        ``"missed"``, not lost: misses alone do not fail a scope.

        One read and one batched query per call, plus one read per entry when the batched read
        fails."""
        wanted = builtins.list(dict.fromkeys(names))
        out: dict[str, SelfSearch] = dict.fromkeys(wanted, "lost")
        if not wanted:
            return out
        vectors: dict[str, npt.NDArray[np.float32]] = {}

        def read(col: Any, ids: builtins.list[str]) -> Any:
            return col.get(ids=ids, include=["embeddings"])

        answered: set[str] = set()  # names whose read came back without an error

        def keep(got: Any, asked: builtins.list[str]) -> None:
            answered.update(asked)
            if got is None or got["embeddings"] is None:
                return
            for vid, vec in zip(got["ids"], got["embeddings"], strict=False):
                vectors[_entry_name(vid)] = np.asarray(vec, dtype=np.float32)

        ids = [vector_id(scope, n) for n in wanted]
        try:
            keep(self._run(scope, lambda col: read(col, ids), create=False), wanted)
        except Exception:  # some id cannot be read: read them one by one
            for name, vid in zip(wanted, ids, strict=True):

                def read_one(col: Any, vid: str = vid) -> Any:
                    return read(col, [vid])

                try:
                    keep(self._run(scope, read_one, create=False), [name])
                except Exception:
                    continue
        for name in answered - vectors.keys():  # no window 0 now: forgotten meanwhile
            out[name] = "missed"
        readable = [n for n in wanted if n in vectors]
        if not readable:
            return out
        matrix = np.stack([vectors[n] for n in readable])

        def run(col: Any) -> Any:
            return col.query(query_embeddings=matrix, n_results=depth, include=["distances"])

        try:
            got = self._run(scope, run, create=False)
        except Exception:  # the collection cannot be searched at all: every entry is lost
            return out
        if got is None:
            return out
        for name, row, dists in zip(readable, got["ids"], got["distances"] or [], strict=False):
            hit = name in {_entry_name(vid) for vid in row} or any(d <= TIE_DISTANCE for d in dists)
            out[name] = "found" if hit else "missed"
        return out

    def vector_count(self, scope: str) -> int:
        """The number of vectors (windows) in ``scope``'s collection (0 when there is none)."""

        def size(col: Any) -> int:
            return int(col.count())

        got = self._run(scope, size, create=False)
        return 0 if got is None else int(got)

    def count(self, scope: str) -> int:
        """The number of entries with a window 0 in ``scope``'s collection (0 when there is
        none): the vectors less those of windows past the first (a ``where`` on ``window``)."""

        def size(col: Any) -> int:
            later = col.get(where={"window": {"$gt": 0}}, include=[])
            return int(col.count()) - len(later["ids"])

        got = self._run(scope, size, create=False)
        return 0 if got is None else int(got)

    # -- collections -------------------------------------------------------------------------

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
        with self._damage_as_error():
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

    @contextlib.contextmanager
    def _damage_as_error(self) -> Iterator[None]:
        """Chroma's error for its own damaged database as :class:`IndexDamagedError`."""
        try:
            yield
        except Exception as err:
            damage = chroma_damage(err)
            if damage is None:
                raise
            raise IndexDamagedError(self._where, "vector", damage) from err
