"""The index cursor and the index state: how far a derived index has applied the journal, the
state it keeps in the journal, and which embedder may open it.

:class:`IndexCursor` (docs/storage.md#the-index-cursor): the cursor is the highest ``seq`` such
that every journal record up to it is applied to the index. Records are applied out of order
(several threads write; a failed index update is retried later), so the cursor keeps two sets
beside it: ``applied`` (records after the cursor already applied) and ``failed`` (records whose
index update failed). It advances only over a contiguous run of applied records, so it never
passes a record whose effect is not in the index; a process that dies loses only the sets, and
reopening replays the records after the persisted cursor. The cursor is kept under one key of
the journal's ``store_state`` (any :class:`StateStore`, such as :class:`~agentmemory.SqliteStore`).

:class:`IndexStateKeys`: a :class:`~agentmemory.ChromaStore` keeps five values in its journal's
``store_state`` table (docs/storage.md#the-index-cursor, docs/storage.md#the-embedder-fingerprint),
under keys ``chroma-index:<kind>:<prefix>:<what>``, ``kind`` being ``embedded`` (the folder's own
Chroma files) or ``client`` (a Chroma server), ``prefix`` the collection prefix:

* ``cursor``: every journal record up to this ``seq`` is applied to the index;
* ``embedder``: the fingerprint of the embedder the vectors were made with;
* ``windows``: the window layout the vectors were made with (``embedders.window_layout``,
  docs/storage.md#windows-and-the-index-state); absent in an index made before windows, which
  held one vector per entry (``"whole"``);
* ``lost``: the scopes the index was found to have lost (a deleted Chroma folder), until a
  reindex or a clean repair;
* ``purge``: the scope of a purge whose index part has not finished.

Keeping them in the journal means they survive with it, are written in its transactions, and
are seen by every process that opens it (a ``PostgresStore`` journal shares them across hosts).
:func:`check_embedder` is the rule of which embedder may open an index. This module imports
nothing of Chroma (it is tested without it).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from agentmemory.errors import AgentMemoryError, EmbedderMismatchError, StoreFormatError
from embedders import same_vectors

__all__ = [
    "STATE_NAMESPACE",
    "CatchUp",
    "IndexCursor",
    "IndexStateKeys",
    "StateStore",
    "check_embedder",
]


class StateStore(Protocol):
    """Where the cursor is persisted: :class:`~agentmemory.SqliteStore` and
    ``agentmemory.stores.postgres.store.PostgresStore`` are."""

    @property
    def where(self) -> str:
        """The file or database, named in errors."""
        ...

    def get_state(self, key: str) -> str | None:
        """The value under ``key``, or ``None``."""
        ...

    def set_state(self, key: str, value: str, *, deferred: bool = False) -> None:
        """Store ``value`` under ``key`` (``deferred``: with the next write transaction)."""
        ...


@dataclass(frozen=True, slots=True)
class CatchUp:
    """The records a catch-up must apply: every ``seq`` in ``(start, top]`` not in ``done``.

    Attributes:
        start: the cursor when the catch-up was planned.
        top: the highest ``seq`` to apply.
        done: the records after ``start`` already applied (skip them).
    """

    start: int
    top: int
    done: frozenset[int]


class IndexCursor:
    """The cursor of one index, its ``applied`` and ``failed`` sets, and its persisted value.

    Safe for several threads: every method takes the cursor's lock, and :meth:`save` writes
    one value at a time, never an older one after a newer one. The state store is passed to
    each call that reads or writes it, so handles sharing one cursor each persist it through
    their own connection (and a closed handle's connection is never used).

    Make one with :meth:`load`.
    """

    def __init__(self, key: str, position: int = 0) -> None:
        self._key = key
        self._lock = threading.Lock()
        self._save_lock = threading.Lock()
        self._cursor = position
        self._persisted = position
        self._applied: set[int] = set()
        self._failed: set[int] = set()
        # The state stores holding a deferred value of this cursor (one per handle sharing it).
        self._deferred: weakref.WeakSet[StateStore] = weakref.WeakSet()

    @classmethod
    def load(cls, state: StateStore, key: str) -> IndexCursor:
        """The cursor persisted under ``key`` in ``state`` (0 when there is none).

        Raises:
            StoreFormatError: the value under ``key`` is not a whole number of 0 or more.
        """
        raw = state.get_state(key)
        try:
            value = int(raw or "0")
        except ValueError:
            value = -1
        if value < 0:
            raise StoreFormatError(
                state.where,
                f"store_state {key} is {raw!r}, not a seq; delete that row to replay the whole "
                "journal into the index",
            )
        return cls(key, value)

    @property
    def key(self) -> str:
        """The cursor's key in the state store."""
        return self._key

    @property
    def position(self) -> int:
        """Every record up to this ``seq`` is applied."""
        with self._lock:
            return self._cursor

    @property
    def persisted(self) -> int:
        """The value last saved (or read at open)."""
        return self._persisted

    @property
    def applied(self) -> frozenset[int]:
        """Records after the cursor that are applied (waiting for a gap below them)."""
        with self._lock:
            return frozenset(self._applied)

    @property
    def failed(self) -> frozenset[int]:
        """Records whose index update failed and has not been redone."""
        with self._lock:
            return frozenset(self._failed)

    def mark_applied(self, seqs: Iterable[int]) -> bool:
        """Record ``seqs`` as applied (and no longer failed), then advance the cursor over the
        contiguous applied run. Returns whether the cursor moved (then :meth:`save` it)."""
        with self._lock:
            for s in seqs:
                self._failed.discard(s)
                if s > self._cursor:
                    self._applied.add(s)
            start = self._cursor
            while self._cursor + 1 in self._applied:
                self._cursor += 1
                self._applied.discard(self._cursor)
            return self._cursor != start

    def mark_failed(self, seqs: Iterable[int]) -> None:
        """Record ``seqs`` (those after the cursor) as failed: a catch-up is due."""
        with self._lock:
            self._failed.update(s for s in seqs if s > self._cursor)

    def catch_up(self, *, after: int, force: bool = False) -> CatchUp | None:
        """What a catch-up must apply, or ``None`` when none is due.

        One is due when a record failed, or when ``after`` or more applied records wait behind
        a gap (another process's write); ``force`` makes one due anyway. The top is the highest
        applied or failed ``seq`` (the caller raises it to the journal's end when forcing).
        """
        with self._lock:
            if not force and not self._failed and len(self._applied) < after:
                return None
            done = frozenset(self._applied)
            return CatchUp(self._cursor, max(done | self._failed, default=self._cursor), done)

    def reset(self, seq: int) -> None:
        """Every record up to ``seq`` is applied now (after a rebuild or a clean repair): move
        the cursor there (never back) and forget the sets below it, then advance over what
        waits above it."""
        with self._lock:
            if seq > self._cursor:
                self._cursor = seq
            self._applied = {s for s in self._applied if s > self._cursor}
            self._failed = {s for s in self._failed if s > self._cursor}
        self.mark_applied(())

    def rewind(self, state: StateStore) -> None:
        """Back to 0 with empty sets, and persist 0 in ``state`` at once (a rebuild starts: if
        it is cut short, the next open replays the whole journal).

        Raises what the state store raises (for a SqliteStore, ``StoreLockedError``)."""
        with self._save_lock:
            with self._lock:
                self._cursor = 0
                self._applied.clear()
                self._failed.clear()
            self._write(state, 0, deferred=False)

    def save(self, state: StateStore, *, deferred: bool = False) -> None:
        """Persist the cursor in ``state`` when it moved past the value last saved.

        ``deferred`` hands the value to ``state`` to write inside its next write transaction
        (see :meth:`agentmemory.SqliteStore.set_state`) instead of a transaction of its own.
        Every save also replaces the value other state stores still hold deferred for this
        cursor, before it writes, so a deferred value written later is never older than one
        written before it (sqlite's write lock orders the transactions).

        Raises what the state store raises; the cursor then stays unsaved (a cursor saved
        late only means more replay at the next open)."""
        with self._save_lock:
            with self._lock:
                value = self._cursor
            if value <= self._persisted:
                return
            self._write(state, value, deferred=deferred)

    def _write(self, state: StateStore, value: int, *, deferred: bool) -> None:
        text = str(value)
        for other in list(self._deferred):
            if other is state:
                continue
            try:
                other.set_state(self._key, text, deferred=True)
            except AgentMemoryError:  # closed: it wrote its deferred value when it closed
                self._deferred.discard(other)
        state.set_state(self._key, text, deferred=deferred)
        if deferred:
            self._deferred.add(state)
        self._persisted = value


STATE_NAMESPACE = "chroma-index"
"""The first part of every key a vector index keeps in its journal."""


@dataclass(frozen=True, slots=True)
class IndexStateKeys:
    """The journal state keys of one index (see the module docstring).

    Attributes:
        embedded: the index is a folder's own Chroma files (else a Chroma server's).
        prefix: the index's collection prefix.
    """

    embedded: bool
    prefix: str

    def _key(self, what: str, *, embedded: bool | None = None) -> str:
        kind = "embedded" if (self.embedded if embedded is None else embedded) else "client"
        return f"{STATE_NAMESPACE}:{kind}:{self.prefix}:{what}"

    @property
    def cursor(self) -> str:
        """The key of the index cursor."""
        return self._key("cursor")

    @property
    def embedder(self) -> str:
        """The key of the recorded embedder fingerprint."""
        return self._key("embedder")

    @property
    def windows(self) -> str:
        """The key of the recorded window layout (absent: ``"whole"``, one vector per entry)."""
        return self._key("windows")

    @property
    def lost(self) -> str:
        """The key of the scopes the index lost (``""`` or absent: none)."""
        return self._key("lost")

    @property
    def purge(self) -> str:
        """The key of a pending purge's scope (``""`` or absent: none)."""
        return self._key("purge")

    @property
    def sibling_embedder(self) -> str:
        """The embedder key of the folder's other kind of index (embedded or server)."""
        return self._key("embedder", embedded=not self.embedded)


def check_embedder(
    journal: StateStore, keys: IndexStateKeys, given: str, *, reindex: bool, where: str
) -> str:
    """Check that an embedder of fingerprint ``given`` may open the index, record it when the
    index has none yet, and return the fingerprint the index's vectors were made with
    (docs/storage.md#the-embedder-fingerprint).

    An index takes the embedder it recorded, or one giving the same vectors
    (:func:`embedders.same_vectors`: the same model through its other runtime), and keeps its
    recorded fingerprint. A folder's first index of one kind (say, on a server) takes the
    embedder of its other kind: one folder, one embedder. ``reindex`` allows any embedder (the
    caller then rebuilds every vector) and returns ``given``. ``where`` names the store in the
    error.

    Raises:
        EmbedderMismatchError: the index (or the folder's other index) was made with an
            embedder giving other vectors; it names both fingerprints.
    """
    stored = journal.get_state(keys.embedder)
    if not reindex:
        recorded = stored if stored is not None else journal.get_state(keys.sibling_embedder)
        if recorded is not None and not same_vectors(recorded, given):
            raise EmbedderMismatchError(where, recorded, given)
    if stored is None:
        journal.set_state(keys.embedder, given)
    return given if stored is None or reindex else stored
