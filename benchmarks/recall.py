"""Recall latency at 1k, 10k and 100k entries in one scope: each leg, the hybrid, a write followed
by a search, and the obvious baselines measured in the same run.

    .venv/bin/python benchmarks/recall.py [--quick] [--sizes 1000,10000,100000] [--queries 40]
        [--writes 20] [--threads 1] [--dim 384] [--no-model] [--fusion-only | --common-words |
        --windows]

Rows (latency in ms, median and p95 over the queries):

* ``bm25 MemStore``: ``MemStore.search_text`` (in-memory incremental BM25 index).
* ``bm25 SqliteStore``: ``SqliteStore.search_text`` (FTS5 table, ``bm25()``).
* ``vector ChromaStore``: ``ChromaStore.search_vector`` of a precomputed query vector (one
  collection per scope, no ``where`` filter).
* ``hybrid ChromaStore``: ``ChromaStore.recall(mode="hybrid")``, BM25 and vector legs read to the
  default depth (``recallers.DEFAULT_DEPTH`` times ``limit``, as the leg rows are) and fused by RRF. The query is embedded by the hashing embedder (about 0.02 ms, so the
  figure is the search cost "query embedding excluded"); the real model's time per query is
  reported beside the table.
* ``write+search <store>``: one ``put`` of a new entry (its hashing embedding, about 0.02 ms,
  included) followed by one ``recall``.
* ``--common-words``: only the lexical leg's worst case, a query of the five most frequent words,
  on one ChromaStore (its FTS5 leg, ``SqliteStore.search_text``, and the hybrid): the current
  rule (docs/recall.md#the-lexical-querys-cost, document frequencies read from
  ``memory_lexical_df``) against the one before it (:class:`RememberedCounts`: counted by
  ``fts5vocab`` and remembered until the next write) and the one before that
  (:class:`PreviousBudget`, counted at every search), kept here verbatim, on the same file in the
  same process, searched again and again and right after a write, plus the ordinary queries;
  then ``SqliteStore.put`` on two copies of the journal, with and without ``memory_lexical_df``
  (:class:`WriteWithoutDocFreqs`), alternated, and the migration that fills the table.
* ``--windows``: only the vector leg (read as deep as the hybrid reads it) and the hybrid, on
  stores of one vector per entry (an embedder without windows: what every store held before
  windows, docs/recall.md#windows) against stores of one vector per window: the short entries
  (``--window-words`` 64, so each is one window) and long entries (three short entries joined,
  45 to 90 words, in windows of 24 words every 12: about 4 windows each). The windowed rows give
  the ratio to the one-vector row of the same entries.
* baselines: ``rank-bm25 rebuilt``: ``BM25Okapi`` built over the scope's documents then scored
  (what a search costs when the index cannot follow writes); ``numpy exact cosine``: a ``(n, dim)``
  float32 matrix product and ``argpartition`` top-k; ``chroma where``: one Chroma collection for
  every scope queried with ``where={"scope": ...}``; their write+search adds the document first.

Entries are synthetic short texts (8 to 24 words from a Zipf-distributed vocabulary of 20,000
made-up words plus English function words); queries are 2 to 5 vocabulary words wrapped in a
question ("what did I say about ..."). Vectors come from the hashing embedder (``--dim``), so the
100k rows run in minutes. BLAS threads are set by ``--threads`` (1 by default: on this shared
2-core machine more threads were slower, see docs/recall.md#threads).
"""

from __future__ import annotations

import argparse
import os
import sys

# Threads must be fixed before numpy loads its BLAS.
_pre = argparse.ArgumentParser(add_help=False)
_pre.add_argument("--threads", type=int, default=1)
_threads = str(_pre.parse_known_args()[0].threads)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, _threads)
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import random  # noqa: E402
import shutil  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from agentmemory import ChromaStore, Entry, MemStore, SqliteStore  # noqa: E402
from agentmemory.stores.chroma.index import MAX_QUERY_RESULTS, ChromaIndex, Neighbour  # noqa: E402
from agentmemory.stores.sqlite.lexicon import (  # noqa: E402
    COMMON_TERM_CANDIDATES,
    RANKED_POSTINGS,
    Fts5Index,
    _index_state,
    match_expression,
)
from embedders import HashingEmbedder  # noqa: E402
from recallers import (  # noqa: E402
    DEFAULT_FUSION,
    DEFAULT_TOKENIZER,
    BM25Recaller,
    ExactVectorIndex,
    Fusion,
    HybridRecaller,
    VectorRecaller,
    document_terms,
    query_terms,
)
from recallers.bm25 import bm25_idf  # noqa: E402

SCOPE = "bench"
LIMIT = 10
LEG_LIMIT = DEFAULT_FUSION.leg_limit("bm25", LIMIT)  # what the hybrid asks each leg for
PREVIOUS_FUSION = Fusion(method="rrf", depth=1)
"""The fusion before min-max (RRF, each leg read to the limit), measured beside the default."""
FUNCTION_WORDS = "the a of to and in on for with my is was at it that this".split()  # noqa: SIM905


