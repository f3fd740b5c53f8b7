"""Ranking metrics with their standard definitions: Recall@k, Hit@k, reciprocal rank, nDCG@k.

Every function takes one query's ``ranking`` (document ids, best first) and its ``relevant`` ids
(binary relevance), and returns a float in ``[0, 1]``. Averaging over queries (the "mean" of MRR,
the macro average of Recall@k) is :func:`mean`. A ranking that names an id twice counts it once, at
its first (best) rank, as trec_eval does with a run that scores each document once.

Sources: Recall@k as the LoCoMo paper scores retrieval (Maharana et al., ACL 2024; their
``task_eval/evaluation.py``: the fraction of a question's evidence dialog ids found in the
retrieved context); nDCG@k with binary gains, ``1 / log2(rank + 1)`` discounts and the ideal DCG of
``min(len(relevant), k)`` relevant documents at the top, as ``pytrec_eval``'s ``ndcg_cut`` computes
it for BEIR (Thakur et al., NeurIPS 2021 Datasets and Benchmarks).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Sequence

__all__ = [
    "dcg_at_k",
    "hit_at_k",
    "mean",
    "ndcg_at_k",
    "recall_all_at_k",
    "recall_any_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "score_ranking",
    "session_any_at_k",
]


def _check(relevant: Collection[str], k: int | None) -> None:
    if k is not None and k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not relevant:
        raise ValueError(
            "a query needs at least one relevant id to be scored; skip queries without relevance"
        )


def _first_occurrences(ranking: Sequence[str], k: int | None) -> list[str]:
    """The ranking without repeats (first occurrence kept), cut to its first ``k`` ids."""
    seen: set[str] = set()
    out: list[str] = []
    for doc in ranking:
        if doc in seen:
            continue
        seen.add(doc)
        out.append(doc)
        if k is not None and len(out) == k:
            break
    return out


def recall_at_k(ranking: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Fraction of the ``relevant`` ids found among the first ``k`` of ``ranking``.

    ``|top_k(ranking) & relevant| / |relevant|``: LoCoMo's recall of evidence turns (a question
    with evidence ``{D1:2, D1:7}`` whose top 5 hold only ``D1:7`` scores 0.5). Raises
    ``ValueError`` when ``relevant`` is empty or ``k < 1``.
    """
    _check(relevant, k)
    wanted = set(relevant)
    found = sum(1 for doc in _first_occurrences(ranking, k) if doc in wanted)
    return found / len(wanted)


