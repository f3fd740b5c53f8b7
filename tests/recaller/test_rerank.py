"""The rerank stage: the reranker registry (``recallers.get_reranker``), ``CrossEncoderReranker`` on a tiny cross-encoder
built here from a config (the real sentence-transformers class with random weights: it proves
the plumbing, not the quality), ``RerankedRecaller``, a ``ChromaStore`` with a reranker, and
``agentmemory eval --rerank``. No cross-encoder weights ship in any package installable here."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from click.testing import CliRunner
from conftest import need_shared_data
from harnesses import TINY, build_cross_encoder

from agentmemory import ChromaStore, Entry
from agentmemory.cli import main
from agentmemory.errors import RerankError
from embedders import HashingEmbedder
from recallers import (
    BM25Index,
    BM25Recaller,
    CrossEncoderReranker,
    LegScore,
    RerankedRecaller,
    RerankerFolderError,
    UnknownChoiceError,
    UnknownRerankerError,
    get_reranker,
    reranker_names,
)
from recallers.rerank import rerank_text


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_cross_encoder(tmp_path_factory.mktemp("ce") / "tiny", **TINY)


def expected_scores(folder: Path, query: str, texts: Sequence[str]) -> npt.NDArray[np.float64]:
    """The sigmoid of the model's logit for each (query, text), computed with transformers
    directly: the score a cross-encoder with one label gives."""
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = BertForSequenceClassification.from_pretrained(folder).eval()
    with torch.no_grad():
        batch = tokenizer([query] * len(texts), list(texts), padding=True, return_tensors="pt")
        logits = model(**batch).logits.reshape(-1).double()
    return torch.sigmoid(logits).numpy()


# -- registry and folder checks (no model loaded) ------------------------------------------------


def test_an_unknown_reranker_name_names_the_value_and_the_choices() -> None:
    with pytest.raises(UnknownRerankerError) as caught:
        get_reranker("colbert")
    message = str(caught.value)
    assert "reranker 'colbert' is not one of: cross-encoder:<folder>" in message
    assert isinstance(caught.value, UnknownChoiceError) and isinstance(caught.value, ValueError)
    assert reranker_names() == ["cross-encoder:<folder>"]


def test_a_cross_encoder_loads_only_from_an_existing_local_folder(tmp_path: Path) -> None:
    hub_name = "cross-encoder/ms-marco-MiniLM-L-6-v2"
    a_file = tmp_path / "weights.bin"
    a_file.write_bytes(b"x")
    empty = tmp_path / "empty"
    empty.mkdir()
    for given, why in (
        (hub_name, "is not an existing folder"),
        (str(tmp_path / "missing"), "is not an existing folder"),
        (str(a_file), "is a file, not a folder"),
        (str(empty), "has no config.json"),
    ):
        with pytest.raises(RerankerFolderError, match=why) as caught:
            get_reranker(f"cross-encoder:{given}")
        assert repr(given) in str(caught.value) and "never a hub name" in str(caught.value)
    (empty / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="batch_size is 0"):
        CrossEncoderReranker(empty, batch_size=0)


# -- RerankedRecaller with a reranker of our own -------------------------------------------------


class LengthReranker:
    """A real (if simple) reranker: the longer the text, the higher its score; counts calls."""

    name = "length"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def rerank(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append((query, list(texts)))
        return np.array([len(t) for t in texts], dtype=np.float32)


def test_reranked_recaller_reorders_the_first_candidates_only() -> None:
    index: BM25Index[Entry] = BM25Index()
    # "apple" once in each; shorter entries score higher in BM25 (length normalisation)
    for i in range(30):
        index.put(Entry("u", f"e{i:02d}", "apple " + "pie " * i))
    bm25 = BM25Recaller(index)
    first = bm25.recall("apple", scopes=["u"], limit=30)
    assert first[0].entry.name == "e00"
    reranker = LengthReranker()
    reranked = RerankedRecaller(bm25, reranker, candidates=8)
    hits = reranked.recall("apple", scopes=["u"], limit=3)
    # the reranker saw BM25's first 8 (and no more), and the longest of those win
    assert [t for t in reranker.calls[0][1]] == [rerank_text(h.entry) for h in first[:8]]
    assert [h.entry.name for h in hits] == ["e07", "e06", "e05"]
    assert [h.score for h in hits] == [float(len(rerank_text(h.entry))) for h in hits]
    assert {h.method for h in hits} == {"rerank:length"}
    assert dict(hits[0].legs)["bm25"] == LegScore(8, first[7].score)
    # a limit past the candidates reads that many
    assert len(reranked.recall("apple", scopes=["u"], limit=12)) == 12
    assert len(reranker.calls[-1][1]) == 12
    # nothing found: the reranker is not called
    before = len(reranker.calls)
    assert reranked.recall("zebra", scopes=["u"], limit=3) == []
    assert len(reranker.calls) == before
    with pytest.raises(ValueError, match="candidates is 0"):
        RerankedRecaller(bm25, reranker, candidates=0)


def test_a_reranker_that_returns_the_wrong_shape_is_refused() -> None:
    class Broken(LengthReranker):
        def rerank(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            return np.zeros((len(texts), 2), dtype=np.float32)

    index: BM25Index[Entry] = BM25Index()
    index.put(Entry("u", "a", "apple"))
    with pytest.raises(ValueError, match=r"returned shape \(1, 2\) for 1 texts"):
        RerankedRecaller(BM25Recaller(index), Broken()).recall("apple", scopes=["u"], limit=1)


def test_a_description_is_read_before_the_content() -> None:
    entry = Entry("u", "a", "the body", meta={"description": "the summary"})
    assert rerank_text(entry) == "the summary\n\nthe body"
    assert rerank_text(Entry("u", "b", "only body")) == "only body"


# -- the real CrossEncoder class (loads torch) ---------------------------------------------------


@pytest.mark.slow
def test_cross_encoder_scores_each_pair_as_the_model_does(tiny_model: Path) -> None:
    reranker = get_reranker(f"cross-encoder:{tiny_model}")
    assert isinstance(reranker, CrossEncoderReranker)
    assert reranker.name == f"cross-encoder:{tiny_model.resolve()}"
    texts = ["the budget freeze starts in May", "cats purr when content", "x"]
    got = reranker.rerank("when does the budget freeze start?", texts)
    assert got.shape == (3,) and got.dtype == np.float32
    want = expected_scores(tiny_model, "when does the budget freeze start?", texts)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert reranker.rerank("q", []).shape == (0,)
    with pytest.raises(TypeError, match="not one str"):
        reranker.rerank("q", "one text")  # type: ignore[arg-type]


def _filled_store(path: Path, **options: object) -> ChromaStore:
    store = ChromaStore.open(path, embedder=HashingEmbedder(64), **options)  # type: ignore[arg-type]
    store.put_many(
        Entry("notes", f"n{i:02d}", f"budget note {i}: " + "freeze " * (i % 5) + "plans " * i)
        for i in range(30)
    )
    return store


@pytest.mark.slow
def test_a_store_reranks_its_first_fused_candidates_when_asked(
    tiny_model: Path, tmp_path: Path
) -> None:
    query = "budget freeze"
    with _filled_store(tmp_path / "s", reranker=f"cross-encoder:{tiny_model}") as store:
        fused = store.recall(query, scopes=["notes"], limit=20, rerank=False)
        assert len(fused) == 20 and fused[0].method != "" and not fused[0].method.startswith("re")
        want = expected_scores(tiny_model, query, [rerank_text(h.entry) for h in fused])
        order = sorted(range(20), key=lambda i: (-want[i], i))[:3]
        hits = store.recall(query, scopes=["notes"], limit=3)  # the store's reranker: on
        assert [h.entry.name for h in hits] == [fused[i].entry.name for i in order]
        assert [h.score for h in hits] == pytest.approx([want[i] for i in order], rel=1e-5)
        assert {h.method for h in hits} == {f"rerank:cross-encoder:{tiny_model.resolve()}"}
        # each hit still says where the legs and the fusion put it
        top = hits[0]
        assert dict(top.legs)[fused[0].method] == LegScore(order[0] + 1, fused[order[0]].score)
        assert store.recall(query, scopes=["notes"], limit=3, rerank=True) == hits
        assert store.reranker is not None


def test_rerank_is_off_by_default_and_bad_values_are_refused(tmp_path: Path) -> None:
    with _filled_store(tmp_path / "plain") as store:
        assert store.reranker is None
        hits = store.recall("budget freeze", scopes=["notes"], limit=3)
        assert hits and not any(h.method.startswith("rerank") for h in hits)
        with pytest.raises(RerankError, match="opened without a reranker"):
            store.recall("budget freeze", scopes=["notes"], limit=3, rerank=True)
        with pytest.raises(UnknownRerankerError, match="'colbert' is not one of"):
            store.recall("budget freeze", scopes=["notes"], limit=3, rerank="colbert")
        with pytest.raises(RerankError, match=r"recallers\.Reranker or its registry name"):
            store.recall("budget freeze", scopes=["notes"], limit=3, rerank=3)  # type: ignore[arg-type]
        # a reranker passed to one recall serves that recall only
        reranked = store.recall("budget freeze", scopes=["notes"], limit=3, rerank=LengthReranker())
        assert {h.method for h in reranked} == {"rerank:length"}
        longest = max(
            store.recall("budget freeze", scopes=["notes"], limit=20),
            key=lambda h: len(rerank_text(h.entry)),
        )
        assert reranked[0].entry.name == longest.entry.name
    with pytest.raises(UnknownRerankerError, match="'nope' is not one of"):
        ChromaStore.open(tmp_path / "bad", embedder=HashingEmbedder(64), reranker="nope")
    with pytest.raises(ValueError, match="rerank_candidates is 0"):
        ChromaStore.open(tmp_path / "bad2", embedder=HashingEmbedder(64), rerank_candidates=0)


@pytest.mark.slow
def test_eval_rerank_scores_the_reranked_hybrid(tiny_model: Path, tmp_path: Path) -> None:
    data = need_shared_data("locomo/locomo-dev.json")
    out = tmp_path / "result.json"
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "locomo",
            "--data",
            str(data),
            "--limit",
            "1",
            "--embedder",
            "hashing",
            "--rerank",
            str(tiny_model),
            "--json-out",
            str(out),
            "--no-progress",
        ],
        env={"AGENTMEMORY_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.exit_code == 0, result.output
    saved = json.loads(out.read_text())
    assert {"hybrid+rerank", "hybrid+rerank@5"} <= set(saved["summary"])
    for q in saved["queries"]:
        # reranking reorders the hybrid's first 20: what it returns comes from them
        assert len(q["rankings"]["hybrid+rerank"]) == len(q["rankings"]["hybrid"])
    assert "hybrid+rerank" in result.output
    bad = CliRunner().invoke(main, ["eval", "locomo", "--rerank", "cross-encoder/ms-marco"])
    assert bad.exit_code == 2 and "never a hub name" in bad.output
