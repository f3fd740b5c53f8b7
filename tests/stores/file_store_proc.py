"""A process for tests/stores/test_file_store_processes.py (run as a script, not collected by pytest).

Modes:

``writer DIR W N``
    Opens a FileStore, prints ``ready``, waits for a line on stdin (so every writer starts at
    once), then puts ``user/wW-nI`` for I < N under session ``proc-W`` and prints ``done``.

``stream DIR START``
    Puts ``user/kI`` for I = START, START + 1, ... and after each acknowledged put prints ``SEQ I``,
    flushed, until killed (or for 60 s at most).

``locker DIR LOG``
    Prints ``ready``, waits for a line on stdin, takes the folder's ``.lock`` (waiting up to
    30 s, taking over a dead holder's lock), appends ``enter PID T`` to LOG, holds the lock
    0.1 s, appends ``leave PID T`` (T: time.monotonic_ns()), releases it and exits.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from agentmemory import Entry, FileStore
from agentmemory.stores.markdown.lock_file import LockFile

STREAM_MAX_S = 60.0


def writer(folder: str, w: int, n: int) -> None:
    st = FileStore(folder, lock_timeout_s=60.0)
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(n):
        st.put(Entry("user", f"w{w}-n{i}", f"process {w} entry {i}"), session=f"proc-{w}")
    print("done", flush=True)


def stream(folder: str, start: int) -> None:
    st = FileStore(folder, lock_timeout_s=30.0)
    end = time.monotonic() + STREAM_MAX_S
    i = start
    while time.monotonic() < end:
        c = st.put(Entry("user", f"k{i}", f"streamed entry {i} " + "x" * 200))
        print(f"{c.seq} {i}", flush=True)
        i += 1


def locker(folder: str, log: str) -> None:
    print("ready", flush=True)
    sys.stdin.readline()
    lock = LockFile(Path(folder), timeout_s=30.0)
    lock.acquire()
    with open(log, "a") as f:
        f.write(f"enter {os.getpid()} {time.monotonic_ns()}\n")
    time.sleep(0.1)
    with open(log, "a") as f:
        f.write(f"leave {os.getpid()} {time.monotonic_ns()}\n")
    lock.release()


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "writer":
        writer(args[0], int(args[1]), int(args[2]))
    elif mode == "stream":
        stream(args[0], int(args[1]))
    elif mode == "locker":
        locker(args[0], args[1])
    else:
        raise SystemExit(f"unknown mode {mode!r}")