def recall_all_at_k(ranking: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when every ``relevant`` id is among the first ``k`` of ``ranking``, else 0.0.

    LongMemEval's ``recall_all@k`` (Wu et al., ICLR 2025, Table 9): a question whose evidence is
    two turns scores 1 only when both are retrieved. Raises ``ValueError`` when ``relevant`` is
    empty or ``k < 1``.
    """
    _check(relevant, k)
    return 1.0 if set(relevant) <= set(_first_occurrences(ranking, k)) else 0.0


def recall_any_at_k(
    ranking: Sequence[str],
    relevant: Collection[str],
    k: int,
    *,
    unit: Callable[[str], str] = str,
) -> float:
    """1.0 when at least one ``relevant`` item is among the first ``k`` of ``ranking``, compared
    through ``unit`` (default: the ids themselves, which is :func:`hit_at_k`).

    LongMemEval's ``recall_any@k`` (Table 9). With ``unit`` mapping a turn to its session, it is
    the session-level recall papers report for LoCoMo-style data: the top ``k`` turns' sessions
    hold a session of the evidence. Raises ``ValueError`` when ``relevant`` is empty or ``k < 1``.
    """
    _check(relevant, k)
    wanted = {unit(r) for r in relevant}
    return 1.0 if any(unit(d) in wanted for d in _first_occurrences(ranking, k)) else 0.0


def session_any_at_k(
    ranking: Sequence[str],
    sessions: Collection[str],
    k: int,
    *,
    session_of: Callable[[str], str],
) -> float:
    """1.0 when one of the first ``k`` of ``ranking`` belongs to one of ``sessions`` (its
    ``session_of`` is in ``sessions``), else 0.0.

    :func:`recall_any_at_k` with ``unit=session_of`` when the evidence sessions are given apart
    from the evidence turns (LongMemEval's ``answer_session_ids``): the top ``k`` turns, not the
    top ``k`` sessions, are looked at. Raises ``ValueError`` when ``sessions`` is empty or
    ``k < 1``.
    """
    _check(sessions, k)
    wanted = set(sessions)
    return 1.0 if any(session_of(d) in wanted for d in _first_occurrences(ranking, k)) else 0.0


def hit_at_k(ranking: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when at least one ``relevant`` id is among the first ``k`` of ``ranking``, else 0.0.

    Also called success@k or top-k accuracy. Raises ``ValueError`` when ``relevant`` is empty or
    ``k < 1``.
    """
    _check(relevant, k)
    wanted = set(relevant)
    return 1.0 if any(doc in wanted for doc in _first_occurrences(ranking, k)) else 0.0


def reciprocal_rank(
    ranking: Sequence[str], relevant: Collection[str], k: int | None = None
) -> float:
    """``1 / rank`` of the first relevant id (ranks from 1), 0.0 when none is in the ranking.

    With ``k``, only the first ``k`` ids count (MRR@k). The mean over queries is the MRR
    (Voorhees, TREC-8 QA track, 1999). Raises ``ValueError`` when ``relevant`` is empty or
    ``k < 1``.
    """
    _check(relevant, k)
    wanted = set(relevant)
    for rank, doc in enumerate(_first_occurrences(ranking, k), start=1):
        if doc in wanted:
            return 1.0 / rank
    return 0.0


def dcg_at_k(ranking: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Discounted cumulative gain of the first ``k`` ids with binary gains.

    ``sum over ranks r <= k holding a relevant id of 1 / log2(r + 1)`` (Jarvelin and Kekalainen,
    2002, in the form trec_eval and pytrec_eval use). Unitless, at least 0. Raises ``ValueError``
    when ``relevant`` is empty or ``k < 1``.
    """
    _check(relevant, k)
    wanted = set(relevant)
    return sum(
        1.0 / math.log2(rank + 1)
        for rank, doc in enumerate(_first_occurrences(ranking, k), start=1)
        if doc in wanted
    )


def ndcg_at_k(ranking: Sequence[str], relevant: Collection[str], k: int = 10) -> float:
    """nDCG@k with binary relevance: :func:`dcg_at_k` over the ideal DCG.

    The ideal ranking puts ``min(len(relevant), k)`` relevant ids first, so the ideal DCG is
    ``sum_{r=1}^{min(|relevant|, k)} 1 / log2(r + 1)``; this is ``pytrec_eval``'s ``ndcg_cut_k``
    on qrels with relevance 1, the BEIR convention. Raises ``ValueError`` when ``relevant`` is
    empty or ``k < 1``.
    """
    _check(relevant, k)
    n_ideal = min(len(set(relevant)), k)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, n_ideal + 1))
    return dcg_at_k(ranking, relevant, k) / ideal


def score_ranking(
    ranking: Sequence[str], relevant: Collection[str], *, ks: Iterable[int] = (1, 5, 10)
) -> dict[str, float]:
    """All metrics of one query, keyed ``"recall@k"``, ``"hit@k"`` (each ``k`` in ``ks``),
    ``"mrr"`` (over the whole ranking) and ``"ndcg@10"``.

    Values are floats in ``[0, 1]``; the keys come in that order, ``ks`` ascending. Raises
    ``ValueError`` when ``relevant`` is empty or a ``k < 1``.
    """
    ordered = sorted(set(ks))
    out: dict[str, float] = {}
    for k in ordered:
        out[f"recall@{k}"] = recall_at_k(ranking, relevant, k)
    for k in ordered:
        out[f"hit@{k}"] = hit_at_k(ranking, relevant, k)
    out["mrr"] = reciprocal_rank(ranking, relevant)
    out["ndcg@10"] = ndcg_at_k(ranking, relevant, 10)
    return out


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean of ``values``; ``nan`` when there are none (an empty slice has no score)."""
    items = list(values)
    if not items:
        return math.nan
    return math.fsum(items) / len(items)
