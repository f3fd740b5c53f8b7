"""FileStore (a Markdown folder) speed at 500 and 5,000 entries: put, get, reconcile and recall,
with SqliteStore and MemStore measured in the same run as the baselines.

    .venv/bin/python benchmarks/filestore.py [--sizes 500,5000] [--reps 30] [--scopes 1]

Rows (latency in ms, median and p95 over ``--reps`` repetitions; "x base" is the median over the
baseline's median):

* ``put``: replace an existing entry (one unconditional ``put``); FileStore writes the entry file,
  INDEX.md, the journal line and ``.state.json``, each atomically, with fsyncs, after looking for
  hand edits anywhere in the folder (a ``stat`` of every entry file, opening those changed since
  the handle's last write). Baseline: ``SqliteStore.put`` (one WAL transaction,
  ``synchronous=NORMAL``).
* ``put, a fresh handle``: open a new ``FileStore`` on the folder and put once, as a one-shot
  ``agentmemory save`` does; its first write opens every entry file to find hand edits.
* ``get``: read one entry. Baseline: ``SqliteStore.get``.
* ``reconcile, nothing to do``: opens every entry file and compares it with the cursor.
* ``reconcile, 1 hand edit``: the same after a person changed one file (one record appended).
* ``recall bm25``: ``recall(mode="bm25")``, the in-memory BM25 index (built once, before timing).
  Baseline: ``MemStore.recall`` (the same index in memory without files).
* ``recall hybrid`` (at the sizes in ``--hybrid-sizes``, 5,000 by default):
  ``recall(mode="hybrid")`` of a FileStore opened with the hashing embedder (``--dim``, 384 by
  default; about 0.02 ms a query, so the figure is the search cost without the model), its vectors
  in Chroma under ``.vectors/``; baseline ``ChromaStore.recall(mode="hybrid")`` on the same
  entries and embedder (BM25 from FTS5, vectors in Chroma).

Entries are synthetic 8 to 24 word texts spread over ``--scopes`` scopes (1 by default: the worst
case for INDEX.md, which lists the whole scope), each with a description. The store folder is in a
temporary directory on the same disk as ``/tmp``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from agentmemory import ChromaStore, Entry, FileStore, MemStore, SqliteStore
from embedders import HashingEmbedder

WORDS = [f"w{i}" for i in range(3000)] + ["the", "a", "of", "and", "to", "in", "my", "user"]


def corpus(n: int, scopes: int, seed: int = 1) -> list[Entry]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 24))) + "\n"
        out.append(Entry(f"s{i % scopes}", f"e{i}", text, {"description": f"entry {i}"}))
    return out


def timed(fn: Callable[[int], object], reps: int) -> list[float]:
    out = []
    for i in range(reps):
        t = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t) * 1000)
    return out


def p95(ms: Sequence[float]) -> float:
    s = sorted(ms)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


def row(n: int, what: str, ms: Sequence[float], base: float | None) -> str:
    med = statistics.median(ms)
    ratio = f"{med / base:.1f}" if base else ""
    return f"| {n:,} | {what} | {med:.2f} | {p95(ms):.2f} | {ratio} |"


def bench(n: int, args: argparse.Namespace, work: Path) -> list[str]:
    entries = corpus(n, args.scopes)
    t = time.perf_counter()
    fs = FileStore(work / f"folder-{n}")
    fs.put_many(entries)
    print(f"  {n:,}: FileStore filled in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    sq = SqliteStore(work / f"db-{n}.sqlite3")
    sq.put_many(entries)
    mem = MemStore()
    for e in entries:
        mem.put(e)
    rng = random.Random(2)
    picks = [entries[rng.randrange(n)] for _ in range(args.reps)]
    queries = [" ".join(rng.choice(WORDS[:3000]) for _ in range(3)) for _ in range(args.reps)]
    rows = []

    def put(st: FileStore | SqliteStore) -> Callable[[int], object]:
        return lambda i: st.put(picks[i].copy(content=picks[i].content + f" v{i}"))

    ms = timed(put(sq), args.reps)
    rows.append(row(n, "put SqliteStore", ms, None))
    base = statistics.median(ms)
    rows.append(row(n, "put FileStore", timed(put(fs), args.reps), base))

    def fresh_put(i: int) -> object:
        with FileStore(fs.path) as handle:
            return handle.put(picks[i].copy(content=picks[i].content + f" fresh {i}"))

    rows.append(row(n, "put FileStore, a fresh handle", timed(fresh_put, args.reps), base))
    ms = timed(lambda i: sq.get(picks[i].scope, picks[i].name), args.reps)
    base = statistics.median(ms)
    rows.append(row(n, "get SqliteStore", ms, None))
    rows.append(
        row(
            n,
            "get FileStore",
            timed(lambda i: fs.get(picks[i].scope, picks[i].name), args.reps),
            base,
        )
    )
    rows.append(
        row(
            n,
            "reconcile FileStore, nothing to do",
            timed(lambda i: fs.reconcile(), args.reps),
            None,
        )
    )

    def edit_then_reconcile(i: int) -> object:
        p = fs.entry_path(picks[i].scope, picks[i].name)
        p.write_text(p.read_text() + f"hand edit {i}\n")
        return fs.reconcile()

    rows.append(
        row(n, "reconcile FileStore, 1 hand edit", timed(edit_then_reconcile, args.reps), None)
    )
    scopes = sorted({e.scope for e in entries})
    mem.recall(queries[0], scopes=scopes, mode="bm25")
    fs.recall(queries[0], scopes=scopes, mode="bm25")  # builds the index
    ms = timed(lambda i: mem.recall(queries[i], scopes=scopes, mode="bm25"), args.reps)
    base = statistics.median(ms)
    rows.append(row(n, "recall bm25 MemStore", ms, None))
    rows.append(
        row(
            n,
            "recall bm25 FileStore",
            timed(lambda i: fs.recall(queries[i], scopes=scopes, mode="bm25"), args.reps),
            base,
        )
    )
    if n in args.hybrid_sizes:
        emb = HashingEmbedder(args.dim)
        t = time.perf_counter()
        fsv = FileStore(work / f"folder-{n}", embedder=emb)  # embeds every live entry once
        print(
            f"  {n:,}: FileStore vectors built in {time.perf_counter() - t:.1f} s", file=sys.stderr
        )
        ch = ChromaStore.open(work / f"chroma-{n}", embedder=emb)
        ch.put_many(entries)
        for st in (fsv, ch):
            st.recall(queries[0], scopes=scopes, mode="hybrid")
        ms = timed(lambda i: ch.recall(queries[i], scopes=scopes, mode="hybrid"), args.reps)
        base = statistics.median(ms)
        rows.append(row(n, "recall hybrid ChromaStore", ms, None))
        rows.append(
            row(
                n,
                "recall hybrid FileStore",
                timed(lambda i: fsv.recall(queries[i], scopes=scopes, mode="hybrid"), args.reps),
                base,
            )
        )
        fsv.close()
        ch.close()
    sq.close()
    fs.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="500,5000")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--scopes", type=int, default=1)
    ap.add_argument("--hybrid-sizes", default="5000")
    ap.add_argument("--dim", type=int, default=384)
    args = ap.parse_args()
    args.hybrid_sizes = {int(x) for x in args.hybrid_sizes.split(",") if x}
    load = os.getloadavg()[0]
    rows: list[str] = []
    with tempfile.TemporaryDirectory(prefix="filestore-bench-") as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            rows.extend(bench(n, args, Path(tmp)))
    print("| entries | operation | median ms | p95 ms | x base |")
    print("|---:|---|---:|---:|---:|")
    for r in rows:
        print(r)
    print(f"\nload average at start {load:.2f}, at end {os.getloadavg()[0]:.2f}; {args.reps} reps")


if __name__ == "__main__":
    main()
