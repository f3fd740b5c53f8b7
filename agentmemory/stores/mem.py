"""MemStore: the in-memory reference store."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime

from agentmemory.entries import REDACTED, SOURCE_PURGED, Change, Entry
from agentmemory.errors import NotFoundError
from agentmemory.purge import ErasureCheck, PurgeReceipt, check_purge, purge_record, redact_history
from agentmemory.recall import search_entries
from agentmemory.rules import DEFAULT_MAX_ENTRY_BYTES, check_scope
from agentmemory.store import plan_forget, plan_put
from agentmemory.stores.base import StoreBase, by_scope_then_name, utc_now
from agentmemory.validity import META_SUPERSEDES
from recallers import DEFAULT_TOKENIZER, BM25Index, Tokenizer

__all__ = ["MemStore"]


class MemStore(StoreBase):
    """An in-memory :class:`~agentmemory.Store`: the reference for the contract and the store for
    tests. Safe for concurrent use from several threads (one lock); nothing outlives the process.

    Args:
        max_entry_bytes: the content bound in UTF-8 bytes (default 4096); must be positive.
        clock: returns the time stamped on writes (aware UTC); for tests that want a fixed one.
            Times never go backwards in the journal: a clock that does is clamped.
        tokenizer: the terms :meth:`recall` indexes and searches by (default
            ``recallers.DEFAULT_TOKENIZER``: English stopwords, English Snowball stemming).

    Raises:
        ValueError: ``max_entry_bytes`` under 1.
    """

    def __init__(
        self,
        *,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
        clock: Callable[[], datetime] = utc_now,
        tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    ) -> None:
        if max_entry_bytes < 1:
            raise ValueError(f"max_entry_bytes is {max_entry_bytes}; it must be at least 1")
        self._limit = max_entry_bytes
        self._clock = clock
        self._lock = threading.RLock()
        self._live: dict[tuple[str, str], Entry] = {}
        self._journal: list[Change] = []
        self._lexicon: BM25Index[Entry] = BM25Index(tokenizer=tokenizer)
        self._naming: dict[tuple[str, str], Entry] = {}  # live entries with a supersedes meta

    def _now(self) -> datetime:
        now = self._clock()
        if self._journal and self._journal[-1].at and now < self._journal[-1].at:
            return self._journal[-1].at
        return now

    def get(self, scope: str, name: str) -> Entry:
        """Return a copy of the live entry; raise :class:`NotFoundError` when there is none."""
        with self._lock:
            e = self._live.get((scope, name))
            if e is None:
                raise NotFoundError(scope, name)
            return e.copy()

    def list(self, scope: str) -> list[Entry]:
        """Copies of the live entries of ``scope``, by name (byte order); ``[]`` when none."""
        with self._lock:
            found = [e for (s, _), e in self._live.items() if s == scope]
        found.sort(key=lambda e: e.name.encode())
        return [e.copy() for e in found]

    def scopes(self) -> builtins.list[str]:
        """The scopes holding at least one live entry, sorted (byte order); ``[]`` when none."""
        with self._lock:
            return sorted({s for s, _ in self._live}, key=str.encode)

    def put(
        self,
        entry: Entry,
        *,
        if_hash: str | None = None,
        based_on: str | None = None,
        session: str | None = None,
    ) -> Change:
        """Create or replace the whole entry; see :meth:`agentmemory.Store.put`."""
        with self._lock:
            stored = self._live.get((entry.scope, entry.name)) if isinstance(entry, Entry) else None
            change = plan_put(
                entry,
                stored,
                limit=self._limit,
                seq=len(self._journal) + 1,
                now=self._now(),
                if_hash=if_hash,
                based_on=based_on,
                session=session,
            )
            self._journal.append(change)
            self._live[(entry.scope, entry.name)] = change.entry
            self._lexicon.put(change.entry)
            if (change.entry.meta or {}).get(META_SUPERSEDES):
                self._naming[(entry.scope, entry.name)] = change.entry
            else:
                self._naming.pop((entry.scope, entry.name), None)
            return change.copy()

    def forget(self, scope: str, name: str, *, session: str | None = None) -> Change:
        """Write a tombstone; raise :class:`NotFoundError` when the entry is not live."""
        with self._lock:
            stored = self._live.get((scope, name))
            if stored is None:
                raise NotFoundError(scope, name)
            change = plan_forget(
                stored, seq=len(self._journal) + 1, now=self._now(), session=session
            )
            self._journal.append(change)
            del self._live[(scope, name)]
            self._lexicon.remove(scope, name)
            self._naming.pop((scope, name), None)
            return change.copy()

    def purge(
        self, scope: str, name: str, *, reason: str, session: str | None = None
    ) -> PurgeReceipt:
        """Erase every content ``scope/name`` ever held (docs/contract.md#purge-erasing-an-entry-for-good):
        tombstone it when live, redact its journal records, drop it from the lexical index,
        append the ``purged`` record; all under the store's lock.

        Raises:
            InvalidEntryError: ``scope`` or ``name`` not kebab-case, ``reason`` blank or over
                1024 bytes; nothing is written.
            NotFoundError: the journal has no record of ``scope/name``.
        """
        check_purge(scope, name, reason)
        with self._lock:
            mine = [c for c in self._journal if c.entry.scope == scope and c.entry.name == name]
            if not mine:
                raise NotFoundError(scope, name)
            tomb = None
            rows = 1 if (scope, name) in self._live else 0
            if rows:
                tomb = self.forget(scope, name, session=session)
                mine.append(self._journal[-1])
            redacted = redact_history(mine)
            for c in redacted:
                self._journal[c.seq - 1] = c
            record = purge_record(
                scope,
                name,
                seq=len(self._journal) + 1,
                now=self._now(),
                reason=reason,
                redacted=[c.seq for c in redacted],
                session=session,
            )
            self._journal.append(record)
            return PurgeReceipt.of(record, tomb, redacted, index_rows=rows)

    def verify_erased(self, scope: str, name: str) -> ErasureCheck:
        """Check that no copy of ``scope/name``'s content remains: its journal records (each
        redacted or a ``purged`` record), the live entries and the lexical index."""
        check_scope(scope)
        found: builtins.list[str] = []
        with self._lock:
            mine = [c for c in self._journal if c.entry.scope == scope and c.entry.name == name]
            kept = [
                c.seq
                for c in mine
                if c.source != SOURCE_PURGED and not (c.redacted and c.entry.content == REDACTED)
            ]
            if kept:
                found.append(f"journal records {' '.join(map(str, kept))} keep their content")
            if mine and not any(c.source == SOURCE_PURGED for c in mine):
                found.append("no purged record in the journal")
            if (scope, name) in self._live:
                found.append("a live entry")
        looked = (f"journal records of {scope}/{name}", "live entries", "lexical index")
        return ErasureCheck(scope, name, looked, tuple(found))

    def search(self, scopes: Sequence[str], query: str, limit: int = 0) -> builtins.list[Entry]:
        """Live entries matching ``query`` by :func:`agentmemory.rules.matches`, scopes in the order
        given and entries by name, at most ``limit`` when ``limit > 0``.

        Raises :class:`~agentmemory.InvalidEntryError` for a scope that is not kebab-case.
        """
        return search_entries(self, scopes, query, limit)

    # -- recall (recallers.BM25Index: in memory, updated by every put and forget) ------------

    def search_text(
        self, query: str, *, scopes: Sequence[str], limit: int
    ) -> builtins.list[tuple[Entry, float]]:
        """The lexical leg: at most ``limit`` ``(entry copy, BM25 score)`` pairs of ``scopes``,
        best first, every score above 0; ``[]`` when no entry shares a term with ``query``.

        The index (:class:`recallers.BM25Index`) follows writes: each ``put`` re-indexes that
        one entry (one tokenization, one update per distinct term) and each ``forget`` drops it;
        nothing is rebuilt. Corpus statistics are those of the requested scopes.

        Raises :class:`~agentmemory.InvalidEntryError` for a scope that is not kebab-case.
        """
        for s in scopes:
            check_scope(s)
        with self._lock:
            found = self._lexicon.search_text(query, scopes=scopes, limit=limit)
            return [(e.copy(), score) for e, score in found]

    def superseding(self, scopes: Sequence[str]) -> builtins.list[Entry]:
        """Copies of the live entries of ``scopes`` with a ``supersedes`` meta, by scope order
        then name (kept in step with every write, so no scope is scanned)."""
        with self._lock:
            found = [e for (s, _), e in self._naming.items() if s in scopes]
        return [e.copy() for e in by_scope_then_name(found, scopes)]

    def journal(self, after: int = 0) -> Iterator[Change]:
        """Yield copies of the records with ``seq > after``, in order."""
        with self._lock:
            records = self._journal[max(after, 0) :]
        for c in records:
            yield c.copy()

    def close(self) -> None:
        """Nothing to release; present for the protocol."""
