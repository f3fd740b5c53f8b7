"""A LangGraph ``BaseStore`` over any of our stores (docs/integrations.md#langgraph).

:class:`AgentMemoryStore` answers LangGraph's four operations from a :class:`~agentmemory.Store`
(an ``open_store`` folder, a Markdown folder, a PostgreSQL journal, a ``MemStore``):

- ``GetOp``: the live entry at the item's scope and name (:mod:`.mapping`), or ``None``.
- ``PutOp``: ``Store.put`` of the item's entry; ``value=None`` writes a tombstone
  (``Store.forget``), so a delete reaches the lexical and vector indexes and the journal keeps it.
- ``SearchOp``: with a ``query``, the store's recall (hybrid when it keeps vectors, else BM25,
  docs/recall.md) over the scopes under ``namespace_prefix``, each item's ``score`` the fused score;
  without one, every item under the prefix, newest ``updated_at`` first. ``filter`` compares value
  fields as LangGraph's stores do (equality, nested dicts, lists, ``$eq $ne $gt $gte $lt $lte``);
  ``offset`` and ``limit`` apply after it.
- ``ListNamespacesOp``: the namespaces holding live items, sorted, with prefix and suffix
  conditions (``"*"`` matches any label) and ``max_depth``.

Ops of one ``batch`` run in order, one at a time: a read sees the puts before it. ``abatch`` runs
``batch`` on the store's own worker thread, so the event loop never waits on disk, a model or a
server, and concurrent calls are answered in turn. TTLs are not supported (``supports_ttl`` is
``False``): memory here expires by ``valid-until`` meta or a forget, both in the journal.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from ...entries import Entry
from ...errors import NotFoundError
from ...session import provenance
from ...store import Store
from .filters import matches_filter
from .mapping import Mapped, MappingError, entry_for, item_of, key_name, namespace_scope

__all__ = ["TOOL", "AgentMemoryStore"]

TOOL = "langgraph-store"
"""The ``tool`` every write through :class:`AgentMemoryStore` carries in the journal."""

_FIRST_RECALL = 20
"""How many hits a filtered query search asks the store for first; it asks for four times as
many until the filter leaves enough or the store has no more."""


class AgentMemoryStore(BaseStore):
    """LangGraph's long-term memory store, kept in ``store``.

    Args:
        store: any of our stores; the caller keeps ownership unless ``close_store``.
        index: LangGraph's index configuration; only ``fields`` is read (the paths of the value
            whose text is indexed, default ``["$"]``, the whole value). The store embeds with its
            own embedder, so ``dims`` and ``embed`` are refused (``ValueError``).
        close_store: close ``store`` when this closes.

    Raises :class:`~agentmemory.integrations.langgraph.MappingError` (a ``ValueError``) for a
    namespace, key or value with no entry form, and LangGraph's ``InvalidNamespaceError`` for a
    label it refuses; the store's own errors (full, locked, conflict) pass through unchanged.
    """

    __slots__ = (
        "_close_store",
        "_executor",
        "_executor_lock",
        "_fields",
        "_lock",
        "_scope_namespace",
        "_store",
    )

    def __init__(
        self,
        store: Store,
        *,
        index: Mapping[str, Any] | None = None,
        close_store: bool = False,
    ) -> None:
        extra = sorted(set(index or {}) - {"fields"})
        if extra:
            raise ValueError(
                f"index: {', '.join(extra)} not taken; the store embeds with its own embedder, "
                "so give only 'fields' (the value's paths to index)"
            )
        fields = list((index or {}).get("fields") or ["$"])
        self._store = store
        self._fields = fields
        self._close_store = close_store
        self._lock = threading.RLock()
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self._scope_namespace: dict[str, tuple[str, ...]] = {}

    @property
    def store(self) -> Store:
        """The store the items are kept in."""
        return self._store

    def close(self) -> None:
        """Stop the worker thread; close the store when ``close_store``. Idempotent."""
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        with self._lock:
            if self._close_store:
                self._store.close()

    def __enter__(self) -> AgentMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- LangGraph's two entry points ----------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order and return one result each (LangGraph's ``BaseStore.batch``)."""
        ops = list(ops)
        for op in ops:
            validate_op_namespace(op)
        with self._lock, provenance(tool=TOOL):
            return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` on this store's worker thread, with the caller's context (session,
        provenance)."""
        ops = list(ops)
        with self._executor_lock:  # never the store's lock: a batch may be holding it
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="agentmemory-langgraph")
            executor = self._executor
        ctx = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(executor, ctx.run, self.batch, ops)

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise TypeError(f"unknown operation {type(op).__name__}")

    # -- operations ---------------------------------------------------------------------

    def _live(self, namespace: tuple[str, ...], key: str) -> tuple[Entry, Mapped] | None:
        try:
            entry = self._store.get(namespace_scope(namespace), key_name(key))
        except NotFoundError:
            return None
        mapped = item_of(entry)
        if mapped is None or mapped.namespace != tuple(namespace) or mapped.key != key:
            return None
        return entry, mapped

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        found = self._live(namespace, key)
        if found is None:
            return None
        m = found[1]
        return Item(
            value=m.value,
            key=m.key,
            namespace=m.namespace,
            created_at=m.created_at,
            updated_at=m.updated_at,
        )

    def _put(self, op: PutOp) -> None:
        namespace, key = tuple(op.namespace), op.key
        found = self._live(namespace, key)
        if op.value is None:
            if found is not None:
                self._store.forget(found[0].scope, found[0].name)
            return
        scope, name = namespace_scope(namespace), key_name(key)
        if found is None:
            self._refuse_taken(scope, name, namespace, key)
        created = found[1].created_at if found is not None else datetime.now(UTC)
        paths = self._fields if op.index is None else (op.index or ["$"])
        texts = _texts(op.value, paths)
        entry = entry_for(
            namespace,
            key,
            op.value,
            texts,
            created=created,
            max_entry_bytes=self._store.max_entry_bytes,
        )
        self._store.put(entry, if_hash=found[0].hash if found is not None else "")
        self._scope_namespace.setdefault(scope, namespace)

    def _refuse_taken(self, scope: str, name: str, namespace: tuple[str, ...], key: str) -> None:
        try:
            held = self._store.get(scope, name)
        except NotFoundError:
            return
        other = item_of(held)
        holder = (
            f"namespace {other.namespace!r} key {other.key!r}"
            if other is not None
            else "an entry not written through LangGraph"
        )
        raise MappingError(
            f"namespace {namespace!r} key {key!r} maps to {scope}/{name}, which holds {holder}; "
            "use another key"
        )

    def _namespace_of(self, scope: str) -> tuple[str, ...] | None:
        known = self._scope_namespace.get(scope)
        if known is not None:
            return known
        for entry in self._store.list(scope):
            mapped = item_of(entry)
            if mapped is not None:
                self._scope_namespace[scope] = mapped.namespace
                return mapped.namespace
        return None

    def _scopes_under(self, prefix: Sequence[str]) -> list[str]:
        want = tuple(prefix)
        out = []
        for scope in _scopes(self._store):
            ns = self._namespace_of(scope)
            if ns is not None and ns[: len(want)] == want:
                out.append(scope)
        return out

    def _items_under(self, prefix: tuple[str, ...], scopes: Sequence[str]) -> list[Mapped]:
        items = []
        for scope in scopes:
            for entry in self._store.list(scope):
                mapped = item_of(entry)
                if mapped is not None and mapped.namespace[: len(prefix)] == prefix:
                    items.append(mapped)
        return items

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        scopes = self._scopes_under(prefix)
        if not scopes or op.limit <= 0:
            return []
        keep = op.offset + op.limit
        if not (op.query and op.query.strip()):
            items = [
                m for m in self._items_under(prefix, scopes) if matches_filter(m.value, op.filter)
            ]
            items.sort(key=lambda m: (m.namespace, m.key))
            items.sort(key=lambda m: m.updated_at, reverse=True)
            return [_item(m) for m in items[op.offset : keep]]
        ask = keep if not op.filter else max(keep, _FIRST_RECALL)
        while True:
            hits = self._store.recall(op.query, scopes=scopes, limit=ask)
            found: list[SearchItem] = []
            for hit in hits:
                mapped = item_of(hit.entry)
                if mapped is None or mapped.namespace[: len(prefix)] != prefix:
                    continue
                if matches_filter(mapped.value, op.filter):
                    found.append(_item(mapped, hit.score))
            if len(found) >= keep or len(hits) < ask:
                return found[op.offset : keep]
            ask *= 4

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces = {
            ns for scope in _scopes(self._store) if (ns := self._namespace_of(scope)) is not None
        }
        kept = [ns for ns in spaces if all(_matches(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            kept = list({ns[: op.max_depth] for ns in kept})
        kept.sort()
        return kept[op.offset : op.offset + op.limit]


def _scopes(store: Store) -> list[str]:
    scopes = getattr(store, "scopes", None)
    if scopes is None:
        raise TypeError(f"{type(store).__name__} cannot list its scopes; pass one of our stores")
    return list(scopes())


def _texts(value: Mapping[str, Any], paths: Sequence[str]) -> list[str] | None:
    """The value's texts at ``paths`` (LangGraph's own path rule), or ``None`` for ``["$"]``."""
    if list(paths) == ["$"]:
        return None
    texts: list[str] = []
    for path in paths:
        texts.extend(get_text_at_path(dict(value), path if path == "$" else tokenize_path(path)))
    return texts


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"match_type {condition.match_type!r}: use 'prefix' or 'suffix'")
    return all(p == "*" or n == p for n, p in pairs)


def _item(mapped: Mapped, score: float | None = None) -> SearchItem:
    return SearchItem(
        namespace=mapped.namespace,
        key=mapped.key,
        value=mapped.value,
        created_at=mapped.created_at,
        updated_at=mapped.updated_at,
        score=score,
    )
