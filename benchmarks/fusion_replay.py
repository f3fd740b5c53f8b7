"""Replay hybrid-recall settings on leg rankings collected once per query (LoCoMo, SciFact).

    .venv/bin/python benchmarks/fusion_replay.py [--dataset locomo|scifact|both] [--limit N]
        [--data PATH] [--store-cache PATH] [--embedder NAME] [--rankings DIR] [--recollect]
        [--sweep]

What it does, per data set:

1. Collects each query's leg rankings once, :data:`LEG_DEPTH` deep, and keeps them in a gzipped
   JSON file under ``--rankings`` (default: ``agentmemory eval``'s cache folder, ``replay/``), so
   a second run reads that file and opens no store (``--recollect`` collects again: do so after
   changing a leg). Collecting opens the cached evaluation stores of ``agentmemory eval`` (the
   same cache and key, so nothing is embedded when ``agentmemory eval <dataset>`` ran before;
   otherwise they are built first: about 2 minutes for LoCoMo and 11 minutes for SciFact with the
   packaged model) and runs every query through :func:`agentmemory.eval.evaluate` with a
   collecting method: the vector leg (``store.recall(mode="vector")``) and BM25 under two
   tokenizers (``recallers.DEFAULT_TOKENIZER``, which stems, and the same with
   ``stemmer=None``), each a ``recallers.BM25Index`` over the scope's entries, each with its raw
   scores. The same run asks the store itself for ``bm25`` and ``hybrid`` at each of
   :data:`LIMITS`, which the replay is checked against.
2. Replays each setting (:data:`SETTINGS`; with ``--sweep`` every point of :func:`sweep_grid`):
   its tokenizer's BM25 ranking and the vector ranking, each cut to ``Fusion.leg_limit(leg,
   limit)``, fused by ``recallers.fuse`` (the library's fusion and tie order), scored by
   ``agentmemory.eval.score_ranking`` at ``limit`` = 5 and 10 (what ``memory_search`` returns by
   default, and what ``agentmemory eval`` scores).

It prints markdown tables shaped like ``benchmarks/README.md`` ("Recall quality"): the settings
table (R@1 / R@5 / R@10 / MRR / nDCG@10 of each leg alone and of the hybrid at limit 10; "same"
where a cell equals the row above), the rule table (the default against the better leg, every
metric, both limits), the split-half table (:data:`HALF_A_LOCOMO` conversations and odd SciFact
query ids against the rest), and a check that the replay agrees with the store's own rankings.
``--sweep`` adds the choice: every grid point scored on half A, the rule checked, the best shown
and confirmed on half B (docs/recall.md#the-default-fusion says how it was chosen).
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
import gzip
import json
import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from agentmemory import Entry
from agentmemory.eval import QueryRun, evaluate, mean, score_ranking
from agentmemory.eval.download import cache_dir
from recallers import (
    DEFAULT_FUSION,
    DEFAULT_TOKENIZER,
    FUSION_METHODS,
    LEG_BM25,
    LEG_VECTOR,
    BM25Index,
    BM25Recaller,
    Fusion,
    Hit,
    LegScore,
    Tokenizer,
    fuse,
)

LIMITS = (5, 10)
"""The answer sizes replayed: ``memory_search``'s default (5) and what ``agentmemory eval``
scores (10)."""

LIMIT = 10
"""The answer size of the settings table."""

LEG_DEPTH = 100
"""How deep each leg's ranking is collected; a setting may read a leg at most this deep."""

METRICS = ("recall@1", "recall@5", "recall@10", "mrr", "ndcg@10")
"""The metrics of the tables and of the rule, in column order."""

TOKENIZERS: dict[str, Tokenizer] = {
    "default": DEFAULT_TOKENIZER,
    "no-stem": dataclasses.replace(DEFAULT_TOKENIZER, stemmer=None),
}
"""BM25 tokenizers compared: the library's default (English stopwords, Snowball stemming) and the
same without stemming (the tokenizer as first built)."""

RRF_LEGS_1X = Fusion(method="rrf", depth=1)
"""The previous default: RRF, k 60, each leg read to the limit."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One replayed configuration: a label, the BM25 tokenizer (a :data:`TOKENIZERS` key) and the
    fusion parameters."""

    label: str
    tokenizer: str
    fusion: Fusion


