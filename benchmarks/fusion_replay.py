"""Replay hybrid-recall settings on leg rankings collected once per query (LoCoMo, SciFact).

    .venv/bin/python benchmarks/fusion_replay.py [--dataset locomo|scifact|both] [--limit N]
        [--data PATH] [--store-cache PATH] [--embedder NAME]

What it does, per data set:

1. Opens the cached evaluation stores of ``agentmemory eval`` (the same cache and cache key, so
   nothing is embedded when ``agentmemory eval <dataset>`` ran before; otherwise they are built
   first: about 2 minutes for LoCoMo and 11 minutes for SciFact with the packaged model).
2. Runs every query once through :func:`agentmemory.eval.evaluate` with a collecting method that
   keeps each leg's ranking :data:`LEG_DEPTH` deep: the vector leg (``store.recall(mode=
   "vector")``) and BM25 under two tokenizers (``recallers.DEFAULT_TOKENIZER``, which stems, and
   the same tokenizer with ``stemmer=None``), each a ``recallers.BM25Index`` over the scope's
   entries. The same run also asks the store itself for ``bm25`` (FTS5) and ``hybrid`` at
   :data:`LIMIT`, which the replay is checked against.
3. Replays each setting of :data:`SETTINGS`: its tokenizer's BM25 ranking and the vector ranking,
   each cut to ``Fusion.leg_limit(leg, LIMIT)``, fused by ``recallers.fuse`` (the library's RRF and
   tie order), scored at depth :data:`LIMIT` by ``agentmemory.eval.score_ranking``.

It prints markdown tables shaped like ``benchmarks/README.md`` ("Recall quality"): the settings
table (R@5 / R@10 / nDCG@10 of each leg alone and of the hybrid; "same" where a cell equals the
row above), the split-half table (:data:`HALF_A_LOCOMO` conversations and odd SciFact query ids
against the rest), and a check that the replay agrees with the store's own rankings.
``--limit`` slices the run as ``agentmemory eval --limit`` does (LoCoMo: the first N
conversations; SciFact: the first N queries, whole corpus indexed), for a quick look.
"""

from __future__ import annotations

import os

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentmemory import Entry
from agentmemory.eval import QueryRun, evaluate, mean, score_ranking
from recallers import (
    DEFAULT_FUSION,
    DEFAULT_TOKENIZER,
    LEG_BM25,
    LEG_VECTOR,
    BM25Index,
    BM25Recaller,
    Fusion,
    Hit,
    Tokenizer,
    fuse,
)

LIMIT = 10
"""The answer size replayed: what ``recall(limit=10)`` and ``agentmemory eval`` score."""

LEG_DEPTH = 100
"""How deep each leg's ranking is collected; a setting may read a leg at most this deep."""

TOKENIZERS: dict[str, Tokenizer] = {
    "default": DEFAULT_TOKENIZER,
    "no-stem": dataclasses.replace(DEFAULT_TOKENIZER, stemmer=None),
}
"""BM25 tokenizers compared: the library's default (English stopwords, Snowball stemming) and the
same without stemming (the tokenizer as first built)."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One replayed configuration: a label, the BM25 tokenizer (a :data:`TOKENIZERS` key) and the
    fusion parameters."""

    label: str
    tokenizer: str
    fusion: Fusion


SETTINGS: tuple[Setting, ...] = (
    Setting("as built: no stemming, legs read 3 x limit", "no-stem", Fusion(depth=3)),
    Setting("legs read 10 x limit (what a deeper ranking did)", "no-stem", Fusion(depth=10)),
    Setting("+ Snowball stemming (legs 3 x)", "default", Fusion(depth=3)),
    Setting("legs read 1 x limit alone (no stemming)", "no-stem", Fusion(depth=1)),
    Setting(
        f"**stemming + legs read {DEFAULT_FUSION.depth} x limit (the default)**",
        "default",
        DEFAULT_FUSION,
    ),
)
"""The settings table's rows, in order; the first is the old default, the last the library's."""

OLD_DEFAULT = SETTINGS[0]
DEFAULT = SETTINGS[-1]

HALF_A_LOCOMO = frozenset({"conv-30", "conv-41", "conv-42", "conv-44"})
"""LoCoMo conversations of half A (the settings were chosen on them); half B is the rest. SciFact's
half A is the odd query ids."""

NAMES = {"locomo": "LoCoMo", "scifact": "SciFact"}
SHOWN = ("recall@5", "recall@10", "ndcg@10")  # the settings table's metrics, in order
HALF_METRICS = {"locomo": ("recall@5", "recall@10"), "scifact": ("ndcg@10",)}
"""What the split-half table shows per data set: what each was tuned for."""


