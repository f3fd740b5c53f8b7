"""Run a recall-quality evaluation: build the stores, query them with each method, score.

:func:`evaluate_locomo` and :func:`evaluate_beir` (or :func:`evaluate` by data set name) load the
data, write it into evaluation stores (a :class:`~agentmemory.ChromaStore` with the default
offline embedder unless told otherwise, filled with ``put_many``), run each method (``"bm25"``,
``"vector"``, ``"hybrid"``: ``store.recall(query, scopes=..., limit=depth, mode=method)``) on every
question, and score the rankings with :mod:`agentmemory.eval.metrics`. They return an
:class:`EvalResult`: ``str(result)`` is the table (rows: method; columns: metrics; LoCoMo also per
category), :meth:`EvalResult.to_json` the same numbers plus every query's ranking by every method.

Built stores are cached under ``<cache_dir>/stores/<dataset>-<key>/`` where the key digests the
data file(s), the embedder's fingerprint and the parameters that decide what the entries hold, so
a second run (or a run that only changes how recall ranks) embeds nothing. A store is used only
once a marker file says it was built completely; an interrupted build is thrown away and redone.
ChromaStore locks its folder, so one process at a time runs on one cached store.

Every method reads one ranking ``depth`` deep per query (default: the largest ``k``), and all of
the ``@k`` metrics come from that one ranking. For BM25 and vector search the first ``k`` of a
deeper ranking are the top ``k``; a hybrid reads each leg ``depth`` deep (``recallers.Fusion``'s
default depth 1), so its first ``k`` may differ slightly from a recall with ``limit=k``. The
default depth 10 scores exactly what ``recall(limit=10)`` returns; a deeper ranking (``ks`` past 10)
changes the hybrid's first 10, so compare hybrid tables at one depth. Each named method is also
run at the tool's default answer size (:data:`DEFAULT_LIMITS`: ``"hybrid@5"`` is
``recall(limit=5)``), so the table shows what ``memory_search`` returns by default too.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from embedders import window_layout

from ..entries import Entry
from ..rules import DEFAULT_MAX_ENTRY_BYTES
from .beir import BEIR_MAX_ENTRY_BYTES, doc_entries, load_beir
from .download import DATASETS, cache_dir, find_data
from .locomo import CATEGORY_NAMES, TurnFormat, load_locomo, turn_entries
from .metrics import mean, score_ranking

if TYPE_CHECKING:
    from embedders import Embedder
    from recallers import Reranker

__all__ = [
    "BEIR_MAX_SEQ_LENGTH",
    "DEFAULT_KS",
    "DEFAULT_LIMITS",
    "METHODS",
    "RERANKED",
    "STORE_CACHE_VERSION",
    "EvalResult",
    "QueryRun",
    "RecallFn",
    "evaluate",
    "evaluate_beir",
    "evaluate_locomo",
    "reranker_for",
    "results_path",
]

METHODS = ("bm25", "vector", "hybrid")
"""The recall modes compared by default, in table order."""

RERANKED = "hybrid+rerank"
"""The method a ``reranker`` adds: ``store.recall(mode="hybrid", rerank=reranker)``."""

DEFAULT_KS = (1, 5, 10)
"""The cut-offs of Recall@k and Hit@k reported by default; the ranking depth is their maximum."""

DEFAULT_LIMITS = (5,)
"""Answer sizes each named method is also run at, besides the ranking depth: 5 is what
``memory_search`` returns by default. Such a run is the method ``"<method>@<limit>"`` (for
example ``"hybrid@5"``): ``store.recall(limit=5)``, scored on those 5 hits (so its Recall@10 is
its Recall@5)."""

BEIR_MAX_SEQ_LENGTH = 256
"""Word pieces the model reads of each BEIR document (MTEB's setting for all-MiniLM-L6-v2)."""

STORE_CACHE_VERSION = 1
"""Bumped when the way evaluation stores are built changes, so old cached stores are not reused."""

_CATEGORY_ORDER = (4, 1, 2, 3, 5)  # the LoCoMo paper's column order
_BUILD_BATCH = 256  # entries per put_many call: one transaction and one embedding batch each


class RecallFn(Protocol):
    """A method under evaluation: returns hits for ``query`` in ``scopes``, best first, at most
    ``limit``. Each hit has ``.entry.name`` (a :class:`recallers.Hit` of an
    :class:`~agentmemory.Entry` does)."""

    def __call__(self, store: Any, query: str, scopes: Sequence[str], limit: int) -> Sequence[Any]:
        """Rank the entries of ``scopes`` in ``store`` for ``query``."""
        ...


StoreFactory = Callable[[Path, "Embedder", int], Any]
"""Opens (creating if needed) a store in a folder with an embedder and an entry bound in bytes.
The store must have ``put_many``, ``close`` and whatever the methods call (``recall``)."""


def _mode(mode: str) -> RecallFn:
    def run(store: Any, query: str, scopes: Sequence[str], limit: int) -> Sequence[Any]:
        hits: Sequence[Any] = store.recall(query, scopes=list(scopes), limit=limit, mode=mode)
        return hits

    return run


@dataclass(frozen=True, slots=True)
class QueryRun:
    """One query's rankings and scores under every method.

    Attributes:
        query_id: ``"conv-30/q4"`` (LoCoMo) or the BEIR query id.
        text: the query.
        group: the LoCoMo category name (``"single-hop"``...), ``""`` for BEIR.
        scope: the scope searched.
        relevant: entry names of the relevant entries.
        rankings: method -> entry names, best first (at most ``depth``).
        scores: method -> metric name -> value in ``[0, 1]``.
    """

    query_id: str
    text: str
    group: str
    scope: str
    relevant: tuple[str, ...]
    rankings: Mapping[str, tuple[str, ...]]
    scores: Mapping[str, Mapping[str, float]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field."""
        return {
            "query_id": self.query_id,
            "text": self.text,
            "group": self.group,
            "scope": self.scope,
            "relevant": list(self.relevant),
            "rankings": {m: list(r) for m, r in self.rankings.items()},
            "scores": {m: dict(s) for m, s in self.scores.items()},
        }

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
        )


@dataclass(slots=True)
class EvalResult:
    """The outcome of one evaluation run.

    Attributes:
        dataset: ``"locomo"`` or the BEIR set's name (``"scifact"``).
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
        """For LoCoMo, per method, the figures published work reports
        (docs/recall.md#figures-other-work-reports): ``session_any@k`` (a session of the evidence among the top ``k``
        turns' sessions), ``recall_all@k`` (every evidence turn in the top ``k``) and this
        library's turn-level ``recall@k`` beside them, means over the questions, from the
        stored rankings; ``{}`` for another data set."""
        if self.dataset != "locomo" or not self.queries:
            return {}
        from .locomo import session_of
        from .metrics import recall_all_at_k, recall_any_at_k, recall_at_k

        out: dict[str, dict[str, float]] = {}
        for m in self.methods:
            row: dict[str, float] = {}
            for k in ks:
                row[f"recall@{k}"] = mean(
                    recall_at_k(q.rankings[m], q.relevant, k) for q in self.queries
                )
                row[f"session_any@{k}"] = mean(
                    recall_any_at_k(q.rankings[m], q.relevant, k, unit=session_of)
                    for q in self.queries
                )
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


# --- building and caching stores -------------------------------------------------------------


def _resolve_embedder(spec: str | Embedder | None, max_seq_length: int | None) -> Embedder:
    """The embedder for ``spec``: an :class:`embedders.Embedder` as given, a registry name built
    (with ``max_seq_length`` for a model family), ``None`` the default every new store takes
    (:func:`agentmemory.opening.choose_embedder`: the packaged all-MiniLM-L6-v2 through
    onnxruntime, else through sentence-transformers), so ``agentmemory eval`` and
    ``agentmemory demo`` name and use one embedder. A cached store's key digests the embedder's
    fingerprint, which names the runtime: stores cached under the other runtime's name are not
    reused (name ``sentence-transformers:all-MiniLM-L6-v2`` to evaluate that runtime; the two
    agree to cosine > 0.999, docs/recall.md).

    Raises what ``embedders.get`` raises for a name it cannot build."""
    import embedders

    if spec is None:
        from ..opening import choose_embedder

        spec = choose_embedder().name
    if not isinstance(spec, str):
        return spec
    family = spec.split(":", 1)[0]
    if max_seq_length is not None and family in ("sentence-transformers", "onnx"):
        return embedders.get(spec, max_seq_length=max_seq_length)
    return embedders.get(spec)


def _open_chroma(folder: Path, embedder: Embedder, max_entry_bytes: int) -> Any:
    """The evaluation store in ``folder``, opened by :func:`agentmemory.open_store` (the one
    rule for opening a store folder, docs/storage.md#opening-a-store-folder) with ``embedder``."""
    from agentmemory.opening import open_store

    return open_store(folder, embedder=embedder, max_entry_bytes=max_entry_bytes, format="sqlite")


def _cache_key(parts: Mapping[str, Any], store_factory: StoreFactory | None = None) -> str:
    """The cached-store folder's key: a digest of what shaped the stores. A custom
    ``store_factory`` joins the key by its qualified name (the default leaves it out, so existing
    caches keep their keys), so stores another factory built are never reused."""
    named = dict(parts)
    if store_factory is not None:
        named["store_factory"] = (
            f"{getattr(store_factory, '__module__', '')}."
            f"{getattr(store_factory, '__qualname__', type(store_factory).__qualname__)}"
        )
    text = json.dumps({"version": STORE_CACHE_VERSION, **named}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@contextmanager
def _built_store(
    folder: Path,
    entries: Callable[[], list[Entry]],
    *,
    embedder: Embedder,
    max_entry_bytes: int,
    factory: StoreFactory,
    rebuild: bool,
    progress: bool,
    label: str,
    info: dict[str, Any],
) -> Iterator[Any]:
    """Open the cached store in ``folder``, building it first when it is not marked complete.

    ``info`` receives ``path``, ``entries``, ``reused`` and ``build_s`` (seconds).
    """
    from tqdm import tqdm

    marker = folder.with_name(folder.name + ".built.json")
    info["path"] = str(folder)
    if marker.is_file() and not rebuild:
        meta = json.loads(marker.read_text(encoding="utf-8"))
        info.update(entries=int(meta["entries"]), reused=True, build_s=0.0)
        store = factory(folder, embedder, max_entry_bytes)
        try:
            yield store
        finally:
            store.close()
        return
    marker.unlink(missing_ok=True)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    batch = entries()
    start = time.perf_counter()
    store = factory(folder, embedder, max_entry_bytes)
    try:
        with tqdm(
            total=len(batch), desc=f"build {label}", unit="entry", disable=not progress
        ) as bar:
            for i in range(0, len(batch), _BUILD_BATCH):
                chunk = batch[i : i + _BUILD_BATCH]
                store.put_many(chunk)
                bar.update(len(chunk))
        elapsed = time.perf_counter() - start
        marker.write_text(
            json.dumps({"entries": len(batch), "build_s": round(elapsed, 3)}) + "\n",
            encoding="utf-8",
        )
        info.update(entries=len(batch), reused=False, build_s=elapsed)
        yield store
    finally:
        store.close()


# --- running ---------------------------------------------------------------------------------


def _at_limit(fn: RecallFn, answer: int) -> RecallFn:
    """``fn`` asked for ``answer`` hits whatever the ranking depth the runner passes."""

    def run(store: Any, query: str, scopes: Sequence[str], limit: int) -> Sequence[Any]:
        return fn(store, query, scopes, answer)

    return run


def _reranked(reranker: Any) -> RecallFn:
    def run(store: Any, query: str, scopes: Sequence[str], limit: int) -> Sequence[Any]:
        hits: Sequence[Any] = store.recall(
            query, scopes=list(scopes), limit=limit, mode="hybrid", rerank=reranker
        )
        return hits

    return run


def reranker_for(value: Reranker | str | os.PathLike[str] | None) -> Reranker | None:
    """``value`` as the reranker of an evaluation: a ``recallers.Reranker`` as it is, a ``str``
    built by the registry (``recallers.get_reranker``: ``"cross-encoder:/models/ce"``), a path a
    local cross-encoder model folder (``recallers.CrossEncoderReranker``, what ``agentmemory eval
    --rerank PATH`` takes; nothing is downloaded, docs/recall.md#reranking); ``None`` for none.

    Raises what those raise: ``recallers.UnknownRerankerError`` for an unknown name,
    ``recallers.RerankerFolderError`` for a folder that holds no cross-encoder (or a hub name).
    """
    if value is None:
        return None
    if isinstance(value, str):
        from recallers import get_reranker

        return get_reranker(value)
    if isinstance(value, os.PathLike):
        from recallers import CrossEncoderReranker

        return CrossEncoderReranker(value)
    return value


def results_path(dataset: str, *, at: float | None = None) -> Path:
    """Where ``agentmemory eval`` writes a run's results when not told:
    ``<cache_dir>/results/<dataset>-<local time, %Y%m%d-%H%M%S>.json`` (``at`` in seconds since
    the epoch, default now). Not created here."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(at))
    return cache_dir() / "results" / f"{dataset}-{stamp}.json"


def _methods(
    methods: Sequence[str] | Mapping[str, RecallFn] | None,
    limits: Sequence[int],
    depth: int,
    reranker: Any = None,
) -> dict[str, RecallFn]:
    """The methods to run by name: a mapping as given; names (default :data:`METHODS`) as
    ``store.recall`` modes, plus :data:`RERANKED` (the hybrid reranked by ``reranker``) when one
    is given, each also at every limit of ``limits`` under ``depth`` as ``"<method>@<limit>"``."""
    if methods is None:
        methods = METHODS
    if isinstance(methods, Mapping):
        return dict(methods)
    base: dict[str, RecallFn] = {m: _mode(m) for m in methods}
    if reranker is not None:
        base[RERANKED] = _reranked(reranker)
    out = dict(base)
    for n in sorted(set(limits)):
        if n < 1:
            raise ValueError(f"limits must be positive answer sizes, got {list(limits)}")
        if n < depth:
            out.update({f"{m}@{n}": _at_limit(fn, n) for m, fn in base.items()})
    return out


def _check_ks(ks: Sequence[int], depth: int | None) -> tuple[tuple[int, ...], int]:
    got = tuple(sorted(set(ks)))
    if not got or got[0] < 1:
        raise ValueError(f"ks must be positive cut-offs, got {list(ks)}")
    need = max(got[-1], 10)  # nDCG@10 is always reported
    depth = need if depth is None else depth
    if depth < got[-1]:
        raise ValueError(f"depth {depth} is smaller than the largest k ({got[-1]})")
    return got, depth


def _aggregate(runs: Sequence[QueryRun], methods: Sequence[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for m in methods:
        keys = list(runs[0].scores[m]) if runs else []
        out[m] = {k: mean(q.scores[m][k] for q in runs) for k in keys}
    return out


class _Clock:
    """Seconds spent per method, summed over queries."""

    def __init__(self, methods: Sequence[str]) -> None:
        self.seconds = dict.fromkeys(methods, 0.0)
        self.calls = dict.fromkeys(methods, 0)


def _run_queries(
    store: Any,
    scope: str,
    queries: Sequence[tuple[str, str, str, tuple[str, ...]]],
    methods: Mapping[str, RecallFn],
    ks: Sequence[int],
    depth: int,
    clock: _Clock,
    bar: Any,
) -> list[QueryRun]:
    rankings: dict[str, list[tuple[str, ...]]] = {m: [] for m in methods}
    for m, fn in methods.items():
        bar.set_postfix_str(m)
        for _, text, _, _ in queries:
            t0 = time.perf_counter()
            hits = fn(store, text, [scope], depth)
            clock.seconds[m] += time.perf_counter() - t0
            clock.calls[m] += 1
            rankings[m].append(tuple(h.entry.name for h in hits))
            bar.update(1)
    runs: list[QueryRun] = []
    for i, (qid, text, group, relevant) in enumerate(queries):
        ranks = {m: rankings[m][i] for m in methods}
        runs.append(
            QueryRun(
                query_id=qid,
                text=text,
                group=group,
                scope=scope,
                relevant=relevant,
                rankings=ranks,
                scores={m: score_ranking(ranks[m], relevant, ks=ks) for m in methods},
            )
        )
    return runs


def _timings(clock: _Clock, **seconds: float) -> dict[str, float]:
    out = {k: round(v, 3) for k, v in seconds.items()}
    for m, s in clock.seconds.items():
        out[f"{m}_s"] = round(s, 3)
        calls = clock.calls[m]
        out[f"{m}_ms_per_query"] = round(1000 * s / calls, 3) if calls else math.nan
    return out


def evaluate_locomo(
    *,
    data: str | Path | None = None,
    conversations: int | None = None,
    questions: int | None = None,
    categories: Sequence[int] | None = None,
    methods: Sequence[str] | Mapping[str, RecallFn] | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    depth: int | None = None,
    limits: Sequence[int] = DEFAULT_LIMITS,
    reranker: Reranker | str | os.PathLike[str] | None = None,
    embedder: str | Embedder | None = None,
    turn_format: TurnFormat | None = None,
    max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    store_cache: str | Path | None = None,
    store_factory: StoreFactory | None = None,
    rebuild: bool = False,
    progress: bool = True,
) -> EvalResult:
    """Evaluate recall on LoCoMo: one store per conversation, one query per question.

    Args:
        data: the LoCoMo file or a folder holding it (see :func:`find_data`); default: found.
        conversations: run only the first that many conversations (a slice).
        questions: run only the first that many kept questions of each conversation.
        categories: question categories to keep (default all, adversarial included; see
            :mod:`agentmemory.eval.locomo`).
        methods: recall modes (default :data:`METHODS`), or a mapping of name to
            :class:`RecallFn` for variants under study.
        ks: Recall@k / Hit@k cut-offs; ``depth`` (hits asked per query) defaults to
            ``max(max(ks), 10)``.
        limits: answer sizes under ``depth`` each named method is also run at, as
            ``"<method>@<limit>"`` (default :data:`DEFAULT_LIMITS`: 5, ``memory_search``'s
            default); ignored when ``methods`` is a mapping.
        reranker: adds the method :data:`RERANKED`, the hybrid reordered by this reranker (a
            ``recallers.Reranker``, its registry name, ``"cross-encoder:<folder>"``, or a local
            cross-encoder folder's path: :func:`reranker_for`); ignored when ``methods`` is a
            mapping.
        embedder: a registry name or an :class:`embedders.Embedder`; default the packaged
            all-MiniLM-L6-v2 through onnxruntime (:func:`_resolve_embedder`).
        turn_format: what text of a turn an entry holds (default :class:`TurnFormat`).
        max_entry_bytes: the stores' entry bound in bytes (turns are under 500 bytes).
        store_cache: folder of cached stores (default ``cache_dir()/stores``).
        store_factory: opens a store (default ``ChromaStore.open``).
        rebuild: build the stores again even when cached.
        progress: show tqdm bars on stderr.

    Returns an :class:`EvalResult` whose groups are the categories in the paper's order
    (single-hop, multi-hop, temporal, open-domain, adversarial). Raises
    :class:`~agentmemory.errors.DataNotFoundError` when no data is found, ``ValueError`` for bad ``ks``,
    ``depth`` or ``limits``, and what the store raises (e.g.
    :class:`~agentmemory.StoreLockedError` when another process holds a cached store).
    """
    from tqdm import tqdm

    started = time.perf_counter()
    ks_sorted, depth = _check_ks(ks, depth)
    fns = _methods(methods, limits, depth, reranker_for(reranker))
    fmt = turn_format or TurnFormat()
    path = find_data("locomo", data)
    dataset = load_locomo(path, conversations=conversations, categories=categories)
    load_s = time.perf_counter() - started
    model = _resolve_embedder(embedder, None)
    fingerprint = model.fingerprint
    key = _cache_key(
        {
            "dataset": "locomo",
            "data": dataset.sha256,
            "embedder": fingerprint,
            "windows": window_layout(model),
            "turn_format": fmt.key(),
            "max_entry_bytes": max_entry_bytes,
        },
        store_factory,
    )
    root = Path(store_cache) if store_cache is not None else cache_dir() / "stores"
    base = root / f"locomo-{key}"
    factory = store_factory or _open_chroma
    work: list[tuple[Any, list[tuple[str, str, str, tuple[str, ...]]]]] = []
    for conv in dataset.conversations:
        kept = list(conv.questions[:questions] if questions is not None else conv.questions)
        work.append((conv, [(q.id, q.question, q.category_name, q.relevant) for q in kept]))
    clock = _Clock(list(fns))
    runs: list[QueryRun] = []
    stores: list[dict[str, Any]] = []
    total = sum(len(qs) for _, qs in work) * len(fns)
    with tqdm(total=total, desc="locomo queries", unit="q", disable=not progress) as bar:
        for conv, qs in work:
            info: dict[str, Any] = {"scope": conv.scope}
            with _built_store(
                base / conv.scope,
                functools.partial(turn_entries, conv, fmt=fmt),
                embedder=model,
                max_entry_bytes=max_entry_bytes,
                factory=factory,
                rebuild=rebuild,
                progress=progress,
                label=conv.scope,
                info=info,
            ) as store:
                runs += _run_queries(store, conv.scope, qs, fns, ks_sorted, depth, clock, bar)
            stores.append(info)
    groups: dict[str, dict[str, dict[str, float]]] = {}
    sizes: dict[str, int] = {}
    for number in _CATEGORY_ORDER:
        name = CATEGORY_NAMES[number]
        members = [r for r in runs if r.group == name]
        if members:
            groups[name] = _aggregate(members, list(fns))
            sizes[name] = len(members)
    build_s = sum(float(s.get("build_s", 0.0)) for s in stores)
    return EvalResult(
        dataset="locomo",
        data_path=str(path),
        data_sha256=dataset.sha256,
        embedder=fingerprint,
        methods=tuple(fns),
        ks=ks_sorted,
        depth=depth,
        params={
            "turn_format": {"speaker": fmt.speaker, "date": fmt.date, "caption": fmt.caption},
            "max_entry_bytes": max_entry_bytes,
            "conversations": conversations,
            "questions": questions,
            "categories": list(categories) if categories is not None else None,
            "store_cache": str(base),
        },
        load_report=dataset.report.to_dict(),
        summary=_aggregate(runs, list(fns)),
        groups=groups,
        group_sizes=sizes,
        timings=_timings(
            clock, load_s=load_s, build_s=build_s, total_s=time.perf_counter() - started
        ),
        stores=stores,
        queries=runs,
    )


def evaluate_beir(
    *,
    data: str | Path | None = None,
    dataset: str = "scifact",
    queries: int | None = None,
    split: str = "test",
    methods: Sequence[str] | Mapping[str, RecallFn] | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    depth: int | None = None,
    limits: Sequence[int] = DEFAULT_LIMITS,
    reranker: Reranker | str | os.PathLike[str] | None = None,
    embedder: str | Embedder | None = None,
    max_seq_length: int | None = BEIR_MAX_SEQ_LENGTH,
    max_entry_bytes: int = BEIR_MAX_ENTRY_BYTES,
    store_cache: str | Path | None = None,
    store_factory: StoreFactory | None = None,
    rebuild: bool = False,
    progress: bool = True,
) -> EvalResult:
    """Evaluate recall on a BEIR-format set (default SciFact): one store, one scope (the set's
    name made kebab-case), one entry per document, the judged queries of ``split``.

    Args:
        data: the set's folder or its parent (see :func:`find_data`); default: found (only
            ``"scifact"`` is looked up; other sets need ``data``).
        dataset: the set's name, for lookup and the result.
        queries: run only the first that many judged queries (a slice); the whole corpus is
            still indexed.
        max_seq_length: word pieces the model reads per document, applied when ``embedder`` is
            given by a ``sentence-transformers``/``onnx`` registry name (default 256, MTEB's).
        max_entry_bytes: the store's entry bound in bytes (default 16384: abstracts reach 10 KB).
        The rest as in :func:`evaluate_locomo`.

    Returns an :class:`EvalResult` without groups. Raises as :func:`evaluate_locomo` does, and
    ``FileNotFoundError`` / ``ValueError`` for a malformed set.
    """
    from tqdm import tqdm

    started = time.perf_counter()
    ks_sorted, depth = _check_ks(ks, depth)
    fns = _methods(methods, limits, depth, reranker_for(reranker))
    if dataset in DATASETS or data is None:
        path = find_data(dataset, data)
    else:  # another BEIR set: its folder, or a folder holding it under its name
        given = Path(data).expanduser()
        path = given if (given / "corpus.jsonl").is_file() else given / dataset
    ds = load_beir(path, split=split)
    load_s = time.perf_counter() - started
    model = _resolve_embedder(embedder, max_seq_length)
    fingerprint = model.fingerprint
    scope = _scope_name(dataset)
    key = _cache_key(
        {
            "dataset": dataset,
            "data": ds.sha256,
            "embedder": fingerprint,
            "windows": window_layout(model),
            "scope": scope,
            "max_entry_bytes": max_entry_bytes,
        },
        store_factory,
    )
    root = Path(store_cache) if store_cache is not None else cache_dir() / "stores"
    folder = root / f"{scope}-{key}"
    chosen = ds.queries[:queries] if queries is not None else ds.queries
    qs = [(q.query_id, q.text, "", q.relevant) for q in chosen]
    clock = _Clock(list(fns))
    info: dict[str, Any] = {"scope": scope}
    with (
        _built_store(
            folder,
            lambda: doc_entries(ds, scope=scope),
            embedder=model,
            max_entry_bytes=max_entry_bytes,
            factory=store_factory or _open_chroma,
            rebuild=rebuild,
            progress=progress,
            label=scope,
            info=info,
        ) as store,
        tqdm(
            total=len(qs) * len(fns), desc=f"{dataset} queries", unit="q", disable=not progress
        ) as bar,
    ):
        runs = _run_queries(store, scope, qs, fns, ks_sorted, depth, clock, bar)
    return EvalResult(
        dataset=dataset,
        data_path=str(path),
        data_sha256=ds.sha256,
        embedder=fingerprint,
        methods=tuple(fns),
        ks=ks_sorted,
        depth=depth,
        params={
            "split": split,
            "max_seq_length": max_seq_length,
            "max_entry_bytes": max_entry_bytes,
            "queries": queries,
            "store_cache": str(folder),
        },
        load_report=ds.report.to_dict(),
        summary=_aggregate(runs, list(fns)),
        timings=_timings(
            clock,
            load_s=load_s,
            build_s=float(info.get("build_s", 0.0)),
            total_s=time.perf_counter() - started,
        ),
        stores=[info],
        queries=runs,
    )


def _scope_name(dataset: str) -> str:
    from .beir import doc_id_names

    return doc_id_names([dataset])[dataset]


def evaluate(dataset: str, *, limit: int | None = None, **options: Any) -> EvalResult:
    """Run :func:`evaluate_locomo` (``dataset="locomo"``; ``limit`` = conversations) or
    :func:`evaluate_beir` (any other name; ``limit`` = queries), passing ``options`` on.

    This is what ``agentmemory eval <dataset> --limit N`` calls.
    """
    if dataset == "locomo":
        return evaluate_locomo(conversations=limit, **options)
    return evaluate_beir(dataset=dataset, queries=limit, **options)