def _mm(bm25: float, candidates: int, method: str = "min-max") -> Fusion:
    return Fusion(
        method=method, candidates=candidates, weights={LEG_BM25: bm25, LEG_VECTOR: 1 - bm25}
    )


SETTINGS: tuple[Setting, ...] = (
    Setting("as built: no stemming, RRF, legs read 3 x limit", "no-stem", Fusion(depth=3)),
    Setting("+ Snowball stemming", "default", Fusion(depth=3)),
    Setting("RRF, legs read 1 x limit (the previous default)", "default", RRF_LEGS_1X),
    Setting("RRF, legs read 100 deep", "default", Fusion(candidates=100)),
    Setting("min-max, equal weights, legs 1 x limit", "default", _mm(0.5, 0)),
    Setting("min-max, equal weights, legs 100 deep", "default", _mm(0.5, 100)),
    Setting("min-max, BM25 weight 0.6, legs 100 deep (the issue's lead)", "default", _mm(0.6, 100)),
    Setting("z-score, BM25 weight 0.6, legs 100 deep", "default", _mm(0.6, 100, "z-score")),
    Setting(
        "theoretical-min-max, BM25 weight 0.6, legs 100 deep",
        "default",
        _mm(0.6, 100, "theoretical-min-max"),
    ),
    Setting(
        "min-max, BM25 weight 0.7, legs 100 deep (best on half A; 21 ms at 100k)",
        "default",
        _mm(0.7, 100),
    ),
    Setting("**the default: z-score, BM25 weight 0.75, legs 20 deep**", "default", DEFAULT_FUSION),
)
"""The settings table's rows, in order; the last is the library's default."""

DEFAULT = SETTINGS[-1]
OLD_DEFAULT = SETTINGS[2]

HALF_A_LOCOMO = frozenset({"conv-30", "conv-41", "conv-42", "conv-44"})
"""LoCoMo conversations of half A (the settings were chosen on them); half B is the rest. SciFact's
half A is the odd query ids."""

NAMES = {"locomo": "LoCoMo", "scifact": "SciFact"}
SHORT = {
    "recall@1": "R@1",
    "recall@5": "R@5",
    "recall@10": "R@10",
    "mrr": "MRR",
    "ndcg@10": "nDCG@10",
}


def sweep_grid() -> list[Setting]:
    """The settings ``--sweep`` scores on half A: every fusion method; BM25 weight 0.3 to 0.8
    (the vector leg the rest; RRF at equal weights 1); each leg read 1 x limit or 20, 50 or 100
    deep. All with the default (stemming) tokenizer."""
    grid: list[Setting] = []
    for candidates in (0, 20, 50, 100):
        deep = f"legs {candidates} deep" if candidates else "legs 1 x limit"
        grid.append(Setting(f"rrf, equal, {deep}", "default", Fusion(candidates=candidates)))
        for method in FUSION_METHODS:
            for bm25 in (0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8):
                label = f"{method}, bm25 {bm25}, {deep}"
                grid.append(Setting(label, "default", _mm(bm25, candidates, method)))
    return grid


# --- collecting ---------------------------------------------------------------------------------

Ranked = list[tuple[str, float]]
"""One leg's ranking: ``(entry name, raw score)``, best first."""


class LegCollector:
    """A :class:`agentmemory.eval.RecallFn` that records every leg's ranking, ``depth`` deep.

    Called by the runner once per query with one scope; it returns the vector leg's first
    ``limit`` hits (so the runner scores the vector leg) and keeps, under ``legs[(scope, query)]``,
    ``"vector"`` and ``"bm25:<tokenizer key>"`` rankings (``(name, raw score)``, best first, at
    most ``depth`` each). The BM25 indexes are built from ``store.list(scope)`` on a scope's first
    query.
    """

    def __init__(self, tokenizers: Mapping[str, Tokenizer], depth: int) -> None:
        self.tokenizers = dict(tokenizers)
        self.depth = depth
        self.legs: dict[tuple[str, str], dict[str, Ranked]] = {}
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
        legs = {LEG_VECTOR: [(h.entry.name, h.score) for h in vector]}
        for key in self.tokenizers:
            hits = self._bm25(store, scope, key).recall(query, scopes=[scope], limit=self.depth)
            legs[f"{LEG_BM25}:{key}"] = [(h.entry.name, h.score) for h in hits]
        self.legs[(scope, query)] = legs
        return vector[:limit]


