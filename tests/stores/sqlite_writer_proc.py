"""A writer process for tests/stores/test_sqlite_store.py (run as a script, not collected by pytest).

Modes:

``writer PATH W ITERATIONS``
    Opens the store, prints ``ready``, waits for a line on stdin (so every writer starts at once),
    then makes ``2 * ITERATIONS`` writes under session ``proc-W``: per iteration one
    unconditional put of ``user/wW-nI`` and one append `` wW-I`` to ``user/shared`` (read, put
    with ``if_hash``, retry on conflict). Prints ``done CONFLICTS`` and exits 0.

``stream PATH``
    Puts ``user/kI`` for I = 0, 1, 2, ... and after each acknowledged put prints ``SEQ I`` (the
    record's seq), flushed, until killed (or for 60 s at most).
"""

from __future__ import annotations

import sys
import time

from agentmemory import ConflictError, Entry, SqliteStore

MAX_APPEND_ATTEMPTS = 2000
STREAM_MAX_S = 60.0


def writer(path: str, w: int, iterations: int) -> None:
    conflicts = 0
    with SqliteStore(path, busy_timeout_s=30.0) as st:
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(iterations):
            st.put(Entry("user", f"w{w}-n{i}", f"process {w} entry {i}"), session=f"proc-{w}")
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
            else:
                raise SystemExit(f"process {w} gave up on shared after {MAX_APPEND_ATTEMPTS} tries")
    print(f"done {conflicts}", flush=True)


def stream(path: str) -> None:
    padding = "x" * 1500
    deadline = time.monotonic() + STREAM_MAX_S
    with SqliteStore(path, busy_timeout_s=30.0) as st:
        i = 0
        while time.monotonic() < deadline:
            rec = st.put(Entry("user", f"k{i}", f"value {i} {padding}"))
            print(f"{rec.seq} {i}", flush=True)
            i += 1


def main(argv: list[str]) -> None:
    mode, path = argv[1], argv[2]
    if mode == "writer":
        writer(path, int(argv[3]), int(argv[4]))
    elif mode == "stream":
        stream(path)
    else:
        raise SystemExit(f"unknown mode {mode!r}; use writer or stream")


if __name__ == "__main__":
    main(sys.argv)
