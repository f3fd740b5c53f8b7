"""Several processes on one store folder (docs/storage.md#several-processes), with real processes:
a second process beside the holder of the embedded index opens the journal alone and never fails;
the holder indexes what others wrote before its next call; the folder's own Chroma server
(`agentmemory server start|stop|status`) is found by every opener, a dead one is reported and
replaced, one of another chromadb version or a taken port is refused."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agentmemory import ChromaStore, Entry, open_store
from agentmemory.errors import ChromaServerError, ServerRecordWarning
from agentmemory.stores.chroma.server import SERVER_FOLDER, SERVER_RECORD, read_record, stop_server
from embedders import HashingEmbedder

REPO = Path(__file__).resolve().parents[1]
AGENTMEMORY = str(Path(sys.executable).parent / "agentmemory")
CHILD_TIMEOUT_S = 120

# The holder: an embedded store held open, answering commands on stdin one line at a time.
HOLDER = """
    import json, sys
    from agentmemory import open_store
    st = open_store(sys.argv[1], embedder="hashing")
    print("held", flush=True)
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "vector":
            hits = st.recall(arg, scopes=["user"], limit=3, mode="vector")
            print(json.dumps([h.entry.name for h in hits]), flush=True)
        elif cmd == "verify":
            print(json.dumps(st.verify().ok), flush=True)
    st.close()
