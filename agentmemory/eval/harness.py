"""What every evaluation run shares: the methods, building and caching the evaluation stores,
running the methods over them and timing them (:mod:`agentmemory.eval.runner` describes the
cache and the ranking depth).

:func:`built_store` opens a cached store or builds it (``put_many`` in batches) behind a marker
file; :func:`methods_for` turns method names into :class:`RecallFn` callables;
:func:`run_queries` asks each method for one ranking per query and scores it with
:func:`~agentmemory.eval.metrics.score_ranking`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..entries import Entry
from .download import cache_dir
from .metrics import mean, score_ranking
from .result import QueryRun

if TYPE_CHECKING:
    from embedders import Embedder
    from recallers import Reranker

__all__ = [
    "DEFAULT_KS",
    "DEFAULT_LIMITS",
    "METHODS",
    "RERANKED",
    "STORE_CACHE_VERSION",
    "Clock",
    "RecallFn",
    "StoreFactory",
    "aggregate",
    "built_store",
    "cache_key",
    "check_ks",
    "methods_for",
    "open_chroma",
    "reranker_for",
    "resolve_embedder",
    "results_path",
    "run_queries",
    "timings_of",
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

STORE_CACHE_VERSION = 1
"""Bumped when the way evaluation stores are built changes, so old cached stores are not reused."""

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


# --- building and caching stores -------------------------------------------------------------


def resolve_embedder(spec: str | Embedder | None, max_seq_length: int | None) -> Embedder:
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


def open_chroma(folder: Path, embedder: Embedder, max_entry_bytes: int) -> Any:
    """The evaluation store in ``folder``, opened by :func:`agentmemory.open_store` (the one
    rule for opening a store folder, docs/storage.md#opening-a-store-folder) with ``embedder``."""
    from agentmemory.opening import open_store

    return open_store(folder, embedder=embedder, max_entry_bytes=max_entry_bytes, format="sqlite")


def cache_key(parts: Mapping[str, Any], store_factory: StoreFactory | None = None) -> str:
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
def built_store(
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


def methods_for(
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


def check_ks(ks: Sequence[int], depth: int | None) -> tuple[tuple[int, ...], int]:
    got = tuple(sorted(set(ks)))
    if not got or got[0] < 1:
        raise ValueError(f"ks must be positive cut-offs, got {list(ks)}")
    need = max(got[-1], 10)  # nDCG@10 is always reported
    depth = need if depth is None else depth
    if depth < got[-1]:
        raise ValueError(f"depth {depth} is smaller than the largest k ({got[-1]})")
    return got, depth


def aggregate(runs: Sequence[QueryRun], methods: Sequence[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for m in methods:
        keys = list(runs[0].scores[m]) if runs else []
        out[m] = {k: mean(q.scores[m][k] for q in runs) for k in keys}
    return out


class Clock:
    """Seconds spent per method, summed over queries."""

    def __init__(self, methods: Sequence[str]) -> None:
        self.seconds = dict.fromkeys(methods, 0.0)
        self.calls = dict.fromkeys(methods, 0)


def run_queries(
    store: Any,
    scope: str,
    queries: Sequence[tuple[str, str, str, tuple[str, ...]]],
    methods: Mapping[str, RecallFn],
    ks: Sequence[int],
    depth: int,
    clock: Clock,
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


def timings_of(clock: Clock, **seconds: float) -> dict[str, float]:
    out = {k: round(v, 3) for k, v in seconds.items()}
    for m, s in clock.seconds.items():
        out[f"{m}_s"] = round(s, 3)
        calls = clock.calls[m]
        out[f"{m}_ms_per_query"] = round(1000 * s / calls, 3) if calls else math.nan
    return out
