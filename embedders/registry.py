"""The registry of embedders by name: ``get``, ``register``, ``names``.

A name is either registered exactly (``"sentence-transformers:all-MiniLM-L6-v2"``, ``"hashing"``)
or is ``"<family>:<argument>"`` where ``<family>`` is registered: then the family's factory is
called with the argument as its first positional parameter (``"hashing:512"`` builds
``HashingEmbedder(512)``; ``"sentence-transformers:/models/e5"`` loads that local model). An
embedder's ``name`` is a key that builds it again: ``get(e.name)`` gives an equal ``fingerprint``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .errors import UnknownEmbedderError
from .protocol import Embedder

__all__ = ["EmbedderFactory", "get", "names", "register"]

EmbedderFactory = Callable[..., Embedder]
"""Builds an embedder. Called as ``factory(**kwargs)`` for an exact name, and as
``factory(argument, **kwargs)`` for ``"<family>:<argument>"``."""

_lock = threading.Lock()
_factories: dict[str, EmbedderFactory] = {}


def register(name: str, factory: EmbedderFactory, *, replace: bool = False) -> None:
    """Register ``factory`` under ``name``.

    Raises ``ValueError`` when ``name`` is empty or has surrounding white space, or when it is
    already registered and ``replace`` is false (pass ``replace=True`` to override a default).
    """
    if not name or name != name.strip():
        raise ValueError(f"embedder name {name!r} must be non-empty without surrounding space")
    with _lock:
        if name in _factories and not replace:
            raise ValueError(
                f"an embedder is already registered as {name!r}; pass replace=True to override it"
            )
        _factories[name] = factory


def names() -> list[str]:
    """All registered names, sorted."""
    with _lock:
        return sorted(_factories)


def get(name: str, **kwargs: Any) -> Embedder:
    """Build the embedder registered as ``name`` (see the module docstring), passing ``kwargs``.

    Raises ``UnknownEmbedderError`` (a ``KeyError``) listing the known names when neither
    ``name`` nor its ``<family>`` prefix is registered; errors of the factory propagate.
    Building is cheap for the model embedders: they load their model on first ``embed``.
    """
    with _lock:
        factory = _factories.get(name)
        family, sep, argument = name.partition(":")
        family_factory = _factories.get(family) if sep and argument else None
        known = sorted(_factories)
    if factory is not None:
        return factory(**kwargs)
    if family_factory is not None:
        return family_factory(argument, **kwargs)
    raise UnknownEmbedderError(name, known)