def _store_method(mode: str, limit: int) -> Any:
    def run(store: Any, query: str, scopes: Sequence[str], depth: int) -> list[Any]:
        hits: list[Any] = store.recall(query, scopes=list(scopes), limit=limit, mode=mode)
        return hits

    return run


def store_key(mode: str, limit: int) -> str:
    """The collected method name of the store's own ``mode`` ranking at ``limit``."""
    return f"store-{mode}@{limit}"


@dataclass(frozen=True, slots=True)
class Collected:
    """One data set's collected rankings: the runner's queries (with the store's own ``bm25``
    and ``hybrid`` rankings at each of :data:`LIMITS`) and each query's legs, keyed by
    ``(scope, text)``; ``seconds``: ``"run_s"`` (the whole evaluate call) and ``"index_s"``
    (BM25 index building)."""

    dataset: str
    queries: list[QueryRun]
    legs: dict[tuple[str, str], dict[str, Ranked]]
    seconds: dict[str, float]
    reused: bool

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (legs as a list, since JSON keys are strings)."""
        return {
            "dataset": self.dataset,
            "queries": [q.to_dict() for q in self.queries],
            "legs": [
                {"scope": s, "text": t, "legs": {k: [list(p) for p in v] for k, v in legs.items()}}
                for (s, t), legs in self.legs.items()
            ],
            "seconds": self.seconds,
            "reused": self.reused,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Collected:
        """Inverse of :meth:`to_dict`."""
        return cls(
            dataset=str(data["dataset"]),
            queries=[QueryRun.from_dict(q) for q in data["queries"]],
            legs={
                (row["scope"], row["text"]): {
                    k: [(str(n), float(s)) for n, s in v] for k, v in row["legs"].items()
                }
                for row in data["legs"]
            },
            seconds=dict(data["seconds"]),
            reused=bool(data["reused"]),
        )


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
    methods: dict[str, Any] = {"legs": collector}
    for n in LIMITS:
        methods[store_key("bm25", n)] = _store_method("bm25", n)
        methods[store_key("hybrid", n)] = _store_method("hybrid", n)
    start = time.perf_counter()
    result = evaluate(
        dataset,
        limit=limit,
        data=data,
        store_cache=store_cache,
        embedder=embedder,
        methods=methods,
        depth=LIMIT,
        progress=sys.stderr.isatty(),
    )
    seconds = {"run_s": time.perf_counter() - start, "index_s": collector.index_s}
    reused = all(s.get("reused", False) for s in result.stores)
    return Collected(dataset, result.queries, collector.legs, seconds, reused)


def rankings_file(folder: Path, dataset: str, limit: int | None, embedder: str | None) -> Path:
    """Where the collected rankings of one run are kept."""
    tag = (embedder or "default").replace(":", "_").replace("/", "_")
    part = f"-first{limit}" if limit else ""
    return folder / f"{dataset}{part}-{tag}-depth{LEG_DEPTH}.json.gz"


def load_or_collect(
    dataset: str,
    *,
    limit: int | None,
    data: str | None,
    store_cache: str | None,
    embedder: str | None,
    folder: Path,
    recollect: bool,
) -> tuple[Collected, Path, bool]:
    """The collected rankings from ``folder`` when kept there (and not ``recollect``), else
    :func:`collect` them and keep them. Returns them, the file and whether it was read."""
    path = rankings_file(folder, dataset, limit, embedder)
    if path.exists() and not recollect:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return Collected.from_dict(json.load(f)), path, True
    c = collect(dataset, limit=limit, data=data, store_cache=store_cache, embedder=embedder)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        json.dump(c.to_dict(), f)
    tmp.replace(path)
    return c, path, False


# --- replaying ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Doc:
    """A collected document: what ``recallers.fuse`` needs (scope and name)."""

    scope: str
    name: str


def leg_hits(scope: str, leg: str, ranked: Ranked) -> list[Hit[Doc]]:
    """One collected leg as the hits that leg's recaller returned."""
    return [
        Hit(Doc(scope, name), score, MappingProxyType({leg: LegScore(rank, score)}), leg)
        for rank, (name, score) in enumerate(ranked, start=1)
    ]


