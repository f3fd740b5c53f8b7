"""benchmarks/fusion_replay.py end to end on one LoCoMo conversation with the hashing embedder:
the replay of the default setting must give exactly what ``store.recall`` returns."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "fusion_replay.py"


@pytest.fixture
def data_dir(shared_data: Callable[[str], Path]) -> Path:
    """../shared/data, or a skip (a failure under CI=true) when it is absent."""
    return shared_data("")


def _rows(text: str, first_cell: str) -> list[list[str]]:
    """The markdown table rows of ``text`` whose first cell is ``first_cell``, split in cells."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_cell:
            rows.append(cells)
    return rows


def test_replay_reproduces_the_store_and_prints_both_tables(data_dir: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--dataset",
            "locomo",
            "--limit",
            "1",
            "--data",
            str(data_dir),
            "--embedder",
            "hashing",
            "--store-cache",
            str(tmp_path / "stores"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout

    # The check table: the store's own bm25 (FTS5) and hybrid rankings, query by query, are
    # what the replay computes from the collected legs.
    checks = _rows(out, "LoCoMo")
    assert [c[1] for c in checks] == [
        "bm25 (FTS5 / BM25Index)",
        "hybrid (store.recall / default setting)",
    ]
    bm25, hybrid = checks
    same, total = (int(x) for x in bm25[-1].split(" / "))
    assert total > 0 and same == total, bm25
    assert bm25[2] == bm25[3], bm25  # store and replay metrics
    # Chroma's HNSW search is approximate and depends on how many neighbours are asked for: the
    # replay reads the vector leg 100 deep, the store 10 deep, so a query or two may differ.
    same, total = (int(x) for x in hybrid[-1].split(" / "))
    assert total > 0 and same >= 0.95 * total, hybrid

    # The settings table: five rows; neither stemming nor leg depth touches the vector leg.
    header = _rows(out, "setting")[0]
    assert header == ["setting", "LoCoMo bm25", "LoCoMo vector", "LoCoMo hybrid"]
    table = out.split("| setting |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in table]
    assert len(rows) == 5
    assert rows[0][2] != "same" and [r[2] for r in rows[1:]] == ["same"] * 4
    # Reading the legs deeper does not change BM25 alone (row 2 is "same" as row 1), and the
    # rows without stemming give BM25 the same numbers (rows 1 and 4).
    assert rows[1][1] == "same" and rows[3][1] == rows[0][1]

    # The split-half table: conversation conv-30 (the first) is in half A, so B is empty.
    assert _rows(out, "B (held out)")[0][1:] == ["- / -", "- / -"]
