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