def score(runs: Sequence[QueryRun], rank: Callable[[QueryRun], list[str]]) -> dict[str, float]:
    """Mean of every metric of ``score_ranking`` over ``runs``, ``rank(run)`` giving each query's
    ranking (entry names, best first). An empty ``runs`` gives NaN for every metric."""
    rows = [score_ranking(rank(q), q.relevant) for q in runs]
    keys = rows[0] if rows else dict.fromkeys(METRICS)
    return {k: mean(r[k] for r in rows) for k in keys}


class Replay:
    """Scores of one collected data set: each leg alone and the hybrid under a setting."""

    def __init__(self, collected: Collected) -> None:
        self.c = collected
        self._legs_scored: dict[tuple[str, int, int, int], dict[str, float]] = {}
        self._halves: tuple[list[QueryRun], list[QueryRun]] | None = None
        self._hits: dict[tuple[str, str], dict[str, list[Hit[Doc]]]] = {}
        for (scope, text), legs in collected.legs.items():
            self._hits[(scope, text)] = {
                key: leg_hits(scope, key.split(":")[0], ranked) for key, ranked in legs.items()
            }

    def legs(self, run: QueryRun) -> dict[str, list[Hit[Doc]]]:
        """The collected legs of ``run`` as hits."""
        return self._hits[(run.scope, run.text)]

    def stored(self, method: str, limit: int) -> Callable[[QueryRun], list[str]]:
        """A query's ranking by the store itself (``"bm25"`` or ``"hybrid"``, at ``limit``)."""
        return lambda q: list(q.rankings[store_key(method, limit)])

    def leg_ranking(self, key: str, limit: int) -> Callable[[QueryRun], list[str]]:
        """A query's ranking by one collected leg (``"vector"``, ``"bm25:<tokenizer>"``)."""
        return lambda q: [h.entry.name for h in self.legs(q)[key][:limit]]

    def hybrid_ranking(self, setting: Setting, limit: int) -> Callable[[QueryRun], list[str]]:
        """A query's hybrid ranking under ``setting`` at ``limit``: each leg cut to
        ``setting.fusion.leg_limit(leg, limit)`` (a leg weighing 0 left out, as
        ``HybridRecaller`` does) and fused by ``recallers.fuse``.

        Raises ``ValueError`` when a leg would be read deeper than :data:`LEG_DEPTH`."""
        fusion = setting.fusion
        sources = {LEG_BM25: f"{LEG_BM25}:{setting.tokenizer}", LEG_VECTOR: LEG_VECTOR}
        cuts: dict[str, tuple[str, int]] = {}
        for leg, key in sources.items():
            if fusion.weight(leg) == 0:
                continue
            deep = fusion.leg_limit(leg, limit)
            if deep > LEG_DEPTH:
                raise ValueError(f"{setting.label}: leg {leg} read {deep} deep > {LEG_DEPTH}")
            cuts[leg] = (key, deep)

        def rank(q: QueryRun) -> list[str]:
            legs = self.legs(q)
            rankings = {leg: legs[key][:deep] for leg, (key, deep) in cuts.items()}
            fused = fuse(rankings, scopes=[q.scope], limit=limit, fusion=fusion)
            return [h.entry.name for h in fused]

        return rank

    def _leg(self, runs: Sequence[QueryRun], key: str, limit: int) -> dict[str, float]:
        memo = (key, limit, id(runs), len(runs))
        found = self._legs_scored.get(memo)
        if found is None:
            found = self._legs_scored[memo] = score(runs, self.leg_ranking(key, limit))
        return found

    def bm25(self, runs: Sequence[QueryRun], tokenizer: str, limit: int) -> dict[str, float]:
        """BM25 alone with ``tokenizer`` (a :data:`TOKENIZERS` key) at ``limit``."""
        return self._leg(runs, f"{LEG_BM25}:{tokenizer}", limit)

    def vector(self, runs: Sequence[QueryRun], limit: int) -> dict[str, float]:
        """The vector leg alone at ``limit``."""
        return self._leg(runs, LEG_VECTOR, limit)

    def hybrid(self, runs: Sequence[QueryRun], setting: Setting, limit: int) -> dict[str, float]:
        """The hybrid under ``setting`` at ``limit``."""
        return score(runs, self.hybrid_ranking(setting, limit))

    def halves(self) -> tuple[list[QueryRun], list[QueryRun]]:
        """Half A and half B of the queries (:data:`HALF_A_LOCOMO`; odd SciFact ids in A); the
        same two lists on every call."""
        if self._halves is not None:
            return self._halves
        qs = self.c.queries
        if self.c.dataset == "locomo":
            in_a = [q.scope in HALF_A_LOCOMO for q in qs]
        else:
            in_a = [int(q.query_id) % 2 == 1 for q in qs]
        self._halves = (
            [q for q, a in zip(qs, in_a, strict=True) if a],
            [q for q, a in zip(qs, in_a, strict=True) if not a],
        )
        return self._halves


