"""The errors recallers raise on purpose, under one root, :class:`RecallerError`.

Each also derives from the builtin that fits (``ValueError`` for a bad value, ``RuntimeError``
for a recall no leg could answer), so ``except ValueError`` keeps working for callers that know
nothing of this package. The tree::

    RecallerError
        EmptyQueryError            (ValueError) a query that is empty or only white space
        UnknownChoiceError         (ValueError) a named choice that is not a known one
            UnknownFusionMethodError          a Fusion.method not in FUSION_METHODS
            UnknownRerankerError              a reranker name nothing is registered as
        RerankerFolderError        (ValueError) a cross-encoder that is not a local model folder
        NoLegAnsweredError       (RuntimeError) every leg of a HybridRecaller raised

``agentmemory.EmptyQueryError`` derives from :class:`EmptyQueryError` (and from
``agentmemory.errors.AgentMemoryError``). This module imports nothing else of ours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = [
    "EMPTY_QUERY_MESSAGE",
    "EmptyQueryError",
    "NoLegAnsweredError",
    "Query",
    "RecallerError",
    "RerankerFolderError",
    "UnknownChoiceError",
    "UnknownFusionMethodError",
    "UnknownRerankerError",
    "check_query",
]

EMPTY_QUERY_MESSAGE = "query is empty; give one or more words"
"""The message of :class:`EmptyQueryError` (``agentmemory.EmptyQueryError`` uses it too)."""


class RecallerError(Exception):
    """Root of every error recallers raises on purpose (the tree is in the module docstring)."""


class EmptyQueryError(RecallerError, ValueError):
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


class UnknownChoiceError(RecallerError, ValueError):
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


class UnknownRerankerError(UnknownChoiceError):
    """No reranker is registered under the name given; the message names the value and the
    choices (a family shown as ``"<family>:<argument>"``). A ``ValueError``.

    Attributes:
        field: ``"reranker"``.
        value: the name given.
        choices: the registered names, sorted.
    """

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__("reranker", name, known)


class RerankerFolderError(RecallerError, ValueError):
    """A cross-encoder was asked for by something that is not a local model folder (a hub name,
    a missing path, a file, a folder without ``config.json``); nothing was loaded or downloaded.

    Attributes:
        path: the value given.
        reason: what is wrong with it.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(
            f"cross-encoder model {path!r} {reason}; a reranker loads only from a local folder "
            "holding a model's config.json, weights and tokenizer (never a hub name: nothing is "
            "downloaded)"
        )


class NoLegAnsweredError(RecallerError, RuntimeError):
    """Every leg of a :class:`HybridRecaller` raised; ``errors`` holds each leg's error by name,
    and the last one is also the ``__cause__``."""

    def __init__(self, errors: Mapping[str, BaseException]) -> None:
        self.errors = dict(errors)
        detail = "; ".join(f"{leg}: {type(e).__name__}: {e}" for leg, e in self.errors.items())
        super().__init__(f"every recall leg failed ({detail}); fix the first, or use one leg")
