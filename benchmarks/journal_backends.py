"""The journal backends side by side in one run: SqliteStore (a local file) against PostgresStore
(a PostgreSQL server on loopback), at 10k and 100k entries in one scope.

    .venv/bin/python benchmarks/journal_backends.py [--sizes 10000,100000] [--queries 40]
        [--writes 200] [--batch 1000] [--dsn DSN]

Without ``--dsn`` a throwaway cluster is started (tests/pg_cluster.py, as user ``postgres`` when
run as root) and stopped at the end, with ``fsync`` on and ``synchronous_commit`` off: a committed
write survives the client and the server being killed, not necessarily a power cut, which is
SqliteStore's guarantee (WAL, ``synchronous=NORMAL``), so the two are compared at equal
durability. ``--sync-commit`` keeps PostgreSQL's default (a WAL flush before each commit returns).
Rows (medians; p95 beside them):

* ``put_many``: loading the corpus in batches of ``--batch`` entries, one ``put_many`` (one
  transaction) each; entries per second over each batch.
* ``put``: one unconditional ``put`` of a new entry, ``--writes`` times (ms; and writes/s).
* ``bm25 leg``: ``search_text`` of a query for the depth the hybrid asks the leg for
  (``recallers.DEFAULT_DEPTH`` x 10) (ms).
* ``hybrid``: ``recallers.HybridRecaller`` over the store's BM25 leg and one vector leg, an exact
  numpy cosine index (``recallers.ExactVectorIndex``) of hashing-embedder vectors, the same
  object for both backends, so the difference between the rows is the journal backend's (ms).
* ``round trip``: ``SELECT 1`` on an open connection, the cost of one network round trip to the
  server, to read the put row against: PostgresStore's write is two round trips by construction
  (the counter lock and the read, pipelined; then every write statement and ``COMMIT``,
  pipelined), and ``put_many`` is two whatever its size.

Entries and queries are the synthetic ones of ``benchmarks/recall.py``. The ratio column is
PostgresStore's figure over SqliteStore's in the same run (above 1: PostgreSQL is slower).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the throwaway cluster helper
sys.path.insert(0, str(ROOT / "benchmarks"))

import psycopg  # noqa: E402
from pg_cluster import running_cluster  # noqa: E402
from recall import SCOPE, corpus, new_entry  # noqa: E402

from agentmemory import Entry, SqliteStore  # noqa: E402
from agentmemory.stores.postgres.store import PostgresStore  # noqa: E402
from embedders import HashingEmbedder  # noqa: E402
from recallers import (  # noqa: E402
    DEFAULT_DEPTH,
    BM25Recaller,
    ExactVectorIndex,
    HybridRecaller,
    VectorRecaller,
)

LIMIT = 10
LEG_LIMIT = DEFAULT_DEPTH * LIMIT
DIM = 384


def timed(fn: Callable[[int], object], reps: int) -> list[float]:
    """Milliseconds of ``fn(i)`` for ``i`` in ``range(reps)``."""
    out = []
    for i in range(reps):
        t = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t) * 1000)
    return out


def p95(xs: Sequence[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


@contextmanager
def postgres_dsn(given: str | None, sync_commit: bool) -> Iterator[str]:
    if given:
        yield given
        return
    settings = [] if sync_commit else ["synchronous_commit=off"]
    with running_cluster(durable=True, settings=settings) as cluster:
        yield cluster.dsn()


def fresh_database(admin_dsn: str, name: str) -> str:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'")
    parts = psycopg.conninfo.conninfo_to_dict(admin_dsn)
    parts["dbname"] = name
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in parts.items()})


def bench_store(
    label: str,
    st: Any,
    entries: Sequence[Entry],
    queries: Sequence[str],
    vectors: ExactVectorIndex[Entry],
    emb: HashingEmbedder,
    args: argparse.Namespace,
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"put_many": [], "put": [], "bm25": [], "hybrid": []}
    for i in range(0, len(entries), args.batch):
        chunk = entries[i : i + args.batch]
        t = time.perf_counter()
        st.put_many(chunk)
        out["put_many"].append(len(chunk) / (time.perf_counter() - t))
    print(f"  {label}: loaded {len(entries):,}", file=sys.stderr, flush=True)
    out["put"] = timed(lambda i: st.put(new_entry(i, queries)), args.writes)
    q = queries[: args.queries]
    out["bm25"] = timed(lambda i: st.search_text(q[i], scopes=[SCOPE], limit=LEG_LIMIT), len(q))
    hybrid = HybridRecaller([BM25Recaller(st), VectorRecaller(vectors, emb)])
    out["hybrid"] = timed(lambda i: hybrid.recall(q[i], scopes=[SCOPE], limit=LIMIT), len(q))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--writes", type=int, default=200)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--dsn", default=None, help="an existing server (a database is created)")
    ap.add_argument("--sync-commit", action="store_true", help="flush WAL before each commit")
    args = ap.parse_args()
    emb = HashingEmbedder(DIM)
    work = Path(tempfile.mkdtemp(prefix="journal-bench-"))
    rows: list[list[str]] = []
    load = os.getloadavg()[0]
    try:
        with postgres_dsn(args.dsn, args.sync_commit) as admin:
            with psycopg.connect(admin, autocommit=True) as conn:
                rtt = timed(lambda i: conn.execute("SELECT 1").fetchone(), 200)
                version = conn.execute("SHOW server_version").fetchone()
                sync = conn.execute("SHOW synchronous_commit").fetchone()
            for n in (int(s) for s in args.sizes.split(",")):
                entries, queries = corpus(n)
                vectors: ExactVectorIndex[Entry] = ExactVectorIndex(DIM)
                vectors.put_many(entries, emb.embed([e.content for e in entries]))
                results = {}
                with SqliteStore(work / f"bench-{n}.sqlite3") as sq:
                    results["sqlite"] = bench_store(
                        "sqlite", sq, entries, queries, vectors, emb, args
                    )
                with PostgresStore(fresh_database(admin, f"bench_{n}")) as pg:
                    results["postgres"] = bench_store(
                        "postgres", pg, entries, queries, vectors, emb, args
                    )
                for what, unit in (
                    ("put_many", "entries/s"),
                    ("put", "ms"),
                    ("bm25", "ms"),
                    ("hybrid", "ms"),
                ):
                    sq_m = statistics.median(results["sqlite"][what])
                    pg_m = statistics.median(results["postgres"][what])
                    ratio = sq_m / pg_m if unit == "entries/s" else pg_m / sq_m
                    label = {"bm25": f"bm25 leg (limit {LEG_LIMIT})", "hybrid": "hybrid"}.get(
                        what, what
                    )
                    extra = ""
                    if what == "put":
                        extra = f" ({1000 / sq_m:,.0f} / {1000 / pg_m:,.0f} writes/s)"
                    rows.append(
                        [
                            f"{n:,}",
                            label + extra,
                            unit,
                            f"{sq_m:,.2f}"
                            + (
                                "" if unit != "ms" else f" (p95 {p95(results['sqlite'][what]):.2f})"
                            ),
                            f"{pg_m:,.2f}"
                            + (
                                ""
                                if unit != "ms"
                                else f" (p95 {p95(results['postgres'][what]):.2f})"
                            ),
                            f"{ratio:.1f}x",
                        ]
                    )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        "| entries | what (hybrid: the BM25 leg fused with an exact numpy cosine leg, not Chroma) "
        "| unit | SqliteStore | PostgresStore (loopback) | PG slower by |"
    )
    print("|---:|---|---|---:|---:|---:|")
    for r in rows:
        print(f"| {' | '.join(r)} |")
    print(
        f"\nround trip (SELECT 1 on an open connection): median {statistics.median(rtt):.3f} ms, "
        f"p95 {p95(rtt):.3f} ms; PostgreSQL {version[0] if version else '?'}, "
        f"synchronous_commit {sync[0] if sync else '?'}; "
        "a PostgresStore put is 2 round trips, a put_many 2 whatever its size"
    )
    print(
        f"load average at start {load:.2f}, at end {os.getloadavg()[0]:.2f}; "
        f"{os.cpu_count()} cores; hybrid vector leg: exact numpy cosine, hashing dim {DIM}"
    )


if __name__ == "__main__":
    main()
