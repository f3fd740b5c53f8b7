"""The :class:`Store` protocol every store satisfies, and the write rule they share (the
recall rule they share is :mod:`agentmemory.recall`).

:func:`plan_put` and :func:`plan_forget` hold the contract of a write (check order, precondition,
what the journal record says) in one place; each store calls them under its own write lock with
the live entry it read, then persists the result however it persists things.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from datetime import date, datetime
from typing import Protocol, Self, runtime_checkable

from recallers import Hit

from .entries import Change, Entry, content_hash
from .errors import ConflictError
from .rules import check_entry, check_size
from .session import current_provenance, current_session
from .validity import check_validity_meta

__all__ = ["Store", "plan_forget", "plan_put"]


@runtime_checkable
class Store(Protocol):
    """A scoped entry store with an append-only journal (docs/contract.md#the-store-protocol).

    Every implementation passes :mod:`agentmemory.testing`.
    """

    @property
    def max_entry_bytes(self) -> int:
        """The content bound ``put`` enforces, in UTF-8 bytes."""
        ...

    def get(self, scope: str, name: str) -> Entry:
        """Return the live entry; raise :class:`~agentmemory.NotFoundError` when there is none."""
        ...

    def list(self, scope: str) -> list[Entry]:
        """Return the live entries of ``scope`` sorted by name (byte order); ``[]`` for an unknown
        scope."""
        ...

    def put(
        self,
        entry: Entry,
        *,
        if_hash: str | None = None,
        based_on: str | None = None,
        session: str | None = None,
    ) -> Change:
        """Create or replace the whole entry and return the journal record it appended.

        Raises :class:`~agentmemory.InvalidEntryError`, then
        :class:`~agentmemory.EntryTooLargeError`, then :class:`~agentmemory.ConflictError`
        (``if_hash`` not the stored hash; ``""`` means "must not exist"). A refused put writes
        nothing.
        """
        ...

    def forget(self, scope: str, name: str, *, session: str | None = None) -> Change:
        """Write a tombstone keeping the last content; raise ``NotFoundError`` when not live."""
        ...

    def search(self, scopes: Sequence[str], query: str, limit: int = 0) -> builtins.list[Entry]:
        """Live entries of ``scopes`` matching ``query`` (see :func:`agentmemory.rules.matches`), at most
        ``limit`` when ``limit > 0``."""
        ...

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
        """At most ``limit`` live entries of ``scopes`` ranked for ``query``, best first
        (docs/recall.md). ``mode``: ``"auto"`` (hybrid when the store keeps vectors, else BM25),
        ``"hybrid"``, ``"bm25"`` or ``"vector"``. Entries out of date today are left out;
        ``as_of`` (a ``date`` or ``"YYYY-MM-DD"``) judges another day, ``include_superseded``
        keeps every live entry (docs/kinds.md#out-of-date-on-purpose-only). See
        :func:`recall_entries` for the rules and errors every store shares."""
        ...

    def journal(self, after: int = 0) -> Iterator[Change]:
        """Yield every record with ``seq > after`` in order."""
        ...

    def close(self) -> None:
        """Release the store's resources; idempotent."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


def plan_put(
    entry: Entry,
    stored: Entry | None,
    *,
    limit: int,
    seq: int,
    now: datetime,
    if_hash: str | None = None,
    based_on: str | None = None,
    session: str | None = None,
    checked: bool = False,
) -> Change:
    """Check a put against the live entry ``stored`` and return the record it appends.

    Check order: invalid entry (:func:`~agentmemory.check_entry`, then the validity meta,
    docs/kinds.md#out-of-date-on-purpose-only), then size against ``limit`` (bytes), then the
    ``if_hash`` precondition (docs/contract.md#conditional-writes). ``prev`` is ``if_hash``, else ``based_on``, else
    the stored hash, else ``""``; ``replaced`` is the stored hash or ``""``. The returned record's
    entry has its own copy of meta, ``hash`` and ``updated == now``.

    ``checked``: the caller already ran :func:`~agentmemory.check_entry` on ``entry`` without a
    limit (a store checks before it takes its write lock), so only the size is checked here:
    each entry is validated once per put.

    Raises :class:`~agentmemory.InvalidEntryError`, :class:`~agentmemory.EntryTooLargeError` or
    :class:`~agentmemory.ConflictError`.
    """
    if not checked:
        check_entry(entry)
    check_validity_meta(entry)  # docs/kinds.md#out-of-date-on-purpose-only, before the size
    check_size(entry, limit, stored)
    have = stored.hash if stored is not None else ""
    if if_hash is not None and if_hash != have:
        raise ConflictError(entry.scope, entry.name, if_hash, have)
    if if_hash is not None:
        prev = if_hash
    elif based_on is not None:
        prev = based_on
    else:
        prev = have
    new = Entry(
        scope=entry.scope,
        name=entry.name,
        content=entry.content,
        meta=dict(entry.meta) if entry.meta else None,
        hash=content_hash(entry.content),
        updated=now,
        deleted=False,
    )
    where = current_provenance()
    return Change(
        seq=seq,
        entry=new,
        prev=prev,
        replaced=have,
        session=current_session(session),
        at=now,
        message=where.message,
        tool=where.tool,
        reason=where.reason,
    )


def plan_forget(stored: Entry, *, seq: int, now: datetime, session: str | None = None) -> Change:
    """Return the tombstone record for the live entry ``stored``: its last content and meta with
    ``deleted=True`` and ``updated == now``; ``prev == replaced ==`` its hash."""
    tomb = stored.copy(updated=now, deleted=True)
    where = current_provenance()
    return Change(
        seq=seq,
        entry=tomb,
        prev=stored.hash,
        replaced=stored.hash,
        session=current_session(session),
        at=now,
        message=where.message,
        tool=where.tool,
        reason=where.reason,
    )
