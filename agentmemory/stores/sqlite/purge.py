"""SqliteStore's purge: erase every content an entry ever held, scrub the file, and finish or
roll back a purge a killed process left (docs/contract.md#purge-erasing-an-entry-for-good,
docs/storage.md#purge-and-the-files).
"""

from __future__ import annotations

import builtins
import logging
import os
import sqlite3
from contextlib import suppress
from dataclasses import replace

from agentmemory.entries import REDACTED, SOURCE_PURGED
from agentmemory.errors import (
    AgentMemoryError,
    NotFoundError,
)
from agentmemory.purge import ErasureCheck, PurgeReceipt, check_purge, purge_record, redact_history
from agentmemory.rules import check_scope
from agentmemory.store import plan_forget
from agentmemory.stores.processes import pid_exists
from agentmemory.wire import decode_change, encode_change

from .core import SqliteCore
from .faults import is_busy

__all__ = ["PURGE_PENDING_KEY", "PURGE_STARTED_KEY", "Purging"]

logger = logging.getLogger("agentmemory.stores.sqlite.store")

PURGE_STARTED_KEY = "purge:started"
"""``store_state`` key written (in its own transaction) before a purge's transaction:
``"<pid> <scope>/<name>"``; the purge's transaction removes it (docs/storage.md#purge-and-the-files)."""


PURGE_PENDING_KEY = "purge:pending"
"""``store_state`` key a purge's transaction writes and its file scrub (vacuum, WAL truncated)
removes: ``"<scope>/<name>"``; an open that finds it finishes the scrub."""


