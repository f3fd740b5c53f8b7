"""A purging process for tests/test_purge.py (run as a script, not collected by pytest).

``purge_proc.py PATH PHASE``: opens the SqliteStore at PATH and purges ``user/address``, stopping
for up to 60 s at PHASE so the test can kill it with SIGKILL: ``txn`` while the purge's
transaction is open (after the ``purged`` record is written, before COMMIT), ``scrub`` after
COMMIT, before the file is vacuumed. Prints ``ready`` (flushed) when it stops there.

``purge_proc.py FOLDER file-before`` / ``file-after``: opens the Markdown folder FOLDER as a
FileStore with the hashing:64 embedder and purges ``user/address``, stopping for up to 60 s just
before the new journal is renamed over ``journal.jsonl`` (``file-before``) or just after
(``file-after``), printing ``ready`` there.

``purge_proc.py DSN pg-vacuum``: opens the PostgresStore at DSN and purges ``user/address``,
stopping for up to 60 s after its transaction committed, before its ``VACUUM FULL``.

``purge_proc.py FOLDER hold``: opens the Markdown folder FOLDER with the hashing:64 embedder (so
this process owns ``.vectors``), prints ``ready`` and sleeps up to 60 s.

``purge_proc.py FOLDER reopen``: reopens the store in FOLDER (hashing:64; a ChromaStore, or a
FileStore when FOLDER holds ``journal.jsonl``) in a fresh process, as a restart would, and prints
one JSON object: the journal's length, its last record's content, ``verify().ok`` (a ChromaStore;
``null`` for a FileStore, which has no ``verify``), ``verify_erased('user', 'address').erased``,
``recovery``, and the names a vector search for the secret's last version finds in ``user``.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np

from agentmemory import ChromaStore, FileStore, SqliteStore
from agentmemory.entries import Change

PAUSE_S = 60.0


class PausingStore(SqliteStore):
    """Stops at the phase given (a real store otherwise)."""

    phase = ""

    def _apply_in_txn(self, conn: sqlite3.Connection, change: Change) -> None:
        super()._apply_in_txn(conn, change)
        if self.phase == "txn" and change.source == "purged":
            print("ready", flush=True)
            time.sleep(PAUSE_S)

    def _scrub(self) -> str:
        if self.phase == "scrub":
            print("ready", flush=True)
            time.sleep(PAUSE_S)
        return super()._scrub()


class PausingFileStore(FileStore):
    """Stops just before or just after the purge's rename (a real store otherwise)."""

    phase = ""

    def _replace_journal(self, temp: Path) -> None:
        if self.phase == "file-before":
            print("ready", flush=True)
            time.sleep(PAUSE_S)
        super()._replace_journal(temp)
        if self.phase == "file-after":
            print("ready", flush=True)
            time.sleep(PAUSE_S)


def pausing_postgres_store(dsn: str) -> object:
    """A real PostgresStore that stops before the purge's VACUUM FULL (psycopg is imported
    only for this phase)."""
    from collections.abc import Sequence

    from agentmemory.stores.postgres.store import PostgresStore

    class PausingPostgresStore(PostgresStore):
        def _vacuum_after_purge(self, pending: Sequence[str]) -> None:
            print("ready", flush=True)
            time.sleep(PAUSE_S)
            super()._vacuum_after_purge(pending)

    return PausingPostgresStore(dsn)


LAST_VERSION = "Home address zqxvelvet-4471-orchid flat 12 (door code 4471)"


def reopen(folder: str) -> None:
    from embedders import HashingEmbedder

    emb = HashingEmbedder(64)
    st: ChromaStore | FileStore
    if (Path(folder) / "journal.jsonl").exists():
        st = FileStore(folder, embedder=emb)
    else:
        st = ChromaStore(folder, embedder=emb)
    with st:
        journal = list(st.journal())
        vec = np.asarray(emb.embed([LAST_VERSION]), dtype=np.float32)[0]
        hits = st.search_vector(vec, limit=10, scopes=["user"])
        print(
            json.dumps(
                {
                    "records": len(journal),
                    "last": journal[-1].entry.content,
                    "verify": st.verify().ok if isinstance(st, ChromaStore) else None,
                    "erased": st.verify_erased("user", "address").erased,
                    "recovery": st.recovery,
                    "vector_hits": sorted(e.name for e, _ in hits),
                }
            )
        )


def main() -> None:
    path, phase = sys.argv[1], sys.argv[2]
    if phase == "reopen":
        reopen(path)
        return
    if phase == "pg-vacuum":
        pg = pausing_postgres_store(path)
        pg.purge("user", "address", reason="killed midway")  # type: ignore[attr-defined]
        return
    if phase == "hold":
        from embedders import HashingEmbedder

        with FileStore(path, embedder=HashingEmbedder(64)):
            print("ready", flush=True)
            time.sleep(PAUSE_S)
        return
    if phase.startswith("file-"):
        from embedders import HashingEmbedder

        fs = PausingFileStore(path, embedder=HashingEmbedder(64))
        fs.phase = phase
        fs.purge("user", "address", reason="killed midway")
        return
    st = PausingStore(path)
    st.phase = phase
    st.purge("user", "address", reason="killed midway")


if __name__ == "__main__":
    main()
