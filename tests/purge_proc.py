"""A purging process for tests/test_purge.py (run as a script, not collected by pytest).

``purge_proc.py PATH PHASE``: opens the SqliteStore at PATH and purges ``user/address``, stopping
for up to 60 s at PHASE so the test can kill it with SIGKILL: ``txn`` while the purge's
transaction is open (after the ``purged`` record is written, before COMMIT), ``scrub`` after
COMMIT, before the file is vacuumed. Prints ``ready`` (flushed) when it stops there.

``purge_proc.py FOLDER reopen``: reopens the ChromaStore in FOLDER (hashing:64) in a fresh
process, as a restart would, and prints one JSON object: the journal's length, its last record's
content, ``verify().ok``, ``verify_erased('user', 'address').erased`` and ``recovery``.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time

from agentmemory import ChromaStore, SqliteStore
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


def reopen(folder: str) -> None:
    from embedders import HashingEmbedder

    with ChromaStore(folder, embedder=HashingEmbedder(64)) as st:
        journal = list(st.journal())
        print(
            json.dumps(
                {
                    "records": len(journal),
                    "last": journal[-1].entry.content,
                    "verify": st.verify().ok,
                    "erased": st.verify_erased("user", "address").erased,
                    "recovery": st.recovery,
                }
            )
        )


def main() -> None:
    path, phase = sys.argv[1], sys.argv[2]
    if phase == "reopen":
        reopen(path)
        return
    st = PausingStore(path)
    st.phase = phase
    st.purge("user", "address", reason="killed midway")


if __name__ == "__main__":
    main()
