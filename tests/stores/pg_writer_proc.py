"""A writer process for tests/stores/test_postgres_store.py (run as a script, not collected by pytest).
Each process shares nothing with the others but the DSN.

Modes:

``writer DSN W ITERATIONS``
    Opens the store, prints ``ready``, waits for a line on stdin (so every writer starts at once),
    then makes ``2 * ITERATIONS`` writes under session ``proc-W``: per iteration one
    unconditional put of ``user/wW-nI`` and one append `` wW-I`` to ``user/shared`` (read, put
    with ``if_hash``, retry on conflict). Prints ``done CONFLICTS DEFERRED`` and exits 0;
    DEFERRED counts writes a ChromaStore committed but could not index at once
    (``IndexWriteError``: another process kept changing the entry), left to the catch-up.

``chroma DSN ADDRESS W ITERATIONS``
    As ``writer``, through ``agentmemory.open_store(dsn=DSN, chroma_url=ADDRESS)`` (a
    ``ChromaStore`` over the ``PostgresStore`` of DSN, its vectors on the Chroma server at
    ``HOST:PORT`` ADDRESS), with its own hashing embedder: a host sharing nothing with the
    others but the DSN and the server's address (the test gives each its own working folder and
    ``HOME``).

``hold DSN``
    Starts ``put_many`` of 50 entries ``user/held-I`` and, inside the transaction, after every
    statement of the write was sent to the server (rows written, not committed), prints
    ``inside SEQ`` (the first seq it took) and sleeps until killed (60 s at most).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

from agentmemory import ConflictError, Entry, IndexWriteError
from agentmemory.entries import Change
from agentmemory.stores.postgres.store import PostgresStore

MAX_APPEND_ATTEMPTS = 2000
HOLD_MAX_S = 60.0
HELD_ENTRIES = 50
DIM = 32


def open_store(dsn: str, address: str | None) -> Any:
    if address is None:
        return PostgresStore(dsn, lock_timeout_s=60.0)
    import agentmemory
    from embedders import HashingEmbedder

    return agentmemory.open_store(
        dsn=dsn, chroma_url=address, embedder=HashingEmbedder(DIM), lock_timeout_s=60.0
    )


def writer(dsn: str, w: int, iterations: int, address: str | None = None) -> None:
    conflicts = deferred = 0
    with open_store(dsn, address) as st:
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(iterations):
            try:
                st.put(Entry("user", f"w{w}-n{i}", f"process {w} entry {i}"), session=f"proc-{w}")
            except IndexWriteError:  # in the journal; the index catches up later
                deferred += 1
            for _ in range(MAX_APPEND_ATTEMPTS):
                cur = st.get("user", "shared")
                try:
                    st.put(
                        Entry("user", "shared", cur.content + f" w{w}-{i}"),
                        if_hash=cur.hash,
                        session=f"proc-{w}",
                    )
                    break
                except ConflictError:
                    conflicts += 1
                except IndexWriteError:  # the append is in the journal, the index lags
                    deferred += 1
                    break
            else:
                raise SystemExit(f"process {w} gave up on shared after {MAX_APPEND_ATTEMPTS} tries")
    print(f"done {conflicts} {deferred}", flush=True)


class HoldingStore(PostgresStore):
    """Pauses inside the write transaction once every statement of the put_many was sent."""

    def _apply_in_txn(self, conn: Any, changes: Sequence[Change]) -> None:
        super()._apply_in_txn(conn, changes)
        if changes[-1].entry.name == f"held-{HELD_ENTRIES - 1}":
            conn.execute("SELECT 1").fetchone()  # sends every queued statement (pipeline sync)
            print(f"inside {changes[0].seq}", flush=True)
            time.sleep(HOLD_MAX_S)


def hold(dsn: str) -> None:
    with HoldingStore(dsn) as st:
        st.put_many(Entry("user", f"held-{i}", f"held entry {i}") for i in range(HELD_ENTRIES))


def main(argv: list[str]) -> None:
    mode, dsn = argv[1], argv[2]
    if mode == "writer":
        writer(dsn, int(argv[3]), int(argv[4]))
    elif mode == "chroma":
        writer(dsn, int(argv[4]), int(argv[5]), address=argv[3])
    elif mode == "hold":
        hold(dsn)
    else:
        raise SystemExit(f"unknown mode {mode!r}; use writer, chroma or hold")


if __name__ == "__main__":
    main(sys.argv)
