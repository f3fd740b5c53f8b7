"""The evaluation runner end to end: real ChromaStores on tmp_path, store.recall, the metrics."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentmemory.eval import TurnFormat
from agentmemory.eval.runner import (
    EvalResult,
    evaluate,
    evaluate_beir,
    evaluate_locomo,
    reranker_for,
    results_path,
)


@pytest.fixture
def data_dir(shared_data: Callable[[str], Path]) -> Path:
    """../shared/data, or a skip (a failure under CI=true) when it is absent."""
    return shared_data("")


def _tiny_beir(folder: Path) -> Path:
    """Four documents, two judged queries, one unjudged query."""
    corpus = [
        {"_id": "10", "title": "Cats", "text": "Cats purr when they are content."},
        {"_id": "11", "title": "Dogs", "text": "Dogs bark at the postman."},
        {"_id": "12", "title": "Parrots", "text": "Parrots can imitate human speech."},
        {"_id": "13", "title": "Goldfish", "text": "Goldfish remember things for months."},
    ]
    queries = [
        {"_id": "a", "text": "why do cats purr"},
        {"_id": "b", "text": "which birds imitate speech"},
        {"_id": "c", "text": "not judged"},
    ]
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus), "utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), "utf-8")
    # Query b has two relevant documents: the parrot one and, say, the goldfish one.
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\na\t10\t1\nb\t12\t1\nb\t13\t1\n", "utf-8"
    )
    return folder


@pytest.mark.slow
def test_beir_run_scores_hand_checkable_rankings(tmp_path: Path) -> None:
    data = _tiny_beir(tmp_path / "tiny")
    result = evaluate_beir(
        data=data,
        dataset="tiny",
        methods=["bm25"],
        embedder="hashing",
        store_cache=tmp_path / "cache",
        progress=False,
    )
    assert result.methods == ("bm25", "bm25@5")  # also at memory_search's default limit
    assert [q.query_id for q in result.queries] == ["a", "b"]
    a, b = result.queries
    # BM25: only document 10 shares words with "why do cats purr"; only 12 with query b
    # ("imitate", "speech"), 13 shares none.
    assert a.rankings["bm25"][0] == "10"
    assert b.rankings["bm25"][0] == "12"
    assert "13" not in b.rankings["bm25"]
    # a: relevant at rank 1 -> recall@1 = 1, MRR 1, nDCG@10 1.
    assert a.scores["bm25"]["recall@1"] == 1.0
    assert a.scores["bm25"]["ndcg@10"] == pytest.approx(1.0)
    # b: 1 of 2 relevant found at rank 1 -> recall@10 = 0.5, MRR = 1,
    # nDCG@10 = 1 / (1 + 1/log2(3)) = 1 / 1.6309298 = 0.6131472
    assert b.scores["bm25"]["recall@10"] == 0.5
    assert b.scores["bm25"]["mrr"] == 1.0
    assert b.scores["bm25"]["ndcg@10"] == pytest.approx(0.6131472, abs=1e-6)
    # Means over the two queries: recall@10 (1 + 0.5) / 2 = 0.75; nDCG@10 (1 + 0.6131472) / 2
    assert result.summary["bm25"]["recall@10"] == 0.75
    assert result.summary["bm25"]["ndcg@10"] == pytest.approx(0.8065736, abs=1e-6)
    assert result.groups == {}
    assert result.stores[0]["entries"] == 4
    assert result.stores[0]["reused"] is False
    assert "bm25" in result.table() and "ndcg@10" in result.table()


@pytest.mark.slow
def test_locomo_slice_with_the_hashing_embedder(data_dir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    result = evaluate_locomo(
        data=data_dir,
        conversations=1,
        questions=20,
        embedder="hashing",
        store_cache=cache,
        progress=False,
    )
    assert result.methods == ("bm25", "vector", "hybrid", "bm25@5", "vector@5", "hybrid@5")
    assert len(result.queries) == 20
    assert result.depth == 10
    assert [s["scope"] for s in result.stores] == ["conv-30"]
    assert result.stores[0]["entries"] == 369
    first = result.queries[0]
    assert first.query_id == "conv-30/q0"
    assert first.text == "When Jon has lost his job as a banker?"
    assert first.relevant == ("d1-2",)
    # "Lost my job as a banker yesterday" shares three rare words with the question.
    assert "d1-2" in first.rankings["bm25"][:3]
    for q in result.queries:
        for m in result.methods:
            assert len(q.rankings[m]) <= (5 if m.endswith("@5") else 10)
            assert all(0.0 <= v <= 1.0 for v in q.scores[m].values())
        # at limit 5 a ranking holds 5 hits, so its Recall@10 is its Recall@5
        assert q.scores["hybrid@5"]["recall@10"] == q.scores["hybrid@5"]["recall@5"]
    # Per-category groups add up to the slice.
    assert sum(result.group_sizes.values()) == 20
    assert set(result.group_sizes) <= {"single-hop", "multi-hop", "temporal", "open-domain"}
    assert result.summary["bm25"]["recall@10"] > 0.3
    text = str(result)
    assert "by category:" in text and "temporal" in text and "ms/query" in text
    assert "hybrid@5" in result.table() and "store.recall(limit=5)" in text

    # JSON round trip keeps every number and ranking.
    path = result.write_json(tmp_path / "out" / "locomo.json")
    back = EvalResult.read_json(path)
    assert back.summary == result.summary
    assert back.queries == result.queries
    assert back.to_dict() == json.loads(path.read_text("utf-8"))

    # A second run reuses the built store: nothing is embedded again, rankings are the same.
    again = evaluate_locomo(
        data=data_dir,
        conversations=1,
        questions=20,
        methods=["bm25", "vector"],
        embedder="hashing",
        store_cache=cache,
        progress=False,
    )
    assert again.stores[0]["reused"] is True
    assert again.timings["build_s"] == 0.0
    for q1, q2 in zip(result.queries, again.queries, strict=True):
        assert q1.rankings["bm25"] == q2.rankings["bm25"]
    # Vector search is approximate (HNSW; right after a build Chroma may still search its
    # exact brute-force buffer), so near-ties at the tail may swap: ask for the same hits.
    same = sum(
        len(set(q1.rankings["vector"]) & set(q2.rankings["vector"]))
        for q1, q2 in zip(result.queries, again.queries, strict=True)
    )
    assert same >= 0.9 * sum(len(q.rankings["vector"]) for q in result.queries)

    # Another turn format is another cached store.
    plain = evaluate_locomo(
        data=data_dir,
        conversations=1,
        questions=2,
        methods=["bm25"],
        embedder="hashing",
        turn_format=TurnFormat(speaker=False, date=False, caption=False),
        store_cache=cache,
        progress=False,
    )
    assert plain.stores[0]["reused"] is False
    assert plain.stores[0]["path"] != result.stores[0]["path"]


def test_an_unfinished_build_is_thrown_away(tmp_path: Path) -> None:
    data = _tiny_beir(tmp_path / "tiny")
    cache = tmp_path / "cache"
    first = evaluate_beir(
        data=data,
        dataset="tiny",
        methods=["bm25"],
        embedder="hashing",
        store_cache=cache,
        progress=False,
    )
    folder = Path(first.stores[0]["path"])
    # Simulate a build that died before its marker was written.
    folder.with_name(folder.name + ".built.json").unlink()
    (folder / "half-written").write_text("x", "utf-8")
    second = evaluate_beir(
        data=data,
        dataset="tiny",
        methods=["bm25"],
        embedder="hashing",
        store_cache=cache,
        progress=False,
    )
    assert second.stores[0]["reused"] is False
    assert not (folder / "half-written").exists()
    assert [q.rankings for q in second.queries] == [q.rankings for q in first.queries]


@pytest.mark.slow
def test_evaluate_dispatches_and_compares(data_dir: Path, tmp_path: Path) -> None:
    result = evaluate(
        "locomo",
        limit=1,
        data=data_dir,
        questions=5,
        methods=["bm25", "vector"],
        embedder="hashing",
        store_cache=tmp_path,
        progress=False,
        ks=(1, 3),
    )
    assert result.dataset == "locomo" and len(result.queries) == 5
    assert "recall@3" in result.summary["bm25"] and "recall@5" not in result.summary["bm25"]
    curve = result.recall_curve("bm25", [1, 3])
    assert curve == [result.summary["bm25"]["recall@1"], result.summary["bm25"]["recall@3"]]
    for q, diff in result.compare("bm25", "vector", "recall@3"):
        assert diff == q.scores["bm25"]["recall@3"] - q.scores["vector"]["recall@3"] != 0


def test_bad_cut_offs_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ks"):
        evaluate_beir(data=tmp_path, ks=(0,), progress=False)
    with pytest.raises(ValueError, match="depth"):
        evaluate_beir(data=tmp_path, ks=(20,), depth=10, progress=False)


@pytest.mark.slow
def test_locomo_slice_with_the_real_model(data_dir: Path, tmp_path: Path) -> None:
    result = evaluate_locomo(
        data=data_dir,
        conversations=1,
        questions=20,
        methods=["vector"],
        store_cache=tmp_path,
        progress=False,
    )
    # the default a new store and the demo take: one embedder name across eval and demo
    assert result.embedder.startswith("onnx:all-MiniLM-L6-v2")
    # The first question asks when Jon lost his job as a banker; the model finds that turn.
    assert "d1-2" in result.queries[0].rankings["vector"][:5]
    assert result.summary["vector"]["recall@10"] > 0.2


def _prefixed_chroma(folder: Path, embedder: object, max_entry_bytes: int) -> object:
    """A custom store factory: a ChromaStore with its own collection prefix."""
    from agentmemory import ChromaStore

    return ChromaStore.open(
        folder,
        embedder=embedder,  # type: ignore[arg-type]
        max_entry_bytes=max_entry_bytes,
        collection_prefix="custom",
    )


@pytest.mark.slow
def test_a_custom_store_factory_never_reuses_stores_the_default_built(tmp_path: Path) -> None:
    data = _tiny_beir(tmp_path / "tiny")
    cache = tmp_path / "cache"

    def run(**kwargs: object) -> EvalResult:
        return evaluate_beir(
            data=data,
            dataset="tiny",
            methods=["bm25"],
            embedder="hashing",
            store_cache=cache,
            progress=False,
            **kwargs,  # type: ignore[arg-type]
        )

    default = run()
    custom = run(store_factory=_prefixed_chroma)
    assert custom.stores[0]["reused"] is False, "a store built by another factory was reused"
    assert custom.stores[0]["path"] != default.stores[0]["path"]
    assert run(store_factory=_prefixed_chroma).stores[0]["reused"] is True
    assert run().stores[0]["reused"] is True, "the default factory's key changed"


def test_the_reranker_of_an_evaluation_and_where_its_results_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recallers import RerankerFolderError, UnknownRerankerError

    assert reranker_for(None) is None
    with pytest.raises(RerankerFolderError, match="never a hub name"):
        reranker_for(Path("cross-encoder/ms-marco"))  # a path: a local folder, never the hub
    with pytest.raises(RerankerFolderError):
        reranker_for(tmp_path)  # a folder without a model's config.json
    with pytest.raises(UnknownRerankerError, match="colbert"):
        reranker_for("colbert")  # a str: a registry name
    monkeypatch.setenv("AGENTMEMORY_CACHE_DIR", str(tmp_path / "cache"))
    at = 1_700_000_000.0
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(at))
    assert (
        results_path("scifact", at=at) == tmp_path / "cache" / "results" / f"scifact-{stamp}.json"
    )
    assert not (tmp_path / "cache").exists()
