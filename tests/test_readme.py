"""The README's first screen: what a new user reads and runs before anything else.

It must hold the install command, the ten-line example and the test command, and the example must
run as printed (in a fresh interpreter, in an empty folder, offline, with the packaged model)."""

from __future__ import annotations

import os
import re
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
