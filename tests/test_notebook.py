"""notebooks/recall_quality.ipynb: built from its generator, and executed end to end with nbclient
on a small slice of LoCoMo (the real default embedder) and of SciFact (the hashing embedder), in
a kernel that runs this interpreter (so it works in a fresh virtual environment)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import need_shared_data

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "recall_quality.ipynb"
BUILDER = REPO / "notebooks" / "build_recall_quality.py"
KERNEL = "agentmemory-test"


def builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_recall_quality", BUILDER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_notebook_is_what_its_generator_builds() -> None:
    assert NOTEBOOK.read_text(encoding="utf-8") == builder().text(), (
        "notebooks/recall_quality.ipynb differs from its generator: edit "
        "notebooks/build_recall_quality.py and run it"
    )
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    assert all(not c.get("outputs") for c in cells if c["cell_type"] == "code")
    assert "parameters" in cells[1]["metadata"]["tags"]


def execute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **params: str) -> list[Any]:
    """Run the notebook with ``RECALL_<NAME>`` environment parameters; return its code cells."""
    import nbformat
    from nbclient import NotebookClient

    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "agentmemory test (this interpreter)",
                "language": "python",
            }
        ),
        encoding="utf-8",
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("RECALL_STORE_CACHE", str(tmp_path / "stores"))
    for name, value in params.items():
        monkeypatch.setenv(f"RECALL_{name}", value)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb, timeout=600, kernel_name=KERNEL, resources={"metadata": {"path": str(REPO)}}
    ).execute()
    return [c for c in nb.cells if c.cell_type == "code"]


def text_of(cells: list[Any]) -> str:
    return "".join(o.get("text", "") for c in cells for o in c.outputs if o.output_type == "stream")


def images(cells: list[Any]) -> int:
    return sum(1 for c in cells for o in c.outputs if "image/png" in o.get("data", {}))


@pytest.mark.slow
def test_notebook_runs_on_a_locomo_slice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = need_shared_data("locomo/locomo-dev.json")
    cells = execute(tmp_path, monkeypatch, DATA=str(data), SLICE="1", QUESTIONS="30")
    out = text_of(cells)
    # the embedder every new store, the demo and the command line's eval take
    assert "locomo: 30 queries, 1 store(s), embedder onnx:all-MiniLM-L6-v2" in out
    for method in ("bm25", "vector", "hybrid"):
        assert f"{method:>7}: R@1=" in out  # a point of each Recall@k curve
    assert "recall@5: DRAGON 0.567" in out and "recall@10: DRAGON 0.662" in out
    assert "category" in out and "temporal" in out
    assert "== hybrid wins ==" in out and "== hybrid loses ==" in out
    assert images(cells) == 2  # the Recall@k curve and the per-category bars


@pytest.mark.slow  # starts a Jupyter kernel (a server process) and loads matplotlib
def test_notebook_runs_on_a_scifact_slice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = need_shared_data("scifact")
    cells = execute(
        tmp_path, monkeypatch, DATASET="scifact", DATA=str(folder), SLICE="10", EMBEDDER="hashing"
    )
    out = text_of(cells)
    assert "scifact: 10 queries" in out
    assert "nDCG@10   bm25: published 0.665" in out
    assert "nDCG@10 vector: published 0.645" in out
    assert "scifact has no categories" in out
    assert images(cells) == 1