"""


def agentmemory(
    *args: str, path: Path, keep_timeout: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``agentmemory`` command on store ``path`` (a real process), without
    our environment variables (``keep_timeout``: keeping ``$AGENTMEMORY_CHROMA_TIMEOUT``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEMORY_")}
    if keep_timeout and "AGENTMEMORY_CHROMA_TIMEOUT" in os.environ:
        env["AGENTMEMORY_CHROMA_TIMEOUT"] = os.environ["AGENTMEMORY_CHROMA_TIMEOUT"]
    return subprocess.run(
        [AGENTMEMORY, *args, "--path", str(path)],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        cwd=REPO,
        env=env,
    )


def agentmemory_env(*args: str, path: Path) -> subprocess.CompletedProcess[str]:
    """As :func:`agentmemory`, keeping ``$AGENTMEMORY_CHROMA_TIMEOUT``."""
    return agentmemory(*args, path=path, keep_timeout=True)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    store = tmp_path / "store"
    with ChromaStore.open(store, embedder=HashingEmbedder()) as st:
        st.put(Entry("user", "cat", "the cat sat on the mat"))
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLDER), str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "held"
        yield child, store
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def ask(child: subprocess.Popen[str], line: str) -> object:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(line + "\n")
    child.stdin.flush()
    return json.loads(child.stdout.readline())


@pytest.mark.slow
def test_cli_beside_the_holder_never_fails(
    holder: tuple[subprocess.Popen[str], Path],
) -> None:
    """save and search from the command line beside a process holding the embedded index exit 0
    and say what they could not do; the holder's next call indexes the CLI's write."""
    child, store = holder
    saved = agentmemory("save", "user/dogs", "dogs bark at night", path=store)
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout.startswith("created user/dogs")
    note = saved.stderr.strip().splitlines()
    assert len(note) == 1 and note[0].startswith("agentmemory: note: "), saved.stderr
    assert f"pid {child.pid}" in note[0] and "vector index" in note[0]

    found = agentmemory("search", "dogs", "bark", path=store)
    assert found.returncode == 0, found.stderr
    lines = found.stderr.strip().splitlines()
    assert len(lines) == 1 and "vector leg was unavailable" in lines[0], found.stderr
    assert f"pid {child.pid}" in lines[0]
    assert "user/dogs" in found.stdout and "vector unavailable" in found.stdout

    as_json = json.loads(agentmemory("search", "dogs", "--json", path=store).stdout)
    assert as_json["mode"] == "bm25"
    assert [h["name"] for h in as_json["hits"]] == ["dogs"]
    assert f"pid {child.pid}" in as_json["hits"][0]["unavailable"]["vector"]

    # the holder's next call indexes the journal record the CLI wrote
    assert ask(child, "vector dogs bark at night")[0] == "dogs"  # type: ignore[index]
    assert ask(child, "verify") is True


@pytest.mark.slow
def test_library_beside_the_holder_opens_journal_only(
    holder: tuple[subprocess.Popen[str], Path],
) -> None:
    child, store = holder
    started = time.monotonic()
    with open_store(store, embedder="hashing", read_only=True) as reader:
        waited = time.monotonic() - started
        assert reader.vector_unavailable is not None
        assert f"pid {child.pid}" in reader.vector_unavailable
        hits = reader.recall("cat mat", scopes=["user"])
        assert [h.entry.name for h in hits] == ["cat"]
        assert set(hits[0].legs) == {"bm25"}
        assert "vector" in hits[0].unavailable
        with pytest.raises(Exception, match="journal alone"):
            reader.verify()
    assert waited < 2.0, "a read waited on the holder's lock"
    with open_store(store, embedder="hashing") as writer:
        change = writer.put(Entry("user", "owl", "owls hoot in the dark woods"))
        assert change.seq == 2
        assert f"pid {child.pid}" in change.note and "journal" in change.note
    assert ask(child, "vector owls hoot in the dark woods")[0] == "owl"  # type: ignore[index]
    assert ask(child, "verify") is True


# --- the folder's own Chroma server -----------------------------------------------------------


@pytest.fixture
def server_store(tmp_path: Path) -> Iterator[Path]:
    """A store folder (hashing embedder); its server, if a test started one, is stopped."""
    store = tmp_path / "store"
    with ChromaStore.open(store, embedder=HashingEmbedder()) as st:
        st.put(Entry("user", "cat", "the cat sat on the mat"))
    try:
        yield store
    finally:
        stop_server(store)


@pytest.mark.slow
def test_server_start_status_stop_and_every_opener_uses_it(server_store: Path) -> None:
    store = server_store
    started = agentmemory("server", "start", "--json", path=store)
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    # the wait for the new server's index is counted on stderr; stdout stays the JSON record
    assert started.stderr.splitlines() == [
        f"agentmemory: indexing 1 live entry of {store} on the new server (each embedded once)"
    ], started.stderr
    record = read_record(store)
    assert record is not None
    assert info["pid"] == record.pid and info["port"] == record.port
    import chromadb

    assert record.chromadb == chromadb.__version__ and record.host == "127.0.0.1"
    again = agentmemory("server", "start", path=store)
    assert "already running" in again.stdout and str(record.pid) in again.stdout
    assert "indexing" not in again.stderr  # nothing to wait for
    status = agentmemory("server", "status", path=store)
    assert status.returncode == 0 and f"pid {record.pid}" in status.stdout

    # the library, with no option, connects to it; the index on the server catches up
    with ChromaStore.open(store, embedder=HashingEmbedder()) as st:
        assert st.server is not None and str(record.port) in st.server
        assert not (store / "chroma.lock").read_text().strip(), "the folder lock was taken"
        st.put(Entry("user", "dog", "dogs bark at night"))
        assert st.verify().ok and st.verify().indexed == 2
    saved = agentmemory("save", "user/owl", "owls hoot", path=store)
    assert saved.returncode == 0 and saved.stderr == "", saved.stderr
    found = agentmemory("search", "owls", "hoot", path=store)
    assert found.returncode == 0 and found.stderr == "", found.stderr
    assert "user/owl" in found.stdout and "vector #1" in found.stdout

    stopped = agentmemory("server", "stop", path=store)
    assert stopped.returncode == 0 and str(record.pid) in stopped.stdout
    assert not (store / SERVER_FOLDER / SERVER_RECORD).exists()
    status = agentmemory("server", "status", path=store)
    assert status.returncode == 1 and "no Chroma server" in status.stdout


@pytest.mark.slow
def test_dead_server_record_is_reported_and_replaced(server_store: Path) -> None:
    store = server_store
    assert agentmemory("server", "start", path=store).returncode == 0
    first = read_record(store)
    assert first is not None
    os.kill(first.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{first.pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    status = agentmemory("server", "status", path=store)
    assert status.returncode == 1 and "not running" in status.stdout
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with open_store(store, embedder="hashing", shared=True) as st:
            assert st.server is not None
            assert st.get("user", "cat").content == "the cat sat on the mat"
            assert st.verify().ok
    said = [str(w.message) for w in caught if issubclass(w.category, ServerRecordWarning)]
    assert len(said) == 1 and f"pid {first.pid}" in said[0], said
    second = read_record(store)
    assert second is not None and second.pid != first.pid


@pytest.mark.slow
def test_server_of_another_version_and_a_taken_port_are_refused(server_store: Path) -> None:
    store = server_store
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = agentmemory("server", "start", "--port", str(port), path=store)
        assert r.returncode == 1
        assert f"port {port} is taken" in r.stderr, r.stderr
    assert agentmemory("server", "start", path=store).returncode == 0
    path = store / SERVER_FOLDER / SERVER_RECORD
    data = json.loads(path.read_text())
    data["chromadb"] = "0.0.1"
    path.write_text(json.dumps(data))
    with pytest.raises(ChromaServerError, match=r"chromadb 0\.0\.1"):
        ChromaStore.open(store, embedder=HashingEmbedder())
    r = agentmemory("search", "cat", path=store)
    assert r.returncode == 1 and "chromadb 0.0.1" in r.stderr and "server stop" in r.stderr


@pytest.mark.slow
def test_reads_on_the_folders_server_leave_indexing_to_writers(server_store: Path) -> None:
    """docs/storage.md#reads-do-not-write: a store opened to read (search, get, list, render,
    the CLI's search) on the folder's server does not embed or upsert the journal records the
    index has not taken yet; the next writer does."""
    from agentmemory import SqliteStore, render
    from agentmemory.stores.chroma.store import JOURNAL_FILE

    store = server_store
    started = agentmemory("server", "start", path=store)
    assert started.returncode == 0, started.stderr
    record = read_record(store)
    assert record is not None
    with SqliteStore(store / JOURNAL_FILE) as journal:  # another process's journal-only write
        journal.put(Entry("user", "dog", "dogs bark at night"))

    import chromadb

    server = chromadb.HttpClient(host=record.host, port=record.port)

    def vectors() -> int:
        with ChromaStore.open(store, embedder=HashingEmbedder(), read_only=True) as probe:
            name = probe.collection_name("user")
        return int(server.get_collection(name).count())

    before = vectors()
    with open_store(store, embedder="hashing", read_only=True) as reader:
        assert reader.server is not None
        assert {e.name for e in reader.list("user")} == {"cat", "dog"}
        assert reader.get("user", "dog").content == "dogs bark at night"
        assert reader.recall("dogs bark", scopes=["user"])[0].entry.name == "dog"
        render(reader, ["user"])
    found = agentmemory("search", "dogs", "bark", path=store)
    assert found.returncode == 0, found.stderr
    assert vectors() == before, "a read indexed the journal"
    with open_store(store, embedder="hashing") as writer:
        writer.put(Entry("user", "owl", "owls hoot"))
    assert vectors() == before + 2, "the writer did not catch the index up"


# --- a stuck server (docs/storage.md#a-stuck-server) --------------------------------------------


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    """The process ``pid`` stopped with SIGSTOP (a hung server: it accepts connections and never
    answers), continued on leaving."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.mark.slow
