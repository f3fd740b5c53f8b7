"""IndexFollower: how a vector index follows its journal.

The journal is the truth; the index is derived from it and may fall behind: a process killed
between a journal commit and its index update, an index update that failed, another process's
writes (docs/storage.md#several-processes), a Chroma folder deleted. The follower keeps it in
step, using the :class:`~agentmemory.stores.chroma.cursor.IndexCursor` to know what is applied:

* :meth:`IndexFollower.replay` at open applies every record after the cursor;
* :meth:`IndexFollower.catch_up` applies the records the cursor is stuck behind, when
  there are failures or many applied records wait behind them;
* :meth:`IndexFollower.absorb` indexes what other processes wrote, after one cheap
  ``max(seq)`` read (every search and write can afford it);
* :meth:`IndexFollower.verify`, :meth:`IndexFollower.repair` and
  :meth:`IndexFollower.reindex` compare, fix and rebuild;
* :meth:`IndexFollower.relayout` re-embeds, once, the entries whose windows a new window
  layout changes (an index made before windows holds their first window only);
* :meth:`IndexFollower.warn_lost` warns when the index lost whole scopes the journal holds.

Writing vectors is :class:`~agentmemory.stores.chroma.sync.IndexSync`'s job; which records to give it,
and recording them applied, is this module's.
"""

from __future__ import annotations

import builtins
import logging
import warnings
from collections.abc import Iterable

from agentmemory.entries import Change, Entry
from agentmemory.errors import IndexOutOfStepWarning
from embedders import WHOLE_TEXT

from .clients import SharedIndex
from .cursor import IndexCursor, IndexStateKeys
from .index import ChromaIndex
from .journal_source import JournalStore
from .sync import IndexReport, IndexSync

__all__ = ["CATCH_UP_AFTER", "IndexFollower"]

logger = logging.getLogger(__name__)

CATCH_UP_AFTER = 64
"""How many applied records may wait behind an unapplied one (another process's write, or a
write whose index update failed) before a write replays the gap itself."""


