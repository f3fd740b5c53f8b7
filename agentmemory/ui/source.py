"""Where the inspector reads and writes: openers for the journal, the index and (``--write``
only) a writer, each opened for one request and closed after it (docs/inspector.md#reads)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

__all__ = ["Source"]


@dataclass(frozen=True)
class Source:
    """The store the inspector shows.

    Attributes:
        label: how the page names the store (a folder, or a DSN without its password).
        journal: opens the journal alone (no index, no lock): every page's reads.
        index: opens the store read-only with its vector index: search and the per-turn part.
        writer: opens the store for writing (its write lock held for that request only);
            ``None`` unless ``--write``.
        verify: the argv of ``agentmemory verify --json`` for this store (the health page runs
            it as a second process does, never ``--repair``).
        repair: the command a person runs to cure what verify found
            (``agentmemory verify --repair --path ...``).
    """

    label: str
    journal: Callable[[], AbstractContextManager[Any]]
    index: Callable[[], AbstractContextManager[Any]]
    writer: Callable[[], AbstractContextManager[Any]] | None = None
    verify: Sequence[str] = ()
    repair: str = ""
