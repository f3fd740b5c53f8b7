"""What an evaluation run returns: :class:`QueryRun` (one query's rankings and scores under every
method) and :class:`EvalResult` (the means, the tables a person reads, the JSON a run writes).

:mod:`agentmemory.eval.runner` and :mod:`agentmemory.eval.longmemeval_run` fill them in; nothing
here builds a store or runs a query.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .metrics import mean

__all__ = ["EvalResult", "QueryRun"]


@dataclass(frozen=True, slots=True)
class QueryRun:
    """One query's rankings and scores under every method.

    Attributes:
        query_id: ``"conv-30/q4"`` (LoCoMo), the BEIR query id, or the LongMemEval
            ``question_id``.
        text: the query.
        group: the LoCoMo category name (``"single-hop"``...) or the LongMemEval question type,
            ``""`` for BEIR.
        scope: the scope searched.
        relevant: entry names of the relevant entries.
        rankings: method -> entry names, best first (at most ``depth``).
        scores: method -> metric name -> value in ``[0, 1]``.
        sessions: the evidence sessions when the data names them apart from the evidence turns
            (LongMemEval's ``answer_session_ids``, as session names); ``()`` when the sessions
            of ``relevant`` are meant (LoCoMo).
    """

    query_id: str
    text: str
    group: str
    scope: str
    relevant: tuple[str, ...]
    rankings: Mapping[str, tuple[str, ...]]
    scores: Mapping[str, Mapping[str, float]]
    sessions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field (``sessions`` only when it is not empty)."""
        out: dict[str, Any] = {
            "query_id": self.query_id,
            "text": self.text,
            "group": self.group,
            "scope": self.scope,
            "relevant": list(self.relevant),
            "rankings": {m: list(r) for m, r in self.rankings.items()},
            "scores": {m: dict(s) for m, s in self.scores.items()},
        }
        if self.sessions:
            out["sessions"] = list(self.sessions)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueryRun:
        """Inverse of :meth:`to_dict`."""
        return cls(
            query_id=str(data["query_id"]),
            text=str(data["text"]),
            group=str(data["group"]),
            scope=str(data["scope"]),
            relevant=tuple(data["relevant"]),
            rankings={m: tuple(r) for m, r in data["rankings"].items()},
            scores={m: dict(s) for m, s in data["scores"].items()},
            sessions=tuple(data.get("sessions", ())),
        )


@dataclass(slots=True)
class EvalResult:
    """The outcome of one evaluation run.

    Attributes:
        dataset: ``"locomo"``, ``"longmemeval"`` or the BEIR set's name (``"scifact"``).
        data_path: the file or folder read.
        data_sha256: digest of the data (hex).
        embedder: the embedder's fingerprint.
        methods: method names, in table order.
        ks: the Recall@k / Hit@k cut-offs.
        depth: how many hits each method was asked for per query.
        params: what shaped the run (entry format, bounds, slice).
        load_report: what the loader normalised or skipped (counts and examples).
        summary: method -> metric -> mean over all queries.
        groups: group (LoCoMo category) -> method -> metric -> mean; empty for BEIR.
        group_sizes: group -> number of queries.
        timings: seconds: ``"load_s"``, ``"build_s"`` (writing and embedding; 0 when every store
            came from the cache), ``"<method>_s"`` (all its queries), ``"total_s"``; and
            ``"<method>_ms_per_query"``.
        stores: per store folder: ``{"path", "scope", "entries", "reused"}``.
        queries: every query's rankings and scores.
    """

    dataset: str
    data_path: str
    data_sha256: str
    embedder: str
    methods: tuple[str, ...]
    ks: tuple[int, ...]
    depth: int
    params: dict[str, Any] = field(default_factory=dict)
    load_report: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, dict[str, float]] = field(default_factory=dict)
    groups: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    group_sizes: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    stores: list[dict[str, Any]] = field(default_factory=list)
    queries: list[QueryRun] = field(default_factory=list)

    @property
    def metric_names(self) -> list[str]:
        """The metric keys in column order (``recall@1`` ... ``mrr``, ``ndcg@10``)."""
        for scores in self.summary.values():
            return list(scores)
        return []

    def table(self, *, metrics: Sequence[str] | None = None) -> str:
        """The overall table: one row per method, one column per metric, plus ms per query.

        Values are means over queries, three decimals; ``metrics`` picks and orders columns.
        """
        cols = list(metrics) if metrics is not None else self.metric_names
        header = ["method", *cols, "ms/query"]
        rows = [
            [
                m,
                *(_fmt(self.summary[m].get(c, math.nan)) for c in cols),
                f"{self.timings.get(f'{m}_ms_per_query', math.nan):.1f}",
            ]
            for m in self.methods
        ]
        return _grid(header, rows)

    def group_table(self, *, metrics: Sequence[str] | None = None) -> str:
        """Per-group (LoCoMo category) table: rows ``"<group> (n)"`` x method; ``""`` when the
        run has no groups."""
        if not self.groups:
            return ""
        cols = list(metrics) if metrics is not None else self.metric_names
        header = ["category", "method", *cols]
        rows: list[list[str]] = []
        for group, by_method in self.groups.items():
            for i, m in enumerate(self.methods):
                label = f"{group} ({self.group_sizes.get(group, 0)})" if i == 0 else ""
                rows.append([label, m, *(_fmt(by_method[m].get(c, math.nan)) for c in cols)])
        return _grid(header, rows)

    def render(self) -> str:
        """The text a person reads: a title line, the overall table, the per-category table
        (LoCoMo), and the time taken."""
        n = len(self.queries)
        lines = [
            f"{self.dataset}: {n} queries, {len(self.stores)} store(s), embedder "
            f"{self.embedder.split(';')[0]}, ranking depth {self.depth}",
            "",
            self.table(),
        ]
        if "skipped_abstention" in self.load_report:  # LongMemEval
            r = self.load_report
            lines[1:1] = [
                f"skipped: {r['skipped_abstention']} abstention question(s) (question_id ending "
                f"_abs: nothing to retrieve), {r.get('skipped_no_evidence', 0)} without a "
                "has_answer turn"
            ]
        short = sorted({m.rsplit("@", 1)[1] for m in self.methods if "@" in m}, key=int)
        if short:
            shown = ", ".join(short)
            lines.append(
                f"(<method>@{shown}: store.recall(limit={shown}), scored on those hits; 5 is what "
                "memory_search returns by default)"
            )
        comparable = self.comparable_table()
        if comparable:
            lines += [
                "",
                "as other work reports it (session_any: any evidence session among the top k "
                "turns' sessions; recall_all: every evidence turn in the top k; docs/recall.md):",
                comparable,
            ]
        if self.groups:
            lines += ["", "by category:", self.group_table()]
        t = self.timings
        lines += [
            "",
            f"time: load {t.get('load_s', 0):.1f} s, build {t.get('build_s', 0):.1f} s "
            f"({'cached' if self.stores and all(s['reused'] for s in self.stores) else 'built'}), "
            + ", ".join(f"{m} {t.get(f'{m}_s', 0):.1f} s" for m in self.methods)
            + f", total {t.get('total_s', 0):.1f} s",
        ]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()

    def recall_curve(self, method: str, ks: Sequence[int]) -> list[float]:
        """Mean Recall@k of ``method`` for each ``k`` in ``ks``, from the stored rankings.

        ``k`` past ``depth`` sees only ``depth`` hits. Raises ``KeyError`` for an unknown method.
        """
        from .metrics import recall_at_k

        return [
            mean(recall_at_k(q.rankings[method], q.relevant, k) for q in self.queries) for k in ks
        ]

    def comparable(self, ks: Sequence[int] = (5, 10)) -> dict[str, dict[str, float]]:
        """For LoCoMo and LongMemEval, per method, the figures published work reports
        (docs/recall.md#figures-other-work-reports): ``session_any@k`` (a session of the evidence
        among the top ``k`` turns' sessions; LongMemEval: of ``answer_session_ids``),
        ``recall_all@k`` (every evidence turn in the top ``k``) and this library's turn-level
        ``recall@k`` beside them, means over the questions, from the stored rankings; ``{}`` for
        another data set."""
        session_of = _session_unit(self.dataset)
        if session_of is None or not self.queries:
            return {}
        from .metrics import recall_all_at_k, recall_any_at_k, recall_at_k, session_any_at_k

        def session_any(q: QueryRun, m: str, k: int) -> float:
            if q.sessions:
                return session_any_at_k(q.rankings[m], q.sessions, k, session_of=session_of)
            return recall_any_at_k(q.rankings[m], q.relevant, k, unit=session_of)

        out: dict[str, dict[str, float]] = {}
        for m in self.methods:
            row: dict[str, float] = {}
            for k in ks:
                row[f"recall@{k}"] = mean(
                    recall_at_k(q.rankings[m], q.relevant, k) for q in self.queries
                )
                row[f"session_any@{k}"] = mean(session_any(q, m, k) for q in self.queries)
                row[f"recall_all@{k}"] = mean(
                    recall_all_at_k(q.rankings[m], q.relevant, k) for q in self.queries
                )
            out[m] = row
        return out

    def comparable_table(self) -> str:
        """:meth:`comparable` as a table; ``""`` when it is empty."""
        figures = self.comparable()
        if not figures:
            return ""
        cols = list(next(iter(figures.values())))
        rows = [[m, *(_fmt(v[c]) for c in cols)] for m, v in figures.items()]
        return _grid(["method", *cols], rows)

    def compare(self, a: str, b: str, metric: str) -> list[tuple[QueryRun, float]]:
        """Queries where methods ``a`` and ``b`` differ on ``metric``, with ``a - b``, largest
        gain of ``a`` first (so the last ones are where ``a`` loses most). Raises ``KeyError``
        for an unknown method or metric."""
        diffs = [(q, q.scores[a][metric] - q.scores[b][metric]) for q in self.queries]
        return sorted(
            [(q, d) for q, d in diffs if d != 0], key=lambda item: (-item[1], item[0].query_id)
        )

    def to_dict(self, *, queries: bool = True) -> dict[str, Any]:
        """A JSON-ready dict of every field (``queries=False`` leaves the per-query part out)."""
        out: dict[str, Any] = {
            "dataset": self.dataset,
            "data_path": self.data_path,
            "data_sha256": self.data_sha256,
            "embedder": self.embedder,
            "methods": list(self.methods),
            "ks": list(self.ks),
            "depth": self.depth,
            "params": self.params,
            "load_report": self.load_report,
            "summary": self.summary,
            "groups": self.groups,
            "group_sizes": self.group_sizes,
            "timings": self.timings,
            "stores": self.stores,
            "comparable": self.comparable(),
        }
        if queries:
            out["queries"] = [q.to_dict() for q in self.queries]
        return out

    def to_json(self, *, indent: int | None = 2, queries: bool = True) -> str:
        """:meth:`to_dict` as JSON text (NaN, for an empty group, is written as ``null``)."""
        return json.dumps(_no_nan(self.to_dict(queries=queries)), indent=indent)

    def write_json(self, path: str | Path, *, queries: bool = True) -> Path:
        """Write :meth:`to_json` to ``path`` (parents created) and return the path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.to_json(queries=queries) + "\n", encoding="utf-8")
        return target

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalResult:
        """Inverse of :meth:`to_dict` (``null`` metrics come back as NaN)."""
        return cls(
            dataset=str(data["dataset"]),
            data_path=str(data["data_path"]),
            data_sha256=str(data["data_sha256"]),
            embedder=str(data["embedder"]),
            methods=tuple(data["methods"]),
            ks=tuple(int(k) for k in data["ks"]),
            depth=int(data["depth"]),
            params=dict(data.get("params", {})),
            load_report=dict(data.get("load_report", {})),
            summary=_nan_back(data.get("summary", {})),
            groups={g: _nan_back(v) for g, v in data.get("groups", {}).items()},
            group_sizes={g: int(n) for g, n in data.get("group_sizes", {}).items()},
            timings={k: float(v) for k, v in data.get("timings", {}).items()},
            stores=list(data.get("stores", [])),
            queries=[QueryRun.from_dict(q) for q in data.get("queries", [])],
        )

    @classmethod
    def read_json(cls, path: str | Path) -> EvalResult:
        """Read a file written by :meth:`write_json`."""
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def _session_unit(dataset: str) -> Callable[[str], str] | None:
    """The function from a turn's entry name to its session for ``dataset``'s names, ``None``
    when its entries are not turns of sessions (BEIR)."""
    if dataset == "locomo":
        from .locomo import session_of

        return session_of
    if dataset == "longmemeval":
        from .longmemeval import haystack_session_of

        return haystack_session_of
    return None


def _fmt(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


def _grid(header: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell; text columns (up to "method") left-aligned, numbers
    right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    left = header.index("method") + 1 if "method" in header else 1

    def line(cells: list[str]) -> str:
        padded = [
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(padded).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def _no_nan(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_no_nan(v) for v in value]
    return value


def _nan_back(table: Mapping[str, Mapping[str, float | None]]) -> dict[str, dict[str, float]]:
    return {
        m: {k: math.nan if v is None else float(v) for k, v in row.items()}
        for m, row in table.items()
    }
