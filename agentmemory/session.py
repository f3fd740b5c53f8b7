"""Session attribution: which session made a write.

``with agentmemory.session("sess-1"):`` stamps every write made inside the block, in this thread or
task, with that id (a :mod:`contextvars` value, so concurrent asyncio tasks and threads each keep
their own). An explicit ``session=`` argument to ``put``/``forget`` overrides it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["Provenance", "current_provenance", "current_session", "provenance", "session"]

_SESSION: contextvars.ContextVar[str] = contextvars.ContextVar("agentmemory_session", default="")


@contextmanager
def session(session_id: str) -> Iterator[str]:
    """Attribute every write inside the ``with`` block to ``session_id``; yields the id.

    Blocks nest: the innermost id wins, and the outer one is restored on exit.
    Raises ``TypeError`` when ``session_id`` is not a ``str``.
    """
    if not isinstance(session_id, str):
        raise TypeError(f"session id must be a str, not {type(session_id).__name__}")
    token = _SESSION.set(session_id)
    try:
        yield session_id
    finally:
        _SESSION.reset(token)


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a write came from, beside its session (docs/kinds.md#provenance).

    Attributes:
        message: the id of the conversation message the write came from.
        tool: the tool that made it (``memory_save``, ``memory_patch``, ``memory_forget``).
        reason: why, in the writer's words (one line).
    """

    message: str = ""
    tool: str = ""
    reason: str = ""


_NO_PROVENANCE = Provenance()
_PROVENANCE: contextvars.ContextVar[Provenance | None] = contextvars.ContextVar(
    "agentmemory_provenance", default=None
)


@contextmanager
def provenance(
    *, message: str | None = None, tool: str | None = None, reason: str | None = None
) -> Iterator[Provenance]:
    """Stamp every write inside the ``with`` block with where it came from; yields what is set.

    A field left ``None`` keeps the enclosing block's value; blocks nest and the outer values
    are restored on exit. The journal record of each write carries them as ``message``, ``tool``
    and ``reason`` (:class:`~agentmemory.Change`). The memory tools set ``tool`` themselves.

    Raises:
        TypeError: a field that is not a ``str``.
        ValueError: a field that spans lines.
    """
    outer = current_provenance()
    given = {"message": message, "tool": tool, "reason": reason}
    for k, v in given.items():
        if v is None:
            continue
        if not isinstance(v, str):
            raise TypeError(f"provenance {k} must be a str, not {type(v).__name__}")
        if "\n" in v or "\r" in v:
            raise ValueError(f"provenance {k} {v!r} spans lines; give one line")
    now = Provenance(
        message=outer.message if message is None else message,
        tool=outer.tool if tool is None else tool,
        reason=outer.reason if reason is None else reason,
    )
    token = _PROVENANCE.set(now)
    try:
        yield now
    finally:
        _PROVENANCE.reset(token)


def current_provenance() -> Provenance:
    """The provenance of the enclosing :func:`provenance` blocks (all ``""`` outside any)."""
    return _PROVENANCE.get() or _NO_PROVENANCE


def current_session(explicit: str | None = None) -> str:
    """Return ``explicit`` when given, else the id of the enclosing :func:`session` block, else ``""``."""
    if explicit is not None:
        return explicit
    return _SESSION.get()
