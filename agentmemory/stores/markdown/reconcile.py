"""Journaling what a person changed by hand in a Markdown folder
(docs/filestore-format.md#a-persons-edit-is-journaled-first).

:meth:`Reconciling.reconcile` compares every entry file with the state the journal left and
journals each difference as a ``source="reconciled"`` record with no session; every write first
journals the changes made anywhere in the folder (:meth:`Reconciling._sweep`, opening only the
files whose ``stat`` changed since the handle last looked), and a forget journals a person's
change to its own file before the tombstone (:meth:`Reconciling._forget_records`). A file the
store cannot journal (:func:`agentmemory.check_entry` refuses it) is left alone:
:class:`UnjournaledFile`.
"""

from __future__ import annotations

import builtins
import dataclasses
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from agentmemory.entries import SOURCE_RECONCILED, Change, Entry
from agentmemory.errors import AgentMemoryError
from agentmemory.rules import check_entry
from agentmemory.store import plan_forget

from .entry_file import ENTRY_SUFFIX, meta_hash, mtime_time
from .files import FileStat
from .journal_file import Cursor, DamagedLine, find_last_record
from .links import folder_links
from .writes import FolderWrites

__all__ = ["FolderFiles", "Reconciliation", "Reconciling", "UnjournaledFile", "differs"]


@dataclass(frozen=True, slots=True)
class UnjournaledFile:
    """An entry file the store cannot journal, left as it is.

    Attributes:
        path: the file.
        key: its entry, ``"scope/name"``.
        reason: why (the :func:`agentmemory.check_entry` message: empty, over the bound, bad meta,
            not UTF-8; or a symbolic link, which is never followed:
            docs/filestore-format.md#links).
    """

    path: Path
    key: str
    reason: str


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """What :meth:`FileStore.reconcile` did.

    Attributes:
        changes: the ``"reconciled"`` records it appended, in ``scope/name`` byte order.
        unjournaled: entry files it could not journal and left alone, by ``scope/name``.
        damaged: damaged journal lines it read past (from the cursor on).
    """

    changes: list[Change]
    unjournaled: list[UnjournaledFile]
    damaged: list[DamagedLine]


@dataclass(frozen=True, slots=True)
class FolderFiles:
    """What :meth:`Reconciling.check_files` found, writing nothing.

    Attributes:
        pending: keys (``"scope/name"``) whose file a person changed, added or removed since the
            journal last recorded it, which :meth:`FileStore.reconcile` would journal.
        unjournaled: entry files (and links) ``reconcile`` would leave alone, with the reason.
    """

    pending: list[str]
    unjournaled: list[UnjournaledFile]


def differs(found: Entry, journaled: tuple[str, str] | None) -> bool:
    """Whether the file's content or meta is not the state the journal left."""
    return journaled is None or journaled != (found.hash, meta_hash(found.meta))


