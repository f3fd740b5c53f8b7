"""Purge in :class:`~agentmemory.stores.postgres.store.PostgresStore`: erasing an entry's
every content from the store's tables, the ``VACUUM FULL`` after it (finished at open when a
killed process left it), and the check that nothing is left
(docs/contract.md#purge-erasing-an-entry-for-good, docs/storage.md#purge-and-the-files)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import psycopg

from agentmemory.entries import Change
from agentmemory.errors import NotFoundError
from agentmemory.purge import (
    ErasureCheck,
    PurgeReceipt,
    check_purge,
    history_copies,
    purge_record,
    redact_history,
)
from agentmemory.rules import check_scope
from agentmemory.store import plan_forget
from agentmemory.wire import decode_change, encode_change

from .connection import Conn, PgConnections, one_line
from .lexicon import PG_LEXICAL_TABLES

__all__ = ["PURGE_PENDING_PREFIX", "PURGE_VACUUM_TABLES", "PgPurge"]

# The store module's name, as before the split, so log filters on it still match.
logger = logging.getLogger("agentmemory.stores.postgres.store")

PURGE_PENDING_PREFIX = "purge:pending:"
"""``store_state`` keys ``purge:pending:<seq of the purged record>`` (value ``"<scope>/<name>"``):
written in a purge's transaction, removed once its ``VACUUM FULL`` has run, so an open that finds
one runs the vacuum a killed purge did not (docs/storage.md#purge-and-the-files)."""

PURGE_VACUUM_TABLES = ("memory_journal", "memory_entries", *PG_LEXICAL_TABLES)
"""The tables a purge's ``VACUUM FULL`` rewrites: every one that held the entry's content."""


class PgPurge(PgConnections):
    """The purge half of :class:`PostgresStore` (a base class, not a store by itself):
    :meth:`purge`, :meth:`verify_erased`, :attr:`recovery` and the ``VACUUM FULL`` after a
    purge (run again at open by :meth:`_finish_purges` when a killed process left it)."""

    def purge(
        self, scope: str, name: str, *, reason: str, session: str | None = None
    ) -> PurgeReceipt:
        """Erase every content ``scope/name`` ever held from this store's tables.

        One transaction (under the counter lock, as every write) tombstones the entry when it
        is live, replaces the content, meta and hashes of each of its journal records, removes
        it from the lexical index and appends the ``purged`` record naming ``reason``. Then
        ``VACUUM FULL`` rewrites the store's tables, so their files hold no dead copy. The
        server's write-ahead log, replicas and backups are out of this client's reach
        (docs/storage.md#purge-and-the-files).

        Raises:
            InvalidEntryError: ``scope`` or ``name`` not kebab-case, ``reason`` blank or over
                1024 bytes; nothing is written.
            NotFoundError: the journal has no record of ``scope/name``.
            StoreLockedError, StoreUnavailableError: as for :meth:`put`; nothing is written.
        """
        check_purge(scope, name, reason)
        done: dict[str, Any] = {}

        def run(conn: Conn) -> list[Change]:
            seq, last_at, live = self._lock_and_read(conn, [(scope, name)])
            rows = conn.execute(
                "SELECT seq, line FROM memory_journal WHERE scope = %s AND name = %s ORDER BY seq",
                (scope, name),
            ).fetchall()
            if not rows:
                raise NotFoundError(scope, name)
            records = [decode_change(str(line), seq=int(s)) for s, line in rows]
            now = self._now(last_at)
            stored = live.get((scope, name))
            out: list[Change] = []
            if stored is not None:
                tomb = plan_forget(stored, seq=seq + 1, now=now, session=session)
                out.append(tomb)
                records.append(tomb)
                seq += 1
            redacted = redact_history(records)
            record = purge_record(
                scope,
                name,
                seq=seq + 1,
                now=now,
                reason=reason,
                redacted=[c.seq for c in redacted],
                session=session,
            )
            out.append(record)
            self._queue(conn, out)
            conn.execute(
                "UPDATE memory_journal AS j SET line = k.l"
                " FROM unnest(%s::bigint[], %s::text[]) AS k(s, l) WHERE j.seq = k.s",
                ([c.seq for c in redacted], [encode_change(c) for c in redacted]),
            )
            self._put_state(conn, f"{PURGE_PENDING_PREFIX}{record.seq}", f"{scope}/{name}")
            done.update(tomb=out[0] if stored is not None else None, redacted=redacted)
            return [record]  # its line is not rewritten: the commit check reads it back

        (record,) = self._write_changes(f"the purge of {scope}/{name}", run)
        self._vacuum_after_purge([f"{PURGE_PENDING_PREFIX}{record.seq}"])
        tomb = done["tomb"]
        return PurgeReceipt.of(
            record,
            tomb,
            done["redacted"],
            index_rows=0 if tomb is None else 1,
            rewritten=(
                f"VACUUM FULL {', '.join(PURGE_VACUUM_TABLES)}; the server's WAL and backups are "
                "out of reach",
            ),
        )

    def _vacuum_after_purge(self, pending: Sequence[str]) -> None:
        """``VACUUM FULL`` the tables that held a purged entry (dead row versions keep its
        bytes until then), then remove the ``pending`` purge keys from ``store_state``."""
        with self._wlock:
            conn = self._conn("writer")
            conn.execute("VACUUM FULL " + ", ".join(PURGE_VACUUM_TABLES))
            conn.execute("DELETE FROM store_state WHERE key = ANY(%s)", (list(pending),))

    def _finish_purges(self) -> None:
        """At open: run the ``VACUUM FULL`` of every purge that committed and was stopped
        before its vacuum (a ``purge:pending:`` key left), and say so in :attr:`recovery`."""
        conn = self._conn("writer")
        rows = conn.execute(
            "SELECT key, value FROM store_state WHERE key LIKE %s ORDER BY key",
            (PURGE_PENDING_PREFIX + "%",),
        ).fetchall()
        if not rows:
            return
        keys = ", ".join(sorted({str(v) for _, v in rows}))
        try:
            self._vacuum_after_purge([str(k) for k, _ in rows])
        except psycopg.Error as err:  # a role that may not vacuum: open anyway, and say so
            self._recovery = (
                f"found an interrupted purge of {keys} whose VACUUM FULL has not run, and could "
                f"not run it ({one_line(err)}); open the store as the tables' owner to finish it"
            )
            logger.warning("agentmemory: store %s: %s", self._where, self._recovery)
            return
        self._recovery = (
            f"finished an interrupted purge of {keys}: its transaction had committed (the "
            f"journal records were redacted); VACUUM FULL of {', '.join(PURGE_VACUUM_TABLES)} "
            "ran now"
        )
        logger.warning("agentmemory: store %s: %s", self._where, self._recovery)

    @property
    def recovery(self) -> str | None:
        """What opening this handle did about a purge a killed process left: ``"finished ..."``
        (its transaction had committed and its ``VACUUM FULL`` had not run; it ran now), or
        ``None``. A purge killed before its commit wrote nothing and needs no recovery."""
        return self._recovery

    def verify_erased(self, scope: str, name: str) -> ErasureCheck:
        """Check that no row of this store's tables keeps ``scope/name``'s content: its journal
        records (each redacted, or a ``purged`` record), the live entries, the lexical index's
        documents, a purge whose ``VACUUM FULL`` has not run (a ``purge:pending:`` key: its
        dead row versions still hold the old bytes), and, when the database has the
        ``pgstattuple`` extension, the dead row versions of ``memory_journal`` (only a purge's
        redaction or an aborted write leaves one there). ``pg_stat_user_tables.n_dead_tup``
        is not used: ``VACUUM FULL`` does not reset it (measured on PostgreSQL 15), so it would
        report copies that are gone. The server's files, WAL and backups are not looked at
        (docs/storage.md#purge-and-the-files)."""
        check_scope(scope)
        with self._read() as conn:
            rows = conn.execute(
                "SELECT seq, line FROM memory_journal WHERE scope = %s AND name = %s ORDER BY seq",
                (scope, name),
            ).fetchall()
            live = conn.execute(
                "SELECT 1 FROM memory_entries WHERE scope = %s AND name = %s", (scope, name)
            ).fetchone()
            pending = conn.execute(
                "SELECT value FROM store_state WHERE key LIKE %s ORDER BY key",
                (PURGE_PENDING_PREFIX + "%",),
            ).fetchall()
            counted = conn.execute(
                "SELECT 1 FROM pg_extension WHERE extname = 'pgstattuple'"
            ).fetchone()
            dead = None
            if counted is not None:
                dead = conn.execute(
                    "SELECT dead_tuple_count FROM pgstattuple('memory_journal')"
                ).fetchone()
        found = history_copies(decode_change(str(line), seq=int(seq)) for seq, line in rows)
        if live is not None:
            found.append("a live entry")
        if self._lexicon_holds(scope, name):
            found.append("a lexical index row")
        if pending:
            found.append(
                f"a purge whose VACUUM FULL has not run ({', '.join(str(v) for (v,) in pending)}):"
                " dead row versions keep the old bytes until the next open"
            )
        if dead is not None and int(dead[0]):
            found.append(
                f"{int(dead[0])} dead row versions in memory_journal that may hold old bytes "
                "(VACUUM FULL not run since)"
            )
        looked = (
            f"journal records of {scope}/{name}",
            "live entries (memory_entries)",
            "lexical index",
            "pending purges (store_state purge:pending:*)",
            "dead row versions of memory_journal (pgstattuple)"
            if counted is not None
            else "dead row versions of memory_journal: not counted (install the pgstattuple "
            "extension in the database to count them)",
        )
        return ErasureCheck(scope, name, looked, tuple(found))

    def _lexicon_holds(self, scope: str, name: str) -> bool:
        with self._read() as conn:
            row = conn.execute(
                "SELECT 1 FROM memory_lexical_docs WHERE scope = %s AND name = %s", (scope, name)
            ).fetchone()
        return row is not None
