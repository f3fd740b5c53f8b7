"""FileStore's purge: erase every content an entry ever held from the folder, and finish or roll
back a purge a killed process left (docs/contract.md#purge-erasing-an-entry-for-good,
docs/filestore-format.md#a-purge-rewrites-the-journal).

The journal is rewritten with the entry's records redacted (:mod:`.journal_rewrite`) and renamed
over ``journal.jsonl``; ``.purge.json`` (:class:`.journal_rewrite.PurgeMarker`) records the
purge's phase so the next write or open can settle it; the vector index's part is
:func:`.vectors.purge_folder_vectors` or the handle's own :class:`.vectors.FolderVectors`.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import logging
import os
import secrets
from pathlib import Path

from agentmemory.entries import SOURCE_PURGED, Change
from agentmemory.errors import IndexWriteError, NotFoundError
from agentmemory.purge import (
    ErasureCheck,
    PurgeReceipt,
    check_purge,
    history_copies,
    purge_record,
    redact_history,
)
from agentmemory.rules import check_scope

from .atomic_write import TEMP_PREFIX, fsync_dir, remove_durably, write_atomic, write_synced
from .entry_file import ENTRY_SUFFIX, INDEX_NAME
from .journal_file import JOURNAL_NAME, STATE_NAME, Cursor, scan_journal
from .journal_rewrite import PURGE_MARKER, PurgeMarker, copy_finder, rewrite_journal
from .reconcile import Reconciling

__all__ = ["Purging"]

log = logging.getLogger("agentmemory.stores.markdown.store")


class Purging(Reconciling):
    """``purge``, its recovery at the next write or open, and ``verify_erased`` (a part of
    ``FileStore``)."""

    @property
    def can_purge(self) -> bool:
        """Whether :meth:`purge` works here: always, for a Markdown folder."""
        return True

    @property
    def recovery(self) -> str | None:
        """What this handle did about a purge a killed process left (``.purge.json``):
        ``"rolled back ..."`` (the journal had not been replaced: nothing was purged),
        ``"finished ..."`` (it had: the entry file, INDEX.md, the cursor and the vectors were
        brought in step), or ``None`` (docs/filestore-format.md#a-purge-rewrites-the-journal)."""
        return self._recovery

    def purge(
        self, scope: str, name: str, *, reason: str, session: str | None = None
    ) -> PurgeReceipt:
        """Erase every content ``scope/name`` ever held from the folder; return the receipt.

        Under the lock: a live entry is forgotten first (a person's edit journaled as
        reconciled first, as :meth:`forget` does); every journal record of the entry is
        redacted (:func:`agentmemory.purge.redact_history`) and padded to its old length, a
        damaged line or torn tail holding a copy is blanked, the tombstone and the ``purged``
        record are appended, and the new journal replaces the old atomically (temporary file,
        fsync, rename, folder fsync); then the entry file is removed, INDEX.md and
        ``.state.json`` rewritten, and the vector index's collection for the scope rebuilt and
        its files scrubbed (docs/filestore-format.md#a-purge-rewrites-the-journal). A process
        killed midway leaves ``.purge.json``: the next write or open rolls the purge back
        (before the rename) or finishes it (after), and :attr:`recovery` says which.

        Raises:
            InvalidEntryError: ``scope`` or ``name`` not kebab-case, ``reason`` blank or over
                1024 bytes (field ``"reason"``); nothing is written.
            NotFoundError: neither the journal nor the folder has ``scope/name``.
            StoreLockedError: another writer held the folder for over ``lock_timeout_s``, or
                (for a handle without an embedder) another process owns ``.vectors``, which the
                purge must scrub; nothing is written.
            IndexWriteError: the journal and files are purged but the vector index could not be
                scrubbed (the cause is ``__cause__``); the next write or open finishes it.
        """
        check_purge(scope, name, reason)
        with self._writing() as cur:
            held = self._hold_vectors()
            try:
                return self._purge_locked(cur, scope, name, reason, session)
            finally:
                if held is not None:
                    from agentmemory.stores.chroma.clients import close_folder

                    close_folder(held)

    def _hold_vectors(self) -> Path | None:
        """For a handle without an embedder, open the folder's ``.vectors`` (so no other process
        can own it while the purge runs) and return it; ``None`` when there is nothing to hold.
        Raises :class:`~agentmemory.StoreLockedError` when another process owns it."""
        from .vectors import VECTORS_FOLDER

        folder = self._root / VECTORS_FOLDER
        if self._vectors is not None or not (folder / "chroma").is_dir():
            return None
        from agentmemory.stores.chroma.clients import open_folder

        open_folder(folder, self._lock_timeout_s)
        return folder

    def _purge_locked(
        self, cur: Cursor, scope: str, name: str, reason: str, session: str | None
    ) -> PurgeReceipt:
        key = f"{scope}/{name}"
        found = self._read_file(scope, name)
        if found is None and not any(
            isinstance(c, Change) and c.entry.key == key
            for _, _, c in scan_journal(self.journal_path)
        ):
            raise NotFoundError(scope, name)
        now = self._now(cur)
        swept, seen, _ = self._sweep(cur, now, skip=key)  # other hand edits, journaled first
        if swept:
            self._commit(cur, swept, {c.entry.scope for c in swept})
        self._seen = seen
        try:
            data = self.journal_path.read_bytes()
        except FileNotFoundError:
            data = b""
        lines = builtins.list(scan_journal(self.journal_path))
        history = [(off, c) for off, _, c in lines if isinstance(c, Change) and c.entry.key == key]
        seq = cur.seq + 1
        journaled = cur.entries.get(key)
        fresh = (
            [] if found is None else self._forget_records(cur, found, journaled, seq, now, session)
        )
        every = [c for _, c in history] + fresh
        redacted = redact_history(every)
        left = iter(redacted)  # redact_history leaves out redacted and purge records, in order
        mapped = [c if c.redacted or c.source == SOURCE_PURGED else next(left) for c in every]
        record = purge_record(
            scope,
            name,
            seq=seq + len(fresh),
            now=now,
            reason=reason,
            redacted=[c.seq for c in redacted],
            session=session,
        )
        appended = [*mapped[len(history) :], record]
        replace = {
            off: new for (off, old), new in zip(history, mapped, strict=False) if new is not old
        }
        rewrite = rewrite_journal(data, lines, replace, copy_finder(scope, name, every), appended)
        marker = PurgeMarker(
            key=key,
            pid=os.getpid(),
            seq=record.seq,
            journal=PurgeMarker.journal_id(self.journal_path),
            temp=f"{TEMP_PREFIX}purge-{secrets.token_hex(8)}",
            aside=f"{scope}/{TEMP_PREFIX}purge-{secrets.token_hex(8)}" if found else "",
            heads=rewrite.heads,
            padded=rewrite.padded,
        )
        write_atomic(self._root / PURGE_MARKER, marker.encode())
        if marker.aside:
            os.replace(self.entry_path(scope, name), self._root / marker.aside)
            fsync_dir(self._root / scope)
        if not rewrite.padded:  # offsets move: the cursors are rebuilt from the new journal
            from .vectors import CURSOR_NAME, VECTORS_FOLDER

            self.state_path.unlink(missing_ok=True)
            (self._root / VECTORS_FOLDER / CURSOR_NAME).unlink(missing_ok=True)
        temp = self._root / marker.temp
        write_synced(temp, rewrite.data)
        self._replace_journal(temp)
        # The purge stands from here; what follows is what an open would finish.
        self._finish_files(marker)
        self._save_cursor(self._load_cursor())
        try:
            vectors, scrubbed = self._purge_vectors(marker, self._lock_timeout_s)
        except Exception as err:
            raise IndexWriteError(str(self._root), appended, err) from err
        remove_durably(self._root / PURGE_MARKER)
        tomb = mapped[-1] if fresh else None
        done = [
            f"{JOURNAL_NAME}: {len(redacted)} records redacted"
            + (" (each padded to its old length)" if rewrite.padded else " (offsets moved)")
            + (f", {len(rewrite.blanked)} damaged lines blanked" if rewrite.blanked else "")
            + "; replaced atomically",
        ]
        if found is not None:
            done.append(f"{scope}/{name}{ENTRY_SUFFIX} removed")
        done += [f"{scope}/{INDEX_NAME} rewritten", f"{STATE_NAME} rewritten", *scrubbed]
        return PurgeReceipt.of(
            record,
            tomb,
            redacted,
            index_rows=0 if found is None else 1,
            vectors=vectors,
            rewritten=done,
        )

    def _replace_journal(self, temp: Path) -> None:
        """Rename the purge's new journal ``temp`` over ``journal.jsonl`` and fsync the folder:
        the moment a purge stands."""
        os.replace(temp, self.journal_path)
        fsync_dir(self._root)

    def _finish_files(self, marker: PurgeMarker) -> None:
        """After the journal was replaced: remove the entry file moved aside, rewrite the
        scope's INDEX.md, make this handle's cursor and BM25 index follow the new journal,
        and record in the marker that only the vectors are left."""
        if marker.aside:
            remove_durably(self._root / marker.aside)
        self._index_cache.get(marker.scope, {}).pop(marker.name, None)
        self._write_index(marker.scope)
        cur = self._cursor
        if not marker.padded:
            self._cursor = None
        elif cur is not None and cur.head == marker.heads[0]:
            cur.head = marker.heads[1]
        if not marker.padded:
            with self._lexicon_lock:
                self._lexicon_off = None
        next_phase = dataclasses.replace(marker, phase="vectors")
        write_atomic(self._root / PURGE_MARKER, next_phase.encode())

    def _purge_vectors(
        self, marker: PurgeMarker, timeout_s: float
    ) -> tuple[int, builtins.list[str]]:
        """The vector index's part of a purge: this handle's, or the folder's ``.vectors``
        opened for the purge (see :func:`agentmemory.stores.markdown.vectors.purge_folder_vectors`)."""
        if self._vectors is not None:
            return self._vectors.purge(
                marker.scope, marker.name, marker.heads, padded=marker.padded
            )
        from .vectors import VECTORS_FOLDER, purge_folder_vectors

        if not (self._root / VECTORS_FOLDER).is_dir():
            return 0, []
        return purge_folder_vectors(
            self._root,
            marker.scope,
            marker.name,
            marker.heads,
            padded=marker.padded,
            timeout_s=timeout_s,
        )

    def _settle_purge(self) -> None:
        """With the lock held: finish or roll back the purge ``.purge.json`` describes (a
        process killed midway left it; docs/filestore-format.md#a-purge-rewrites-the-journal)."""
        path = self._root / PURGE_MARKER
        try:
            marker = PurgeMarker.decode(path.read_bytes())
        except FileNotFoundError:
            return
        except ValueError as err:
            remove_durably(path)
            self._recovery = f"removed an unreadable {PURGE_MARKER} ({err}); nothing was changed"
            log.warning("agentmemory: store %s: %s", self._root, self._recovery)
            return
        who = f"{marker.key} (pid {marker.pid})"
        if marker.phase == "journal" and not marker.replaced(self.journal_path):
            (self._root / marker.temp).unlink(missing_ok=True)
            aside = self._root / marker.aside if marker.aside else None
            if aside is not None and aside.exists():
                target = self._root / marker.scope / f"{marker.name}{ENTRY_SUFFIX}"
                if target.exists():
                    aside.unlink()
                else:
                    os.replace(aside, target)
                    fsync_dir(target.parent)
            self._write_index(marker.scope)
            remove_durably(path)
            self._recovery = (
                f"rolled back an interrupted purge of {who}: the journal had not been "
                "replaced, nothing was purged; run the purge again"
            )
            log.warning("agentmemory: store %s: %s", self._root, self._recovery)
            return
        if marker.phase == "journal":
            self._finish_files(marker)
        try:
            # a retry (phase "vectors") does not wait for another owner of .vectors
            self._purge_vectors(marker, self._lock_timeout_s if marker.phase == "journal" else 0)
        except Exception as err:  # owned by another process, or Chroma failed: retried later
            self._recovery = (
                f"finished the journal part of an interrupted purge of {who}; the vector "
                f"index (.vectors) is still to be scrubbed, which the next write or open "
                f"retries ({type(err).__name__}: {err})"
            )
            log.warning("agentmemory: store %s: %s", self._root, self._recovery)
            return
        remove_durably(path)
        self._recovery = (
            f"finished an interrupted purge of {who}: the journal was already redacted; the "
            "entry file, INDEX.md, .state.json and the vector index were brought in step now"
        )
        log.warning("agentmemory: store %s: %s", self._root, self._recovery)

    def verify_erased(self, scope: str, name: str) -> ErasureCheck:
        """Check that no copy of what ``scope/name`` held remains in the folder.

        Looks at: the entry's journal records (each redacted, or a ``purged`` record), damaged
        journal lines and the torn tail naming the entry, the entry file and a copy moved aside
        by an unfinished purge, the scope's INDEX.md, ``.state.json``, this handle's BM25 index,
        an unfinished purge (``.purge.json``), and the vector index (the entry's vector, and
        ``.vectors/chroma/chroma.sqlite3``'s rows, free pages and dropped segment folders).
        Returns an :class:`~agentmemory.purge.ErasureCheck`; an entry never purged reports
        its unredacted records. Takes no lock.

        Raises :class:`~agentmemory.InvalidEntryError` when ``scope`` or ``name`` is not
        kebab-case.
        """
        self._check_open()
        check_scope(scope)
        check_scope(name, what="name")
        key = f"{scope}/{name}"
        records: builtins.list[Change] = []
        damaged = 0
        names = copy_finder(scope, name, [])
        try:
            data = self.journal_path.read_bytes()
        except FileNotFoundError:
            data = b""
        for off, end, item in scan_journal(self.journal_path):
            if isinstance(item, Change):
                if item.entry.key == key:
                    records.append(item)
            elif names(data[off : end - 1]):
                damaged += 1
        tail = data[data.rfind(b"\n") + 1 :]
        found = history_copies(records)
        if damaged:
            found.append(f"{damaged} damaged journal lines naming {key}")
        if tail and names(tail):
            found.append(f"the journal's torn last line names {key}")
        folder = self._root / scope
        if (folder / f"{name}{ENTRY_SUFFIX}").exists():
            found.append(f"the entry file {scope}/{name}{ENTRY_SUFFIX}")
        aside = (
            sorted(p.name for p in folder.glob(f"{TEMP_PREFIX}purge-*")) if folder.is_dir() else []
        )
        if aside:
            found.append(
                f"files moved aside by an unfinished purge in {scope}/: {', '.join(aside)}"
            )
        with contextlib.suppress(OSError):
            if f"- [{name}]({name}{ENTRY_SUFFIX})".encode() in (folder / INDEX_NAME).read_bytes():
                found.append(f"{scope}/{INDEX_NAME} lists it")
        with contextlib.suppress(OSError, ValueError):
            if key in Cursor.decode(self.state_path.read_bytes()).entries:
                found.append(f"{STATE_NAME} names it")
        with self._lexicon_lock:
            if self._lexicon_off is not None:
                docs = self._current_lexicon().documents([scope])
                if any(d.name == name for d in docs):
                    found.append("this handle's BM25 index")
        if (self._root / PURGE_MARKER).exists():
            found.append(f"an unfinished purge ({PURGE_MARKER})")
        looked = [
            f"journal records of {key} in {JOURNAL_NAME}",
            "damaged journal lines and the torn tail",
            f"the entry file {scope}/{name}{ENTRY_SUFFIX} and files moved aside",
            f"{scope}/{INDEX_NAME}",
            STATE_NAME,
            "this handle's BM25 index",
            f"an unfinished purge ({PURGE_MARKER})",
        ]
        from .vectors import VECTORS_FOLDER

        chroma = self._root / VECTORS_FOLDER / "chroma"
        if self._vectors is not None and self._vectors.holds(scope, name):
            found.append("a vector in .vectors")
        if chroma.is_dir():
            from agentmemory.stores.chroma.files import chroma_copies

            looked += [
                f"{VECTORS_FOLDER}/chroma/chroma.sqlite3 rows for {key} (embeddings, "
                "embeddings_queue) and free pages",
                f"segment folders under {VECTORS_FOLDER}/chroma/ not in its segments table",
            ]
            found += [f"{VECTORS_FOLDER}: {w}" for w in chroma_copies(chroma, key)]
        return ErasureCheck(scope, name, tuple(looked), tuple(found))
