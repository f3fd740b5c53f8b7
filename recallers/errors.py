"""The errors recallers raise on purpose."""

from __future__ import annotations

__all__ = ["EMPTY_QUERY_MESSAGE", "EmptyQueryError", "check_query"]

EMPTY_QUERY_MESSAGE = "query is empty; give one or more words"
"""The message of :class:`EmptyQueryError` (``agentmemory.EmptyQueryError`` uses it too)."""


class EmptyQueryError(ValueError):
    """A query that is empty or only white space; nothing was searched.

    ``agentmemory.EmptyQueryError`` derives from it, so ``except recallers.EmptyQueryError``
    catches what a store raises too.

    Attributes:
        query: the query given.
    """

    def __init__(self, query: str = "") -> None:
        self.query = query
        super().__init__(EMPTY_QUERY_MESSAGE)


def check_query(query: object) -> str:
    """Return ``query`` when it is a ``str`` with something other than white space in it.

    Raises:
        EmptyQueryError: ``query`` is ``""`` or only white space.
        TypeError: ``query`` is not a ``str``.
    """
    if not isinstance(query, str):
        raise TypeError(f"query is a {type(query).__name__}, not a str; pass the words as text")
    if not query.strip():
        raise EmptyQueryError(query)
    return query
