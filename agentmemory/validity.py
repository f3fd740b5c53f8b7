"""Out of date on purpose: validity dates and supersession.

An entry goes out of date only because someone said so, never by a guess of the library
(``docs/kinds.md#out-of-date-on-purpose-only``):

* meta ``valid-from`` / ``valid-until`` (:data:`META_VALID_FROM`, :data:`META_VALID_UNTIL`):
  ISO dates (``YYYY-MM-DD``), both days included; outside them the entry is not in force;
* meta ``supersedes`` (:data:`META_SUPERSEDES`): the name of another entry of the same scope,
  which this entry retires from the day it is in force.

An entry out of date stays live: it is in ``get``, ``list``, ``search`` and the journal, but the
rendered block, the per-turn part and ``recall`` leave it out unless asked for a date
(``as_of``) or for every entry (``include_superseded``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from .entries import Entry
from .errors import InvalidEntryError, NotFoundError
from .rules import check_scope, valid_name
from .wire import go_quote

__all__ = [
    "META_SUPERSEDES",
    "META_VALID_FROM",
    "META_VALID_UNTIL",
    "InForce",
    "check_supersedes",
    "check_validity_meta",
    "in_force_filter",
    "in_force_lists",
    "parse_day",
    "superseded_entry",
    "today",
]

META_VALID_FROM = "valid-from"
"""Meta key: the first day (ISO date, UTC) the entry is in force."""

META_VALID_UNTIL = "valid-until"
"""Meta key: the last day (ISO date, UTC) the entry is in force."""

META_SUPERSEDES = "supersedes"
"""Meta key: the name of the entry of the same scope this one retires."""

MAX_WIDENING = 64
"""How many times deeper than asked a recall leg is read, at most, to make up for hits that are
out of date (the leg is read 1, 4, 16, 64 times as deep until enough hits are in force)."""


def today() -> date:
    """The current day in UTC, the day validity is judged on when no ``as_of`` is given."""
    return datetime.now(UTC).date()


def parse_day(value: date | str) -> date:
    """A day from a ``date`` (a ``datetime`` gives its UTC date) or an ISO date ``YYYY-MM-DD``.

    Raises:
        ValueError: ``value`` is text that is not an ISO date.
        TypeError: ``value`` is neither a ``date`` nor text.
    """
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC).date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            if len(value) != 10:
                raise ValueError(value)
            return date.fromisoformat(value)
        except ValueError:
            raise ValueError(
                f"{go_quote(value)} is not an ISO date; write the day as YYYY-MM-DD, "
                "e.g. 2026-03-31"
            ) from None
    raise TypeError(f"a day is a date or an ISO date string, not a {type(value).__name__}")


def check_validity_meta(entry: Entry) -> None:
    """Refuse an entry whose ``valid-from``, ``valid-until`` or ``supersedes`` meta cannot mean
    what it says; return ``None`` when the entry may be written.

    Rules, in this order: each date is an ISO date; ``valid-from`` is not after ``valid-until``;
    ``supersedes`` is kebab-case and not the entry's own name. Whether the entry named exists is
    not checked here (the store writes one entry at a time); ``memory_save`` checks it.

    Raises:
        InvalidEntryError: (field ``"meta"``) naming the entry, the key and the value.
    """
    meta = entry.meta or {}
    key = f"{entry.scope}/{entry.name}"
    days: dict[str, date] = {}
    for k in (META_VALID_FROM, META_VALID_UNTIL):
        if k in meta:
            try:
                days[k] = parse_day(meta[k])
            except ValueError:
                raise InvalidEntryError(
                    f"{key} meta {go_quote(k)} is {go_quote(meta[k])}, not an ISO date; "
                    "write the day as YYYY-MM-DD, e.g. 2026-03-31",
                    field="meta",
                ) from None
    if len(days) == 2 and days[META_VALID_FROM] > days[META_VALID_UNTIL]:
        raise InvalidEntryError(
            f"{key} meta valid-from {meta[META_VALID_FROM]} is after valid-until "
            f"{meta[META_VALID_UNTIL]}; the entry would never be in force",
            field="meta",
        )
    if META_SUPERSEDES in meta:
        target = meta[META_SUPERSEDES]
        if not valid_name(target):
            raise InvalidEntryError(
                f"{key} meta supersedes is {go_quote(target)}, not the kebab-case name of an "
                "entry of the same scope",
                field="meta",
            )
        if target == entry.name:
            raise InvalidEntryError(
                f"{key} meta supersedes names the entry itself; name the entry it retires",
                field="meta",
            )


def check_supersedes(scope: str, name: str, supersedes: object) -> str:
    """``supersedes`` when the entry ``scope/name`` may name it as the entry it retires: the
    checks a writer that takes a ``supersedes`` argument makes before it reads the store
    (``memory_save``, ``agentmemory save --supersedes``; docs/kinds.md#out-of-date-on-purpose-only).

    Raises:
        InvalidEntryError: field ``"scope"``: ``supersedes`` is not kebab-case (the message
            says ``supersedes "<value>" is not kebab-case`` and suggests a name); field
            ``"meta"``: it names ``scope/name`` itself.
    """
    target = check_scope(supersedes, what="supersedes")
    if target == name:
        raise InvalidEntryError(
            f"supersedes names {scope}/{name} itself; name the entry this one makes out of date",
            field="meta",
        )
    return target


def superseded_entry(store: Any, scope: str, name: str, supersedes: object) -> Entry:
    """The live entry a write of ``scope/name`` with ``supersedes`` would retire, after
    :func:`check_supersedes`: the store keeps any ``supersedes`` that is kebab-case and not the
    entry's own name (it writes one entry at a time, docs/kinds.md#out-of-date-on-purpose-only),
    so a writer that is told the entry to retire checks here that it exists, and reports the
    returned entry as retired once its write lands.

    Args:
        store: anything with ``get(scope, name)`` that raises
            :class:`~agentmemory.NotFoundError` for an entry that is not live.

    Raises:
        InvalidEntryError: as :func:`check_supersedes`; field ``"meta"`` when no live entry
            ``scope/<supersedes>`` exists. The store's own errors propagate.
    """
    target = check_supersedes(scope, name, supersedes)
    try:
        retired: Entry = store.get(scope, target)
    except NotFoundError:
        raise InvalidEntryError(
            f"supersedes names {scope}/{target}, which does not exist; name an entry of scope "
            f"{scope}, or leave supersedes out",
            field="meta",
        ) from None
    return retired


def _dates_hold(entry: Entry, day: date) -> bool:
    meta = entry.meta or {}
    try:
        start = parse_day(meta[META_VALID_FROM]) if META_VALID_FROM in meta else None
        end = parse_day(meta[META_VALID_UNTIL]) if META_VALID_UNTIL in meta else None
    except ValueError:  # written before the rule, or by another implementation: not a date
        return True
    return (start is None or start <= day) and (end is None or day <= end)


def _retired_on(entries: Iterable[Entry], day: date) -> set[tuple[str, str]]:
    """The ``(scope, name)`` pairs entries in force on ``day`` retire (their ``supersedes``)."""
    out: set[tuple[str, str]] = set()
    for e in entries:
        target = (e.meta or {}).get(META_SUPERSEDES)
        if target and _starts_by(e, day):
            out.add((e.scope, target))
    return out


def _starts_by(entry: Entry, day: date) -> bool:
    """Whether ``entry`` had begun by ``day`` (its ``valid-from``, when it has one)."""
    meta = entry.meta or {}
    try:
        return META_VALID_FROM not in meta or parse_day(meta[META_VALID_FROM]) <= day
    except ValueError:
        return True


@dataclass(frozen=True, slots=True)
class InForce:
    """Which live entries are in force on one day: the predicate :func:`in_force_filter` builds.

    Attributes:
        day: the day judged.
        retired: ``(scope, name)`` of the entries another entry retires by that day.
        since: with ``as_of``, when each entry's current life and each ``supersedes`` began
            (from the journal); ``None`` for today, when the journal need not be read.
    """

    day: date
    retired: frozenset[tuple[str, str]]
    since: _History | None = None

    def __call__(self, entry: Entry) -> bool:
        """``True`` when ``entry`` is in force on :attr:`day`."""
        if not _dates_hold(entry, self.day):
            return False
        if (entry.scope, entry.name) in self.retired:
            return False
        return self.since is None or self.since.existed(entry, self.day)

    def why_not(self, entry: Entry) -> str | None:
        """``None`` when ``entry`` is in force on :attr:`day`, else why not, as a person reads it:
        ``"not written yet on DAY"`` (the journal first shows its current life after DAY),
        ``"not valid yet on DAY"`` (its ``valid-from`` is later) or ``"out of date on DAY"``
        (past its ``valid-until``, or retired by a ``supersedes``)."""
        if self(entry):
            return None
        on = self.day.isoformat()
        if self.since is not None and not self.since.existed(entry, self.day):
            return f"not written yet on {on}"
        if not _starts_by(entry, self.day):
            return f"not valid yet on {on}"
        return f"out of date on {on}"

    def split(self, entries: Sequence[Entry]) -> builtins.list[Entry]:
        """The entries of ``entries`` in force, in their order."""
        return [e for e in entries if self(e)]


class _History:
    """From the journal: when each live entry's current life began, and since when it has
    named its current ``supersedes`` target (UTC days)."""

    def __init__(self, journal: Iterable[Any]) -> None:
        self.born: dict[tuple[str, str], date] = {}
        self.naming: dict[tuple[str, str], tuple[str, date]] = {}
        for c in journal:
            e = c.entry
            k = (e.scope, e.name)
            day = (c.at or e.updated or datetime.min.replace(tzinfo=UTC)).astimezone(UTC).date()
            if e.deleted:
                self.born.pop(k, None)
                self.naming.pop(k, None)
                continue
            self.born.setdefault(k, day)
            target = (e.meta or {}).get(META_SUPERSEDES, "")
            if not target:
                self.naming.pop(k, None)
            elif k not in self.naming or self.naming[k][0] != target:
                self.naming[k] = (target, day)

    def existed(self, entry: Entry, day: date) -> bool:
        born = self.born.get((entry.scope, entry.name))
        return born is None or born <= day

    def retired_on(self, entries: Iterable[Entry], day: date) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for e in entries:
            k = (e.scope, e.name)
            named = self.naming.get(k)
            if named is None or named[1] > day or not _starts_by(e, day):
                continue
            if not self.existed(e, day):
                continue
            out.add((e.scope, named[0]))
        return out


def in_force_filter(
    store: Any, scopes: Sequence[str], *, as_of: date | str | None = None
) -> InForce:
    """The predicate of the entries of ``scopes`` in force on ``as_of`` (default: today, UTC).

    An entry is in force on day D when D is within its ``valid-from``/``valid-until`` (both
    included, each optional) and no entry of its scope retires it by D: an entry retires the one
    its ``supersedes`` names from the day it has begun (its ``valid-from``, if any) and, with
    ``as_of``, only once the journal shows it naming that entry on or before D; with ``as_of``
    an entry first written after D is not in force either. Retiring does not end when the
    retiring entry itself expires.

    Reads the entries with a ``supersedes`` meta through ``store.superseding(scopes)`` when the
    store has it (an index), else by listing the scopes (``store.list``); with ``as_of``, reads
    the journal once (``store.journal()``). A store-like object with neither ``list`` nor
    ``superseding`` is judged on the dates alone; without ``journal``, ``as_of`` judges the
    entries as they are now.

    Raises:
        ValueError, TypeError: ``as_of`` is not a day (:func:`parse_day`).
    """
    day = today() if as_of is None else parse_day(as_of)
    finder: Callable[[Sequence[str]], builtins.list[Entry]] | None = getattr(
        store, "superseding", None
    )
    lister = getattr(store, "list", None)
    if callable(finder):
        naming = finder(scopes)
    elif callable(lister):
        naming = [e for s in scopes for e in lister(s) if (e.meta or {}).get(META_SUPERSEDES)]
    else:
        naming = []
    journal = getattr(store, "journal", None)
    if as_of is None or not callable(journal):
        return InForce(day, frozenset(_retired_on(naming, day)))
    history = _History(journal())
    return InForce(day, frozenset(history.retired_on(naming, day)), history)


def in_force_lists(
    lists: Sequence[Sequence[Entry]], *, as_of: date | str | None = None
) -> builtins.list[builtins.list[Entry]]:
    """Each list of live entries (one scope's each) with only the entries in force on ``as_of``
    (default today, UTC), in their order; the rule of :func:`in_force_filter` without the
    journal (the store's current state, judged on that day).

    Raises:
        ValueError, TypeError: ``as_of`` is not a day (:func:`parse_day`).
    """
    day = today() if as_of is None else parse_day(as_of)
    keep = InForce(day, frozenset(_retired_on((e for es in lists for e in es), day)))
    return [keep.split(es) for es in lists]
