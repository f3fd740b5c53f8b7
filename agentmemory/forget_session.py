"""Forget what one session wrote, in the scopes allowed and nowhere else
(``docs/kinds.md#forgetting-a-session``).

A bulk delete is where a memory store can lose everything at once: mem0#3928 was a scoped delete
that, given no scope, deleted every user's memories. :func:`forget_session` therefore takes the
scopes explicitly, refuses an empty list and a scope the journal has never seen, and writes one
tombstone per entry, each its own journal record, so every removal can be read and undone.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from .entries import Change
from .errors import InvalidEntryError, NotFoundError
from .rules import check_scope
from .session import current_provenance, provenance
from .wire import go_quote

__all__ = ["forget_session", "last_written_by"]


def last_written_by(
    store: Any, session_id: str, scopes: Sequence[str]
) -> tuple[dict[tuple[str, str], str], builtins.list[str]]:
    """The live entries of ``scopes`` whose last journal record ``session_id`` wrote, with the
    hash that record wrote; and those of ``scopes`` with no journal record at all.

    A store with its own ``last_written_by(session_id, scopes)`` (``SqliteStore`` reads it
    through an index of the journal by session) answers itself; any other is read in one pass
    over its journal."""
    finder = getattr(store, "last_written_by", None)
    if callable(finder):
        answer: tuple[dict[tuple[str, str], str], builtins.list[str]] = finder(session_id, scopes)
        return answer
    wanted = set(scopes)
    last: dict[tuple[str, str], Change] = {}
    seen: set[str] = set()
    for c in store.journal():
        seen.add(c.entry.scope)
        if c.entry.scope in wanted:
            last[(c.entry.scope, c.entry.name)] = c
    found = {
        k: c.entry.hash for k, c in last.items() if c.session == session_id and not c.entry.deleted
    }
    return found, [s for s in dict.fromkeys(scopes) if s not in seen]


def forget_session(
    store: Any, session_id: str, scopes: Sequence[str], *, reason: str | None = None
) -> builtins.list[Change]:
    """Tombstone every live entry of ``scopes`` whose current state ``session_id`` wrote.

    "What a session wrote" is the entries whose last journal record carries that session: an
    entry another session changed since is the other session's now and stays; entries of scopes
    not listed stay whatever wrote them. Each entry gets its own tombstone (``store.forget``), in
    scope order then name, stamped with the enclosing session and provenance and, unless the
    provenance gives one, the reason ``forget_session <id>``. An entry changed by another writer
    between the read and its tombstone is left alone (its hash is checked first).

    The entries are found by :func:`last_written_by`.

    Returns:
        The tombstone records written, in that order (``[]`` when the session wrote nothing
        live there).

    Raises:
        InvalidEntryError: (field ``"scope"``) ``scopes`` empty, given as one ``str``, with a
            scope that is not kebab-case, or with a scope the store's journal has never seen;
            ``session_id`` empty (it would match every unattributed write). Nothing is written.
        TypeError: ``session_id`` is not a ``str``.
    """
    if not isinstance(session_id, str):
        raise TypeError(f"session id must be a str, not {type(session_id).__name__}")
    if session_id == "":
        raise InvalidEntryError(
            "forget_session got an empty session id, which would match every write made "
            "outside a session; name the session",
            field="scope",
        )
    if isinstance(scopes, str) or not scopes:
        raise InvalidEntryError(
            f"forget_session needs the scopes to forget in, as a list, got {scopes!r}; "
            "name each scope (nothing is forgotten in scopes not named)",
            field="scope",
        )
    wanted = [check_scope(s) for s in dict.fromkeys(scopes)]
    found, unknown = last_written_by(store, session_id, wanted)
    if unknown:
        raise InvalidEntryError(
            f"forget_session: scope {go_quote(unknown[0])} has no journal record in this store; "
            "check the scope's name (nothing was forgotten)",
            field="scope",
        )
    order = {s: i for i, s in enumerate(wanted)}
    out: builtins.list[Change] = []
    why = reason if reason is not None else current_provenance().reason
    with provenance(reason=why or f"forget_session {session_id}"):
        for scope, name in sorted(found, key=lambda k: (order[k[0]], k[1].encode())):
            try:
                now = store.get(scope, name)
            except NotFoundError:
                continue
            if now.hash != found[(scope, name)]:
                continue  # another writer changed it meanwhile: no longer this session's
            out.append(store.forget(scope, name))
    return out
