"""What the near-duplicate check costs a save, at 10k and 100k entries in one scope
(docs/contract.md#near-duplicates-at-save-time).

    .venv/bin/python benchmarks/duplicate_check.py [--sizes 10000,100000] [--saves 60] [--dim 384]
        [--embedder onnx:all-MiniLM-L6-v2]

One ChromaStore per size, filled with the synthetic short entries of ``benchmarks/recall.py``
and hashing vectors (``--dim``; the real model's embedding of the new text, about 5 ms here,
is in the save and once more in the check: ``--embedder NAME`` measures with a real model, on
smaller sizes since every entry is embedded to fill the store). Rows (ms,
median and p95 over ``--saves`` saves of new entries, the two kinds alternated in the same run):

* ``memory_save, duplicates off``: the baseline, a ``memory_save`` tool call that does not look.
* ``memory_save, duplicates report``: the default, which looks first.
* ``the check alone``: :func:`agentmemory.duplicates.near_duplicates` for a new text.

The last column is the row's median over the baseline's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from recall import SCOPE, corpus, p95  # the entries and the percentile recall.py uses

from agentmemory import ChromaStore, Entry
from agentmemory.duplicates import near_duplicates
from agentmemory.tools import tools
from embedders import HashingEmbedder


def bench(n: int, saves: int, embedder: Any, work: Path) -> list[list[str]]:
    entries, queries = corpus(n + 2 * saves)
    stored, fresh = entries[:n], entries[n:]
    t = time.perf_counter()
    store = ChromaStore.open(work / f"chroma-{n}", embedder=embedder)
    for start in range(0, n, 5000):
        store.put_many(stored[start : start + 5000])
    print(f"  {n:,}: filled in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    with store:
        kits = {
            policy: {t.name: t for t in tools(store, [SCOPE], duplicates=policy)}
            for policy in ("off", "report")
        }
        ms: dict[str, list[float]] = {"off": [], "report": [], "check": []}
        for i in range(saves):
            for policy in ("off", "report") if i % 2 == 0 else ("report", "off"):
                e = fresh[2 * i + (policy == "report")]
                t = time.perf_counter()
                got = kits[policy]["memory_save"]({"name": e.name, "content": e.content})
                ms[policy].append((time.perf_counter() - t) * 1000)
                assert not got.is_error, got.text
            probe = Entry(SCOPE, f"probe-{i}", queries[i % len(queries)])
            t = time.perf_counter()
            near_duplicates(store, probe, [SCOPE])
            ms["check"].append((time.perf_counter() - t) * 1000)
    base = statistics.median(ms["off"])
    rows = []
    for key, what in (
        ("off", "memory_save, duplicates off"),
        ("report", "memory_save, duplicates report"),
        ("check", "the check alone"),
    ):
        med = statistics.median(ms[key])
        rows.append(
            [
                f"{n:,}",
                what,
                f"{med:.2f}",
                f"{p95(ms[key]):.2f}",
                str(len(ms[key])),
                f"{med / base:.2f}",
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--saves", type=int, default=60)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--embedder", default=None, help="a registry name (default: hashing)")
    parser.add_argument("--threads", type=int, default=1)  # read by recall.py before numpy loads
    args = parser.parse_args()
    rows: list[list[str]] = []
    if args.embedder is None:
        embedder: Any = HashingEmbedder(args.dim)
    else:
        import embedders

        embedder = embedders.get(args.embedder)
    print(f"embedder {embedder.name}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            rows += bench(n, args.saves, embedder, Path(tmp))
    print("| entries | what | median ms | p95 ms | saves | x off |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
