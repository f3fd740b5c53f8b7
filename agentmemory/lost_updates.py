"""Lost-update detection over a store's journal.

A record is a lost update when its ``prev`` (the state its writer built on) is not the state the
journal left for its entry (docs/contract.md#lost-updates). The journal line's wire form is in
:mod:`agentmemory.wire`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from .entries import Change

__all__ = ["LostUpdate", "lost_updates"]


@dataclass(frozen=True, slots=True)
class LostUpdate:
    """A journal record not built on the state it replaced.

    Attributes:
        change: the record whose ``prev`` is not the state the journal left for its entry.
        over: the hash the journal left for that entry just before it, ``""`` when none existed.
    """

    change: Change
    over: str


class _HasJournal(Protocol):
    def journal(self, after: int = 0) -> Iterable[Change]: ...


def lost_updates(store: _HasJournal, after: int = 0) -> list[LostUpdate]:
    """Return, in journal order, the records of ``store`` with ``seq > after`` whose ``prev`` is not
    the state the journal left for that entry (docs/contract.md#lost-updates).

    With ``after > 0`` the first record seen for an entry has no predecessor in the window and is
    never reported. A store whose writers all anchor their writes (``if_hash`` or ``based_on``)
    reports nothing. Errors from the journal propagate.
    """
    last: dict[str, str] = {}
    seen: set[str] = set()
    out: list[LostUpdate] = []
    for c in store.journal(after):
        k = c.entry.key
        if (k in seen or after == 0) and c.prev != last.get(k, ""):
            out.append(LostUpdate(c, last.get(k, "")))
        seen.add(k)
        last[k] = "" if c.entry.deleted else c.entry.hash
    return out
