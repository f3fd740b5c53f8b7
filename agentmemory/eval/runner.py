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
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from embedders import window_layout

from ..rules import DEFAULT_MAX_ENTRY_BYTES
from .beir import BEIR_MAX_ENTRY_BYTES, doc_entries, load_beir
from .download import DATASETS, cache_dir, find_data
from .harness import (
    DEFAULT_KS,
    DEFAULT_LIMITS,
    METHODS,
    RERANKED,
    STORE_CACHE_VERSION,
    Clock,
    RecallFn,
    StoreFactory,
    aggregate,
    built_store,
    cache_key,
    check_ks,
    methods_for,
    open_chroma,
    reranker_for,
    resolve_embedder,
    results_path,
    run_queries,
    timings_of,
)
from .locomo import CATEGORY_NAMES, TurnFormat, load_locomo, turn_entries
from .longmemeval_run import evaluate_longmemeval
from .result import EvalResult, QueryRun

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


BEIR_MAX_SEQ_LENGTH = 256
"""Word pieces the model reads of each BEIR document (MTEB's setting for all-MiniLM-L6-v2)."""

_CATEGORY_ORDER = (4, 1, 2, 3, 5)  # the LoCoMo paper's column order


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
            all-MiniLM-L6-v2 through onnxruntime (:func:`resolve_embedder`).
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
    ks_sorted, depth = check_ks(ks, depth)
    fns = methods_for(methods, limits, depth, reranker_for(reranker))
    fmt = turn_format or TurnFormat()
    path = find_data("locomo", data)
    dataset = load_locomo(path, conversations=conversations, categories=categories)
    load_s = time.perf_counter() - started
    model = resolve_embedder(embedder, None)
    fingerprint = model.fingerprint
    key = cache_key(
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
    factory = store_factory or open_chroma
    work: list[tuple[Any, list[tuple[str, str, str, tuple[str, ...]]]]] = []
    for conv in dataset.conversations:
        kept = list(conv.questions[:questions] if questions is not None else conv.questions)
        work.append((conv, [(q.id, q.question, q.category_name, q.relevant) for q in kept]))
    clock = Clock(list(fns))
    runs: list[QueryRun] = []
    stores: list[dict[str, Any]] = []
    total = sum(len(qs) for _, qs in work) * len(fns)
    with tqdm(total=total, desc="locomo queries", unit="q", disable=not progress) as bar:
        for conv, qs in work:
            info: dict[str, Any] = {"scope": conv.scope}
            with built_store(
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
                runs += run_queries(store, conv.scope, qs, fns, ks_sorted, depth, clock, bar)
            stores.append(info)
    groups: dict[str, dict[str, dict[str, float]]] = {}
    sizes: dict[str, int] = {}
    for number in _CATEGORY_ORDER:
        name = CATEGORY_NAMES[number]
        members = [r for r in runs if r.group == name]
        if members:
            groups[name] = aggregate(members, list(fns))
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
        summary=aggregate(runs, list(fns)),
        groups=groups,
        group_sizes=sizes,
        timings=timings_of(
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
    ks_sorted, depth = check_ks(ks, depth)
    fns = methods_for(methods, limits, depth, reranker_for(reranker))
    if dataset in DATASETS or data is None:
        path = find_data(dataset, data)
    else:  # another BEIR set: its folder, or a folder holding it under its name
        given = Path(data).expanduser()
        path = given if (given / "corpus.jsonl").is_file() else given / dataset
    ds = load_beir(path, split=split)
    load_s = time.perf_counter() - started
    model = resolve_embedder(embedder, max_seq_length)
    fingerprint = model.fingerprint
    scope = _scope_name(dataset)
    key = cache_key(
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
    clock = Clock(list(fns))
    info: dict[str, Any] = {"scope": scope}
    with (
        built_store(
            folder,
            lambda: doc_entries(ds, scope=scope),
            embedder=model,
            max_entry_bytes=max_entry_bytes,
            factory=store_factory or open_chroma,
            rebuild=rebuild,
            progress=progress,
            label=scope,
            info=info,
        ) as store,
        tqdm(
            total=len(qs) * len(fns), desc=f"{dataset} queries", unit="q", disable=not progress
        ) as bar,
    ):
        runs = run_queries(store, scope, qs, fns, ks_sorted, depth, clock, bar)
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
        summary=aggregate(runs, list(fns)),
        timings=timings_of(
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
    """Run :func:`evaluate_locomo` (``dataset="locomo"``; ``limit`` = conversations),
    :func:`~agentmemory.eval.longmemeval_run.evaluate_longmemeval` (``"longmemeval"``; ``limit`` =
    questions of the file) or :func:`evaluate_beir` (any other name; ``limit`` = queries), passing
    ``options`` on.

    This is what ``agentmemory eval <dataset> --limit N`` calls.
    """
    if dataset == "locomo":
        return evaluate_locomo(conversations=limit, **options)
    if dataset == "longmemeval":
        return evaluate_longmemeval(questions=limit, **options)
    return evaluate_beir(dataset=dataset, queries=limit, **options)
