"""What judging entries out of date costs a recall (docs/kinds.md#out-of-date-on-purpose-only).

Builds a store of N entries (30 random words each from a 3,000-word vocabulary) in one scope, of
which S carry a ``supersedes`` meta, and times ``recall(query, limit=5)`` (the default, which
leaves out-of-date entries out) against ``recall(..., include_superseded=True)`` (no judging: the
baseline, measured in the same run), BM25 only so no model is loaded. Prints a table of medians.

    .venv/bin/python benchmarks/out_of_date.py [--entries 10000] [--superseding 0,100] [--queries 200]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agentmemory import Entry, MemStore, SqliteStore, Store


def build(make: Callable[[], Store], n: int, superseding: int, rng: random.Random) -> Store:
    words = [f"w{i}" for i in range(3000)]
    st = make()
    entries = []
    for i in range(n):
        meta = {"supersedes": f"n{i - 1}"} if 0 < i <= superseding else None
        entries.append(Entry("notes", f"n{i}", " ".join(rng.choices(words, k=30)), meta))
    put_many = getattr(st, "put_many", None)
    if callable(put_many):
        put_many(entries)
    else:
        for e in entries:
            st.put(e)
    return st


def median_ms(st: Store, queries: list[str], include: bool) -> float:
    times = []
    for q in queries:
        t0 = time.perf_counter()
        st.recall(q, scopes=["notes"], limit=5, mode="bm25", include_superseded=include)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=10_000)
    ap.add_argument("--superseding", default="0,100")
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    rng = random.Random(0)
    words = [f"w{i}" for i in range(3000)]
    queries = [" ".join(rng.choices(words, k=3)) for _ in range(args.queries)]
    print(
        "| store | entries | superseding | baseline ms (include_superseded) | default ms | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for s in (int(x) for x in args.superseding.split(",")):
            makers: dict[str, Callable[[], Store]] = {
                "MemStore": MemStore,
                "SqliteStore": lambda s=s: SqliteStore(Path(tmp) / f"s{s}.sqlite3"),
            }
            for name, make in makers.items():
                st = build(make, args.entries, s, rng)
                try:
                    median_ms(st, queries[:20], True)  # warm the caches
                    base = median_ms(st, queries, True)
                    judged = median_ms(st, queries, False)
                finally:
                    st.close()
                print(
                    f"| {name} | {args.entries} | {s} | {base:.2f} | {judged:.2f} | "
                    f"{judged / base:.2f} |"
                )


if __name__ == "__main__":
    main()
