"""One scope at 100k, 300k and (with --million) 1M entries: the build rate, the bytes on disk,
each leg, the hybrid and a write followed by a search, with bm25s and numpy exact cosine as
baselines in the same run (issue 25's table; benchmarks/README.md, "Scale").

    .venv/bin/python benchmarks/scale.py [--sizes 100000,300000] [--million] [--queries 40]
        [--writes 20] [--dim 384] [--batch 20000] [--keep DIR] [--profile]

Entries are ``benchmarks/recall.py``'s synthetic short texts (8 to 24 words from a Zipf
vocabulary) with hashing vectors (``--dim``), put through ``ChromaStore.put_many`` in batches of
``--batch``: everything a put does (journal, lexical index, vectors). 1M takes about 35 to 45
minutes here (most of it the build); 300k about 8.

Rows (ms, median and p95 over ``--queries`` question-like queries, ``recall(limit=10)``):
``bm25 leg``, ``vector leg`` (the hashing query embedding included, about 0.02 ms), ``hybrid``
and ``write then search`` (one ``put`` then one hybrid ``recall``); baselines: ``bm25s`` (its
index built over the same texts, its build time reported) and ``numpy exact cosine`` (a
``(n, dim)`` float32 product and ``argpartition``). Then the build rate (entries per second over
the first batch, the last batch and overall) and the bytes on disk by part: the journal file's
tables (sqlite's ``dbstat``: entries, journal, the FTS5 lexical index), Chroma's sqlite file
and its segment folders. ``--profile`` prints the top functions (cProfile, cumulative) of the
BM25 leg and of a build batch.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from recall import SCOPE, corpus, p95, timed  # sets BLAS threads (--threads) before BLAS loads

from agentmemory import ChromaStore, Entry
from embedders import HashingEmbedder
from recallers import DEFAULT_TOKENIZER, ExactVectorIndex

LIMIT = 10


def folder_bytes(folder: Path) -> dict[str, int]:
    """Bytes on disk under ``folder`` by part: the journal's tables (dbstat), Chroma's sqlite
    file, Chroma's segment folders, and the rest."""
    parts: dict[str, int] = {}
    journal = folder / "journal.sqlite3"
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
    except sqlite3.OperationalError:  # sqlite built without dbstat
        rows = [("journal.sqlite3 (all tables)", journal.stat().st_size)]
    finally:
        conn.close()
    for name, size in rows:
        lexical = str(name).startswith(("memory_lexical", "sqlite_autoindex_memory_lexical"))
        key = "journal: lexical index (memory_lexical*)" if lexical else f"journal: {name}"
        parts[key] = parts.get(key, 0) + int(size)
    for p in folder.rglob("*"):
        if not p.is_file() or (p.parent == folder and p.name.startswith("journal.sqlite3")):
            continue
        rel = p.relative_to(folder)
        if rel.parts[0] == "chroma":
            key = (
                "chroma: chroma.sqlite3"
                if p.name.startswith("chroma.sqlite3")
                else ("chroma: segment files (HNSW)")
            )
        else:
            key = "other"
        parts[key] = parts.get(key, 0) + p.stat().st_size
    wal = sum(p.stat().st_size for p in folder.glob("journal.sqlite3-*"))
    if wal:
        parts["journal: -wal/-shm"] = wal
    return parts


def ms_row(n: int, what: str, ms: Sequence[float]) -> list[str]:
    return [f"{n:,}", what, f"{statistics.median(ms):.2f}", f"{p95(ms):.2f}", str(len(ms))]