class LegCollector:
    """A :class:`agentmemory.eval.RecallFn` that records every leg's ranking, ``depth`` deep.

    Called by the runner once per query with one scope; it returns the vector leg's first
    ``limit`` hits (so the runner scores the vector leg) and keeps, under ``legs[(scope, query)]``,
    ``"vector"`` and ``"bm25:<tokenizer key>"`` hit lists (best first, at most ``depth`` each).
    The BM25 indexes are built from ``store.list(scope)`` on a scope's first query.
    """

    def __init__(self, tokenizers: Mapping[str, Tokenizer], depth: int) -> None:
        self.tokenizers = dict(tokenizers)
        self.depth = depth
        self.legs: dict[tuple[str, str], dict[str, list[Hit[Entry]]]] = {}
        self.index_s = 0.0  # seconds spent building the BM25 indexes
        self._recallers: dict[tuple[str, str], BM25Recaller[Entry]] = {}

    def _bm25(self, store: Any, scope: str, key: str) -> BM25Recaller[Entry]:
        found = self._recallers.get((scope, key))
        if found is None:
            start = time.perf_counter()
            index: BM25Index[Entry] = BM25Index(tokenizer=self.tokenizers[key])
            for entry in store.list(scope):
                index.put(entry)
            found = self._recallers[(scope, key)] = BM25Recaller(index)
            self.index_s += time.perf_counter() - start
        return found

    def __call__(self, store: Any, query: str, scopes: Sequence[str], limit: int) -> list[Any]:
        """Collect every leg for ``query`` in ``scopes[0]``; return the vector leg's top
        ``limit``."""
        (scope,) = scopes
        vector: list[Hit[Entry]] = store.recall(
            query, scopes=[scope], limit=self.depth, mode="vector"
        )
        legs = {LEG_VECTOR: vector}
        for key in self.tokenizers:
            bm25 = self._bm25(store, scope, key)
            legs[f"{LEG_BM25}:{key}"] = bm25.recall(query, scopes=[scope], limit=self.depth)
        self.legs[(scope, query)] = legs
        return vector[:limit]


def _store_method(mode: str) -> Any:
    def run(store: Any, query: str, scopes: Sequence[str], limit: int) -> list[Any]:
        hits: list[Any] = store.recall(query, scopes=list(scopes), limit=limit, mode=mode)
        return hits

    return run


@dataclass(frozen=True, slots=True)
class Collected:
    """One data set's collected rankings: the runner's queries (with the store's own ``bm25``
    and ``hybrid`` rankings at :data:`LIMIT`) and each query's legs, keyed by ``(scope, text)``;
    ``seconds``: ``"run_s"`` (the whole evaluate call) and ``"index_s"`` (BM25 index building)."""

    dataset: str
    queries: list[QueryRun]
    legs: dict[tuple[str, str], dict[str, list[Hit[Entry]]]]
    seconds: dict[str, float]
    reused: bool


def collect(
    dataset: str,
    *,
    limit: int | None,
    data: str | None,
    store_cache: str | None,
    embedder: str | None,
) -> Collected:
    """Run ``dataset``'s queries once (see the module docstring) and return what was collected.

    Raises what :func:`agentmemory.eval.evaluate` raises: ``DataNotFoundError`` without data,
    ``StoreLockedError`` while another process holds a cached store.
    """
    collector = LegCollector(TOKENIZERS, LEG_DEPTH)
    start = time.perf_counter()
    result = evaluate(
        dataset,
        limit=limit,
        data=data,
        store_cache=store_cache,
        embedder=embedder,
        methods={
            "legs": collector,
            "bm25": _store_method("bm25"),
            "hybrid": _store_method("hybrid"),
        },
        depth=LIMIT,
        progress=sys.stderr.isatty(),
    )
    seconds = {"run_s": time.perf_counter() - start, "index_s": collector.index_s}
    reused = all(s.get("reused", False) for s in result.stores)
    return Collected(dataset, result.queries, collector.legs, seconds, reused)


def leg_ranking(legs: Mapping[str, Sequence[Hit[Entry]]], leg: str) -> list[str]:
    """The names of a leg's first :data:`LIMIT` hits: what that leg answers alone."""
    return [h.entry.name for h in legs[leg][:LIMIT]]


def hybrid_ranking(
    legs: Mapping[str, Sequence[Hit[Entry]]], setting: Setting, scope: str
) -> list[str]:
    """The names ``recall(limit=LIMIT, mode="hybrid")`` would return under ``setting``: each leg
    cut to ``setting.fusion.leg_limit(leg, LIMIT)`` (a leg weighing 0 left out, as
    ``HybridRecaller`` does) and fused by ``recallers.fuse``.

    Raises ``ValueError`` when a leg would be read deeper than :data:`LEG_DEPTH`.
    """
    fusion = setting.fusion
    sources = {LEG_BM25: f"{LEG_BM25}:{setting.tokenizer}", LEG_VECTOR: LEG_VECTOR}
    rankings: dict[str, Sequence[Hit[Entry]]] = {}
    for leg, key in sources.items():
        if fusion.weight(leg) == 0:
            continue
        deep = fusion.leg_limit(leg, LIMIT)
        if deep > LEG_DEPTH:
            raise ValueError(f"{setting.label}: leg {leg} read {deep} deep > LEG_DEPTH {LEG_DEPTH}")
        rankings[leg] = legs[key][:deep]
    return [h.entry.name for h in fuse(rankings, scopes=[scope], limit=LIMIT, fusion=fusion)]


