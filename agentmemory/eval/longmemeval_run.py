"""Evaluate recall on LongMemEval: one store per question (its haystack), one query per question.

What is scored is in :mod:`agentmemory.eval.longmemeval` and docs/recall.md#longmemeval; stores
are built, cached and queried as for LoCoMo (:mod:`agentmemory.eval.harness`), and the result is
an :class:`~agentmemory.eval.result.EvalResult` whose groups are the question types.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from embedders import window_layout

from .download import cache_dir, find_data
from .harness import (
    DEFAULT_KS,
    DEFAULT_LIMITS,
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
    run_queries,
    timings_of,
)
from .longmemeval import (
    LONGMEMEVAL_MAX_ENTRY_BYTES,
    QUESTION_TYPES,
    LongMemEvalFormat,
    cut_count,
    load_longmemeval,
    longmemeval_entries,
)
from .result import EvalResult, QueryRun

if TYPE_CHECKING:
    from embedders import Embedder
    from recallers import Reranker

__all__ = ["evaluate_longmemeval"]


def evaluate_longmemeval(
    *,
    data: str | Path | None = None,
    questions: int | None = None,
    methods: Sequence[str] | Mapping[str, RecallFn] | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    depth: int | None = None,
    limits: Sequence[int] = DEFAULT_LIMITS,
    reranker: Reranker | str | os.PathLike[str] | None = None,
    embedder: str | Embedder | None = None,
    turn_format: LongMemEvalFormat | None = None,
    max_entry_bytes: int = LONGMEMEVAL_MAX_ENTRY_BYTES,
    store_cache: str | Path | None = None,
    store_factory: StoreFactory | None = None,
    rebuild: bool = False,
    progress: bool = True,
) -> EvalResult:
    """Evaluate recall on LongMemEval: one store per scored question holding its haystack's
    turns, the question as the query, its ``has_answer`` turns as the relevant entries and its
    ``answer_session_ids`` as the evidence sessions of ``session_any@k``.

    Args:
        data: the LongMemEval file or a folder holding it (see
            :func:`~agentmemory.eval.find_data`); default: found.
        questions: read only the first that many questions of the file (abstention questions
            among them are skipped and counted in ``load_report``).
        turn_format: what text of a turn an entry holds (default :class:`LongMemEvalFormat`).
        max_entry_bytes: the stores' entry bound in bytes; longer turns are cut to it
            (``params["cut_turns"]`` counts them).
        The rest as in :func:`~agentmemory.eval.evaluate_locomo`.

    Returns an :class:`EvalResult` with dataset ``"longmemeval"``, groups by question type in the
    README's order (:data:`~agentmemory.eval.longmemeval.QUESTION_TYPES`, then any other type
    alphabetically). Raises :class:`~agentmemory.errors.DataNotFoundError` when no data is found,
    :class:`~agentmemory.errors.DataFormatError` for a malformed file, ``ValueError`` for bad
    ``ks``, ``depth`` or ``limits``, and what the store raises.
    """
    from tqdm import tqdm

    started = time.perf_counter()
    ks_sorted, depth = check_ks(ks, depth)
    fns = methods_for(methods, limits, depth, reranker_for(reranker))
    fmt = turn_format or LongMemEvalFormat()
    path = find_data("longmemeval", data)
    dataset = load_longmemeval(path, questions=questions)
    load_s = time.perf_counter() - started
    model = resolve_embedder(embedder, None)
    key = cache_key(
        {
            "dataset": "longmemeval",
            "data": dataset.sha256,
            "embedder": model.fingerprint,
            "windows": window_layout(model),
            "turn_format": fmt.key(),
            "max_entry_bytes": max_entry_bytes,
        },
        store_factory,
    )
    root = Path(store_cache) if store_cache is not None else cache_dir() / "stores"
    base = root / f"longmemeval-{key}"
    factory = store_factory or open_chroma
    clock = Clock(list(fns))
    runs: list[QueryRun] = []
    stores: list[dict[str, Any]] = []
    with tqdm(
        total=len(dataset.questions) * len(fns),
        desc="longmemeval queries",
        unit="q",
        disable=not progress,
    ) as bar:
        for q in dataset.questions:
            info: dict[str, Any] = {"scope": q.scope}
            with built_store(
                base / q.scope,
                functools.partial(longmemeval_entries, q, fmt=fmt, max_entry_bytes=max_entry_bytes),
                embedder=model,
                max_entry_bytes=max_entry_bytes,
                factory=factory,
                rebuild=rebuild,
                progress=progress,
                label=q.scope,
                info=info,
            ) as store:
                (run,) = run_queries(
                    store,
                    q.scope,
                    [(q.id, q.question, q.question_type, q.relevant)],
                    fns,
                    ks_sorted,
                    depth,
                    clock,
                    bar,
                )
            runs.append(dataclasses.replace(run, sessions=q.relevant_sessions))
            stores.append(info)
    present = {r.group for r in runs}
    order = [t for t in QUESTION_TYPES if t in present] + sorted(present - set(QUESTION_TYPES))
    groups = {t: aggregate([r for r in runs if r.group == t], list(fns)) for t in order}
    sizes = {t: sum(1 for r in runs if r.group == t) for t in order}
    return EvalResult(
        dataset="longmemeval",
        data_path=str(path),
        data_sha256=dataset.sha256,
        embedder=model.fingerprint,
        methods=tuple(fns),
        ks=ks_sorted,
        depth=depth,
        params={
            "turn_format": {"role": fmt.role, "date": fmt.date},
            "max_entry_bytes": max_entry_bytes,
            "cut_turns": sum(
                cut_count(q, fmt=fmt, max_entry_bytes=max_entry_bytes) for q in dataset.questions
            ),
            "questions": questions,
            "store_cache": str(base),
        },
        load_report=dataset.report.to_dict(),
        summary=aggregate(runs, list(fns)),
        groups=groups,
        group_sizes=sizes,
        timings=timings_of(
            clock,
            load_s=load_s,
            build_s=sum(float(s.get("build_s", 0.0)) for s in stores),
            total_s=time.perf_counter() - started,
        ),
        stores=stores,
        queries=runs,
    )