class IndexFollower:
    """Keeps one index in step with its journal (see the module docstring).

    Args:
        journal: the journal (the truth).
        index: the vectors.
        sync: writes vectors for keys from the journal's live state.
        shared: this process's shared state of the index (its cursor and write lock).
        keys: the index's state keys in the journal.
        where: the store, for messages.
        place: where the vectors live, for the lost-scopes warning (``"its Chroma folder
            DIR/chroma"``, ``"its collections on the Chroma server"``).
    """

    def __init__(
        self,
        journal: JournalStore,
        index: ChromaIndex,
        sync: IndexSync,
        shared: SharedIndex,
        keys: IndexStateKeys,
        *,
        where: str,
        place: str,
    ) -> None:
        self._journal = journal
        self._index = index
        self._sync = sync
        self._shared = shared
        self._keys = keys
        self._where = where
        self._place = place

    @property
    def cursor(self) -> IndexCursor:
        """The index cursor this process shares for the index."""
        return self._shared.cursor

    # -- following writes --------------------------------------------------------------------

    def apply(self, records: Iterable[Change]) -> None:
        """Write the journal's live state of the keys of ``records`` (read back and checked
        against the index), then mark them applied. Raises what the embedder or Chroma raise;
        nothing is marked then."""
        found = builtins.list(records)
        if not found:
            return
        self._sync.sync([(c.entry.scope, c.entry.name) for c in found], check_index=True)
        self.mark_applied(c.seq for c in found)

    def write(self, known: dict[tuple[str, str], Entry]) -> None:
        """Write the index from entries a write just committed (``known``: the last state per
        key, from the write's own records), without reading them back; checked against the
        journal once after writing (:meth:`IndexSync.sync`). Raises what the embedder or Chroma
        raise; the caller marks the records failed then."""
        self._sync.sync(builtins.list(known), check_index=False, known=known)

    def replay(self) -> None:
        """Apply every journal record after the cursor (last state per key wins)."""
        self.apply(self._journal.journal(self.cursor.position))

    def absorb(self) -> None:
        """Index the journal records this index has not applied (other processes' writes, or
        failed updates), when the journal has any: one ``max(seq)`` read when it has none
        (docs/storage.md#several-processes). Raises what the embedder or Chroma raise."""
        cursor = self.cursor
        top = self._journal.last_seq()
        if top <= cursor.position:
            return
        plan = cursor.catch_up(after=0, force=True)
        if plan is None:  # pragma: no cover - force always plans
            return
        self.apply(
            c for c in self._journal.journal(plan.start) if c.seq <= top and c.seq not in plan.done
        )

    def catch_up(self, *, force: bool = False) -> None:
        """Apply the records the cursor is stuck behind (failed index updates, or other
        processes' writes), when there are failures or :data:`CATCH_UP_AFTER` applied records
        wait behind them (``force``: whenever the cursor is behind, up to the journal's end).
        Errors are logged, not raised (unless ``force``): the caller's own write succeeded."""
        plan = self.cursor.catch_up(after=CATCH_UP_AFTER, force=force)
        if plan is None:
            return
        top = self._journal.last_seq() if force else plan.top
        records: builtins.list[Change] = []
        for c in self._journal.journal(plan.start):
            if c.seq > top:
                break
            if c.seq not in plan.done:
                records.append(c)
        try:
            self.apply(records)
        except Exception as err:
            if force:
                raise
            logger.warning(
                "agentmemory: store %s: could not catch the vector index up on %d journal "
                "records after seq %d (%s: %s); it is retried at the next write and open",
                self._where,
                len(records),
                plan.start,
                type(err).__name__,
                err,
            )

    # -- the cursor --------------------------------------------------------------------------

    def mark_applied(self, seqs: Iterable[int]) -> None:
        """Record ``seqs`` as applied; when the cursor advanced, hand it to the journal to
        persist with its next write transaction (or at close), so a write costs one
        transaction, not two: a cursor persisted late only means more replay at the next
        open (docs/storage.md#persisting-the-cursor)."""
        if self.cursor.mark_applied(seqs):
            self.save_cursor(deferred=True)

    def mark_failed(self, seqs: Iterable[int]) -> None:
        """Record ``seqs`` as records whose index update failed (retried by a catch-up)."""
        self.cursor.mark_failed(seqs)

    def save_cursor(self, *, deferred: bool = False) -> None:
        """Persist the cursor (``deferred``: with the journal's next write transaction); a
        failure is logged: a cursor persisted late only means more replay at the next open."""
        cursor = self.cursor
        try:
            cursor.save(self._journal, deferred=deferred)
        except Exception as err:
            logger.warning(
                "agentmemory: store %s: could not record the index cursor %d (%s: %s); "
                "the next open replays from the last one recorded",
                self._where,
                cursor.position,
                type(err).__name__,
                err,
            )

    def reset_cursor(self, seq: int) -> None:
        """Every record up to ``seq`` is now applied (after a rebuild or a clean repair)."""
        self.cursor.reset(seq)
        self.save_cursor()

    # -- lost scopes -------------------------------------------------------------------------

    def warn_lost(self) -> None:
        """Warn (:class:`~agentmemory.errors.IndexOutOfStepWarning`) when the index lacks scopes the
        journal has live entries in that the cursor says were indexed, and remember them in
        the journal until :meth:`clear_lost`."""
        cursor = self.cursor.position
        lost = self._journal.get_state(self._keys.lost)
        if not lost and cursor > 0:
            absent = sorted(set(self._journal.scopes()) - set(self._index.scopes()))
            missing = self._journal.scopes_written_by(cursor, absent) if absent else []
            if missing:
                lost = ", ".join(missing)
                self._journal.set_state(self._keys.lost, lost)
        if lost:
            warnings.warn(
                f"agentmemory: store {self._where}: the vector index has lost scopes {lost} "
                f"({self._journal.live_count()} live entries in the journal; was {self._place} "
                "deleted?); vector search misses them until you call reindex() or repair() "
                "(both embed what is missing), or open the store with reindex=True",
                IndexOutOfStepWarning,
                stacklevel=3,
            )

    def warn_shorter_journal(self) -> None:
        """Warn (:class:`~agentmemory.errors.IndexOutOfStepWarning`) when the index holds vectors of
        more entries than the journal has live ones: what a journal that lost its last records
        looks like (an older copy restored, a WAL cut by a power loss), since the entries those
        records made keep their vectors. One count per collection; call it after
        :meth:`replay`, which has removed what a failed delete left behind. ``verify`` names
        the entries (docs/storage.md#a-journal-shorter-than-its-index)."""
        held = sum(self._index.count(scope) for scope in self._index.scopes())
        live = self._journal.live_count()
        if held > live:
            warnings.warn(
                f"agentmemory: store {self._where}: the vector index holds {held} entries and "
                f"the journal only {live} live ones (last seq {self._journal.last_seq()}): the "
                "journal may have lost records (an older copy restored, a cut write-ahead "
                "log); the next writes reuse their seq numbers; run 'agentmemory verify' to "
                "list the entries only the index knows, and restore the journal from a backup",
                IndexOutOfStepWarning,
                stacklevel=3,
            )

    def clear_lost(self) -> None:
        """Forget the lost scopes (the index holds them again)."""
        if self._journal.get_state(self._keys.lost):
            self._journal.set_state(self._keys.lost, "")

    # -- windows -------------------------------------------------------------------------------

    def adopt_layout(self, layout: str) -> None:
        """Record ``layout`` as the index's window layout when the index is new (no layout
        recorded, the cursor at 0 and no collection): whatever is indexed from now on is made
        with it, so :meth:`relayout` has nothing to redo."""
        if (
            self._journal.get_state(self._keys.windows) is None
            and self.cursor.position == 0
            and not self._index.scopes()
        ):
            self._journal.set_state(self._keys.windows, layout)

    def relayout(self, layout: str, *, batch: int) -> int:
        """When the index's recorded window layout (``windows`` state key; absent: one vector
        per entry, ``"whole"``) is not ``layout``, re-embed every live entry whose windows
        differ (:meth:`IndexSync.relayout`: more than one window now, or held as more than
        one), ``batch`` entries at a time, then record ``layout``; return how many entries were
        re-embedded (0 when the layout is the recorded one: one state read). A process stopped
        midway leaves the old layout recorded, so the next open does it again
        (docs/storage.md#windows-and-the-index-state)."""
        recorded = self._journal.get_state(self._keys.windows) or WHOLE_TEXT
        if recorded == layout:
            return 0
        count = 0
        for live in self._journal.iter_live(batch):
            count += self._sync.relayout(live)
        self._journal.set_state(self._keys.windows, layout)
        if count:
            logger.warning(
                "agentmemory: store %s: re-embedded %d entries as windows of %s (the index held "
                "them as %s); done once",
                self._where,
                count,
                layout,
                recorded,
            )
        return count

    # -- checking and rebuilding -------------------------------------------------------------

    def verify(self) -> IndexReport:
        """Compare the index with the journal (:meth:`IndexSync.compare`, self-queries
        included); changes nothing."""
        return self._sync.compare(cursor=self.cursor.position)

    def repair(self, *, keep: Iterable[str] = (), batch: int = 512) -> IndexReport:
        """Apply what the cursor has not seen, rebuild from the journal every scope whose
        self-queries failed (its collection dropped, every live entry of the scope embedded,
        ``batch`` at a time: a scope Chroma cannot search is not fixed by writing more vectors
        into it; docs/storage.md#self-queries), then fix every other key :meth:`verify` finds
        missing, stale or extra (embedding only those; every vector naming the key is removed
        first), except the extra keys in ``keep`` (``"scope/name"``). Returns the report of a
        second verify; when it is clean, the cursor moves to the journal's end and the lost
        scopes are forgotten. Raises what the embedder or Chroma raise; the index is then no
        worse than before."""
        head = self._journal.last_seq()
        self.catch_up(force=True)
        found = self.verify()
        rebuilt = set(found.unsearchable_scopes)
        for scope in sorted(rebuilt):
            self.rebuild_scope(scope, batch=batch)
        kept = set(keep)
        wrong = [*found.missing, *found.stale, *(k for k in found.extra if k not in kept)]
        pairs = [(k.partition("/")[0], k.partition("/")[2]) for k in wrong]
        pairs = [(s, n) for s, n in pairs if s not in rebuilt]
        if pairs:
            self._sync.sync(pairs, check_index=False, by_name=True)
        after = self.verify()
        if after.ok:
            self.reset_cursor(head)
            self.clear_lost()
        return after

    def rebuild_scope(self, scope: str, *, batch: int) -> int:
        """Drop ``scope``'s collection and embed every live entry of the scope from the
        journal, ``batch`` at a time; return how many entries were indexed. Writes to the
        scope made meanwhile wait for the drop, then land in the new collection."""
        with self._shared.write_lock:
            self._index.drop(scope)
        keys = [(scope, e.name) for e in self._journal.list(scope)]
        for start in range(0, len(keys), batch):
            self._sync.sync(keys[start : start + batch], check_index=False)
        return len(keys)

    def reindex(self, fingerprint: str, *, batch: int, layout: str) -> int:
        """Rebuild the index from the journal with the embedder of ``fingerprint`` and window
        layout ``layout`` (both recorded first): drop the collections, embed every window of
        every live entry ``batch`` entries at a time; return the number of entries indexed.

        Writes made meanwhile (by any handle) wait for the collections to be dropped, then land
        in the new ones. The cursor is set back to 0 before anything is dropped, so a rebuild
        cut short finishes at the next open, which replays the whole journal."""
        shared = self._shared
        with shared.write_lock:
            head = self._journal.last_seq()
            shared.cursor.rewind(self._journal)
            self._journal.set_state(self._keys.embedder, fingerprint)
            self._journal.set_state(self._keys.windows, layout)
            shared.fingerprint = fingerprint
            for scope in self._index.scopes():
                self._index.drop(scope)
        count = 0
        for live in self._journal.iter_live(batch):
            self._sync.sync([(e.scope, e.name) for e in live], check_index=False)
            count += len(live)
        self.reset_cursor(head)
        self.clear_lost()
        return count