class Reconciling(FolderWrites):
    """``reconcile``, the sweep before each write, and the reconciled records a write appends
    first (a part of ``FileStore``)."""

    def _journalable(self, found: Entry) -> str:
        """``""`` when ``found`` can be journaled, else why not."""
        try:
            check_entry(found, self._limit)
        except AgentMemoryError as err:
            return str(err)
        return ""

    def _reconciled(self, found: Entry, chain: str, seq: int, now: datetime) -> Change:
        path = self._root / found.scope / f"{found.name}{ENTRY_SUFFIX}"
        try:
            mtime = mtime_time(path.stat().st_mtime_ns)
        except OSError:
            mtime = now
        entry = found.copy(updated=mtime, deleted=False)
        return Change(
            seq=seq, entry=entry, prev=chain, replaced=chain, source=SOURCE_RECONCILED, at=now
        )

    def _removed(self, key: str, chain: str, seq: int, now: datetime, cur: Cursor) -> Change | None:
        """The reconciled tombstone of an entry whose file a person removed: its last whole
        record, deleted; ``None`` when the journal holds no whole record of it."""
        last = find_last_record(self.journal_path, before=cur.off, key=key)
        if last is None:
            return None
        tomb = last.entry.copy(updated=now, deleted=True)
        return Change(
            seq=seq, entry=tomb, prev=chain, replaced=chain, source=SOURCE_RECONCILED, at=now
        )

    def _forget_records(
        self,
        cur: Cursor,
        found: Entry,
        journaled: tuple[str, str] | None,
        seq: int,
        now: datetime,
        session: str | None,
    ) -> builtins.list[Change]:
        """The records a forget of the entry file ``found`` appends, numbered from ``seq``
        (``journaled``: the state the journal left it in): a reconciled record of a person's
        change first when the file can be journaled, then the tombstone (of the journal's last
        record when the file cannot be)."""
        key = found.key
        chain = journaled[0] if journaled else ""
        pre: builtins.list[Change] = []
        base = found
        if differs(found, journaled):
            if self._journalable(found):
                last = (
                    find_last_record(self.journal_path, before=cur.off, key=key)
                    if journaled
                    else None
                )
                if last is not None and not last.entry.deleted:
                    base = last.entry
            else:
                pre.append(self._reconciled(found, chain, seq, now))
                chain = found.hash
        tomb = plan_forget(base, seq=seq + len(pre), now=now, session=session)
        return [*pre, dataclasses.replace(tomb, prev=chain, replaced=chain)]

    def _sweep(
        self, cur: Cursor, now: datetime, *, skip: str = ""
    ) -> tuple[builtins.list[Change], dict[str, FileStat], dict[str, tuple[str, str] | None]]:
        """What a person changed by hand in the whole folder, for a write to journal first
        (docs/filestore-format.md#a-persons-edit-is-journaled-first): the reconciled records,
        numbered from ``cur.seq + 1`` in ``scope/name`` byte order (as :meth:`reconcile` would
        write them; entry ``skip`` left out), the files' :data:`FileStat` to remember once they
        are committed, and the state each record leaves its entry in (``None``: tombstoned).

        Only files whose inode, size, modification or change time differ from what this handle
        saw at its last write or reconcile are opened, and entries the journal leaves live with
        no file; a handle's first write opens every file, as :meth:`reconcile` does. A file the
        store cannot journal is left alone (as :meth:`reconcile` leaves it)."""
        seen = self._seen
        files, changed = self._stat_files(seen)
        if seen is None:  # every file is read: keep the descriptions INDEX.md needs
            for scope in {k.partition("/")[0] for k in files}:
                self._index_cache.setdefault(scope, {})
        keys = set(changed)
        keys.update(k for k in cur.entries if k not in files)
        keys.discard(skip)
        seq = cur.seq
        changes: builtins.list[Change] = []
        after: dict[str, tuple[str, str] | None] = {}
        for key in sorted(keys, key=lambda k: k.encode()):
            journaled = cur.entries.get(key)
            chain = journaled[0] if journaled else ""
            scope, _, name = key.partition("/")
            read = self._read_entry(scope, name) if key in files else None
            if read is None:
                files.pop(key, None)
                if journaled is None or self._linked(key):  # a link is not a removal
                    continue
                gone = self._removed(key, chain, seq + 1, now, cur)
                if gone is not None:
                    seq += 1
                    changes.append(gone)
                    after[key] = None
                continue
            found, files[key] = read  # the stat as it was before the bytes were read
            cached = self._index_cache.get(scope)
            if cached is not None:
                cached[name] = found.description
            if not differs(found, journaled) or self._journalable(found):
                continue
            seq += 1
            changes.append(self._reconciled(found, chain, seq, now))
            after[key] = (found.hash, meta_hash(found.meta))
        return changes, files, after

    def check_files(self) -> FolderFiles:
        """What :meth:`reconcile` would journal and what it would leave alone, read without the
        write lock and writing nothing (``agentmemory verify`` on a Markdown folder). A writer
        busy meanwhile may make it one write out of date.

        Its cost grows with the number of entry files (it opens every one).
        """
        self._check_open()
        with self._mutex:
            cur = self._load_cursor()
            journaled = dict(cur.entries)
        files = {e.key: e for scope in self._scopes() for e in self._read_scope(scope)}
        pending: builtins.list[str] = []
        skipped: builtins.list[UnjournaledFile] = []
        for key in sorted(set(files) | set(journaled), key=lambda k: k.encode()):
            found = files.get(key)
            if found is None:
                if not self._linked(key):
                    pending.append(key)
                continue
            if not differs(found, journaled.get(key)):
                continue
            reason = self._journalable(found)
            if reason:
                path = self._root / found.scope / f"{found.name}{ENTRY_SUFFIX}"
                skipped.append(UnjournaledFile(path, key, reason))
            else:
                pending.append(key)
        skipped.extend(UnjournaledFile(f.path, f.key, f.reason) for f in folder_links(self._root))
        skipped.sort(key=lambda f: f.key.encode())
        return FolderFiles(pending, skipped)

    def reconcile(self) -> Reconciliation:
        """Journal what a person changed by hand since the journal last recorded each entry.

        Every entry file is compared with the state the journal left (read from the cursor,
        not the whole journal): an edited file becomes a reconciled record of its content,
        meta and modification time; an added file a reconciled create; a removed file a
        reconciled tombstone carrying its last whole record (nothing, when the journal has no
        whole record of it). The records have ``source="reconciled"``, no session, one ``at``,
        ``prev == replaced ==`` the journal's last hash, and come in ``scope/name`` byte order.
        Touched scopes get their INDEX.md rewritten. A file the store cannot journal is left
        alone and listed in ``unjournaled``. Nothing to do writes nothing.

        Its cost grows with the number of entry files (it opens every one).

        Raises:
            StoreLockedError: another writer held the folder for over ``lock_timeout_s``.
        """
        with self._writing() as cur:
            seen: dict[str, FileStat] = {}
            files: dict[str, Entry] = {}
            for scope in self._scopes():
                scanned = self._read_scope(scope, seen)
                self._index_cache[scope] = {e.name: e.description for e in scanned}
                for e in scanned:
                    files[e.key] = e
            now = self._now(cur)
            seq = cur.seq
            changes: builtins.list[Change] = []
            skipped: builtins.list[UnjournaledFile] = []
            for key in sorted(set(files) | set(cur.entries), key=lambda k: k.encode()):
                found = files.get(key)
                journaled = cur.entries.get(key)
                chain = journaled[0] if journaled else ""
                if found is None:
                    if self._linked(key):  # reported below; a link is not a removal
                        continue
                    gone = self._removed(key, chain, seq + 1, now, cur)
                    if gone is not None:
                        changes.append(gone)
                        seq += 1
                    continue
                if not differs(found, journaled):
                    continue
                reason = self._journalable(found)
                if reason:
                    path = self._root / found.scope / f"{found.name}{ENTRY_SUFFIX}"
                    skipped.append(UnjournaledFile(path, key, reason))
                    continue
                seq += 1
                changes.append(self._reconciled(found, chain, seq, now))
            skipped.extend(
                UnjournaledFile(f.path, f.key, f.reason) for f in folder_links(self._root)
            )
            skipped.sort(key=lambda f: f.key.encode())
            self._commit(cur, changes, {c.entry.scope for c in changes})
            self._seen = seen
            done = Reconciliation(changes=changes, unjournaled=skipped, damaged=self._damage_seen)
        self._index_vectors(changes)
        return done