def score(runs: Sequence[QueryRun], rank: Callable[[QueryRun], list[str]]) -> dict[str, float]:
    """Mean of every metric of ``score_ranking`` over ``runs``, ``rank(run)`` giving each query's
    ranking (entry names, best first). An empty ``runs`` gives NaN for every metric."""
    rows = [score_ranking(rank(q), q.relevant) for q in runs]
    keys = rows[0] if rows else dict.fromkeys(SHOWN)
    return {k: mean(r[k] for r in rows) for k in keys}


class Replay:
    """Scores of one collected data set: each leg alone and the hybrid under a setting."""

    def __init__(self, collected: Collected) -> None:
        self.c = collected

    def legs(self, run: QueryRun) -> dict[str, list[Hit[Entry]]]:
        """The collected legs of ``run``."""
        return self.c.legs[(run.scope, run.text)]

    def stored(self, method: str) -> Callable[[QueryRun], list[str]]:
        """A query's ranking by the store itself (``"bm25"`` or ``"hybrid"``, at LIMIT)."""
        return lambda q: list(q.rankings[method])

    def bm25_ranking(self, tokenizer: str) -> Callable[[QueryRun], list[str]]:
        """A query's BM25 ranking with ``tokenizer`` (a :data:`TOKENIZERS` key), LIMIT deep."""
        return lambda q: leg_ranking(self.legs(q), f"{LEG_BM25}:{tokenizer}")

    def hybrid_ranking(self, setting: Setting) -> Callable[[QueryRun], list[str]]:
        """A query's hybrid ranking under ``setting``, LIMIT deep."""
        return lambda q: hybrid_ranking(self.legs(q), setting, q.scope)

    def bm25(self, runs: Sequence[QueryRun], tokenizer: str) -> dict[str, float]:
        """BM25 alone with ``tokenizer`` (a :data:`TOKENIZERS` key)."""
        return score(runs, self.bm25_ranking(tokenizer))

    def vector(self, runs: Sequence[QueryRun]) -> dict[str, float]:
        """The vector leg alone."""
        return score(runs, lambda q: leg_ranking(self.legs(q), LEG_VECTOR))

    def hybrid(self, runs: Sequence[QueryRun], setting: Setting) -> dict[str, float]:
        """The hybrid under ``setting``."""
        return score(runs, self.hybrid_ranking(setting))

    def halves(self) -> tuple[list[QueryRun], list[QueryRun]]:
        """Half A and half B of the queries (:data:`HALF_A_LOCOMO`; odd SciFact ids in A)."""
        qs = self.c.queries
        if self.c.dataset == "locomo":
            in_a = [q.scope in HALF_A_LOCOMO for q in qs]
        else:
            in_a = [int(q.query_id) % 2 == 1 for q in qs]
        return (
            [q for q, a in zip(qs, in_a, strict=True) if a],
            [q for q, a in zip(qs, in_a, strict=True) if not a],
        )


def num(value: float) -> str:
    """``0.544`` -> ``".544"`` (three decimals, leading zero dropped); NaN -> ``"-"``."""
    if math.isnan(value):
        return "-"
    text = f"{value:.3f}"
    return text[1:] if text.startswith("0.") else text


def cell(scores: Mapping[str, float], metrics: Sequence[str]) -> str:
    """``metrics`` of ``scores`` joined by `` / ``."""
    return " / ".join(num(scores[m]) for m in metrics)


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A markdown table; every column after the first left-aligned, as in the README."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def settings_table(replays: Sequence[Replay]) -> str:
    """The "What each change bought" table: one row per :data:`SETTINGS` entry, three columns
    (bm25, vector, hybrid) per data set, each R@5 / R@10 / nDCG@10 over every query."""
    header = ["setting"]
    for r in replays:
        header += [f"{NAMES[r.c.dataset]} {leg}" for leg in ("bm25", "vector", "hybrid")]
    rows: list[list[str]] = []
    previous: list[str] = []
    for setting in SETTINGS:
        cells: list[str] = []
        for r in replays:
            qs = r.c.queries
            cells += [
                cell(r.bm25(qs, setting.tokenizer), SHOWN),
                cell(r.vector(qs), SHOWN),
                cell(r.hybrid(qs, setting), SHOWN),
            ]
        shown = ["same" if previous and c == previous[i] else c for i, c in enumerate(cells)]
        rows.append([setting.label, *shown])
        previous = cells
    return markdown(header, rows)


