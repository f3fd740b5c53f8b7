"""Benchmark the embedders: cold start, per-query latency and throughput of each path.

Run from the repository root:

    .venv/bin/python benchmarks/embedding_speed.py [--threads 1] [--runs 3] [--queries 60] [--batches 15]

For each path (sentence-transformers, ONNX, hashing) it measures:

- cold start: a fresh ``python`` subprocess that imports ``embedders``, builds the embedder and
  embeds one sentence; "in-process" is timed inside the child from before ``import embedders`` to
  after the first vector, "process" is the parent's wall clock around the whole child (adds the
  interpreter's own start). Median of ``--runs`` children. The ONNX path is measured with its
  export already cached (the usual case) and once more with an empty cache (the first run ever,
  which exports the model with torch).
- per-query latency: ``embed([one sentence])`` repeated ``--queries`` times after a warm-up;
  median and 95th percentile, in ms.
- throughput: ``--batches`` calls of ``embed`` on 32 short sentences; sentences per second.

Ratios are against sentence-transformers measured in the same run. Timings on a shared machine
are upper bounds; the load average is printed with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# This file is named like the package it measures: when run as a script its folder comes first on
# sys.path and ``import embedders`` would import this file. Drop that entry.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
_ROOT = os.path.dirname(_HERE)

BATCH = 32

_SUBJECTS = ["the user", "our team", "the build", "my sister", "the API", "the garden", "Alice"]
_VERBS = ["prefers", "needs", "mentioned", "avoids", "scheduled", "fixed", "asked about"]
_OBJECTS = [
    "dark mode in the editor",
    "a retry on HTTP 503",
    "tomatoes on the balcony",
    "the quarterly report",
    "vim key bindings",
    "a trip to Lisbon in May",
    "the flaky integration test",
]


def sentences(n: int, offset: int = 0) -> list[str]:
    """``n`` short, distinct, deterministic sentences (5 to 10 words)."""
    out = []
    for i in range(offset, offset + n):
        s = _SUBJECTS[i % len(_SUBJECTS)]
        v = _VERBS[(i // len(_SUBJECTS)) % len(_VERBS)]
        o = _OBJECTS[(i // 3) % len(_OBJECTS)]
        out.append(f"{s} {v} {o} (note {i})")
    return out


_CHILD = """
import json, os, sys, time
t0 = time.perf_counter()
import embedders
kwargs = json.loads(sys.argv[2])
e = embedders.get(sys.argv[1], **kwargs)
v = e.embed(["the cat sat on the mat"])
t1 = time.perf_counter()
heavy = [m for m in ("torch", "sentence_transformers", "onnxruntime") if m in sys.modules]
print(json.dumps({"in_process_s": t1 - t0, "dim": int(v.shape[1]), "loaded": heavy}))
"""


@dataclass
class Cold:
    in_process_s: float
    process_s: float
    loaded: list[str]


def cold_start(name: str, kwargs: dict[str, object], runs: int, env: dict[str, str]) -> Cold:
    """Median over ``runs`` fresh subprocesses of import + build + first embed."""
    inner, outer = [], []
    loaded: list[str] = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, name, json.dumps(kwargs)],
            capture_output=True,
            text=True,
            env=env,
            cwd=_ROOT,
            check=False,
        )
        outer.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise RuntimeError(f"cold start of {name} failed:\n{proc.stderr[-2000:]}")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        inner.append(result["in_process_s"])
        loaded = result["loaded"]
    return Cold(statistics.median(inner), statistics.median(outer), loaded)


@dataclass
class Warm:
    median_ms: float
    p95_ms: float
    sentences_per_s: float


def warm(embed: Callable[[list[str]], np.ndarray], queries: int, batches: int) -> Warm:
    """Per-query latency (single sentences) and batch throughput of a loaded embedder."""
    embed(sentences(BATCH, offset=10_000))  # warm-up: load, allocate
    single = sentences(queries, offset=20_000)
    times = []
    for text in single:
        start = time.perf_counter()
        embed([text])
        times.append((time.perf_counter() - start) * 1000.0)
    batch_texts = [sentences(BATCH, offset=30_000 + BATCH * b) for b in range(batches)]
    start = time.perf_counter()
    for texts in batch_texts:
        embed(texts)
    elapsed = time.perf_counter() - start
    return Warm(
        statistics.median(times),
        float(np.percentile(times, 95)),
        BATCH * batches / elapsed,
    )


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run every measurement, print one Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch / onnxruntime threads")
    parser.add_argument("--runs", type=int, default=3, help="cold-start subprocesses per path")
    parser.add_argument("--queries", type=int, default=60, help="single-sentence embeds")
    parser.add_argument("--batches", type=int, default=15, help="batches of 32 for throughput")
    args = parser.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import embedders

    cache = tempfile.mkdtemp(prefix="agentmemory-bench-")
    env = {**os.environ, embedders.CACHE_DIR_ENV: cache}
    threads = {"threads": args.threads}

    rows: list[tuple[str, str, float, float, float, float, float, str]] = []

    # ONNX first run ever: empty cache, exports with torch (one run: it fills the cache).
    first = cold_start(embedders.ONNX_EMBEDDER, threads, 1, env)
    paths: list[tuple[str, str, dict[str, object]]] = [
        ("sentence-transformers", embedders.DEFAULT_EMBEDDER, threads),
        ("onnx (export cached)", embedders.ONNX_EMBEDDER, threads),
        ("hashing:384 (baseline)", "hashing:384", {}),
    ]
    for label, name, kwargs in paths:
        cold = cold_start(name, kwargs, args.runs, env)
        extra: dict[str, object] = {"cache_dir": cache} if name.startswith("onnx") else {}
        embedder = embedders.get(name, **kwargs, **extra)
        w = warm(embedder.embed, args.queries, args.batches)
        rows.append(
            (
                label,
                name,
                cold.in_process_s,
                cold.process_s,
                w.median_ms,
                w.p95_ms,
                w.sentences_per_s,
                ",".join(cold.loaded) or "-",
            )
        )

    base = rows[0]
    load = os.getloadavg()
    print(
        f"embedders benchmark: threads={args.threads}, cold runs={args.runs}, "
        f"queries={args.queries}, batches={args.batches}x{BATCH}, cpus={os.cpu_count()}, "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print()
    print(
        "| path | cold start s (in-process) | cold start s (process) | query median ms "
        "| query p95 ms | throughput sent/s | x sentence-transformers | heavy modules loaded |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for label, _, inner, outer, med, p95, tput, loaded in rows:
        print(
            f"| {label} | {inner:.2f} | {outer:.2f} | {med:.2f} | {p95:.2f} | {tput:.0f} "
            f"| {tput / base[6]:.1f} | {loaded} |"
        )
    print(
        f"| onnx (first run: export) | {first.in_process_s:.2f} | {first.process_s:.2f} "
        f"| | | | | {','.join(first.loaded) or '-'} |"
    )
    print()
    print(
        "Cold start: fresh subprocess, import + build + first embed (median). Query: "
        "embed([one sentence]) after warm-up. Throughput: batches of 32 short sentences."
    )


if __name__ == "__main__":
    main()
