"""Shared mode against embedded, in one run (docs/storage.md#several-processes).

    .venv/bin/python benchmarks/shared_mode.py [--sizes 10000,100000] [--queries 40]
        [--checks 2000] [--cold 5]

For each size, one store folder is filled with the synthetic entries of ``benchmarks/recall.py``
(hashing embedder, 384 dimensions, so that building 100k stays minutes: the vector leg's cost
is Chroma's, not the model's), indexed embedded (``DIR/chroma``) and on the folder's own Chroma
server (``agentmemory server start``; ``DIR/chroma-server``). Rows (medians; p95 beside them):

* ``hybrid recall``: ``ChromaStore.recall(mode="hybrid")`` of a query, embedded and shared (ms);
  the ratio column is shared over embedded in the same run.
* ``journal check``: what the holder of an index pays per search or write to find other
  processes' records when there are none (``max(seq)`` of the journal against the cursor), in
  microseconds; its ratio is against the embedded hybrid recall.
* ``agentmemory search`` cold start: the whole command as a new process (``--cold`` runs), against
  the running server and embedded (no server), at the first size only (s).

The server runs on 127.0.0.1 and is stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from recall import SCOPE, corpus  # noqa: E402

from agentmemory import ChromaStore  # noqa: E402
from agentmemory.stores.chroma.server import start_server, stop_server  # noqa: E402
from embedders import HashingEmbedder  # noqa: E402

AGENTMEMORY = str(Path(sys.executable).parent / "agentmemory")
BATCH = 2000


def timed(fn: Callable[[int], object], reps: int) -> list[float]:
    """Wall times of ``fn(i)`` for ``i`` in ``range(reps)``, in ms."""
    out = []
    for i in range(reps):
        t = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t) * 1000)
    return out


def hybrid_ms(st: ChromaStore, qs: Sequence[str]) -> list[float]:
    """Wall times of a hybrid recall of each query in ``qs``, in ms."""
    return timed(lambda i: st.recall(qs[i], scopes=[SCOPE], mode="hybrid"), len(qs))


def p95(ms: Sequence[float]) -> float:
    return sorted(ms)[max(0, int(len(ms) * 0.95) - 1)]


def fill(folder: Path, n: int) -> list[str]:
    entries, queries = corpus(n)
    with ChromaStore.open(folder, embedder=HashingEmbedder(384)) as st:
        for start in range(0, n, BATCH):
            st.put_many(entries[start : start + BATCH])
    return queries


def cold_start(folder: Path, query: str, reps: int) -> list[float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEMORY_")}
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        subprocess.run(
            [AGENTMEMORY, "search", query, "--path", str(folder)],
            check=True,
            capture_output=True,
            env=env,
        )
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--checks", type=int, default=2000)
    ap.add_argument("--cold", type=int, default=5)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[tuple[str, str, str, str, str]] = []
    work = Path(tempfile.mkdtemp(prefix="shared-mode-bench-"))
    try:
        for n in sizes:
            folder = work / f"store-{n}"
            t = time.perf_counter()
            queries = fill(folder, n)
            print(f"{n}: filled embedded in {time.perf_counter() - t:.0f} s", file=sys.stderr)
            qs = [queries[i % len(queries)] for i in range(args.queries)]
            with ChromaStore.open(folder, embedder=HashingEmbedder(384)) as st:
                st.recall(qs[0], scopes=[SCOPE], mode="hybrid")
                emb = hybrid_ms(st, qs)
                check = timed(lambda i: st._follower.absorb(), args.checks)
            if n == sizes[0]:
                cold_embedded = cold_start(folder, qs[0], args.cold)
            t = time.perf_counter()
            record = start_server(folder)
            try:
                with ChromaStore.open(folder, embedder=HashingEmbedder(384)) as st:
                    print(
                        f"{n}: server up and index replayed in {time.perf_counter() - t:.0f} s",
                        file=sys.stderr,
                    )
                    assert st.server is not None and st.verify().ok
                    st.recall(qs[0], scopes=[SCOPE], mode="hybrid")
                    shared = hybrid_ms(st, qs)
                if n == sizes[0]:
                    cold_shared = cold_start(folder, qs[0], args.cold)
            finally:
                stop_server(folder)
            e, s = statistics.median(emb), statistics.median(shared)
            rows.append(
                (f"{n:,}", "hybrid recall, embedded", f"{e:.2f} ms", f"{p95(emb):.2f}", "1.00")
            )
            rows.append(
                (
                    f"{n:,}",
                    "hybrid recall, shared",
                    f"{s:.2f} ms",
                    f"{p95(shared):.2f}",
                    f"{s / e:.2f}",
                )
            )
            c = statistics.median(check)
            rows.append(
                (
                    f"{n:,}",
                    "journal check per call",
                    f"{c * 1000:.1f} us",
                    f"{p95(check) * 1000:.1f}",
                    f"{c / e:.3f}",
                )
            )
            del record
        ce, cs = statistics.median(cold_embedded), statistics.median(cold_shared)
        rows.append(
            (
                f"{sizes[0]:,}",
                "agentmemory search, embedded",
                f"{ce:.2f} s",
                f"{max(cold_embedded):.2f}",
                "1.00",
            )
        )
        rows.append(
            (
                f"{sizes[0]:,}",
                "agentmemory search, shared",
                f"{cs:.2f} s",
                f"{max(cold_shared):.2f}",
                f"{cs / ce:.2f}",
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    head = ("entries", "what", "median", "p95/max", "ratio")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]
    for r in [head, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
