"""The .lock of a Markdown folder: who holds it, how long a writer waits, what a reader does,
and how a dead holder's lock and an unfinished takeover are dealt with."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentmemory import Entry, FileStore, StoreLockedError
from agentmemory.stores.markdown.lock_file import LockFile, LockHolder
from agentmemory.wire import format_time


@pytest.fixture
def live_pid() -> Iterator[int]:
    """A running process of ours, stopped at the end of the test."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield p.pid
    finally:
        p.kill()
        p.wait()


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def hold(folder: Path, pid: int, host: str | None = None) -> dict[str, object]:
    lock: dict[str, object] = {"pid": pid}
    if host is not None:
        lock["host"] = host
    lock["since"] = format_time(datetime.now(UTC))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".lock").write_text(json.dumps(lock))
    return lock


@pytest.mark.slow
def test_a_live_holder_makes_writers_wait_then_fail_naming_it(
    tmp_path: Path, live_pid: int
) -> None:
    st = FileStore(tmp_path, lock_timeout_s=0.3)
    st.put(Entry("user", "a", "before"))
    hold(tmp_path, live_pid, socket.gethostname())
    began = time.monotonic()
    with pytest.raises(StoreLockedError) as err:
        st.put(Entry("user", "a", "after"))
    waited = time.monotonic() - began
    assert 0.3 <= waited < 5
    assert f"pid {live_pid} on host {socket.gethostname()}" in str(err.value)
    assert err.value.holder.startswith(f"pid {live_pid}")
    # Nothing was written, and reads take no lock.
    assert st.get("user", "a").content == "before"
    assert [e.name for e in st.list("user")] == ["a"]
    assert len(list(st.journal())) == 1
    with pytest.raises(StoreLockedError):
        st.reconcile()
    assert st.lock_holder() == LockHolder.parse((tmp_path / ".lock").read_bytes())


def test_a_dead_holders_lock_is_taken_over(tmp_path: Path) -> None:
    hold(tmp_path, dead_pid(), socket.gethostname())
    st = FileStore(tmp_path, lock_timeout_s=2)
    assert st.put(Entry("user", "a", "x")).seq == 1
    assert not (tmp_path / ".lock").exists()
    assert list(tmp_path.glob(".lock.taken-*")) == []


def test_a_lock_without_host_or_from_another_host_is_never_taken_over(tmp_path: Path) -> None:
    st = FileStore(tmp_path, lock_timeout_s=0.1)
    for host in (None, "some-other-host"):
        hold(tmp_path, dead_pid(), host)
        with pytest.raises(StoreLockedError):
            st.put(Entry("user", "a", "x"))
        assert (tmp_path / ".lock").exists()
    assert st.break_lock() == [".lock"]
    assert st.put(Entry("user", "a", "x")).seq == 1


def test_an_unfinished_takeover_blocks_writers_until_the_lock_is_broken(tmp_path: Path) -> None:
    hold(tmp_path, dead_pid(), socket.gethostname())
    holder = LockHolder.parse((tmp_path / ".lock").read_bytes())
    assert holder is not None
    claim = tmp_path / f".lock.taken-{holder.fingerprint()}"
    claim.write_bytes((tmp_path / ".lock").read_bytes())  # a taker died after its link
    st = FileStore(tmp_path, lock_timeout_s=0.2)
    with pytest.raises(StoreLockedError) as err:
        st.put(Entry("user", "a", "x"))
    assert claim.name in str(err.value) and "break" in str(err.value)
    assert sorted(st.break_lock()) == sorted([".lock", claim.name])
    assert st.put(Entry("user", "a", "x")).seq == 1


def test_release_leaves_a_lock_that_names_someone_else(tmp_path: Path, live_pid: int) -> None:
    lock = LockFile(tmp_path)
    lock.acquire()
    assert (tmp_path / ".lock").exists() and lock.held
    hold(tmp_path, live_pid, socket.gethostname())  # broken and taken meanwhile
    lock.release()
    assert json.loads((tmp_path / ".lock").read_text())["pid"] == live_pid


def test_two_handles_in_one_process_take_turns(tmp_path: Path) -> None:
    one = FileStore(tmp_path)
    two = FileStore(tmp_path)
    one.put(Entry("user", "a", "1"))
    two.put(Entry("user", "b", "2"))
    one.put(Entry("user", "a", "3"))
    assert [c.seq for c in two.journal()] == [1, 2, 3]
    assert [c.replaced for c in one.journal()][2] == one.journal().__next__().entry.hash