# --- the rule -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RuleCheck:
    """A setting against the better single leg: ``margins[(dataset, limit, metric)]`` = hybrid
    minus the better of BM25 and vector alone (positive: the hybrid wins); ``hybrid`` the
    hybrid's own value there."""

    setting: Setting
    margins: dict[tuple[str, int, str], float]
    hybrid: dict[tuple[str, int, str], float]

    @property
    def worst(self) -> float:
        """The smallest margin (>= 0: the rule holds everywhere)."""
        return min(self.margins.values())

    @property
    def mean_margin(self) -> float:
        """The mean margin over every data set, limit and metric."""
        return mean(self.margins.values())

    def losses(self) -> list[str]:
        """Where the hybrid is under the better leg, as ``"LoCoMo R@1 @5 -0.012"``."""
        return [
            f"{NAMES[d]} {SHORT[m]} @{n} {v:+.3f}"
            for (d, n, m), v in sorted(self.margins.items())
            if v < 0
        ]


def check_rule(
    setting: Setting, parts: Mapping[str, tuple[Replay, Sequence[QueryRun]]]
) -> RuleCheck:
    """:class:`RuleCheck` of ``setting`` on ``parts`` (data set -> its replay and the queries to
    score), at each of :data:`LIMITS`, on :data:`METRICS`."""
    margins: dict[tuple[str, int, str], float] = {}
    hybrid: dict[tuple[str, int, str], float] = {}
    for dataset, (r, runs) in parts.items():
        for n in LIMITS:
            legs = (r.bm25(runs, setting.tokenizer, n), r.vector(runs, n))
            h = r.hybrid(runs, setting, n)
            for m in METRICS:
                margins[(dataset, n, m)] = h[m] - max(leg[m] for leg in legs)
                hybrid[(dataset, n, m)] = h[m]
    return RuleCheck(setting, margins, hybrid)


def choose(checks: Iterable[RuleCheck]) -> list[RuleCheck]:
    """``checks`` best first: those meeting the rule everywhere (worst margin >= 0) first, by
    mean margin; then the rest by worst margin."""
    return sorted(
        checks,
        key=lambda c: (0, -c.mean_margin) if c.worst >= 0 else (1, -c.worst),
    )


# --- tables -------------------------------------------------------------------------------------


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


def settings_table(replays: Sequence[Replay], settings: Sequence[Setting] = SETTINGS) -> str:
    """The "What each change bought" table: one row per setting, three columns (bm25, vector,
    hybrid) per data set, each R@1 / R@5 / R@10 / MRR / nDCG@10 at :data:`LIMIT` over every
    query."""
    header = ["setting"]
    for r in replays:
        header += [f"{NAMES[r.c.dataset]} {leg}" for leg in ("bm25", "vector", "hybrid")]
    rows: list[list[str]] = []
    previous: list[str] = []
    for setting in settings:
        cells: list[str] = []
        for r in replays:
            qs = r.c.queries
            cells += [
                cell(r.bm25(qs, setting.tokenizer, LIMIT), METRICS),
                cell(r.vector(qs, LIMIT), METRICS),
                cell(r.hybrid(qs, setting, LIMIT), METRICS),
            ]
        shown = ["same" if previous and c == previous[i] else c for i, c in enumerate(cells)]
        rows.append([setting.label, *shown])
        previous = cells
    return markdown(header, rows)


