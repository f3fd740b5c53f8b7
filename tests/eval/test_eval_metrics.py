"""Ranking metrics against small tables computed by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import math

import pytest

from agentmemory.eval import (
    dcg_at_k,
    hit_at_k,
    mean,
    ndcg_at_k,
    recall_all_at_k,
    recall_any_at_k,
    recall_at_k,
    reciprocal_rank,
    score_ranking,
    session_of,
)

# One query: relevant ids b, d and x (x is never retrieved); ranking a b c d e.
RANKING = ["a", "b", "c", "d", "e"]
RELEVANT = {"b", "d", "x"}


@pytest.mark.parametrize(
    ("k", "recall", "hit"),
    [
        (1, 0.0, 0.0),  # top 1 = {a}: no relevant id
        (2, 1 / 3, 1.0),  # top 2 = {a, b}: b of {b, d, x} -> 1/3
        (3, 1 / 3, 1.0),  # c adds nothing
        (4, 2 / 3, 1.0),  # d -> 2/3
        (5, 2 / 3, 1.0),  # e adds nothing; x is never found
        (50, 2 / 3, 1.0),  # k past the ranking's end changes nothing
    ],
)
def test_recall_and_hit_at_k(k: int, recall: float, hit: float) -> None:
    assert recall_at_k(RANKING, RELEVANT, k) == pytest.approx(recall)
    assert hit_at_k(RANKING, RELEVANT, k) == hit


def test_reciprocal_rank_is_one_over_the_first_relevant_rank() -> None:
    assert reciprocal_rank(RANKING, RELEVANT) == 0.5  # first relevant (b) at rank 2
    assert reciprocal_rank(["b"], RELEVANT) == 1.0
    assert reciprocal_rank(["a", "c", "e"], RELEVANT) == 0.0  # none in the ranking
    assert reciprocal_rank([], RELEVANT) == 0.0
    assert reciprocal_rank(RANKING, RELEVANT, k=1) == 0.0  # MRR@1: b is past the cut
    assert reciprocal_rank(RANKING, {"e"}) == 0.2  # rank 5


def test_mrr_is_the_mean_of_reciprocal_ranks() -> None:
    # Three queries with first relevant at rank 1, rank 2 and nowhere: (1 + 0.5 + 0) / 3 = 0.5
    rrs = [
        reciprocal_rank(["b", "a"], {"b"}),
        reciprocal_rank(["a", "b"], {"b"}),
        reciprocal_rank(["a", "c"], {"b"}),
    ]
    assert rrs == [1.0, 0.5, 0.0]
    assert mean(rrs) == 0.5


def test_ndcg_binary_relevance() -> None:
    # DCG@5: relevant at ranks 2 and 4 -> 1/log2(3) + 1/log2(5) = 0.6309298 + 0.4306766 = 1.0616063
    assert dcg_at_k(RANKING, RELEVANT, 5) == pytest.approx(1.0616063, abs=1e-7)
    # Ideal: 3 relevant ids at ranks 1..3 -> 1 + 1/log2(3) + 1/log2(4) = 1 + 0.6309298 + 0.5
    # = 2.1309298; nDCG@5 = 1.0616063 / 2.1309298 = 0.4981893
    assert ndcg_at_k(RANKING, RELEVANT, 5) == pytest.approx(0.4981893, abs=1e-7)
    # nDCG@3: only b (rank 2) counts: 0.6309298 / 2.1309298 = 0.2960819
    assert ndcg_at_k(RANKING, RELEVANT, 3) == pytest.approx(0.2960819, abs=1e-7)
    # nDCG@2 with two relevant ids: ideal is 1 + 1/log2(3) = 1.6309298 (min(|rel|, k) = 2 ranks);
    # b at rank 2 gives 1/log2(3), d is not retrieved: 0.6309298 / 1.6309298 = 0.3868528
    assert ndcg_at_k(["a", "b"], {"b", "d"}, 2) == pytest.approx(0.3868528, abs=1e-7)
    # A perfect ranking scores 1, an empty one 0.
    assert ndcg_at_k(["b", "d", "x", "a"], RELEVANT, 10) == pytest.approx(1.0)
    assert ndcg_at_k([], RELEVANT, 10) == 0.0


def test_ndcg_ideal_is_cut_at_k_when_more_are_relevant() -> None:
    # 12 relevant ids, one found at rank 1: DCG = 1; ideal DCG@10 = sum_{r=1}^{10} 1/log2(r+1)
    # = 1 + .6309298 + .5 + .4306766 + .3868528 + .3562072 + .3333333 + .3154649 + .3010300
    #   + .2890648 = 4.5435593; nDCG@10 = 1 / 4.5435593 = 0.2200918
    relevant = {f"r{i}" for i in range(12)}
    assert ndcg_at_k(["r0", "a", "b"], relevant, 10) == pytest.approx(0.2200918, abs=1e-7)


def test_repeated_ids_count_once_at_their_best_rank() -> None:
    # a a b: the repeat is dropped, b is at rank 2 -> RR 1/2, recall@2 = 1, nDCG@10 =
    # (1/log2(3)) / 1 = 0.6309298
    ranking = ["a", "a", "b"]
    assert reciprocal_rank(ranking, {"b"}) == 0.5
    assert recall_at_k(ranking, {"b"}, 2) == 1.0
    assert ndcg_at_k(ranking, {"b"}, 10) == pytest.approx(0.6309298, abs=1e-7)
    # b b: found once, recall 1/2 of {b, c}, not 2/2
    assert recall_at_k(["b", "b"], {"b", "c"}, 2) == 0.5


def test_score_ranking_gives_every_metric() -> None:
    got = score_ranking(RANKING, RELEVANT, ks=(5, 1))
    assert list(got) == ["recall@1", "recall@5", "hit@1", "hit@5", "mrr", "ndcg@10"]
    assert got["recall@1"] == 0.0
    assert got["recall@5"] == pytest.approx(2 / 3)
    assert got["hit@5"] == 1.0
    assert got["mrr"] == 0.5
    # nDCG@10 equals nDCG@5 here: nothing relevant past rank 5 (0.4981893, above)
    assert got["ndcg@10"] == pytest.approx(0.4981893, abs=1e-7)


@pytest.mark.parametrize(
    "call",
    [
        lambda: recall_at_k(["a"], set(), 5),
        lambda: hit_at_k(["a"], [], 1),
        lambda: reciprocal_rank(["a"], set()),
        lambda: ndcg_at_k(["a"], set()),
        lambda: recall_at_k(["a"], {"a"}, 0),
        lambda: ndcg_at_k(["a"], {"a"}, -1),
    ],
)
def test_no_relevant_ids_or_bad_k_is_an_error(call: object) -> None:
    with pytest.raises(ValueError):
        call()  # type: ignore[operator]


def test_mean_of_nothing_is_nan() -> None:
    assert math.isnan(mean([]))
    assert mean([0.25, 0.75]) == 0.5


def test_recall_all_needs_every_relevant_id_in_the_top_k() -> None:
    two = {"b", "d"}
    assert [recall_all_at_k(RANKING, two, k) for k in (1, 2, 3, 4, 5)] == [0, 0, 0, 1, 1]
    assert recall_all_at_k(RANKING, RELEVANT, 50) == 0.0  # x is never found
    with pytest.raises(ValueError):
        recall_all_at_k(RANKING, set(), 5)


def test_recall_any_by_session_counts_a_turn_of_an_evidence_session() -> None:
    """Evidence d2-7 and d5-1; the top 2 turns are d1-3 and d2-9: d2-9 is another turn of an
    evidence session, so session-level recall_any@2 is 1 while the turn-level one is 0."""
    ranking = ["d1-3", "d2-9", "d5-1"]
    evidence = {"d2-7", "d5-1"}
    assert [session_of(n) for n in ranking] == ["d1", "d2", "d5"]
    assert recall_any_at_k(ranking, evidence, 1, unit=session_of) == 0.0
    assert recall_any_at_k(ranking, evidence, 2, unit=session_of) == 1.0
    assert recall_any_at_k(ranking, evidence, 2) == 0.0  # by turn: neither is evidence
    assert recall_any_at_k(ranking, evidence, 3) == 1.0 == hit_at_k(ranking, evidence, 3)
