"""Progress a person waiting sees: a bar on stderr when it is a terminal, none when it is not or
with ``--quiet``; stdout stays the command's own (an export's lines, ``--json``)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import tempfile
import termios
from pathlib import Path

import pytest

from agentmemory import ChromaStore
from embedders import HashingEmbedder

SCRIPT = Path(sys.executable).with_name("agentmemory")
ENV = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "HF_HUB_OFFLINE": "1"}


def run(*args: str, terminal: bool) -> tuple[int, str, str]:
    """Run the installed ``agentmemory``; stderr on a pseudo-terminal when ``terminal``, else a
    pipe; stdout never a terminal. Returns (exit code, stdout, stderr)."""
    if not terminal:
        r = subprocess.run(
            [str(SCRIPT), *args], env=ENV, capture_output=True, text=True, timeout=300
        )
        return r.returncode, r.stdout, r.stderr
    leader, follower = pty.openpty()
    # a terminal 80 columns wide (a fresh pseudo-terminal is 0 by 0, where tqdm draws nothing)
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    # stdout a file, not a pipe: an export's lines would fill a pipe nobody reads yet
    with tempfile.TemporaryFile() as stdout:
        proc = subprocess.Popen(
            [str(SCRIPT), *args],
            env=ENV,
            stdout=stdout,
            stderr=follower,
            stdin=subprocess.DEVNULL,
        )
        os.close(follower)
        err = bytearray()
        while True:
            ready, _, _ = select.select([leader], [], [], 300)
            if not ready:
                proc.kill()
                raise AssertionError("no output for 300 s")
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            err += chunk
        os.close(leader)
        code = proc.wait(timeout=60)
        stdout.seek(0)
        out = stdout.read().decode()
    return code, out, err.decode(errors="replace")


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A JSON Lines file of 600 entries (three import batches)."""
    path = tmp_path / "entries.jsonl"
    lines = [
        json.dumps({"scope": "notes", "name": f"n-{i}", "content": f"note {i} about the garden"})
        for i in range(600)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_import_and_export_show_a_bar_on_a_terminal_only(tmp_path: Path, source: Path) -> None:
    store = tmp_path / "store"
    with ChromaStore.open(store, embedder=HashingEmbedder()):
        pass
    code, out, err = run("import", str(source), "--path", str(store), terminal=True)
    assert code == 0, err
    assert "import: 100%" in err and "600/600" in err, err  # tqdm's bar, on the terminal
    assert out.startswith("imported 600 entries (notes 600)"), out

    again = tmp_path / "again"
    with ChromaStore.open(again, embedder=HashingEmbedder()):
        pass
    for quiet in (["--quiet"], ["-q"], ["--no-progress"]):
        code, out, err = run("export", "--path", str(store), *quiet, terminal=True)
        assert code == 0 and "export" not in err and "%" not in err, (quiet, err)
        assert len(out.splitlines()) == 600
    code, out, err = run("import", str(source), "--path", str(again), "-q", terminal=True)
    assert code == 0 and "import:" not in err, err

    code, out, err = run("export", "--path", str(store), terminal=True)
    assert code == 0 and "export: 600entry" in err, err
    assert [json.loads(line)["name"] for line in out.splitlines()][:2] == ["n-0", "n-1"]

    # not a terminal: no bar at all, and --json stays one JSON document
    fresh = tmp_path / "fresh"
    with ChromaStore.open(fresh, embedder=HashingEmbedder()):
        pass
    code, out, err = run("import", str(source), "--path", str(fresh), "--json", terminal=False)
    assert code == 0 and err == "", err
    assert json.loads(out)["imported"] == 600
    code, out, err = run(
        "export", "--path", str(fresh), "-o", str(tmp_path / "x.jsonl"), terminal=False
    )
    assert code == 0 and err.splitlines() == [f"exported 600 entries to {tmp_path / 'x.jsonl'}"], (
        err
    )


@pytest.mark.slow
def test_markdown_export_and_import_show_a_bar_on_a_terminal_only(
    tmp_path: Path, source: Path
) -> None:
    store = tmp_path / "store"
    with ChromaStore.open(store, embedder=HashingEmbedder()):
        pass
    assert run("import", str(source), "--path", str(store), "-q", terminal=False)[0] == 0
    folder = tmp_path / "md"
    code, out, err = run(
        "export", "--format", "markdown", str(folder), "--path", str(store), terminal=True
    )
    assert code == 0, err
    assert (
        "export: 600entry" in err and f"exported 600 entries to the Markdown folder {folder}" in err
    ), err
    assert len(list((folder / "notes").glob("n-*.md"))) == 600

    back = tmp_path / "back"
    with ChromaStore.open(back, embedder=HashingEmbedder()):
        pass
    code, out, err = run("import", str(folder), "--path", str(back), terminal=True)
    assert code == 0, err
    assert "import: 100%" in err and "600/600" in err, err
    assert out.strip() == f"imported 600 entries from the Markdown folder {folder}", out
    # again: nothing left to write, a bar of 0; off the terminal and with -q, no bar
    code, out, err = run("import", str(folder), "--path", str(back), "--json", terminal=False)
    assert code == 0 and err == "" and json.loads(out)["imported"] == 0, (out, err)
    other = tmp_path / "md2"
    code, out, err = run(
        "export", "--format", "markdown", str(other), "--path", str(back), "-q", terminal=True
    )
    assert code == 0 and "export:" not in err and "%" not in err, err
    assert len(list((other / "notes").glob("n-*.md"))) == 600


def test_an_open_that_embeds_many_entries_says_so_once(tmp_path: Path) -> None:
    """A folder whose journal holds entries its vector index lacks (written journal-only) is
    indexed by the next open: one line on stderr counts them first; stdout stays the JSON."""
    from agentmemory import Entry, SqliteStore

    folder = tmp_path / "store"
    folder.mkdir()
    with SqliteStore(folder / "journal.sqlite3") as journal:
        journal.put_many(
            [Entry("notes", f"n-{i}", f"fact {i} about the garden") for i in range(250)]
        )
    args = ("search", "garden", "--path", str(folder), "--embedder", "hashing:64", "--json")
    code, out, err = run(*args, terminal=False)
    assert code == 0, err
    assert err.splitlines() == [
        f"agentmemory: store {folder}: indexing 250 entries (journal records its vector index lacks)"
    ], err
    assert json.loads(out)["hits"]
    code, out, err = run(*args, terminal=False)  # indexed now: nothing to wait for
    assert code == 0 and err == "", err

    # a few entries are not worth a line
    small = tmp_path / "small"
    small.mkdir()
    with SqliteStore(small / "journal.sqlite3") as journal:
        journal.put_many([Entry("notes", f"n-{i}", f"fact {i}") for i in range(20)])
    code, out, err = run(
        "search", "fact", "--path", str(small), "--embedder", "hashing:64", terminal=False
    )
    assert code == 0 and err == "", err


def test_a_markdown_folder_without_its_vectors_says_what_it_embeds(tmp_path: Path) -> None:
    import shutil

    from agentmemory import Entry, FileStore

    folder = tmp_path / "md"
    with FileStore(folder) as store:
        store.put_many([Entry("notes", f"n-{i}", f"fact {i} about the garden") for i in range(220)])
    shutil.rmtree(folder / ".vectors", ignore_errors=True)
    code, out, err = run(
        "search",
        "garden",
        "--path",
        str(folder),
        "--embedder",
        "hashing:64",
        "--json",
        terminal=False,
    )
    assert code == 0, err
    assert (
        f"agentmemory: store {folder}: indexing 220 entries (journal records its .vectors index "
        "lacks)"
    ) in err.splitlines(), err
    assert json.loads(out)["hits"]


@pytest.mark.slow
def test_an_import_shows_no_indexing_lines_of_its_own_batches(tmp_path: Path, source: Path) -> None:
    """A writer's batches are not an open's catch-up: an import into a store folder or a
    Markdown folder prints its result and nothing about indexing."""
    from agentmemory import FileStore

    store = tmp_path / "store"
    with ChromaStore.open(store, embedder=HashingEmbedder()):
        pass
    made = tmp_path / "made"  # a Markdown folder made by the library
    with FileStore(made, embedder=HashingEmbedder()):
        pass
    new = tmp_path / "new"  # a new Markdown folder, indexed from its first import
    new.mkdir()
    (new / "journal.jsonl").touch()
    for target, given in ((store, ()), (made, ()), (new, ("--embedder", "hashing:64"))):
        code, out, err = run("import", str(source), "--path", str(target), *given, terminal=False)
        assert code == 0, err
        assert err == "", (target, err)
        assert out.startswith("imported 600 entries (notes 600)"), out