def rule_table(replays: Sequence[Replay], setting: Setting) -> str:
    """``setting`` against each leg over every query: one row per data set, limit and method
    (bm25, vector, hybrid), one column per metric; the better leg's value is what the hybrid must
    meet."""
    header = ["data set", "limit", "method", *(SHORT[m] for m in METRICS)]
    rows: list[list[str]] = []
    for r in replays:
        qs = r.c.queries
        for n in LIMITS:
            scored = {
                "bm25": r.bm25(qs, setting.tokenizer, n),
                "vector": r.vector(qs, n),
                "hybrid": r.hybrid(qs, setting, n),
            }
            for method, s in scored.items():
                rows.append([NAMES[r.c.dataset], str(n), method, *(num(s[m]) for m in METRICS)])
    return markdown(header, rows)


def split_half_table(replays: Sequence[Replay], setting: Setting) -> str:
    """``setting`` on half A and on half B, each against the better leg: R@5 / R@10 / nDCG@10
    at limit 10 and R@5 at limit 5, with the rule's worst margin on that half."""
    header = ["half"]
    shown = ("recall@5", "recall@10", "ndcg@10")
    for r in replays:
        name = NAMES[r.c.dataset]
        header += [f"{name} bm25 R@5 / R@10 / nDCG@10", f"{name} hybrid R@5 / R@10 / nDCG@10"]
    header.append("rule: worst margin (where)")
    rows: list[list[str]] = []
    for i, label in enumerate(("A (chosen on)", "B (held out)")):
        row = [label]
        parts: dict[str, tuple[Replay, Sequence[QueryRun]]] = {}
        for r in replays:
            part = r.halves()[i]
            parts[r.c.dataset] = (r, part)
            row += [
                cell(r.bm25(part, setting.tokenizer, LIMIT), shown),
                cell(r.hybrid(part, setting, LIMIT), shown),
            ]
        if all(part for _, part in parts.values()):
            rc = check_rule(setting, parts)
            worst = min(rc.margins, key=lambda k: rc.margins[k])
            where = f"{NAMES[worst[0]]} {SHORT[worst[2]]} @{worst[1]}"
            row.append(f"{rc.worst:+.3f} ({where})")
        else:
            row.append("-")
        rows.append(row)
    return markdown(header, rows)


def check_table(replays: Sequence[Replay]) -> str:
    """The replay against the store's own rankings at each of :data:`LIMITS`: BM25 (the store's
    FTS5 against the default tokenizer's ``BM25Index``) and hybrid (``store.recall(mode=
    "hybrid")`` against the replayed default setting): R@5 / R@10 / nDCG@10 of each, and the
    number of queries whose ranking is identical."""
    header = ["data set", "limit", "what", "store", "replay", "identical rankings"]
    shown = ("recall@5", "recall@10", "ndcg@10")
    rows: list[list[str]] = []
    for r in replays:
        qs = r.c.queries
        for n in LIMITS:
            pairs = {
                "bm25 (FTS5 / BM25Index)": (
                    r.stored("bm25", n),
                    r.leg_ranking(f"{LEG_BM25}:{DEFAULT.tokenizer}", n),
                ),
                "hybrid (store.recall / default setting)": (
                    r.stored("hybrid", n),
                    r.hybrid_ranking(DEFAULT, n),
                ),
            }
            for what, (store_rank, replay_rank) in pairs.items():
                same = sum(store_rank(q) == replay_rank(q) for q in qs)
                rows.append(
                    [
                        NAMES[r.c.dataset],
                        str(n),
                        what,
                        cell(score(qs, store_rank), shown),
                        cell(score(qs, replay_rank), shown),
                        f"{same} / {len(qs)}",
                    ]
                )
    return markdown(header, rows)


