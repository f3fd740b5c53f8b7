"""The :class:`Store` protocol every store satisfies, and the write rule they share.

:func:`plan_put` and :func:`plan_forget` hold the contract of a write (check order, precondition,
what the journal record says) in one place; each store calls them under its own write lock with
the live entry it read, then persists the result however it persists things.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Protocol, Self, runtime_checkable

from .entries import Change, Entry, check_entry, content_hash
from .errors import ConflictError
from .session import current_session

__all__ = ["Store", "plan_forget", "plan_put"]


@runtime_checkable
class Store(Protocol):
    """A scoped entry store with an append-only journal (reference/go-contract.md 1.2).

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
        """Live entries of ``scopes`` matching ``query`` (see :func:`agentmemory.matches`), at most
        ``limit`` when ``limit > 0``."""
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
) -> Change:
    """Check a put against the live entry ``stored`` and return the record it appends.

    Check order: invalid entry, then size against ``limit`` (bytes), then the ``if_hash``
    precondition (reference/go-contract.md 1.7). ``prev`` is ``if_hash``, else ``based_on``, else
    the stored hash, else ``""``; ``replaced`` is the stored hash or ``""``. The returned record's
    entry has its own copy of meta, ``hash`` and ``updated == now``.

    Raises :class:`~agentmemory.InvalidEntryError`, :class:`~agentmemory.EntryTooLargeError` or
    :class:`~agentmemory.ConflictError`.
    """
    check_entry(entry, limit, stored)
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
    return Change(
        seq=seq, entry=new, prev=prev, replaced=have, session=current_session(session), at=now
    )


def plan_forget(stored: Entry, *, seq: int, now: datetime, session: str | None = None) -> Change:
    """Return the tombstone record for the live entry ``stored``: its last content and meta with
    ``deleted=True`` and ``updated == now``; ``prev == replaced ==`` its hash."""
    tomb = stored.copy(updated=now, deleted=True)
    return Change(
        seq=seq,
        entry=tomb,
        prev=stored.hash,
        replaced=stored.hash,
        session=current_session(session),
        at=now,
    )