def profiled(fn: Callable[[], object], top: int = 12) -> str:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def bench(n: int, args: argparse.Namespace, work: Path) -> tuple[list[list[str]], list[str]]:
    entries, queries = corpus(n)
    q = queries[: args.queries]
    emb = HashingEmbedder(args.dim)
    folder = work / f"scale-{n}"
    notes: list[str] = []
    rates: list[tuple[int, float]] = []
    t0 = time.perf_counter()
    st = ChromaStore.open(folder, embedder=emb)
    for start in range(0, n, args.batch):
        part = entries[start : start + args.batch]
        t = time.perf_counter()
        if args.profile and start == n - len(part):
            notes.append(
                f"{n:,}: profile of the last build batch\n" + profiled(partial(st.put_many, part))
            )
        else:
            st.put_many(part)
        rates.append((len(part), len(part) / (time.perf_counter() - t)))
        done = start + len(part)
        print(f"  {n:,}: {done:,} entries, {rates[-1][1]:,.0f}/s", file=sys.stderr)
    build_s = time.perf_counter() - t0
    rows: list[list[str]] = []
    for fn in (  # warm every path once (Chroma loads its index on the first query)
        lambda: st.recall(q[0], scopes=[SCOPE], limit=LIMIT, mode="hybrid"),
    ):
        fn()
    rows.append(ms_row(n, "bm25 leg", timed(
        lambda i: st.recall(q[i], scopes=[SCOPE], limit=LIMIT, mode="bm25"), len(q))))  # fmt: skip
    rows.append(ms_row(n, "vector leg", timed(
        lambda i: st.recall(q[i], scopes=[SCOPE], limit=LIMIT, mode="vector"), len(q))))  # fmt: skip
    rows.append(ms_row(n, "**hybrid**", timed(
        lambda i: st.recall(q[i], scopes=[SCOPE], limit=LIMIT, mode="hybrid"), len(q))))  # fmt: skip

    def write_search(i: int) -> object:
        st.put(Entry(SCOPE, f"new-{i}", f"A new note about {q[i % len(q)]}"))
        return st.recall(q[i % len(q)], scopes=[SCOPE], limit=LIMIT)

    rows.append(ms_row(n, "write then search", timed(write_search, args.writes)))
    if args.profile:
        notes.append(f"{n:,}: profile of {len(q)} BM25 leg queries\n" + profiled(
            lambda: [st.recall(x, scopes=[SCOPE], limit=LIMIT, mode="bm25") for x in q]))  # fmt: skip
    st.close()
    parts = folder_bytes(folder)

    # baselines over the same texts
    import bm25s

    t = time.perf_counter()
    corpus_tokens = [DEFAULT_TOKENIZER(e.content) for e in entries]
    retriever = bm25s.BM25(k1=1.2, b=0.75)
    retriever.index(corpus_tokens, show_progress=False)
    bm25s_build = time.perf_counter() - t

    def bm25s_query(i: int) -> object:
        terms = [w for w in DEFAULT_TOKENIZER(q[i]) if w in retriever.vocab_dict] or ["the"]
        return retriever.retrieve([terms], k=LIMIT, show_progress=False, n_threads=1)

    rows.append(ms_row(n, "baseline: bm25s query", timed(bm25s_query, len(q))))
    exact: ExactVectorIndex[Entry] = ExactVectorIndex(args.dim)
    for start in range(0, n, 50_000):
        part = entries[start : start + 50_000]
        exact.put_many(part, emb.embed([e.content for e in part]))
    qvecs = emb.embed(q)
    rows.append(ms_row(n, "baseline: numpy exact cosine top-10", timed(
        lambda i: exact.search_vector(qvecs[i], limit=LIMIT, scopes=[SCOPE]), len(q))))  # fmt: skip

    total = sum(parts.values())
    first, last = rates[0][1], rates[-1][1]
    notes.append(
        f"{n:,}: build {build_s:,.0f} s, {n / build_s:,.0f} entries/s overall; "
        f"{first:,.0f}/s over the first batch of {rates[0][0]:,}, {last:,.0f}/s over the last; "
        f"bm25s indexed the same texts in {bm25s_build:.1f} s"
    )
    notes.append(
        f"{n:,}: {total / 1e9:.2f} GB on disk, {total / n:,.0f} bytes per entry (the raw "
        f"vector is {4 * args.dim:,}):\n"
        + "\n".join(
            f"    {k}: {v / 1e6:,.1f} MB, {v / n:,.0f} B/entry"
            for k, v in sorted(parts.items(), key=lambda kv: -kv[1])
        )
    )
    if not args.keep:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return rows, notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,300000")
    parser.add_argument("--million", action="store_true", help="also 1,000,000 (35-45 min)")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--writes", type=int, default=20)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--batch", type=int, default=20_000)
    parser.add_argument("--keep", type=Path, default=None, help="build the stores here, kept")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--threads", type=int, default=1)  # read by recall.py before numpy
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] + ([1_000_000] if args.million else [])
    print(f"load before: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    rows: list[list[str]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        for n in sizes:
            r, m = bench(n, args, work)
            rows += r
            notes += m
    print(f"load after: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    print("| entries | what | median ms | p95 ms | n |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()
    print("\n".join(notes))


if __name__ == "__main__":
    main()