def test_a_stopped_server_costs_the_cli_no_write_and_no_hang(
    server_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = server_store
    assert agentmemory("server", "start", path=store).returncode == 0
    record = read_record(store)
    assert record is not None
    monkeypatch.setenv("AGENTMEMORY_CHROMA_TIMEOUT", "2")
    with stopped(record.pid):
        # Before the timeout these hung past CHILD_TIMEOUT_S (subprocess.TimeoutExpired).
        saved = agentmemory_env("save", "user/dog", "dogs bark at night", path=store)
        found = agentmemory_env("search", "dogs", "bark", path=store)
    assert saved.returncode == 0, saved.stderr
    assert "did not answer within 2 s" not in saved.stdout
    assert "the write is in the journal" in saved.stderr and record.describe() in saved.stderr
    from agentmemory import SqliteStore
    from agentmemory.stores.chroma.store import JOURNAL_FILE

    with SqliteStore(store / JOURNAL_FILE) as journal:
        assert journal.get("user", "dog").content == "dogs bark at night"
    assert found.returncode == 0, found.stderr
    assert "user/dog" in found.stdout and "vector unavailable" in found.stdout
    assert "did not answer within 2 s" in found.stderr
    # Once the server answers again, the next write brings its index up to date.
    again = agentmemory_env("save", "user/owl", "owls hoot", path=store)
    assert again.returncode == 0 and again.stderr == "", again.stderr
    found = agentmemory_env("search", "dogs", "bark", path=store)
    assert "user/dog" in found.stdout and "vector #" in found.stdout, found.stdout
    checked = agentmemory_env("verify", path=store)
    assert checked.returncode == 0 and "3 entries indexed" in checked.stdout, checked.stdout


@pytest.mark.slow
def test_a_server_stopped_under_an_open_store_fails_its_requests_in_time(
    server_store: Path,
) -> None:
    from agentmemory.errors import IndexWriteError

    with open_store(
        store := server_store, embedder="hashing", shared=True, server_timeout_s=2
    ) as st:
        record = read_record(store)
        assert record is not None and st.server == record.describe()
        with stopped(record.pid):
            with pytest.raises(IndexWriteError, match="ReadTimeout") as failed:
                st.put(Entry("user", "dog", "dogs bark at night"))
            assert failed.value.changes[0].entry.name == "dog"
            hits = st.recall("dogs bark", scopes=["user"])
        assert [h.entry.name for h in hits] == ["dog"]
        assert "vector" in hits[0].unavailable
        st.put(Entry("user", "owl", "owls hoot"))
        report = st.verify()
        assert report.ok and report.indexed == 3


def test_the_server_timeout_is_checked_where_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentmemory.stores.chroma.server import SERVER_TIMEOUT_S, TIMEOUT_ENV, server_timeout_s

    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert server_timeout_s() == SERVER_TIMEOUT_S == 30.0
    assert server_timeout_s(1.5) == 1.5
    monkeypatch.setenv(TIMEOUT_ENV, "4")
    assert server_timeout_s() == 4.0 and server_timeout_s(2) == 2.0
    for bad in ("0", "-1", "soon", "inf"):
        monkeypatch.setenv(TIMEOUT_ENV, bad)
        with pytest.raises(ValueError, match=rf"\$AGENTMEMORY_CHROMA_TIMEOUT is '{bad}'.*above 0"):
            server_timeout_s()
    with pytest.raises(ValueError, match=r"server_timeout_s is 0.*above 0"):
        server_timeout_s(0)