def corpus(n: int, seed: int = 1) -> tuple[list[Entry], list[str]]:
    """``n`` entries of synthetic short text and 200 question-like queries."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "be", "do", "fa", "gu"]
    vocab = sorted({"".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(40000)})
    vocab = vocab[:20000]
    weights = [1 / (i + 1) ** 1.07 for i in range(len(vocab))]
    entries = []
    for i in range(n):
        words = rng.choices(vocab, weights, k=rng.randint(8, 24))
        for _ in range(rng.randint(1, 5)):
            words.insert(rng.randrange(len(words)), rng.choice(FUNCTION_WORDS))
        entries.append(Entry(SCOPE, f"note-{i}", " ".join(words).capitalize() + "."))
    queries = []
    for _ in range(200):
        words = rng.choices(vocab[:5000], k=rng.randint(2, 5))
        queries.append(f"what did I say about the {' '.join(words)}?")
    return entries, queries


def timed(fn: Callable[[int], object], reps: int) -> list[float]:
    """Milliseconds of ``fn(i)`` for ``i`` in ``range(reps)``."""
    out = []
    for i in range(reps):
        t = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t) * 1000)
    return out


def p95(ms: Sequence[float]) -> float:
    s = sorted(ms)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


def row(n: int, what: str, ms: Sequence[float], base: float | None = None) -> list[str]:
    med = statistics.median(ms)
    ratio = f"{base / med:.1f}x" if base else ""
    return [f"{n:,}", what, f"{med:.2f}", f"{p95(ms):.2f}", str(len(ms)), ratio]


_FULL_RANK_CONN: dict[Path, sqlite3.Connection] = {}


def sql_full_rank(path: Path, expr: str) -> object:
    """The lexical leg's query as it ran before ``RANKED_POSTINGS`` (agentmemory.stores.sqlite.lexicon): one FTS5 ``bm25()``
    ranking of every entry holding any term, top ``LEG_LIMIT`` (a connection kept per file)."""
    conn = _FULL_RANK_CONN.get(path)
    if conn is None:
        conn = _FULL_RANK_CONN[path] = sqlite3.connect(path)
    return conn.execute(
        "SELECT d.scope, d.name, -f.rank FROM memory_lexical AS f"
        " JOIN memory_lexical_docs AS d ON d.id = f.rowid WHERE memory_lexical MATCH ?"
        " AND d.scope = ? ORDER BY f.rank, CAST(d.name AS BLOB) LIMIT ?",
        (expr, SCOPE, LEG_LIMIT),
    ).fetchall()


def vocab_doc_freqs(conn: sqlite3.Connection, terms: Any) -> dict[str, int]:
    """How many entries hold each of ``terms`` as FTS5's ``fts5vocab`` row table counts them
    (walking each term's postings), as ``agentmemory.stores.sqlite.lexicon`` read them before ``memory_lexical_df``."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_lexical_vocab"
        " USING fts5vocab(main, memory_lexical, row)"
    )
    out: dict[str, int] = {}
    for term in terms:
        row = conn.execute(
            "SELECT doc FROM temp.memory_lexical_vocab WHERE term = ?", (term,)
        ).fetchone()
        if row is not None and row[0]:
            out[term] = int(row[0])
    return out