class Purging(SqliteCore):
    """``purge``, its file scrub, its recovery at open and ``verify_erased`` (a part of
    ``SqliteStore``)."""

    _recovery: str | None

    def purge(
        self, scope: str, name: str, *, reason: str, session: str | None = None
    ) -> PurgeReceipt:
        """Erase every content ``scope/name`` ever held and return the receipt.

        One ``BEGIN IMMEDIATE`` transaction tombstones the entry when it is live, replaces the
        content, meta and hashes of each of its journal records
        (:func:`agentmemory.purge.redact_history`), removes its lexical index row, and appends
        the ``purged`` record naming ``reason`` and ``session``. Then the file is scrubbed: FTS5
        segments merged, ``VACUUM`` with ``secure_delete``, the WAL checkpointed and truncated
        (docs/storage.md#purge-and-the-files). A process killed during the transaction leaves
        the entry as it was; killed during the scrub, the next open finishes it
        (:attr:`recovery` says which).

        Raises:
            InvalidEntryError: ``scope`` or ``name`` not kebab-case, ``reason`` blank or over
                1024 bytes (field ``"reason"``); nothing is written.
            NotFoundError: the journal has no record of ``scope/name``.
            StoreLockedError: another writer held the file for over ``busy_timeout_s``.
        """
        check_purge(scope, name, reason)
        self.set_state(PURGE_STARTED_KEY, f"{os.getpid()} {scope}/{name}")
        try:
            receipt = self._purge_txn(scope, name, reason, session)
        except BaseException:
            with suppress(sqlite3.Error, AgentMemoryError):
                self._delete_state(PURGE_STARTED_KEY)
            raise
        return self._with_scrub(receipt)

    def _purge_txn(self, scope: str, name: str, reason: str, session: str | None) -> PurgeReceipt:
        with self._transaction() as conn:
            conn.execute("PRAGMA secure_delete = ON")
            records = [
                decode_change(line, seq=int(seq))
                for seq, line in conn.execute(
                    "SELECT seq, line FROM memory_journal WHERE scope = ? AND name = ?"
                    " ORDER BY seq",
                    (scope, name),
                ).fetchall()
            ]
            if not records:
                raise NotFoundError(scope, name)
            seq, last_at = self._tail(conn)
            now = self._now(last_at)
            stored = self._stored(conn, scope, name)
            tomb = None
            index_rows = self._lexicon_rows(conn, scope, name)
            if stored is not None:
                tomb = plan_forget(stored, seq=seq + 1, now=now, session=session)
                self._write(conn, tomb)
                records.append(tomb)
                seq += 1
            redacted = redact_history(records)
            for c in redacted:
                conn.execute(
                    "UPDATE memory_journal SET line = ? WHERE seq = ?", (encode_change(c), c.seq)
                )
            record = purge_record(
                scope,
                name,
                seq=seq + 1,
                now=now,
                reason=reason,
                redacted=[c.seq for c in redacted],
                session=session,
            )
            self._write(conn, record)
            conn.execute("DELETE FROM store_state WHERE key = ?", (PURGE_STARTED_KEY,))
            self._put_state(conn, PURGE_PENDING_KEY, f"{scope}/{name}")
        return PurgeReceipt.of(record, tomb, redacted, index_rows=index_rows)

    @staticmethod
    def _lexicon_rows(conn: sqlite3.Connection, scope: str, name: str) -> int:
        row = conn.execute(
            "SELECT COUNT(*) FROM memory_lexical_docs WHERE scope = ? AND name = ?", (scope, name)
        ).fetchone()
        return int(row[0])

    def _with_scrub(self, receipt: PurgeReceipt) -> PurgeReceipt:
        done = self._scrub()
        return replace(receipt, rewritten=(*receipt.rewritten, done))

    def _delete_state(self, key: str) -> None:
        with self._transaction() as conn:
            conn.execute("DELETE FROM store_state WHERE key = ?", (key,))

    def _scrub(self) -> str:
        """Remove freed copies from the file after a purge's transaction: merge the FTS5
        segments (a deleted row's terms stay in them until a merge), ``VACUUM`` with
        ``secure_delete`` on, checkpoint and truncate the WAL, then clear
        :data:`PURGE_PENDING_KEY` (kept when another connection stopped the checkpoint, so the
        next purge or open retries). Returns what was done, for the receipt."""
        with self._wlock:
            self._check_open()
            conn = self._writer
            conn.execute("PRAGMA secure_delete = ON")
            with self._transaction() as txn:
                txn.execute("INSERT INTO memory_lexical (memory_lexical) VALUES ('optimize')")
            try:
                conn.execute("VACUUM")
            except sqlite3.OperationalError as err:
                if is_busy(err):
                    raise self._locked(err) from err
                raise
            busy = self._checkpoint()
            if busy:
                return (
                    f"{self._path.name}: vacuumed; the WAL was not truncated (another connection "
                    "is reading); the next purge or open retries"
                )
            self._delete_state(PURGE_PENDING_KEY)
            self._checkpoint()
            conn.execute("PRAGMA secure_delete = OFF")
        return f"{self._path.name}: FTS5 segments merged, vacuumed, WAL truncated"

    def _checkpoint(self) -> bool:
        """``PRAGMA wal_checkpoint(TRUNCATE)`` on the writer; ``True`` when it could not finish."""
        with self._rlock:
            row = self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return bool(row and row[0])

    def _recover_purge(self) -> None:
        """Finish or report a purge a killed process left (docs/storage.md#purge-and-the-files)."""
        pending = self.get_state(PURGE_PENDING_KEY)
        if pending is not None:
            self._scrub()
            self._recovery = (
                f"finished an interrupted purge of {pending}: its journal records were already "
                "redacted; the file was vacuumed and the WAL truncated now"
            )
        else:
            started = self.get_state(PURGE_STARTED_KEY)
            if started is None:
                return
            pid_text, _, key = started.partition(" ")
            if pid_text.isdigit() and pid_exists(int(pid_text)):
                return  # that purge is still running
            self._delete_state(PURGE_STARTED_KEY)
            self._recovery = (
                f"rolled back an interrupted purge of {key}: it never committed, nothing was "
                "purged; run the purge again"
            )
        logger.warning("agentmemory: store %s: %s", self._path, self._recovery)

    @property
    def recovery(self) -> str | None:
        """What opening this handle did about a purge a killed process left: ``"finished ..."``
        (the purge had committed; its scrub was completed), ``"rolled back ..."`` (it had not;
        nothing was purged), or ``None``."""
        return self._recovery

    def verify_erased(self, scope: str, name: str) -> ErasureCheck:
        """Check that no copy of the content ``scope/name`` held remains in this file.

        Looks at: the entry's journal records (each redacted, or a ``purged`` record), the
        live entries table, the lexical index's rows, a pending purge scrub, and the file's
        free pages (``PRAGMA freelist_count``: freed pages may keep old bytes). Returns an
        :class:`~agentmemory.purge.ErasureCheck`; ``found`` is empty when erased. An entry
        never purged reports its unredacted records.
        """
        check_scope(scope)
        looked = [
            f"journal records of {scope}/{name} in {self._path.name}",
            "live entries (memory_entries)",
            "lexical index (memory_lexical_docs)",
            "pending purge scrub (store_state)",
            f"free pages of {self._path.name} (freelist_count)",
        ]
        found: builtins.list[str] = []
        with self._read() as conn:
            rows = conn.execute(
                "SELECT seq, line FROM memory_journal WHERE scope = ? AND name = ? ORDER BY seq",
                (scope, name),
            ).fetchall()
            kept = []
            purged = False
            for seq, line in rows:
                c = decode_change(line, seq=int(seq))
                if c.source == SOURCE_PURGED:
                    purged = True
                elif not (c.redacted and c.entry.content == REDACTED and not c.entry.meta):
                    kept.append(int(seq))
            if kept:
                found.append(f"journal records {' '.join(map(str, kept))} keep their content")
            if rows and not purged:
                found.append("no purged record in the journal")
            if self._stored(conn, scope, name) is not None:
                found.append("a live entry")
            if self._lexicon_rows(conn, scope, name):
                found.append("a lexical index row")
            if conn.execute(
                "SELECT 1 FROM store_state WHERE key = ?", (PURGE_PENDING_KEY,)
            ).fetchone():
                found.append("a purge whose scrub has not finished")
            free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
            if free:
                found.append(f"{free} free pages that may hold old bytes (vacuum not run)")
        return ErasureCheck(scope, name, tuple(looked), tuple(found))
