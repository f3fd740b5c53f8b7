"""What every store of ours does the same way, written once.

:class:`StoreBase` is the base of ``MemStore``, ``SqliteStore``, ``PostgresStore``, ``FileStore``
and ``ChromaStore``. It holds the parts of the :class:`agentmemory.Store` protocol that do not
depend on how a store persists things:

* ``forget_session``: the journal's session rule (:func:`agentmemory.forget_session`,
  docs/kinds.md#forgetting-a-session), through the store's own ``journal`` and ``forget``;
* ``recall``: the recall rule (:func:`agentmemory.recall.recall_entries`) over the legs the
  store gives in :meth:`StoreBase._recall_legs` (BM25 over itself by default; a store that keeps
  vectors adds its vector leg, and ``ChromaStore``, which also reranks, overrides ``recall``);
* the context manager (``with store: ...`` closes it).

Also :func:`utc_now`, the clock every store stamps records with, :func:`by_scope_then_name`, the
order ``superseding`` answers in, and :func:`checked_batch`, the check before a ``put_many``.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime
from typing import Self, cast

from agentmemory.entries import Change, Entry
from agentmemory.forget_session import forget_session
from agentmemory.recall import recall_entries
from agentmemory.rules import check_entry
from recallers import BM25Recaller, Hit, LexicalSource, Recaller

__all__ = ["StoreBase", "by_scope_then_name", "checked_batch", "utc_now"]


def utc_now() -> datetime:
    """The current time in UTC (timezone-aware), as records are stamped."""
    return datetime.now(UTC)


def by_scope_then_name(entries: Iterable[Entry], scopes: Sequence[str]) -> builtins.list[Entry]:
    """``entries`` (each of a scope in ``scopes``) ordered by the scope's place in ``scopes``,
    then by name in byte order: the order of ``superseding`` (docs/kinds.md#out-of-date-on-purpose-only)."""
    order = {s: i for i, s in enumerate(scopes)}
    return sorted(entries, key=lambda e: (order[e.scope], e.name.encode()))


def checked_batch(entries: Iterable[Entry]) -> builtins.list[Entry]:
    """The entries of a ``put_many`` as a list, each checked by :func:`agentmemory.check_entry`
    before any is written.

    Raises :class:`~agentmemory.InvalidEntryError` or :class:`~agentmemory.EntryTooLargeError`
    for the first entry that breaks a rule."""
    batch = builtins.list(entries)
    for e in batch:
        check_entry(e)
    return batch


def check_state_pair(key: object, value: object) -> None:
    """Refuse a store-state ``key`` or ``value`` that is not a ``str`` (``set_state`` of the
    journal stores) with ``TypeError`` naming both types."""
    if not isinstance(key, str) or not isinstance(value, str):
        raise TypeError(
            f"store state key and value must be str, got {type(key).__name__} "
            f"and {type(value).__name__}"
        )


class StoreBase:
    """``forget_session``, ``recall``, ``max_entry_bytes`` and the context manager, shared by
    every store.

    A subclass sets ``_limit`` (the content bound) and provides the rest of
    :class:`agentmemory.Store` (``journal``, ``forget``, ``list``, ``close``, ...) and, when it
    keeps vectors, overrides :meth:`_recall_legs`.
    """

    _limit: int

    @property
    def max_entry_bytes(self) -> int:
        """The content bound in UTF-8 bytes."""
        return self._limit

    def close(self) -> None:
        """Release what the store holds; a subclass defines it."""
        raise NotImplementedError

    def forget_session(
        self, session_id: str, scopes: Sequence[str], *, reason: str | None = None
    ) -> builtins.list[Change]:
        """Tombstone the live entries of ``scopes`` whose last record ``session_id`` wrote, one
        journal record each: :func:`agentmemory.forget_session` on this store
        (docs/kinds.md#forgetting-a-session). Refuses an empty or unknown scope list and an
        empty session id with :class:`~agentmemory.InvalidEntryError`, writing nothing."""
        return forget_session(self, session_id, scopes, reason=reason)

    def _recall_legs(self) -> tuple[Recaller[Entry], Recaller[Entry] | None]:
        """The BM25 leg and the vector leg (``None``: the store keeps no vectors) of a recall.

        By default BM25 over the store's own ``search_text`` (every store but ``ChromaStore``,
        which overrides ``recall``, has one) and no vector leg."""
        return BM25Recaller(cast("LexicalSource[Entry]", self)), None

    def recall(
        self,
        query: str,
        *,
        scopes: Sequence[str],
        limit: int = 5,
        mode: str = "auto",
        as_of: date | str | None = None,
        include_superseded: bool = False,
    ) -> builtins.list[Hit[Entry]]:
        """At most ``limit`` live entries of ``scopes`` ranked for ``query``, best first.

        BM25 and, when the store keeps vectors, the vector leg fused by ``recallers.DEFAULT_FUSION``
        (a z-score convex combination, docs/recall.md#the-default-fusion; ``mode`` ``"auto"`` is ``"hybrid"`` then, else ``"bm25"``; ``"vector"`` and
        ``"hybrid"`` need vectors). Each hit's ``score`` is the fused score (one leg: its raw
        score) and ``legs`` each leg's rank and raw score. Entries out of date on ``as_of``
        (default today) are left out unless ``include_superseded``
        (docs/kinds.md#out-of-date-on-purpose-only).

        Raises :class:`~agentmemory.EmptyQueryError`, :class:`~agentmemory.InvalidEntryError`
        (a scope), ``ValueError`` (``limit`` under 1) and :class:`~agentmemory.errors.RecallModeError`
        (a mode the store cannot serve, or an unknown one), before searching; see
        :func:`agentmemory.recall.recall_entries`.
        """
        bm25, vector = self._recall_legs()
        return recall_entries(
            self,
            query,
            scopes=scopes,
            limit=limit,
            mode=mode,
            bm25=bm25,
            vector=vector,
            as_of=as_of,
            include_superseded=include_superseded,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
