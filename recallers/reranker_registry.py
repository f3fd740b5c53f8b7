"""The reranker registry: ``get_reranker``, ``register_reranker``, ``reranker_names``, as the
embedders' registry (``embedders.get``, ``register``, ``names``) is for embedders.

A name is either registered exactly or is ``"<family>:<argument>"`` where ``<family>`` is
registered: then the family's factory is called with the argument as its first positional
parameter (``"cross-encoder:/models/ce"`` builds ``CrossEncoderReranker("/models/ce")``). A
reranker's ``name`` is a key that builds it again. ``recallers`` registers the
``"cross-encoder"`` family when it is imported (docs/recall.md#reranking).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .errors import UnknownRerankerError
from .protocol import Reranker

__all__ = [
    "RerankerFactory",
    "get_reranker",
    "register_reranker",
    "reranker_names",
]

RerankerFactory = Callable[..., Reranker]
"""Builds a reranker. Called as ``factory(**kwargs)`` for an exact name, and as
``factory(argument, **kwargs)`` for ``"<family>:<argument>"``."""

_lock = threading.Lock()
_factories: dict[str, RerankerFactory] = {}
_arguments: dict[str, str] = {}  # name -> what its argument is, for the choices shown


def register_reranker(
    name: str, factory: RerankerFactory, *, argument: str = "", replace: bool = False
) -> None:
    """Register ``factory`` under ``name``; ``argument`` says what the argument of a family
    name is (``"<folder>"``), so the choices an unknown name lists show it.

    Raises ``ValueError`` when ``name`` is empty or has surrounding white space, or when it is
    already registered and ``replace`` is false.
    """
    if not name or name != name.strip():
        raise ValueError(f"reranker name {name!r} must be non-empty without surrounding space")
    with _lock:
        if name in _factories and not replace:
            raise ValueError(
                f"a reranker is already registered as {name!r}; pass replace=True to override it"
            )
        _factories[name] = factory
        _arguments[name] = argument


def reranker_names() -> list[str]:
    """All registered names, sorted; a family with its argument (``"cross-encoder:<folder>"``)."""
    with _lock:
        return sorted(f"{n}:{_arguments[n]}" if _arguments[n] else n for n in _factories)


def get_reranker(name: str, **kwargs: Any) -> Reranker:
    """Build the reranker registered as ``name`` (see the module docstring), passing ``kwargs``.

    Raises ``UnknownRerankerError`` (a ``ValueError``) naming ``name`` and the known names when
    neither ``name`` nor its ``<family>`` prefix is registered; errors of the factory propagate
    (``CrossEncoderReranker`` refuses anything that is not an existing model folder).
    """
    if not isinstance(name, str):
        raise TypeError(f"reranker name is a {type(name).__name__}, not a str")
    with _lock:
        factory = _factories.get(name)
        family, sep, argument = name.partition(":")
        family_factory = _factories.get(family) if sep and argument else None
    if factory is not None:
        return factory(**kwargs)
    if family_factory is not None:
        return family_factory(argument, **kwargs)
    raise UnknownRerankerError(name, reranker_names())
