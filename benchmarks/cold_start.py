"""The command line's cold start: what an agent that shells out to ``agentmemory`` pays per call.

Issue 25 asks for ``agentmemory search`` (hybrid, embedded store of 1,000 entries) in 0.8 s or
less, median of 5, and ``agentmemory mcp`` answering ``initialize`` in 1.0 s or less. This script
builds such a store (``benchmarks/recall.py``'s synthetic short entries, the default embedder:
the packaged all-MiniLM-L6-v2 through onnxruntime, loaded by path, nothing downloaded), then
starts each command ``--runs`` times as a fresh process and times it from outside, wall seconds
from the start to the exit (for ``mcp``: to the answer to ``initialize`` on its stdout):

- floors, in the same run: ``python -c pass`` (the interpreter) and ``python -c "import
  chromadb"`` (what a search of the vector index cannot skip while the vectors live in Chroma);
- ``search`` (hybrid), ``search --mode bm25``, ``list`` and ``mcp`` initialize, from this
  checkout; with ``--vs REV``, the same commands from that revision too (``git archive`` into a
  temporary folder, put first on ``PYTHONPATH``), alternated run by run with this checkout's, and
  the ratio of the medians.

Both trees are byte-compiled first (``compileall``), as an installed package is: a shell with
``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile every module of ours on every start (about
0.2 s here), which no user pays.

    .venv/bin/python benchmarks/cold_start.py [--entries 1000] [--runs 7] [--vs REV]

About a minute to build the store, then about 2 s per command run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

_ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _ROOT / "benchmarks"]
sys.path.insert(0, str(_ROOT))
sys.path.insert(1, str(_ROOT / "benchmarks"))

from recall import SCOPE, corpus, p95  # noqa: E402

from agentmemory import open_store  # noqa: E402

PACKAGES = ("agentmemory", "embedders", "recallers")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "cold-start-bench", "version": "0"},
    },
}


def compile_tree(tree: Path) -> None:
    """Byte-compile ``tree``'s packages in place (quietly), whatever the shell's
    ``PYTHONDONTWRITEBYTECODE`` says."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *(str(tree / p) for p in PACKAGES)],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )


def export_revision(rev: str, into: Path) -> Path:
    """The packages of ``rev`` (``git archive``) unpacked under ``into``, byte-compiled."""
    archive = subprocess.run(
        ["git", "-C", str(_ROOT), "archive", rev, *PACKAGES], check=True, capture_output=True
    ).stdout
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    compile_tree(into)
    return into


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree)}


def time_command(argv: Sequence[str], tree: Path) -> float:
    """Wall seconds of one run of ``argv`` with ``tree`` first on the path; fails loudly when
    the command fails."""
    start = time.perf_counter()
    subprocess.run(argv, env=_env(tree), check=True, capture_output=True, timeout=120)
    return time.perf_counter() - start


def time_initialize(argv: Sequence[str], tree: Path) -> float:
    """Wall seconds from starting the MCP server ``argv`` to its answer to ``initialize``."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        env=_env(tree),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(INITIALIZE) + "\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        took = time.perf_counter() - start
        if answer.get("id") != 1 or "result" not in answer:
            raise RuntimeError(f"initialize was not answered: {answer}")
        return took
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def row(what: str, secs: Sequence[float], base: Sequence[float] | None = None) -> str:
    med = statistics.median(secs)
    ratio = f"{med / statistics.median(base):.2f}" if base else ""
    return f"| {what} | {med:.2f} | {p95(secs):.2f} | {min(secs):.2f} | {len(secs)} | {ratio} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--vs", metavar="REV", help="also time the commands of this revision")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="agentmemory-cold-"))
    try:
        compile_tree(_ROOT)
        trees = {"this checkout": _ROOT}
        if args.vs:
            trees[args.vs] = export_revision(args.vs, work / "vs")
        folder = work / "store"
        entries, queries = corpus(args.entries)
        started = time.perf_counter()
        with open_store(folder) as store:
            store.put_many(entries)
        print(f"store: {args.entries:,} entries built in {time.perf_counter() - started:.1f} s")
        cli = [sys.executable, "-m", "agentmemory"]
        where = ["--path", str(folder)]
        commands = {
            "search (hybrid)": [*cli, "search", queries[0], *where, "--scope", SCOPE],
            "search --mode bm25": [*cli, "search", queries[0], *where, "--mode", "bm25"],
            "list": [*cli, "list", SCOPE, *where],
            "mcp: initialize answered": [*cli, "mcp", *where, "--scope", SCOPE],
        }
        floors = {
            "floor: python -c pass": [sys.executable, "-c", "pass"],
            "floor: python -c 'import chromadb'": [sys.executable, "-c", "import chromadb"],
        }
        times: dict[tuple[str, str], list[float]] = {}
        for label, argv in floors.items():
            time_command(argv, _ROOT)  # one warm-up run, not counted
            times[(label, "")] = [time_command(argv, _ROOT) for _ in range(args.runs)]
        for label, argv in commands.items():
            timer = time_initialize if label.startswith("mcp") else time_command
            for tree in trees.values():
                timer(argv, tree)  # one warm-up run each, not counted (the probe's record)
            for _ in range(args.runs):
                for name, tree in trees.items():
                    times.setdefault((label, name), []).append(timer(argv, tree))
        load = os.getloadavg()[0]
        print(f"\n{args.runs} runs each, wall seconds, load average {load:.1f} at the end\n")
        print("| command | median s | p95 s | min s | runs | x the other revision |")
        print("|---|---|---|---|---|---|")
        for (label, name), secs in times.items():
            what = f"{label} ({name})" if name else label
            other = [v for (lb, n), v in times.items() if lb == label and n and n != name]
            base = other[0] if other and name == "this checkout" else None
            print(row(what, secs, base))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
