"""The README's first screen: what a new user reads and runs before anything else.

It must hold the install command, the ten-line example and the test command, and the example must
run as printed (in a fresh interpreter, in an empty folder, offline, with the packaged model)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
FIRST_SCREEN_LINES = 45
"""How many lines of the README count as its first screen here."""


def first_python_block(text: str) -> tuple[str, int]:
    """The first ```python block of ``text`` and the line it ends on (1-based)."""
    match = re.search(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)
    assert match is not None, "README.md has no ```python block"
    return match.group(1), text[: match.end()].count("\n") + 1


def test_first_screen_has_install_example_and_test_command() -> None:
    text = README.read_text(encoding="utf-8")
    head = "\n".join(text.splitlines()[:FIRST_SCREEN_LINES])
    assert re.search(r"^pip install .*-e \.", head, flags=re.M), "no install command up front"
    assert re.search(r"^make test\b", head, flags=re.M), "no test command up front"
    example, ends_on = first_python_block(text)
    assert ends_on <= FIRST_SCREEN_LINES, f"the example ends on line {ends_on}"
    code_lines = [ln for ln in example.splitlines() if ln.strip()]
    assert len(code_lines) <= 10, f"the example has {len(code_lines)} lines, not ten"


@pytest.mark.slow
def test_the_readme_example_runs_as_printed(tmp_path: Path) -> None:
    example, _ = first_python_block(README.read_text(encoding="utf-8"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    out = subprocess.run(
        [sys.executable, "-c", example],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # "what theme does the user like?" is about the editor preference, not the build rule
    assert lines and lines[0].startswith("user/editor "), out.stdout
    assert (tmp_path / "memory" / "journal.sqlite3").is_file()


def command_walk() -> list[list[str]]:
    """The README's command-line walk (the ```bash block under "## Command line"), from its
    first line to ``verify``: each line's words, its comment and ``[optional]`` parts dropped."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Command line\n", 1)[1]
    match = re.search(r"^```bash\n(.*?)^```$", section, flags=re.S | re.M)
    assert match is not None, "no ```bash block under ## Command line"
    walk: list[list[str]] = []
    for line in match.group(1).splitlines():
        line = re.sub(r"\s+#\s.*$", "", line)  # a comment
        line = re.sub(r"\s*\[[^\]]*\]", "", line)  # [--optional parts]
        words = shlex.split(line)
        assert words[0] == "agentmemory", line
        walk.append(words[1:])
        if words[1] == "verify":
            return walk
    raise AssertionError("the walk has no verify line")


@pytest.mark.slow
def test_the_command_line_walk_runs_as_printed(tmp_path: Path) -> None:
    """Every line of the walk, in order, on one store, exits 0; the session the walk's save names
    is the one its forget-session forgets, so that line forgets what it says."""
    from agentmemory import ChromaStore
    from embedders import HashingEmbedder

    store = tmp_path / "store"
    with ChromaStore.open(store, embedder=HashingEmbedder()):  # a model-free store to walk on
        pass
    script = Path(sys.executable).with_name("agentmemory")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    said: dict[str, str] = {}
    for args in command_walk():
        r = subprocess.run(
            [str(script), *args, "--path", str(store)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        said[args[0]] = r.stdout
    assert said["forget-session"].splitlines()[-1] == (
        "session sess-1: forgot 1 entry in user, project"
    ), said["forget-session"]
    assert "purge" in said["journal"] and "session sess-1" in said["journal"]
