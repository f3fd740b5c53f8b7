"""The errors recallers raise on purpose."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "EMPTY_QUERY_MESSAGE",
    "EmptyQueryError",
    "Query",
    "UnknownChoiceError",
    "UnknownFusionMethodError",
    "check_query",
]

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


class Query(str):
    """A query text :func:`check_query` accepted: a ``str`` with a non-space character in it.

    A recall passes one query through several layers (a store's ``recall``, the hybrid, each
    leg), and each layer is a public entry point that must refuse an empty query. The first
    :func:`check_query` returns a ``Query``; every later :func:`check_query` of it returns at
    once, so one recall checks its query once. It is a ``str`` in every other respect.
    Build one with :func:`check_query`, not with ``Query(text)`` (which checks nothing).
    """

    __slots__ = ()


def check_query(query: object) -> Query:
    """Return ``query`` as a :class:`Query` when it is a ``str`` with something other than white
    space in it; a :class:`Query` is returned as it is (it was checked when it was made).

    Raises:
        EmptyQueryError: ``query`` is ``""`` or only white space.
        TypeError: ``query`` is not a ``str``.
    """
    if isinstance(query, Query):
        return query
    if not isinstance(query, str):
        raise TypeError(f"query is a {type(query).__name__}, not a str; pass the words as text")
    if not query.strip():
        raise EmptyQueryError(query)
    return Query(query)


class UnknownChoiceError(ValueError):
    """A named choice (a fusion method, a reranker) that is not one of the known ones.

    Attributes:
        field: what was chosen (``"fusion method"``, ``"reranker"``).
        value: the value given.
        choices: the values accepted, in the order they are documented.
    """

    def __init__(self, field: str, value: object, choices: Sequence[str]) -> None:
        self.field = field
        self.value = value
        self.choices = tuple(choices)
        super().__init__(f"{field} {value!r} is not one of: {', '.join(self.choices)}")


class UnknownFusionMethodError(UnknownChoiceError):
    """A ``Fusion.method`` that is not one of ``recallers.FUSION_METHODS``; the message names the
    value and the choices (docs/recall.md#fusion-methods)."""

    def __init__(self, value: object, choices: Sequence[str]) -> None:
        super().__init__("fusion method", value, choices)