class RememberedCounts(Fts5Index[Entry]):
    """The lexical leg's rule before ``memory_lexical_df`` (main at 490cf99): the same search,
    its document frequencies counted by ``fts5vocab`` and remembered while FTS5's averages and
    structure records (which change with every write) are unchanged."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._freqs_version = b""
        self._freqs: dict[str, int] = {}

    def _doc_freqs(self, conn: sqlite3.Connection, terms: Any) -> dict[str, int]:
        # FTS5's averages and structure records (fts5_index.c, rows 1 and 10 of its data table)
        version = b"/".join(
            bytes(b)
            for (b,) in conn.execute(
                "SELECT block FROM memory_lexical_data WHERE id IN (1, 10) ORDER BY id"
            )
        )
        if version != self._freqs_version or len(self._freqs) > 4096:
            self._freqs_version, self._freqs = version, {}
        missing = [t for t in terms if t not in self._freqs]
        if missing:
            counted = vocab_doc_freqs(conn, missing)
            self._freqs.update({t: counted.get(t, 0) for t in missing})
        return {t: self._freqs[t] for t in terms if self._freqs[t]}


class WriteWithoutDocFreqs(Fts5Index[Entry]):
    """The lexical index's write before ``memory_lexical_df`` (main at 490cf99): the FTS5 row
    only, to time a put without the table."""

    def write(self, conn: sqlite3.Connection, scope: str, name: str, doc: Any) -> None:
        row = conn.execute(
            "SELECT id FROM memory_lexical_docs WHERE scope = ? AND name = ?", (scope, name)
        ).fetchone()
        if row is not None:
            conn.execute("DELETE FROM memory_lexical WHERE rowid = ?", (row[0],))
            if doc is None:
                conn.execute("DELETE FROM memory_lexical_docs WHERE id = ?", (row[0],))
                return
            doc_id = int(row[0])
        elif doc is None:
            return
        else:
            cur = conn.execute(
                "INSERT INTO memory_lexical_docs (scope, name) VALUES (?, ?)", (scope, name)
            )
            doc_id = int(cur.lastrowid or 0)
        conn.execute(
            "INSERT INTO memory_lexical (rowid, terms) VALUES (?, ?)",
            (doc_id, " ".join(document_terms(doc, self._tokenizer))),
        )


class PreviousBudget(Fts5Index[Entry]):
    """The lexical leg's rule before MaxScore and remembered document frequencies (main at
    3b33396), kept to measure against in the same run: every search counts each term's entries
    (``fts5vocab``), FTS5 ranks the rarest terms up to ``RANKED_POSTINGS``, the others are added
    to the best ``2 * limit + 20`` candidates, and add the ``COMMON_TERM_CANDIDATES`` newest
    holders only when fewer than ``limit`` were found."""

    def search_keys(
        self,
        conn: sqlite3.Connection,
        terms: Sequence[str] | Any,
        *,
        scopes: Sequence[str],
        limit: int,
    ) -> list[tuple[str, str, float]]:
        wanted = list(dict.fromkeys(scopes))
        weights = Counter(terms)
        if limit < 1 or not weights or not wanted:
            return []
        n_docs, avgdl = _index_state(conn)
        if n_docs == 0:
            return []
        freqs = vocab_doc_freqs(conn, weights)
        ranked: list[str] = []
        common: dict[str, float] = {}
        budget = RANKED_POSTINGS
        for term in sorted(freqs, key=lambda t: (freqs[t], t)):
            cost = freqs[term] * weights[term]
            if not common and cost <= budget:
                ranked.append(term)
                budget -= cost
            else:
                common[term] = weights[term] * bm25_idf(n_docs, freqs[term])
        marks = ", ".join("?" * len(wanted))
        join = (
            " FROM memory_lexical AS f JOIN memory_lexical_docs AS d ON d.id = f.rowid"
            f" WHERE memory_lexical MATCH ? AND d.scope IN ({marks})"
        )
        found: list[tuple[str, str, float]] = []
        if ranked:
            order = " ".join(f"WHEN ? THEN {i}" for i in range(len(wanted)))
            depth = limit if not common else 2 * limit + 20
            expr = match_expression(t for t in ranked for _ in range(weights[t]))
            rows = conn.execute(
                f"SELECT d.scope, d.name, -f.rank, {'f.terms' if common else 'NULL'}"
                f"{join} ORDER BY f.rank, CASE d.scope {order} END, CAST(d.name AS BLOB) LIMIT ?",
                (expr, *wanted, *wanted, depth),
            ).fetchall()
            for scope, name, score, text in rows:
                extra = self._score(text, common, avgdl) if common else 0.0
                found.append((str(scope), str(name), float(score) + extra))
        if common and len(found) < limit:
            rows = conn.execute(
                f"SELECT d.scope, d.name, f.rowid, f.terms{join} ORDER BY f.rowid DESC LIMIT ?",
                (match_expression(common), *wanted, COMMON_TERM_CANDIDATES + len(found)),
            ).fetchall()
            known = {(s, n) for s, n, _ in found}
            for scope, name, _, text in rows:
                if (scope, name) in known:
                    continue
                found.append((str(scope), str(name), self._score(text, common, avgdl)))
        rank = {s: i for i, s in enumerate(wanted)}
        found.sort(key=lambda k: (-k[2], rank[k[0]], k[1].encode("utf-8", "surrogatepass")))
        return [k for k in found[:limit] if k[2] > 0]


def bench_common_words(n: int, args: argparse.Namespace, work: Path) -> list[list[str]]:
    """``--common-words``: one ChromaStore of ``n`` entries; the five-most-frequent-words query and
    the ordinary queries through its FTS5 leg under the current rule and :class:`PreviousBudget`
    (a second connection to the same journal file), and through ``ChromaStore.recall``."""
    from contextlib import contextmanager

    entries, queries = corpus(n)
    emb = HashingEmbedder(args.dim)
    q = queries[: args.queries]
    t = time.perf_counter()
    chroma = ChromaStore.open(work / f"chroma-{n}", embedder=emb)
    for start in range(0, n, 5000):
        chroma.put_many(entries[start : start + 5000])
    print(f"  {n:,}: ChromaStore filled in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    lexical = chroma.journal_store
    conn = sqlite3.connect(chroma.path / "journal.sqlite3", isolation_level=None)

    @contextmanager
    def read() -> Any:
        yield conn

    previous = PreviousBudget(read=read, load=lambda _c, s, nm: chroma.get(s, nm))
    now_index = lexical._lexicon  # type: ignore[attr-defined]
    remembered = RememberedCounts(
        read=lexical._read,  # type: ignore[attr-defined]
        load=lexical._stored,  # type: ignore[attr-defined]
        tokenizer=now_index.tokenizer,
    )
    counts = Counter(t for e in entries[:5000] for t in DEFAULT_TOKENIZER(e.content))
    common = " ".join(w for w, _ in counts.most_common(5))
    freqs = vocab_doc_freqs(conn, query_terms(common))
    print(f"  {n:,}: query {common!r}, entries holding each: {freqs}", file=sys.stderr)
    now_keys = [
        (e.key, round(s, 9))
        for e, s in lexical.search_text(common, scopes=[SCOPE], limit=LEG_LIMIT)
    ]
    old_keys = [
        (e.key, round(s, 9))
        for e, s in previous.search_text(common, scopes=[SCOPE], limit=LEG_LIMIT)
    ]
    same = sum(1 for k in now_keys if k in old_keys)
    print(
        f"  {n:,}: common-words top {LEG_LIMIT}: {same} of them in the previous rule's",
        file=sys.stderr,
    )
    reps = max(5, len(q) // 2)
    written = iter(range(10**6))

    def after_write(fn: Callable[[], object]) -> Callable[[int], object]:
        def run(i: int) -> object:  # the put is not timed: only the search that follows it
            chroma.put(new_entry(next(written), q))
            t0 = time.perf_counter()
            fn()
            spent.append((time.perf_counter() - t0) * 1000)
            return None

        spent: list[float] = []
        run.spent = spent  # type: ignore[attr-defined]
        return run

    def leg(i: int) -> object:
        return lexical.search_text(common, scopes=[SCOPE], limit=LEG_LIMIT)

    def before(i: int) -> object:
        return remembered.search_text(common, scopes=[SCOPE], limit=LEG_LIMIT)

    def old(i: int) -> object:
        return previous.search_text(common, scopes=[SCOPE], limit=LEG_LIMIT)

    def hybrid(i: int) -> object:
        return chroma.recall(common, scopes=[SCOPE], limit=LIMIT)

    def hybrid_before(i: int) -> object:
        lexical._lexicon = remembered  # type: ignore[attr-defined]
        try:
            return chroma.recall(common, scopes=[SCOPE], limit=LIMIT)
        finally:
            lexical._lexicon = now_index  # type: ignore[attr-defined]

    rows = []
    base = timed(old, reps)
    rows.append(
        row(n, "5 most frequent words, bm25 leg: previous rule (counts every search)", base)
    )
    rows.append(row(n, "5 most frequent words, bm25 leg: remembered counts (before the df table)",
                    timed(before, reps), statistics.median(base)))  # fmt: skip
    rows.append(row(n, "5 most frequent words, **bm25 leg: SqliteStore (now)**", timed(leg, reps),
                    statistics.median(base)))  # fmt: skip
    for label, fn in (("**bm25 leg: SqliteStore (now), first search after a write**", leg),
                      ("bm25 leg: remembered counts (before), first search after a write", before),
                      ("bm25 leg: previous rule, first search after a write", old),
                      ("**hybrid: ChromaStore.recall (now), first search after a write**", hybrid),
                      ("hybrid: remembered counts (before), first search after a write",
                       hybrid_before)):  # fmt: skip
        run = after_write(lambda f=fn: f(0))
        for i in range(reps):
            run(i)
        rows.append(row(n, f"5 most frequent words, {label}", run.spent))  # type: ignore[attr-defined]
    rows.append(
        row(n, "5 most frequent words, **hybrid: ChromaStore.recall (now)**", timed(hybrid, reps))
    )
    rows.append(row(n, "5 most frequent words, hybrid: remembered counts (before)",
                    timed(hybrid_before, reps)))  # fmt: skip
    old_q = timed(lambda i: previous.search_text(q[i], scopes=[SCOPE], limit=LEG_LIMIT), len(q))
    rows.append(row(n, "ordinary queries, bm25 leg: previous rule", old_q))
    rows.append(row(n, "ordinary queries, bm25 leg: SqliteStore (now)",
                    timed(lambda i: lexical.search_text(q[i], scopes=[SCOPE], limit=LEG_LIMIT), len(q)),
                    statistics.median(old_q)))  # fmt: skip
    differ = sum(
        [(e.key, round(s, 9)) for e, s in lexical.search_text(x, scopes=[SCOPE], limit=LEG_LIMIT)]
        != [
            (e.key, round(s, 9))
            for e, s in previous.search_text(x, scopes=[SCOPE], limit=LEG_LIMIT)
        ]
        for x in q
    )
    print(f"  {n:,}: ordinary queries ranked differently from the previous rule: {differ} of {len(q)}",
          file=sys.stderr)  # fmt: skip
    conn.close()
    chroma.close()
    rows += write_cost_rows(n, chroma.path / "journal.sqlite3", q, work)
    return rows


def write_cost_rows(n: int, journal: Path, q: Sequence[str], work: Path) -> list[list[str]]:
    """``SqliteStore.put`` of a new entry on two copies of ``journal``, one keeping
    ``memory_lexical_df`` (now), one writing the FTS5 row only (:class:`WriteWithoutDocFreqs`),
    alternated so both see the same load; then the time m006 takes to fill the table on a third
    copy without it (one open)."""
    copies = [work / f"put-{what}-{n}.sqlite3" for what in ("now", "before", "m005")]
    with sqlite3.connect(journal) as src:
        for path in copies:
            with sqlite3.connect(path) as dst:
                src.backup(dst)
            dst.close()
    src.close()
    now = SqliteStore(copies[0])
    before = SqliteStore(copies[1])
    before._lexicon = WriteWithoutDocFreqs(
        read=before._read, load=before._stored, tokenizer=before.tokenizer
    )
    spent: dict[str, list[float]] = {"now": [], "before": []}
    for i in range(60):
        for what, st in (("now", now), ("before", before))[:: 1 if i % 2 else -1]:
            e = new_entry(50_000 + i, q)
            t0 = time.perf_counter()
            st.put(e)
            spent[what].append((time.perf_counter() - t0) * 1000)
    now.close()
    before.close()
    with sqlite3.connect(copies[2]) as conn:
        conn.executescript(
            "DROP TABLE memory_lexical_df; DELETE FROM store_schema WHERE version = 6;"
        )
    conn.close()
    t0 = time.perf_counter()
    SqliteStore(copies[2]).close()
    migration = [(time.perf_counter() - t0) * 1000]
    return [
        row(n, "SqliteStore.put of a new entry, FTS5 row only (before the df table)",
            spent["before"]),
        row(n, "**SqliteStore.put of a new entry, FTS5 row and df table (now)**", spent["now"]),
        row(n, "opening a store made before m006: the migration fills the df table", migration),
    ]  # fmt: skip


def new_entry(i: int, queries: Sequence[str]) -> Entry:
    return Entry(SCOPE, f"written-{i}", f"fresh note {i}: {queries[i % len(queries)][23:]}")


def fusion_rows(n: int, chroma: ChromaStore, q: Sequence[str], qvecs: Any) -> list[list[str]]:
    """The hybrid under the previous fusion (RRF, legs read to the limit) and under the default,
    composed as ``ChromaStore.recall`` composes it, and the legs read as deep as each asks."""
    legs = [BM25Recaller(chroma.journal_store), VectorRecaller(chroma, chroma.embedder)]
    rows: list[list[str]] = []
    for label, fusion in (("previous: RRF, legs 1 x limit", PREVIOUS_FUSION),
                          (f"default: {DEFAULT_FUSION.method}, legs "
                           f"{DEFAULT_FUSION.leg_limit('bm25', LIMIT)} deep", DEFAULT_FUSION)):  # fmt: skip
        deep = fusion.leg_limit("bm25", LIMIT)
        hybrid = HybridRecaller(legs, fusion=fusion)
        rows.append(row(n, f"bm25 leg read {deep} deep (FTS5)",
                        timed(lambda i, d=deep: chroma.journal_store.search_text(
                            q[i], scopes=[SCOPE], limit=d), len(q))))  # fmt: skip
        rows.append(row(n, f"vector leg read {deep} deep (Chroma)",
                        timed(lambda i, d=deep: chroma.search_vector(
                            qvecs[i], limit=d, scopes=[SCOPE]), len(q))))  # fmt: skip
        rows.append(row(n, f"hybrid, {label}",
                        timed(lambda i, h=hybrid: h.recall(q[i], scopes=[SCOPE], limit=LIMIT),
                              len(q))))  # fmt: skip
    return rows


def bench_fusion_only(n: int, args: argparse.Namespace, work: Path) -> list[list[str]]:
    """``--fusion-only``: a ChromaStore of ``n`` entries, :func:`fusion_rows` and
    ``ChromaStore.recall`` itself; no MemStore, SqliteStore or baselines."""
    entries, queries = corpus(n)
    emb = HashingEmbedder(args.dim)
    q = queries[: args.queries]
    qvecs = emb.embed(q)
    t = time.perf_counter()
    chroma = ChromaStore.open(work / f"chroma-{n}", embedder=emb)
    for start in range(0, n, 5000):
        chroma.put_many(entries[start : start + 5000])
    print(f"  {n:,}: ChromaStore filled in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    chroma.recall(q[0], scopes=[SCOPE], limit=LIMIT, mode="hybrid")  # warm
    rows = fusion_rows(n, chroma, q, qvecs)
    rows.append(row(n, "**hybrid: ChromaStore.recall**",
                    timed(lambda i: chroma.recall(q[i], scopes=[SCOPE], limit=LIMIT), len(q))))  # fmt: skip
    chroma.close()
    return rows


class OneVector:
    """An embedder without windows (name, dim, fingerprint, embed): one vector per entry, as
    every store held before windows."""

    def __init__(self, inner: HashingEmbedder) -> None:
        self.inner = inner
        self.name, self.dim, self.fingerprint = inner.name, inner.dim, inner.fingerprint

    def embed(self, texts: Sequence[str]) -> Any:
        return self.inner.embed(texts)


class PreviousQuery(ChromaIndex):
    """``ChromaIndex.query`` as it was before windows (main at 56dcc93), kept to measure against
    in the same run: one Chroma query of ``n`` neighbours with their metadata, one answer per
    vector."""

    def query(self, scope: str, vector: Any, n: int) -> list[Neighbour]:
        n = min(n, MAX_QUERY_RESULTS)

        def run(col: Any) -> Any:
            return col.query(
                query_embeddings=vector[None, :], n_results=n, include=["metadatas", "distances"]
            )

        got = self._run(scope, run, create=False)
        if got is None:
            return []
        out = []
        for vid, meta, dist in zip(got["ids"][0], got["metadatas"][0], got["distances"][0],
                                   strict=False):  # fmt: skip
            held = (meta or {}).get("text_hash")
            out.append(Neighbour(vid.partition("/")[2], None if held is None else str(held),
                                 float(dist)))  # fmt: skip
        return out


class PreviousStore(ChromaStore):
    """A ChromaStore searching through :class:`PreviousQuery`."""

    index_type = PreviousQuery


def long_corpus(n: int) -> list[Entry]:
    """``n`` long entries: three short entries of :func:`corpus` joined (45 to 90 words)."""
    short, _ = corpus(3 * n, seed=2)
    return [
        Entry(SCOPE, f"long-{i}", " ".join(e.content for e in short[3 * i : 3 * i + 3]))
        for i in range(n)
    ]


def bench_windows(n: int, args: argparse.Namespace, work: Path) -> list[list[str]]:
    """``--windows``: the vector leg (read ``LEG_LIMIT`` deep, as the hybrid reads it) and the
    hybrid, for ``n`` short entries and ``n`` long ones: one vector per entry searched as
    before windows (:class:`PreviousQuery`) and as now, against one vector per window. The
    variants are timed in turn on each query, so load drifts reach them alike."""
    from embedders import text_windows

    entries, queries = corpus(n)
    q = queries[: args.queries]
    rows: list[list[str]] = []
    for label, items, window in (("short", entries, 64), ("long", long_corpus(n), 24)):
        windowed = HashingEmbedder(args.dim, window_words=window, window_stride=window // 2)
        per_entry = sum(len(text_windows(windowed, e.content)) for e in items) / n
        qvecs = windowed.embed(q)
        stores: dict[str, ChromaStore] = {}
        for kind, emb in (("one", OneVector(windowed)), ("windows", windowed)):
            t = time.perf_counter()
            st = ChromaStore.open(work / f"windows-{label}-{n}-{kind}", embedder=emb)
            for start in range(0, n, 2000):
                st.put_many(items[start : start + 2000])
            print(f"  {n:,} {label}: {kind} filled in {time.perf_counter() - t:.1f} s",
                  file=sys.stderr)  # fmt: skip
            stores[kind] = st
        stores["before"] = PreviousStore.open(stores["one"].path, embedder=OneVector(windowed))
        variants = {
            "before": "one vector per entry, searched as before windows (main's query)",
            "one": "one vector per entry, searched as now",
            "windows": f"windows of {window} words every {window // 2} "
            f"({per_entry:.2f} vectors per entry)",
        }
        leg: dict[str, list[float]] = {k: [] for k in variants}
        fused: dict[str, list[float]] = {k: [] for k in variants}
        for st in stores.values():  # warm
            st.search_vector(qvecs[0], limit=LEG_LIMIT, scopes=[SCOPE])
            st.recall(q[0], scopes=[SCOPE], limit=LIMIT)
        for i in range(len(q)):
            for kind, st in stores.items():
                t0 = time.perf_counter()
                st.search_vector(qvecs[i], limit=LEG_LIMIT, scopes=[SCOPE])
                leg[kind].append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                st.recall(q[i], scopes=[SCOPE], limit=LIMIT)
                fused[kind].append((time.perf_counter() - t0) * 1000)
        base = statistics.median(leg["before"])
        for kind, how in variants.items():
            r = row(n, f"vector leg, {label} entries: {how}", leg[kind])
            r[-1] = "" if kind == "before" else f"{statistics.median(leg[kind]) / base:.2f}x before"
            rows.append(r)
        fbase = statistics.median(fused["before"])
        for kind, how in variants.items():
            r = row(n, f"hybrid, {label} entries: {how}", fused[kind])
            r[-1] = (
                "" if kind == "before" else f"{statistics.median(fused[kind]) / fbase:.2f}x before"
            )
            rows.append(r)
        for st in reversed(list(stores.values())):
            st.close()
    return rows


def bench_size(n: int, args: argparse.Namespace, work: Path) -> list[list[str]]:
    if args.windows:
        return bench_windows(n, args, work)
    if args.fusion_only:
        return bench_fusion_only(n, args, work)
    if args.common_words:
        return bench_common_words(n, args, work)
    entries, queries = corpus(n)
    emb = HashingEmbedder(args.dim)
    q = queries[: args.queries]
    qvecs = emb.embed(q)
    rows: list[list[str]] = []
    reps_slow = max(3, min(args.queries, 300_000 // n))  # rebuilt baselines at 100k: 3 runs

    t = time.perf_counter()
    mem = MemStore()
    for e in entries:
        mem.put(e)
    print(f"  {n:,}: MemStore filled in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    t = time.perf_counter()
    sql = SqliteStore(work / f"sql-{n}.sqlite3")
    sql.put_many(entries)
    print(f"  {n:,}: SqliteStore filled in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    t = time.perf_counter()
    chroma = ChromaStore.open(work / f"chroma-{n}", embedder=emb)
    for start in range(0, n, 5000):
        chroma.put_many(entries[start : start + 5000])
    print(f"  {n:,}: ChromaStore filled in {time.perf_counter() - t:.1f} s", file=sys.stderr)

    # baselines' data
    t = time.perf_counter()
    tokens = [document_terms(e, DEFAULT_TOKENIZER) for e in entries]
    matrix = emb.embed([e.content for e in entries])
    exact: ExactVectorIndex[Entry] = ExactVectorIndex(args.dim)
    exact.put_many(entries, matrix)
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(work / f"where-{n}"), settings=Settings(anonymized_telemetry=False)
    )
    col = client.get_or_create_collection(
        "where", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )
    batch = min(5000, client.get_max_batch_size())
    for start in range(0, n, batch):
        part = entries[start : start + batch]
        col.add(
            ids=[e.key for e in part],
            embeddings=matrix[start : start + batch],
            metadatas=[{"scope": e.scope, "name": e.name} for e in part],
        )
    print(f"  {n:,}: baselines built in {time.perf_counter() - t:.1f} s", file=sys.stderr)

    from rank_bm25 import BM25Okapi

    def okapi_search(i: int) -> object:
        bm = BM25Okapi(tokens, k1=1.2, b=0.75, epsilon=0)
        scores = bm.get_scores(DEFAULT_TOKENIZER(q[i % len(q)]))
        return np.argpartition(-scores, LIMIT)[:LIMIT]

    def where_search(i: int) -> object:
        return col.query(
            query_embeddings=qvecs[i % len(q)][None, :], n_results=LIMIT, where={"scope": SCOPE}
        )

    def plain_search(i: int) -> object:
        return col.query(query_embeddings=qvecs[i % len(q)][None, :], n_results=LIMIT)

    # warm every path once (Chroma loads its index on the first query)
    for fn in (
        lambda: mem.search_text(q[0], scopes=[SCOPE], limit=LIMIT),
        lambda: sql.search_text(q[0], scopes=[SCOPE], limit=LIMIT),
        lambda: chroma.recall(q[0], scopes=[SCOPE], limit=LIMIT, mode="hybrid"),
        lambda: where_search(0),
    ):
        fn()

    okapi = timed(okapi_search, reps_slow)
    numpy_ms = timed(lambda i: exact.search_vector(qvecs[i], limit=LIMIT, scopes=[SCOPE]), len(q))
    where = timed(where_search, len(q))
    plain = timed(plain_search, len(q))
    rows.append(row(n, "bm25 leg: MemStore (in-memory index)",
                    timed(lambda i: mem.search_text(q[i], scopes=[SCOPE], limit=LEG_LIMIT), len(q)),
                    statistics.median(okapi)))  # fmt: skip
    rows.append(row(n, "bm25 leg: SqliteStore (FTS5)",
                    timed(lambda i: sql.search_text(q[i], scopes=[SCOPE], limit=LEG_LIMIT), len(q)),
                    statistics.median(okapi)))  # fmt: skip
    rows.append(row(n, "vector leg: ChromaStore (collection per scope)",
                    timed(lambda i: chroma.search_vector(qvecs[i], limit=LEG_LIMIT, scopes=[SCOPE]),
                          len(q)),
                    statistics.median(where)))  # fmt: skip
    hybrid = timed(
        lambda i: chroma.recall(q[i], scopes=[SCOPE], limit=LIMIT, mode="hybrid"), len(q)
    )
    rows.append(row(n, "**hybrid: ChromaStore.recall**", hybrid))
    rows += fusion_rows(n, chroma, q, qvecs)
    # a bad case for a lexical index: the five most frequent content words, each in many entries
    counts = Counter(t for e in entries[:5000] for t in DEFAULT_TOKENIZER(e.content))
    common = " ".join(w for w, _ in counts.most_common(5))
    reps = max(5, len(q) // 4)
    rows.append(row(n, "bm25 leg: MemStore, 5 most frequent words",
                    timed(lambda i: mem.search_text(common, scopes=[SCOPE], limit=LEG_LIMIT), reps)))  # fmt: skip
    rows.append(row(n, "bm25 leg: SqliteStore, 5 most frequent words",
                    timed(lambda i: sql.search_text(common, scopes=[SCOPE], limit=LEG_LIMIT), reps)))  # fmt: skip
    # the same query as FTS5 ranked it before the postings budget: every entry holding a term
    expr = match_expression(DEFAULT_TOKENIZER(common))
    full = timed(lambda i: sql_full_rank(work / f"sql-{n}.sqlite3", expr), reps)
    rows.append(row(n, "bm25 leg: FTS5 ranking every posting (before the budget)", full))
    rows.append(row(n, "hybrid: ChromaStore.recall, 5 most frequent words",
                    timed(lambda i: chroma.recall(common, scopes=[SCOPE], limit=LIMIT), reps)))  # fmt: skip
    rows.append(row(n, "baseline: rank-bm25 BM25Okapi rebuilt per search", okapi))
    rows.append(row(n, "baseline: numpy exact cosine (1 thread)", numpy_ms))
    rows.append(row(n, "baseline: Chroma, `where` scope filter", where))
    rows.append(row(n, "reference: Chroma, no filter", plain))

    w = args.writes

    def write_search(st: Any, offset: int) -> Callable[[int], object]:
        def run(i: int) -> object:
            st.put(new_entry(offset + i, q))
            return st.recall(q[i % len(q)], scopes=[SCOPE], limit=LIMIT)

        return run

    ws_hybrid = timed(write_search(chroma, 0), w)
    rows.append(row(n, "write+search: MemStore (bm25)", timed(write_search(mem, 0), w)))
    rows.append(row(n, "write+search: SqliteStore (bm25)", timed(write_search(sql, 0), w)))
    rows.append(row(n, "**write+search: ChromaStore (hybrid)**", ws_hybrid))

    def okapi_write_search(i: int) -> object:
        tokens.append(document_terms(new_entry(10_000 + i, q)))
        return okapi_search(i)

    def where_write_search(i: int) -> object:
        e = new_entry(20_000 + i, q)
        col.upsert(ids=[e.key], embeddings=emb.embed([e.content]), metadatas=[{"scope": SCOPE}])
        return where_search(i)

    def numpy_write_search(i: int) -> object:
        e = new_entry(30_000 + i, q)
        exact.put(e, emb.embed([e.content])[0])
        return exact.search_vector(qvecs[i % len(q)], limit=LIMIT, scopes=[SCOPE])

    rows.append(
        row(n, "write+search baseline: rank-bm25 rebuilt", timed(okapi_write_search, reps_slow))
    )
    rows.append(row(n, "write+search baseline: numpy exact cosine", timed(numpy_write_search, w)))
    rows.append(row(n, "write+search baseline: Chroma `where`", timed(where_write_search, w)))

    for conn in _FULL_RANK_CONN.values():
        conn.close()
    _FULL_RANK_CONN.clear()
    mem.close()
    sql.close()
    chroma.close()
    del client
    return rows


def model_query_ms(queries: Sequence[str]) -> list[tuple[str, float, float]]:
    """Per-query embedding time of the packaged model (sentence-transformers and ONNX)."""
    import embedders

    out = []
    for name in (embedders.DEFAULT_EMBEDDER, embedders.ONNX_EMBEDDER):
        try:
            model = embedders.get(name)
            model.embed(["warm up"])
        except Exception as err:  # a missing ONNX export, say: report and go on
            print(f"  {name}: not measured ({err})", file=sys.stderr)
            continue
        ms = timed(lambda i, m=model: m.embed([queries[i]]), 40)
        out.append((name, statistics.median(ms), p95(ms)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1k and 10k only")
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--writes", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    ap.add_argument("--dim", type=int, default=384, help="hashing embedder width")
    ap.add_argument("--no-model", action="store_true", help="skip the real model's timing")
    ap.add_argument(
        "--fusion-only",
        action="store_true",
        help="only the ChromaStore rows: each leg and the hybrid, previous and default fusion",
    )
    ap.add_argument(
        "--windows",
        action="store_true",
        help="only the vector leg and the hybrid: one vector per entry against one per window",
    )
    ap.add_argument(
        "--common-words",
        action="store_true",
        help="only the lexical worst case (five most frequent words): now against the previous rule",
    )
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.quick:
        sizes = [s for s in sizes if s <= 10_000]
    work = Path(tempfile.mkdtemp(prefix="recall-bench-"))
    header = ["entries", "what", "median ms", "p95 ms", "runs", "x faster than baseline"]
    rows: list[list[str]] = []
    load = os.getloadavg()[0]
    try:
        for n in sizes:
            rows.extend(bench_size(n, args, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"| {' | '.join(header)} |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {' | '.join(r)} |")
    print(f"\nload average at start {load:.2f}, at end {os.getloadavg()[0]:.2f}; "
          f"BLAS threads {args.threads}; hashing embedder dim {args.dim}; limit {LIMIT}")  # fmt: skip
    if not args.no_model:
        for name, med, high in model_query_ms(corpus(10)[1]):
            print(f"real model query embedding, {name}: median {med:.1f} ms, p95 {high:.1f} ms")


if __name__ == "__main__":
    main()