def sweep_report(replays: Sequence[Replay], top: int = 12) -> str:
    """Every :func:`sweep_grid` setting scored on half A by the rule; the best ``top`` shown with
    their worst margin, mean margin and the targets' metrics, and the best confirmed on half B."""
    half_a = {r.c.dataset: (r, r.halves()[0]) for r in replays}
    half_b = {r.c.dataset: (r, r.halves()[1]) for r in replays}
    ranked = choose(check_rule(s, half_a) for s in sweep_grid())
    header = ["setting (half A)", "worst margin", "mean margin", "losses"]
    for r in replays:
        if r.c.dataset == "locomo":
            header += ["LoCoMo R@5 @5", "LoCoMo R@10 @10"]
        else:
            header += ["SciFact nDCG@10 @10"]
    rows: list[list[str]] = []
    for rc in ranked[:top]:
        row = [
            rc.setting.label,
            f"{rc.worst:+.3f}",
            f"{rc.mean_margin:+.4f}",
            ", ".join(rc.losses()) or "none",
        ]
        for r in replays:
            d = r.c.dataset
            if d == "locomo":
                row += [num(rc.hybrid[(d, 5, "recall@5")]), num(rc.hybrid[(d, 10, "recall@10")])]
            else:
                row += [num(rc.hybrid[(d, 10, "ndcg@10")])]
        rows.append(row)
    best = ranked[0]
    confirm = check_rule(best.setting, half_b) if all(p for _, p in half_b.values()) else None
    lines = [
        f"Sweep: {len(ranked)} settings scored on half A; the best {min(top, len(ranked))}:\n",
        markdown(header, rows),
        f"\nChosen on half A: {best.setting.label} (worst margin {best.worst:+.3f}).",
    ]
    if confirm is not None:
        lines.append(
            f"On half B: worst margin {confirm.worst:+.3f}; "
            f"losses: {', '.join(confirm.losses()) or 'none'}."
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the options, collect (or read the kept rankings), print the tables; returns the
    exit status (0)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
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
    parser.add_argument(
        "--rankings",
        default=None,
        help="folder of the kept leg rankings (default: agentmemory eval's cache, replay/)",
    )
    parser.add_argument(
        "--recollect", action="store_true", help="collect the legs again (after changing a leg)"
    )
    parser.add_argument(
        "--sweep", action="store_true", help="score every grid setting on half A and choose"
    )
    args = parser.parse_args(argv)
    datasets = ("locomo", "scifact") if args.dataset == "both" else (args.dataset,)
    folder = Path(args.rankings) if args.rankings else cache_dir() / "replay"
    started = time.perf_counter()
    replays: list[Replay] = []
    for name in datasets:
        c, path, kept = load_or_collect(
            name,
            limit=args.limit,
            data=args.data,
            store_cache=args.store_cache,
            embedder=args.embedder,
            folder=folder,
            recollect=args.recollect,
        )
        replays.append(Replay(c))
        how = (
            f"read from {path}"
            if kept
            else f"collected in {c.seconds['run_s']:.1f} s (stores "
            f"{'from the cache' if c.reused else 'built'}; BM25 indexes "
            f"{c.seconds['index_s']:.1f} s), kept in {path}"
        )
        print(f"{NAMES[name]}: {len(c.queries)} queries, legs {LEG_DEPTH} deep, {how}")
    t = time.perf_counter()
    halves = []
    for r in replays:
        a, b = r.halves()
        halves.append(f"{NAMES[r.c.dataset]} {len(a)} / {len(b)}")
    tables = [
        f"\nSettings, R@1 / R@5 / R@10 / MRR / nDCG@10 at limit {LIMIT} over every query "
        '("same": as the row above):\n',
        settings_table(replays),
        f"\nThe default ({DEFAULT.fusion}) against each leg, every query:\n",
        rule_table(replays, DEFAULT),
        f"\nSplit-half check of the default, queries in half A / B: {', '.join(halves)}:\n",
        split_half_table(replays, DEFAULT),
        "\nReplay against the store's own rankings (R@5 / R@10 / nDCG@10):\n",
        check_table(replays),
    ]
    if args.sweep:
        tables += ["", sweep_report(replays)]
    print("\n".join(tables))
    print(
        f"\ntime: replay {time.perf_counter() - t:.1f} s, total {time.perf_counter() - started:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
