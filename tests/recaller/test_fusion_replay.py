"""benchmarks/fusion_replay.py end to end on one LoCoMo conversation with the hashing embedder:
the replay of the default setting must give exactly what ``store.recall`` returns."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
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


def _run(data_dir: Path, tmp_path: Path) -> str:
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
            "--rankings",
            str(tmp_path / "rankings"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_replay_reproduces_the_store_and_prints_the_tables(data_dir: Path, tmp_path: Path) -> None:
    out = _run(data_dir, tmp_path)
    assert "collected in" in out.splitlines()[0]

    # The check table: the store's own bm25 (FTS5) and hybrid rankings, query by query and at
    # both answer sizes, are what the replay computes from the collected legs.
    checks = _rows(out, "LoCoMo")
    checks = [c for c in checks if len(c) == 6]
    assert [(c[1], c[2]) for c in checks] == [
        ("5", "bm25 (FTS5 / BM25Index)"),
        ("5", "hybrid (store.recall / default setting)"),
        ("10", "bm25 (FTS5 / BM25Index)"),
        ("10", "hybrid (store.recall / default setting)"),
    ]
    for row in checks:
        same, total = (int(x) for x in row[-1].split(" / "))
        if "bm25" in row[2]:
            assert total > 0 and same == total, row
            assert row[3] == row[4], row  # store and replay metrics
        else:
            # Chroma's HNSW search is approximate and depends on how many neighbours are asked
            # for: the replay reads the vector leg 100 deep, the store maybe fewer.
            assert total > 0 and same >= 0.95 * total, row

    # The settings table: one row per setting; nothing but the tokenizer changes a leg alone.
    header = _rows(out, "setting")[0]
    assert header == ["setting", "LoCoMo bm25", "LoCoMo vector", "LoCoMo hybrid"]
    table = out.split("| setting |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in table]
    assert len(rows) == 11
    assert rows[0][2] != "same" and [r[2] for r in rows[1:]] == ["same"] * 10
    assert rows[1][1] != "same" and [r[1] for r in rows[2:]] == ["same"] * 9

    # The rule table: both answer sizes, each leg and the hybrid, five metrics.
    rule = [r for r in _rows(out, "LoCoMo") if len(r) == 8]
    assert [(r[1], r[2]) for r in rule] == [
        (n, m) for n in ("5", "10") for m in ("bm25", "vector", "hybrid")
    ]
    # at limit 5 a ranking holds 5 hits: Recall@10 is Recall@5
    assert all(r[4] == r[5] for r in rule[:3])

    # The split-half table: conversation conv-30 (the first) is in half A, so B is empty.
    assert _rows(out, "B (held out)")[0][1:] == ["- / - / -", "- / - / -", "-"]

    # A second run reads the kept rankings and opens no store.
    again = _run(data_dir, tmp_path)
    assert "read from" in again.splitlines()[0]
    assert (
        again.split("\n", 1)[1].rsplit("time:", 1)[0] == out.split("\n", 1)[1].rsplit("time:", 1)[0]
    )
