"""Session attribution: which session made a write.

``with agentmemory.session("sess-1"):`` stamps every write made inside the block, in this thread or
task, with that id (a :mod:`contextvars` value, so concurrent asyncio tasks and threads each keep
their own). An explicit ``session=`` argument to ``put``/``forget`` overrides it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["current_session", "session"]

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


def current_session(explicit: str | None = None) -> str:
    """Return ``explicit`` when given, else the id of the enclosing :func:`session` block, else ``""``."""
    if explicit is not None:
        return explicit
    return _SESSION.get()
