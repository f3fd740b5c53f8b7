"""Purge: erasing an entry for good, the rule every store shares, and its receipt.

``forget`` keeps the last content in its tombstone and every earlier version in the journal; a
purge removes them (docs/contract.md#purge-erasing-an-entry-for-good). Each store calls
:func:`redact_history` and :func:`purge_record` under its own write lock, rewrites its journal
records and derived copies, and returns a :class:`PurgeReceipt`; ``verify_erased`` returns an
:class:`ErasureCheck`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from .entries import REDACTED, SOURCE_PURGED, Change, Entry, content_hash, utf8_len
from .errors import InvalidEntryError
from .rules import check_scope, valid_name
from .session import current_session
from .wire import go_quote

__all__ = [
    "MAX_REASON_BYTES",
    "ErasureCheck",
    "PurgeReceipt",
    "check_purge",
    "history_copies",
    "purge_record",
    "purge_session",
    "redact_history",
]

MAX_REASON_BYTES = 1024
"""The longest purge reason, in UTF-8 bytes (the bound on an entry's meta)."""


def check_purge(scope: str, name: str, reason: str) -> None:
    """Raise :class:`~agentmemory.InvalidEntryError` (``field`` ``"scope"``, ``"name"`` or
    ``"reason"``) when ``scope`` or ``name`` is not kebab-case or ``reason`` is not a non-blank
    ``str`` of at most :data:`MAX_REASON_BYTES` UTF-8 bytes; nothing is written then."""
    check_scope(scope)
    if not valid_name(name):
        raise InvalidEntryError(f"name {name!r} is not kebab-case", field="name")
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidEntryError(
            f"purge reason is {reason!r}; say why the entry is erased (for example "
            '"user asked for erasure")',
            field="reason",
        )
    if utf8_len(reason) > MAX_REASON_BYTES:
        raise InvalidEntryError(
            f"purge reason is {utf8_len(reason)} bytes, over the {MAX_REASON_BYTES} byte limit",
            field="reason",
        )


def redact_history(records: Sequence[Change]) -> list[Change]:
    """Return the redacted form of ``records`` (one entry's journal records, in ``seq`` order),
    leaving out those already redacted and earlier purge records.

    Each returned record keeps ``seq``, scope, name, ``updated``, ``deleted``, ``session``,
    ``source``, ``at``, ``message`` and ``tool``; its provenance ``reason`` (free text, which
    may repeat the content) becomes :data:`~agentmemory.entries.REDACTED` when set; its content becomes :data:`~agentmemory.entries.REDACTED`, its meta
    ``None``, and each hash (``entry.hash``, ``prev``, ``replaced``) ``redacted:<n>``, ``n``
    numbering the distinct hashes of the entry's history from 1 in order of first appearance.
    The mapping is one to one, so ``prev``/``replaced`` chains and
    :func:`agentmemory.lost_updates` read as before; ``""`` stays ``""``. Hashes already
    ``redacted:<n>`` keep their number.
    """
    known: dict[str, str] = {}
    used = 0
    for c in records:
        for h in (c.entry.hash, c.prev, c.replaced):
            if h.startswith("redacted:"):
                tail = h.partition(":")[2]
                used = max(used, int(tail) if tail.isdigit() else 0)
                known[h] = h

    def mapped(h: str) -> str:
        nonlocal used
        if not h:
            return ""
        if h not in known:
            used += 1
            known[h] = f"redacted:{used}"
        return known[h]

    out: list[Change] = []
    for c in records:
        if c.source == SOURCE_PURGED or c.redacted:
            continue
        e = c.entry
        out.append(
            Change(
                seq=c.seq,
                entry=Entry(
                    scope=e.scope,
                    name=e.name,
                    content=REDACTED,
                    meta=None,
                    hash=mapped(e.hash),
                    updated=e.updated,
                    deleted=e.deleted,
                ),
                prev=mapped(c.prev),
                replaced=mapped(c.replaced),
                session=c.session,
                source=c.source,
                at=c.at,
                message=c.message,
                tool=c.tool,
                reason=REDACTED if c.reason else "",
            )
        )
    return out


def history_copies(records: Iterable[Change]) -> list[str]:
    """What one entry's journal ``records`` (in ``seq`` order) still hold, for an
    :class:`ErasureCheck`: ``"journal records 2 4 keep their content"`` when a record is neither
    redacted nor a ``purged`` record, ``"no purged record in the journal"`` when there are
    records and none is a purge; ``[]`` when erased (or when there are no records)."""
    kept: list[int] = []
    purged = False
    seen = False
    for c in records:
        seen = True
        if c.source == SOURCE_PURGED:
            purged = True
        elif not (c.redacted and c.entry.content == REDACTED and not c.entry.meta):
            kept.append(c.seq)
    found = []
    if kept:
        found.append(f"journal records {' '.join(map(str, kept))} keep their content")
    if seen and not purged:
        found.append("no purged record in the journal")
    return found


def purge_record(
    scope: str,
    name: str,
    *,
    seq: int,
    now: datetime,
    reason: str,
    redacted: Sequence[int],
    session: str | None = None,
) -> Change:
    """The record a purge appends: ``source == "purged"``, a deleted entry whose content is
    ``reason``, meta ``{"redacted": "<seqs of the records redacted, space separated>"}`` (or
    ``{"redacted": "none"}``), ``prev == replaced == ""`` (the entry is not live), ``session``
    the purging session (``agentmemory.session`` when ``None``), ``reason`` the reason too."""
    text = " ".join(str(s) for s in redacted) or "none"
    return Change(
        seq=seq,
        entry=Entry(
            scope=scope,
            name=name,
            content=reason,
            meta={"redacted": text},
            hash=content_hash(reason),
            updated=now,
            deleted=True,
        ),
        session=current_session(session),
        source=SOURCE_PURGED,
        at=now,
        reason=reason,
    )


@dataclass(frozen=True, slots=True)
class PurgeReceipt:
    """What a purge removed, and where.

    Attributes:
        scope, name: the entry purged.
        reason: the reason recorded in the journal.
        record: the ``purged`` journal record appended.
        tombstone: the tombstone the purge wrote first when the entry was live, else ``None``.
        redacted: the ``seq`` of each journal record whose content and hashes were replaced.
        index_rows: lexical index rows removed (0 or 1; 0 when a forget had removed it).
        vectors: vectors removed from the vector index (0 for a store without one).
        rewritten: each file or table rewritten so freed bytes no longer hold the content
            (``"journal.sqlite3 (vacuum, WAL truncated)"``, a Chroma collection rebuilt, ...).
    """

    scope: str
    name: str
    reason: str
    record: Change
    tombstone: Change | None
    redacted: tuple[int, ...]
    index_rows: int = 0
    vectors: int = 0
    rewritten: tuple[str, ...] = field(default=())

    @classmethod
    def of(
        cls,
        record: Change,
        tombstone: Change | None,
        redacted: Iterable[Change],
        *,
        index_rows: int = 0,
        vectors: int = 0,
        rewritten: Iterable[str] = (),
    ) -> PurgeReceipt:
        """The receipt of the purge whose ``purged`` journal record is ``record`` (scope, name
        and reason are its own), which first wrote ``tombstone`` and redacted ``redacted``;
        copies of the records, so the caller's never reach the receipt."""
        return cls(
            scope=record.entry.scope,
            name=record.entry.name,
            reason=record.reason,
            record=record.copy(),
            tombstone=None if tombstone is None else tombstone.copy(),
            redacted=tuple(c.seq for c in redacted),
            index_rows=index_rows,
            vectors=vectors,
            rewritten=tuple(rewritten),
        )

    def __str__(self) -> str:
        parts = [
            f"purged {self.scope}/{self.name} (journal record {self.record.seq}, reason "
            f"{go_quote(self.reason)})",
            f"journal records redacted: {' '.join(map(str, self.redacted)) or 'none'}",
            f"lexical index rows removed: {self.index_rows}",
            f"vectors removed: {self.vectors}",
        ]
        parts += [f"rewritten: {w}" for w in self.rewritten]
        return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class ErasureCheck:
    """The answer of ``verify_erased(scope, name)``.

    Attributes:
        scope, name: the entry checked.
        looked: each place checked, in order (``"journal records"``, ``"live entries"``, ...).
        found: each place still holding a copy, with what it holds; empty when erased.
    """

    scope: str
    name: str
    looked: tuple[str, ...]
    found: tuple[str, ...]

    @property
    def erased(self) -> bool:
        """``True`` when no place looked at holds a copy."""
        return not self.found

    def __str__(self) -> str:
        head = f"{self.scope}/{self.name}: " + ("erased" if self.erased else "NOT erased")
        lines = [head] + [f"looked: {w}" for w in self.looked]
        lines += [f"found: {w}" for w in self.found]
        return "\n".join(lines)


class _Purges(Protocol):
    def journal(self, after: int = 0) -> Iterator[Change]: ...

    def purge(
        self, scope: str, name: str, *, reason: str, session: str | None = None
    ) -> PurgeReceipt: ...


def purge_session(
    store: _Purges,
    session_id: str,
    scopes: Sequence[str],
    *,
    reason: str = "",
    by: str | None = None,
) -> list[PurgeReceipt]:
    """Purge every entry of ``scopes`` that session ``session_id`` wrote (any journal record
    with that ``session``), whole: all its versions, including those other sessions wrote on
    top (they may repeat what it said). Returns one receipt per entry, in journal order of
    their first record by the session; ``[]`` when it wrote nothing there. ``reason`` defaults
    to ``"purge of session <id>"``; ``by`` is the purging session recorded.
    docs/contract.md#purge-erasing-an-entry-for-good

    Raises:
        InvalidEntryError: ``session_id`` empty or not a ``str`` (field ``"session"``);
            ``scopes`` a ``str``, empty, holding a name that is not kebab-case, or a scope the
            journal has no record in (field ``"scope"``). Nothing is purged then.
        StoreLockedError and the store's other write errors: from the purge that failed;
            the receipts of those before it are lost with the exception, but they are done.
    """
    if not isinstance(session_id, str) or not session_id:
        raise InvalidEntryError(
            f"session is {session_id!r}; give the id of the session to purge", field="session"
        )
    if isinstance(scopes, str) or not scopes:
        raise InvalidEntryError(
            f"scopes is {scopes!r}; give a non-empty list of the scopes to purge in",
            field="scope",
        )
    wanted = [check_scope(s) for s in scopes]
    seen_scopes: set[str] = set()
    keys: dict[tuple[str, str], None] = {}
    for c in store.journal():
        seen_scopes.add(c.entry.scope)
        if c.session == session_id and c.entry.scope in wanted and c.source != SOURCE_PURGED:
            keys.setdefault((c.entry.scope, c.entry.name), None)
    unknown = [s for s in wanted if s not in seen_scopes]
    if unknown:
        raise InvalidEntryError(
            f"scopes {', '.join(unknown)} have no record in the journal; name scopes the store "
            "holds",
            field="scope",
        )
    text = reason or f"purge of session {session_id}"
    return [store.purge(s, n, reason=text, session=by) for s, n in keys]
