"""The errors embedders raise on purpose, under one root, :class:`EmbedderError`.

Each also derives from the builtin that fits, so ``except KeyError`` keeps working for callers
that know nothing of this package. The tree::

    EmbedderError
        UnknownEmbedderError   (KeyError) a name nothing is registered as (embedders.get)

A bad value given to an embedder or to ``register`` (an empty name, a name given twice) is a plain
``ValueError``, a missing optional runtime a ``ModuleNotFoundError``; errors of a model's runtime
(torch, onnxruntime) propagate as they are.
This module imports nothing else of ours.
"""

from __future__ import annotations

__all__ = ["EmbedderError", "UnknownEmbedderError"]


class EmbedderError(Exception):
    """Root of every error embedders raises on purpose (the tree is in the module docstring)."""


class UnknownEmbedderError(EmbedderError, KeyError):
    """No embedder is registered under ``name``. ``known`` lists the registered names, sorted.

    A ``KeyError`` so that ``except KeyError`` catches it; ``str()`` gives the whole message.
    """

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        self.message = (
            f"no embedder is registered as {name!r}; known: {', '.join(known) or '(none)'}; "
            f"a family name takes an argument as '<family>:<argument>' (e.g. 'hashing:512'), "
            f"or register one with embedders.register(name, factory)"
        )
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message
