"""FileStore with real processes: four writers through the lock, a writer SIGKILLed mid-append,
and a dead holder's lock taken over by exactly one of several waiting writers."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentmemory import Entry, FileStore, lost_updates
from agentmemory.wire import format_time

PROC = str(Path(__file__).with_name("file_store_proc.py"))
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, PROC, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )


def start_together(procs: list[subprocess.Popen[str]]) -> None:
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.slow
def test_four_processes_fifty_writes_each_leave_a_contiguous_journal(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    procs = [spawn("writer", str(folder), str(w), "50") for w in range(4)]
    try:
        start_together(procs)
        outs = [p.communicate(timeout=300)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert all(p.returncode == 0 for p in procs), outs
    st = FileStore(folder)
    changes = list(st.journal())
    assert [c.seq for c in changes] == list(range(1, 201)), "the journal is not contiguous"
    keys = {c.entry.key for c in changes}
    want = {f"user/w{w}-n{i}" for w in range(4) for i in range(50)}
    assert keys == want, f"lost: {sorted(want - keys)[:5]}"
    assert {e.key for e in st.list("user")} == want
    assert st.damaged_lines() == [] and lost_updates(st) == []
    index = (folder / "user" / "INDEX.md").read_text()
    assert index.count("\n- [") + index.startswith("- [") == 200
    assert not (folder / ".lock").exists()


@pytest.mark.slow
def test_a_writer_killed_mid_append_loses_no_acknowledged_write(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    acked: dict[int, int] = {}  # entry number -> seq
    rounds = 4
    rng = random.Random(7)
    start = 0
    for _ in range(rounds):
        p = spawn("stream", str(folder), str(start))
        assert p.stdout is not None
        deadline = time.monotonic() + rng.uniform(0.4, 1.2)
        lines: list[str] = []
        while time.monotonic() < deadline:
            lines.append(p.stdout.readline())
        os.kill(p.pid, signal.SIGKILL)
        rest, _ = p.communicate(timeout=30)
        for line in [*lines, *rest.splitlines(keepends=True)]:
            if line.endswith("\n") and line.strip():
                seq, i = map(int, line.split())
                acked[i] = seq
                start = max(start, i + 1)
        start += 1
    assert len(acked) >= rounds, "the writers acknowledged too few writes to test anything"
    st = FileStore(folder)
    journal = {c.seq: c for c in st.journal()}
    for i, seq in acked.items():
        assert st.get("user", f"k{i}").content.startswith(f"streamed entry {i} ")
        assert journal[seq].entry.name == f"k{i}", f"acknowledged write {i} (seq {seq}) is lost"
    assert len(st.damaged_lines()) <= rounds, "more than one damaged line per killed writer"
    seqs = [c.seq for c in st.journal()]
    assert seqs == sorted(set(seqs)), "seq does not strictly increase along the journal"
    # The store goes on: the next write numbers after the last record, and reconcile journals
    # any file a killed writer left ahead of the journal.
    st.reconcile()
    last = st.last_seq()
    assert st.put(Entry("user", "after", "still writable")).seq == last + 1


@pytest.mark.slow
def test_a_dead_holders_lock_is_taken_over_by_exactly_one_waiting_writer(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    since = format_time(datetime.now(UTC))
    lock = {"pid": dead_pid(), "host": socket.gethostname(), "since": since}
    (folder / ".lock").write_text(json.dumps(lock))
    log = tmp_path / "log"
    procs = [spawn("locker", str(folder), str(log)) for _ in range(4)]
    try:
        start_together(procs)
        for p in procs:
            p.communicate(timeout=120)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0, 0, 0]
    events = [line.split() for line in log.read_text().splitlines()]
    assert len(events) == 8
    holding: str | None = None
    for kind, pid, _ in sorted(events, key=lambda e: int(e[2])):
        if kind == "enter":
            assert holding is None, f"pid {pid} took the lock while {holding} held it"
            holding = pid
        else:
            assert holding == pid
            holding = None
    assert not (folder / ".lock").exists()
    assert list(folder.glob(".lock.taken-*")) == [], "a takeover claim was left behind"
