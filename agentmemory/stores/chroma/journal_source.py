"""JournalStore: what a derived index (``ChromaStore``'s vectors) needs of the journal under it.

A journal is a :class:`~agentmemory.Store` that also keeps small derived state beside its records
(``get_state``/``set_state``, where an index keeps its cursor and its embedder's fingerprint),
reads its live entries in bulk (``live_many``, ``iter_live``, ``scopes``, ``live_count``,
``scopes_written_by``), ranks them by BM25 (``search_text``), finds the entries that
supersede others (``superseding``) and erases an entry for good (``purge``, ``verify_erased``). :class:`~agentmemory.SqliteStore`
(a local file) and ``agentmemory.stores.postgres.store.PostgresStore`` (a PostgreSQL database shared by
hosts) are journals; ``ChromaStore(journal=...)`` indexes either
(docs/storage.md#the-vector-index-over-postgresql).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol, runtime_checkable

from agentmemory.entries import Change, Entry
from agentmemory.purge import ErasureCheck, PurgeReceipt
from agentmemory.store import Store

__all__ = ["JournalStore"]


@runtime_checkable
class JournalStore(Store, Protocol):
    """A :class:`~agentmemory.Store` that a derived index can follow (see the module docstring).
    Every method is :class:`~agentmemory.SqliteStore`'s, with the same meaning."""

    @property
    def where(self) -> str:
        """The file or database, for messages (never a password)."""
        ...

    @property
    def store_id(self) -> str:
        """The store's random id, which names its vectors on a shared Chroma server."""
        ...

    def put_many(self, entries: Iterable[Entry], *, session: str | None = None) -> list[Change]:
        """Put every entry in one transaction; all or nothing."""
        ...

    def last_seq(self) -> int:
        """The highest ``seq`` in the journal; 0 when it is empty."""
        ...

    def get_state(self, key: str) -> str | None:
        """The derived-state value under ``key``, or ``None``."""
        ...

    def set_state(self, key: str, value: str, *, deferred: bool = False) -> None:
        """Store ``value`` under ``key`` (``deferred``: with this handle's next write)."""
        ...

    def scopes(self) -> builtins.list[str]:
        """The scopes holding a live entry, sorted."""
        ...

    def live_many(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Entry]:
        """The live entries among ``keys``, by key."""
        ...

    def live_count(self) -> int:
        """The number of live entries."""
        ...

    def iter_live(self, batch: int = ...) -> Iterator[builtins.list[Entry]]:
        """Every live entry, by scope then name, in lists of at most ``batch``."""
        ...

    def scopes_written_by(self, seq: int, scopes: Iterable[str]) -> builtins.list[str]:
        """Those of ``scopes`` with a live entry whose latest record is at or before ``seq``."""
        ...

    def superseding(self, scopes: Sequence[str]) -> builtins.list[Entry]:
        """The live entries of ``scopes`` with a ``supersedes`` meta, by scope order then name."""
        ...

    def purge(
        self, scope: str, name: str, *, reason: str, session: str | None = None
    ) -> PurgeReceipt:
        """Erase every content ``scope/name`` ever held from the journal and its lexical index
        (docs/contract.md#purge-erasing-an-entry-for-good)."""
        ...

    def verify_erased(self, scope: str, name: str) -> ErasureCheck:
        """Check that the journal's places hold no copy of ``scope/name``'s content."""
        ...

    def search_text(
        self, query: str, *, scopes: Sequence[str], limit: int
    ) -> builtins.list[tuple[Entry, float]]:
        """The lexical leg: ``(entry, BM25 score)`` pairs, best first."""
        ...