def split_half_table(replays: Sequence[Replay]) -> str:
    """The "Split-half check" table: the default setting on half A and on half B, then the old
    default (:data:`OLD_DEFAULT`) on A and B; BM25 alone beside each hybrid."""
    header = ["half"]
    for r in replays:
        shown = " / ".join(
            m.replace("recall", "R").replace("ndcg", "nDCG") for m in HALF_METRICS[r.c.dataset]
        )
        header += [f"{NAMES[r.c.dataset]} bm25 {shown}", f"{NAMES[r.c.dataset]} hybrid {shown}"]
    rows: list[list[str]] = [["A (chosen on)"], ["B (held out)"], ["old default on A / B"]]
    for r in replays:
        metrics = HALF_METRICS[r.c.dataset]
        a, b = r.halves()
        for part, row in ((a, rows[0]), (b, rows[1])):
            row += [
                cell(r.bm25(part, DEFAULT.tokenizer), metrics),
                cell(r.hybrid(part, DEFAULT), metrics),
            ]
        rows[2] += [
            ", ".join(cell(r.bm25(p, OLD_DEFAULT.tokenizer), metrics) for p in (a, b)),
            ", ".join(cell(r.hybrid(p, OLD_DEFAULT), metrics) for p in (a, b)),
        ]
    return markdown(header, rows)


def check_table(replays: Sequence[Replay]) -> str:
    """The replay against the store's own rankings at :data:`LIMIT`: BM25 (the store's FTS5
    against the default tokenizer's ``BM25Index``) and hybrid (``store.recall(mode="hybrid")``
    against the replayed default setting): R@5 / R@10 / nDCG@10 of each, and the number of
    queries whose ranking is identical."""
    header = ["data set", "what", "store", "replay", "identical rankings"]
    rows: list[list[str]] = []
    for r in replays:
        qs = r.c.queries
        pairs = {
            "bm25 (FTS5 / BM25Index)": (r.stored("bm25"), r.bm25_ranking(DEFAULT.tokenizer)),
            "hybrid (store.recall / default setting)": (
                r.stored("hybrid"),
                r.hybrid_ranking(DEFAULT),
            ),
        }
        for what, (store_rank, replay_rank) in pairs.items():
            same = sum(store_rank(q) == replay_rank(q) for q in qs)
            rows.append(
                [
                    NAMES[r.c.dataset],
                    what,
                    cell(score(qs, store_rank), SHOWN),
                    cell(score(qs, replay_rank), SHOWN),
                    f"{same} / {len(qs)}",
                ]
            )
    return markdown(header, rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the options, collect, print the tables; returns the exit status (0)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=("locomo", "scifact", "both"), default="both")
    parser.add_argument(
        "--limit", type=int, default=None, help="LoCoMo conversations / SciFact queries to run"
    )
    parser.add_argument("--data", default=None, help="data file or folder (default: found)")
    parser.add_argument(
        "--store-cache", default=None, help="cached stores folder (default: agentmemory eval's)"
    )
    parser.add_argument(
        "--embedder", default=None, help="embedder name (default: the packaged model)"
    )
    args = parser.parse_args(argv)
    datasets = ("locomo", "scifact") if args.dataset == "both" else (args.dataset,)
    started = time.perf_counter()
    replays: list[Replay] = []
    for name in datasets:
        c = collect(
            name,
            limit=args.limit,
            data=args.data,
            store_cache=args.store_cache,
            embedder=args.embedder,
        )
        replays.append(Replay(c))
        print(
            f"{NAMES[name]}: {len(c.queries)} queries collected in {c.seconds['run_s']:.1f} s "
            f"(stores {'from the cache' if c.reused else 'built'}; BM25 indexes "
            f"{c.seconds['index_s']:.1f} s; legs {LEG_DEPTH} deep)"
        )
    t = time.perf_counter()
    halves = []
    for r in replays:
        a, b = r.halves()
        halves.append(f"{NAMES[r.c.dataset]} {len(a)} / {len(b)}")
    tables = [
        f"\nSettings, R@5 / R@10 / nDCG@10 of a ranking {LIMIT} deep over every query "
        '("same": as the row above):\n',
        settings_table(replays),
        f"\nSplit-half check, queries in half A / B: {', '.join(halves)}; rows A and B are the "
        "default setting:\n",
        split_half_table(replays),
        "\nReplay against the store's own rankings (R@5 / R@10 / nDCG@10):\n",
        check_table(replays),
    ]
    print("\n".join(tables))
    print(
        f"\ntime: replay {time.perf_counter() - t:.1f} s, total {time.perf_counter() - started:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
