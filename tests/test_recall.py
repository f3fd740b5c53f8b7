"""store.recall: BM25, vector and hybrid (RRF) recall on the small inputs of issue 5, and the
fusion rules (docs/recall.md#fusion).

Lexical stores: MemStore and SqliteStore. Stores with vectors: ChromaStore once it has
``recall``, and ``VecMem`` below (a MemStore plus an exact numpy vector index, composed the way a
store with vectors composes its recall), with the deterministic hashing embedder; the two
semantic cases use the packaged all-MiniLM-L6-v2.
"""

from __future__ import annotations

import builtins
import statistics
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import agentmemory
import recallers
from agentmemory import EmptyQueryError, Entry, Hit, InvalidEntryError, MemStore, SqliteStore
from agentmemory.errors import RecallModeError
from agentmemory.recall import recall_entries
from embedders import DEFAULT_EMBEDDER, Embedder, HashingEmbedder
from recallers import (
    BM25Index,
    BM25Recaller,
    ExactVectorIndex,
    Fusion,
    HybridRecaller,
    LegScore,
    NoLegAnsweredError,
    RerankedRecaller,
    VectorRecaller,
    fuse,
)

# -- stores ---------------------------------------------------------------------------------


class VecMem:
    """A MemStore with an exact vector index kept in step by put and forget: what a store with
    vectors looks like to recall (``search_text``, ``search_vector``, ``embedder``)."""

    def __init__(self, embedder: Embedder, *, min_score: float | None = None) -> None:
        self.mem = MemStore()
        self.embedder = embedder
        self.index: ExactVectorIndex[Entry] = ExactVectorIndex(embedder.dim)
        self.min_score = min_score
        self.searches = 0

    def put(self, entry: Entry) -> agentmemory.Change:
        change = self.mem.put(entry)
        text = f"{entry.description}\n\n{entry.content}" if entry.description else entry.content
        self.index.put(change.entry, self.embedder.embed([text])[0])
        return change

    def get(self, scope: str, name: str) -> Entry:
        return self.mem.get(scope, name)

    def forget(self, scope: str, name: str) -> agentmemory.Change:
        change = self.mem.forget(scope, name)
        self.index.remove(scope, name)
        return change

    def search_text(
        self, query: str, *, scopes: Sequence[str], limit: int
    ) -> list[tuple[Entry, float]]:
        self.searches += 1
        return self.mem.search_text(query, scopes=scopes, limit=limit)

    def search_vector(
        self, vector: npt.NDArray[np.float32], *, limit: int, scopes: Sequence[str]
    ) -> list[tuple[Entry, float]]:
        self.searches += 1
        return self.index.search_vector(vector, limit=limit, scopes=scopes)

    def recall(
        self, query: str, *, scopes: Sequence[str], limit: int = 5, mode: str = "auto"
    ) -> list[Hit[Entry]]:
        return recall_entries(
            self,
            query,
            scopes=scopes,
            limit=limit,
            mode=mode,
            bm25=BM25Recaller(self),
            vector=VectorRecaller(self, self.embedder, min_score=self.min_score),
        )

    def close(self) -> None:
        pass


def _chroma(tmp_path: Path, embedder: Embedder) -> object:
    return agentmemory.ChromaStore.open(tmp_path / "chroma", embedder=embedder)


LEXICAL: dict[str, Callable[[Path], object]] = {
    "mem": lambda tmp: MemStore(),
    "sqlite": lambda tmp: SqliteStore(tmp / "recall.sqlite3"),
}
VECTOR: dict[str, Callable[[Path], object]] = {
    "vecmem": lambda tmp: VecMem(HashingEmbedder(256)),
    "chroma": lambda tmp: _chroma(tmp, HashingEmbedder(256)),
}
EVERY = {**LEXICAL, **VECTOR}


def _open(kind: str, tmp_path: Path) -> Iterator[object]:
    st = EVERY[kind](tmp_path)
    try:
        yield st
    finally:
        st.close()  # type: ignore[attr-defined]


@pytest.fixture(params=sorted(EVERY))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    yield from _open(request.param, tmp_path)


@pytest.fixture(params=sorted(LEXICAL))
def lexical_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    yield from _open(request.param, tmp_path)


@pytest.fixture(params=sorted(VECTOR))
def vector_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    yield from _open(request.param, tmp_path)


def _modes(st: object) -> list[str]:
    return ["auto", "bm25"] if isinstance(st, MemStore | SqliteStore) else [
        "auto", "bm25", "vector", "hybrid"
    ]  # fmt: skip


def _put(st: object, *entries: Entry) -> None:
    for e in entries:
        st.put(e)  # type: ignore[attr-defined]


def _names(st: object, query: str, scopes: Sequence[str] = ("user",), **kw: object) -> list[str]:
    hits = st.recall(query, scopes=list(scopes), **kw)  # type: ignore[attr-defined]
    return [h.entry.name for h in hits]


CODE = [
    Entry("user", "calls", "call FOO_BAR_BAZ then parseHTMLResponse()"),
    Entry("user", "bar-hours", "the bar opens late on fridays"),
    Entry("user", "placeholders", "baz and qux are placeholder names; so is foo"),
    Entry("user", "parsing", "parse the response, then render the html"),
    Entry("user", "unrelated", "buy oat milk and coffee beans"),
]

# -- the small inputs of issue 5 --------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("bar baz", False),
        ("html response", False),
        ("FOO_BAR_BAZ", True),
        ("parsehtmlresponse", True),
    ],
)
def test_identifiers_are_found_by_their_parts_and_whole(
    store: object, query: str, first: bool
) -> None:
    _put(store, *CODE)
    for mode in _modes(store):
        found = _names(store, query, mode=mode)
        assert "calls" in found, mode
        if first:
            assert found[0] == "calls", mode
    assert _names(store, "parsehtmlresponse", mode="bm25") == ["calls"]


def test_cjk_and_full_and_half_width_forms_match(store: object) -> None:
    _put(
        store,
        Entry("user", "chinese", "今天玩成语接龙游戏"),
        Entry("user", "japanese", "今日はしりとりをした"),
        Entry("user", "katakana", "ｼﾘﾄﾘ大会に出た"),  # half-width katakana
        Entry("user", "wide", "ＦＯＯ＿ＢＡＲ　ｓｅｔｔｉｎｇ"),  # full-width Latin
        Entry("user", "other", "played chess all afternoon"),
    )
    for mode in _modes(store):
        if mode == "vector":
            continue  # the hashing embedder reads a CJK run as one word: no meaning to find
        assert _names(store, "成语接龙", mode=mode)[0] == "chinese", mode
        assert _names(store, "しりとり", mode=mode)[0] == "japanese", mode
    assert _names(store, "シリトリ", mode="bm25") == ["katakana"]
    assert _names(store, "foo_bar setting", mode="bm25")[0] == "wide"
    assert _names(store, "ＣＨＥＳＳ", mode="bm25") == ["other"]


def test_dark_mode_is_remembered_by_its_words(store: object) -> None:
    _put(
        store,
        Entry("user", "editor-theme", "User prefers dark mode in editors"),
        Entry("user", "lunch", "Usually eats lunch at noon"),
        Entry("user", "light", "The office has good light in the morning"),
    )
    for mode in _modes(store):
        assert _names(store, "do you remember what I said about dark mode?", mode=mode)[0] == (
            "editor-theme"
        ), mode


@pytest.mark.parametrize("query", ["the of and to", "what?!"])
def test_stopword_queries_run_and_the_vector_leg_still_answers(store: object, query: str) -> None:
    _put(
        store,
        Entry("user", "plan", "what is the plan for the release of the app?"),
        Entry("user", "tea", "green tea and to-do lists"),
    )
    assert _names(store, query, mode="bm25") == []
    if "vector" in _modes(store):
        for mode in ("auto", "hybrid", "vector"):
            hits = store.recall(query, scopes=["user"], mode=mode)  # type: ignore[attr-defined]
            assert hits, mode
            assert all(set(h.legs) == {"vector"} for h in hits), mode
    else:
        assert _names(store, query) == []


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
def test_an_empty_query_is_refused_and_nothing_is_searched(store: object, query: str) -> None:
    _put(store, *CODE)
    for mode in _modes(store):
        with pytest.raises(EmptyQueryError, match="query is empty; give one or more words"):
            store.recall(query, scopes=["user"], mode=mode)  # type: ignore[attr-defined]
    if isinstance(store, VecMem):
        assert store.searches == 0
    assert issubclass(EmptyQueryError, recallers.EmptyQueryError)
    assert issubclass(EmptyQueryError, ValueError)


class CountedQuery(str):
    """A query text that counts how often it is checked for words (``strip``)."""

    checks = 0

    def strip(self, chars: str | None = None) -> str:
        CountedQuery.checks += 1
        return super().strip(chars)


def test_a_recall_checks_its_query_once_whatever_the_legs(store: object) -> None:
    """The store's recall checks the query; the hybrid and each leg take it as checked (before
    the recallers.Query value, one hybrid recall checked it four times)."""
    _put(store, *CODE)
    for mode in _modes(store):
        CountedQuery.checks = 0
        names = _names(store, CountedQuery("html response"), mode=mode)
        assert "parsing" in names, mode
        assert CountedQuery.checks == 1, mode
    checked = recallers.check_query("dark mode")
    assert isinstance(checked, recallers.Query) and checked == "dark mode"
    assert recallers.check_query(checked) is checked
    with pytest.raises(recallers.EmptyQueryError):
        recallers.check_query(" ")


def test_empty_forgotten_and_unknown_scopes_give_no_hits(store: object) -> None:
    _put(store, Entry("gone", "a", "dark mode"), Entry("gone", "b", "light mode"))
    store.forget("gone", "a")  # type: ignore[attr-defined]
    store.forget("gone", "b")  # type: ignore[attr-defined]
    for mode in _modes(store):
        assert _names(store, "dark mode", scopes=["gone"], mode=mode) == []
        assert _names(store, "dark mode", scopes=["never-used"], mode=mode) == []
        assert _names(store, "dark mode", scopes=[], mode=mode) == []
    with pytest.raises(InvalidEntryError, match="not kebab-case"):
        _names(store, "dark mode", scopes=["Not Kebab"])


@pytest.mark.slow
@pytest.mark.parametrize(
    "query", ["BENCH-100821", "GB/s", "don't", "C++", "(foo", '"unterminated', "NEAR(", "a OR"]
)
def test_awkward_queries_never_raise(store: object, query: str) -> None:
    _put(
        store,
        Entry("user", "bench", "run BENCH-100821 measured 12 GB/s; don't trust C++ (foo"),
        Entry("user", "quote", 'she said "unterminated and NEAR( and a OR b'),
    )
    for mode in _modes(store):
        store.recall(query, scopes=["user"], mode=mode)  # type: ignore[attr-defined]
    assert _names(store, "BENCH-100821", mode="bm25") == ["bench"]


def test_forgotten_entries_never_come_back_and_a_resave_is_found_by_its_new_text(
    store: object,
) -> None:
    _put(
        store,
        Entry("user", "deploys", "the migration runs on fridays"),
        Entry("user", "pets", "has a cat called miso"),
    )
    store.forget("user", "deploys")  # type: ignore[attr-defined]
    for mode in _modes(store):
        assert "deploys" not in _names(store, "migration fridays", mode=mode), mode
    _put(store, Entry("user", "deploys", "releases ship every tuesday"))
    for mode in _modes(store):
        assert _names(store, "releases tuesday", mode=mode)[0] == "deploys", mode
    assert _names(store, "migration fridays", mode="bm25") == []
    if "vector" in _modes(store):
        hits = store.recall("migration fridays", scopes=["user"], mode="vector")  # type: ignore[attr-defined]
        old = [h.score for h in hits if h.entry.name == "deploys"]
        assert all(s < 0.2 for s in old), "the vector still holds the old text"


def test_modes_a_store_cannot_serve_are_refused(lexical_store: object) -> None:
    _put(lexical_store, *CODE)
    for mode in ("vector", "hybrid"):
        with pytest.raises(RecallModeError, match="needs a vector index"):
            _names(lexical_store, "bar", mode=mode)
    with pytest.raises(RecallModeError, match="not one of auto, hybrid, bm25, vector"):
        _names(lexical_store, "bar", mode="fuzzy")
    with pytest.raises(ValueError, match="positive integer"):
        _names(lexical_store, "bar", limit=0)
    with pytest.raises(TypeError, match="not the str"):
        lexical_store.recall("bar", scopes="user")  # type: ignore[attr-defined]


def test_hits_carry_the_entry_the_score_and_each_legs_rank(store: object) -> None:
    _put(store, *CODE)
    hits = store.recall("FOO_BAR_BAZ", scopes=["user"], limit=3)  # type: ignore[attr-defined]
    assert 1 <= len(hits) <= 3
    top = hits[0]
    assert isinstance(top, agentmemory.Hit) and agentmemory.Hit is recallers.Hit
    assert top.entry == store.get("user", "calls")  # type: ignore[attr-defined]
    assert top.legs["bm25"].rank == 1 and top.legs["bm25"].score > 0
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    if "vector" in _modes(store):
        assert set(top.legs) == {"bm25", "vector"}
        # the default fusion: z-score, weights 0.75 / 0.25; scores are at least 0
        assert top.method == "z-score" and top.score > 0
        assert all(h.score >= 0 for h in hits)
    else:
        assert top.score == top.legs["bm25"].score and top.method == "bm25"
    with pytest.raises(TypeError):
        top.legs["bm25"] = LegScore(9, 9.0)  # type: ignore[index]


def test_ties_break_by_scope_order_then_name(store: object) -> None:
    for scope in ("project", "user"):
        _put(store, Entry(scope, "nb", "same words here"), Entry(scope, "na", "same words here"))
    for mode in _modes(store):
        hits = store.recall("same words", scopes=["user", "project"], mode=mode)  # type: ignore[attr-defined]
        assert [h.entry.key for h in hits] == ["user/na", "user/nb", "project/na", "project/nb"]


# -- fusion -----------------------------------------------------------------------------------


def _hit(leg: str, key: str, score: float = 1.0) -> Hit[Entry]:
    scope, name = key.split("/")
    return Hit(Entry(scope, name, "x"), score, types.MappingProxyType({leg: LegScore(0, score)}))


def test_rrf_uses_ranks_from_one_and_k_60() -> None:
    # the Go test's rankings [[A, B, C], [A, B]]: A = 2/61, B = 2/62, C = 1/63 (paper's RRF)
    rankings = {
        "bm25": [_hit("bm25", "u/a", 9.0), _hit("bm25", "u/b", 5.0), _hit("bm25", "u/c", 1.0)],
        "vector": [_hit("vector", "u/a", 0.9), _hit("vector", "u/b", 0.8)],
    }
    fused = fuse(rankings, scopes=["u"], limit=3, fusion=Fusion())
    assert [(h.entry.name, h.score) for h in fused] == [
        ("a", pytest.approx(2 / 61)),
        ("b", pytest.approx(2 / 62)),
        ("c", pytest.approx(1 / 63)),
    ]
    assert dict(fused[1].legs) == {"bm25": LegScore(2, 5.0), "vector": LegScore(2, 0.8)}
    assert dict(fused[2].legs) == {"bm25": LegScore(3, 1.0)}
    assert fuse(rankings, scopes=["u"], limit=1, fusion=Fusion())[0].entry.name == "a"
    weighted = fuse(rankings, scopes=["u"], limit=3, fusion=Fusion(k=10, weights={"bm25": 2}))
    assert weighted[2].score == pytest.approx(2 / 13)


def test_equal_fused_scores_break_by_scope_order_then_name() -> None:
    rankings = {
        "bm25": [_hit("bm25", "user/zed"), _hit("bm25", "project/b")],
        "vector": [_hit("vector", "project/a"), _hit("vector", "user/amy")],
    }
    fused = fuse(rankings, scopes=["project", "user"], limit=4, fusion=Fusion())
    assert [h.entry.key for h in fused] == ["project/a", "user/zed", "project/b", "user/amy"]


def test_fusion_parameters_are_checked() -> None:
    for bad in ({"k": 0}, {"depth": 0}, {"weights": {"bm25": -1}}, {"depths": {"vector": 0}}):
        with pytest.raises(ValueError):
            Fusion(**bad)  # type: ignore[arg-type]
    f = Fusion(depth=2, depths={"vector": 5}, weights={"vector": 0.5})
    assert (f.leg_limit("bm25", 4), f.leg_limit("vector", 4)) == (8, 20)
    assert (f.weight("bm25"), f.weight("vector")) == (1.0, 0.5)


def _two_legs() -> dict[str, builtins.list[Hit[Entry]]]:
    # BM25 returns a, b, c (9, 5, 1); the vector leg returns b, d, a (0.9, 0.5, 0.1).
    return {
        "bm25": [_hit("bm25", "u/a", 9.0), _hit("bm25", "u/b", 5.0), _hit("bm25", "u/c", 1.0)],
        "vector": [
            _hit("vector", "u/b", 0.9),
            _hit("vector", "u/d", 0.5),
            _hit("vector", "u/a", 0.1),
        ],
    }


def _scored(hits: Sequence[Hit[Entry]]) -> builtins.list[tuple[str, float]]:
    return [(h.entry.name, h.score) for h in hits]


def test_min_max_fusion_is_a_convex_combination_of_scores_scaled_to_each_legs_range() -> None:
    fusion = Fusion(method="min-max", weights={"bm25": 0.6, "vector": 0.4})
    fused = fuse(_two_legs(), scopes=["u"], limit=4, fusion=fusion)
    # bm25 scaled: a 1, b 0.5, c 0; vector scaled: b 1, d 0.5, a 0; c and d miss a leg: 0 there
    assert _scored(fused) == [
        ("b", pytest.approx(0.6 * 0.5 + 0.4 * 1)),
        ("a", pytest.approx(0.6 * 1)),
        ("d", pytest.approx(0.4 * 0.5)),
        ("c", pytest.approx(0.0)),
    ]
    assert {h.method for h in fused} == {"min-max"}
    assert dict(fused[0].legs) == {"bm25": LegScore(2, 5.0), "vector": LegScore(1, 0.9)}
    # weights are shares: 3 and 2 are 0.6 and 0.4
    same = fuse(
        _two_legs(),
        scopes=["u"],
        limit=4,
        fusion=Fusion(method="min-max", weights={"bm25": 3, "vector": 2}),
    )
    assert _scored(same) == _scored(fused)
    # RRF on the same legs reads the ranks only, and says so
    rrf = fuse(_two_legs(), scopes=["u"], limit=4, fusion=Fusion())
    assert rrf[0].score == pytest.approx(1 / 62 + 1 / 61) and rrf[0].method == "rrf"


def test_z_score_fusion_shifts_each_leg_so_no_document_gets_a_negative_contribution() -> None:
    fusion = Fusion(method="z-score", weights={"bm25": 0.6, "vector": 0.4})
    legs = _two_legs()
    # cosines below zero: the z-score of the lowest is negative, its contribution is not
    legs["vector"] = [
        _hit("vector", "u/b", 0.4),
        _hit("vector", "u/d", 0.0),
        _hit("vector", "u/a", -0.4),
    ]
    fused = fuse(legs, scopes=["u"], limit=4, fusion=fusion)
    bm25_std = (32 / 3) ** 0.5  # population std of 9, 5, 1
    vec_std = (0.32 / 3) ** 0.5  # of 0.4, 0, -0.4
    assert _scored(fused) == [
        ("b", pytest.approx(0.6 * 4 / bm25_std + 0.4 * 0.8 / vec_std)),
        ("a", pytest.approx(0.6 * 8 / bm25_std)),
        ("d", pytest.approx(0.4 * 0.4 / vec_std)),
        ("c", pytest.approx(0.0)),
    ]
    assert all(h.score >= 0 for h in fused) and fused[0].method == "z-score"


def test_theoretical_min_max_scales_from_the_lowest_score_a_leg_can_give() -> None:
    fusion = Fusion(method="theoretical-min-max", weights={"bm25": 0.6, "vector": 0.4})
    fused = fuse(_two_legs(), scopes=["u"], limit=4, fusion=fusion)
    # bm25 from 0: a 1, b 5/9, c 1/9; cosine from -1: b 1, d 1.5/1.9, a 1.1/1.9
    # a's weak cosine still counts (min-max gave it 0 there), so a now leads
    assert _scored(fused) == [
        ("a", pytest.approx(0.6 + 0.4 * 1.1 / 1.9)),
        ("b", pytest.approx(0.6 * 5 / 9 + 0.4)),
        ("d", pytest.approx(0.4 * 1.5 / 1.9)),
        ("c", pytest.approx(0.6 / 9)),
    ]


def test_a_leg_whose_candidates_all_score_the_same_gives_each_the_full_share() -> None:
    legs = {"bm25": [_hit("bm25", "u/only", 3.0)], "vector": [_hit("vector", "u/v", 0.2)]}
    for method in ("min-max", "z-score"):
        fused = fuse(legs, scopes=["u"], limit=2, fusion=Fusion(method=method))
        assert _scored(fused) == [("only", pytest.approx(0.5)), ("v", pytest.approx(0.5))]


def test_min_score_is_in_the_methods_own_units() -> None:
    kept = fuse(
        _two_legs(),
        scopes=["u"],
        limit=4,
        fusion=Fusion(method="min-max", weights={"bm25": 0.6, "vector": 0.4}, min_score=0.5),
    )
    assert [h.entry.name for h in kept] == ["b", "a"]  # 0.7 and 0.6; d (0.2) and c (0) dropped
    rrf = fuse(_two_legs(), scopes=["u"], limit=4, fusion=Fusion(min_score=2 / 62))
    assert [h.entry.name for h in rrf] == ["b", "a"]  # 1/62 + 1/61 and 1/61 + 1/63 > 2/62
    for method in ("min-max", "theoretical-min-max"):
        with pytest.raises(ValueError, match=r"min_score is 1\.5 for method .* must be 0 to 1"):
            Fusion(method=method, min_score=1.5)
    with pytest.raises(
        ValueError, match=r"min_score is -0\.1 for method 'rrf'; it must be 0 or more"
    ):
        Fusion(min_score=-0.1)
    assert Fusion(method="z-score", min_score=2.5).min_score == 2.5


def test_an_unknown_fusion_method_names_the_value_and_the_choices() -> None:
    with pytest.raises(recallers.UnknownFusionMethodError) as caught:
        Fusion(method="borda")
    message = str(caught.value)
    assert "'borda'" in message
    for choice in ("rrf", "min-max", "z-score", "theoretical-min-max"):
        assert choice in message
    assert isinstance(caught.value, ValueError) and caught.value.choices == recallers.FUSION_METHODS


def test_candidates_read_each_leg_at_least_that_deep() -> None:
    f = Fusion(method="min-max", candidates=30, depths={"vector": 5})
    assert (f.leg_limit("bm25", 5), f.leg_limit("vector", 10), f.leg_limit("bm25", 40)) == (
        30,
        50,
        40,
    )
    with pytest.raises(ValueError, match="candidates is -1"):
        Fusion(candidates=-1)


class CountingSource:
    """A real in-memory BM25 index that records the ``limit`` each search asks for."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.index: BM25Index[Entry] = BM25Index()
        for e in entries:
            self.index.put(e)
        self.limits: list[int] = []

    def search_text(
        self, query: str, *, scopes: Sequence[str], limit: int
    ) -> builtins.list[tuple[Entry, float]]:
        self.limits.append(limit)
        return self.index.search_text(query, scopes=scopes, limit=limit)


def _vectors(entries: Sequence[Entry], embedder: Embedder) -> ExactVectorIndex[Entry]:
    index: ExactVectorIndex[Entry] = ExactVectorIndex(embedder.dim)
    index.put_many(entries, embedder.embed([e.content for e in entries]))
    return index


def test_each_leg_is_read_as_deep_as_the_fusion_says_and_a_broken_leg_is_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    entries = [Entry("user", f"e{i}", f"alpha note {i}") for i in range(20)]
    source = CountingSource(entries)
    emb = HashingEmbedder(64)
    good = VectorRecaller(_vectors(entries, emb), emb)
    broken = VectorRecaller(_vectors(entries, emb), HashingEmbedder(32))  # wrong width: raises
    hybrid = HybridRecaller([BM25Recaller(source), good])
    assert len(hybrid.recall("alpha", scopes=["user"], limit=4)) == 4
    assert source.limits == [20]  # the default fusion reads each leg 20 deep
    hybrid = HybridRecaller([BM25Recaller(source), good], fusion=Fusion())
    assert len(hybrid.recall("alpha", scopes=["user"], limit=4)) == 4
    assert source.limits[-1] == 4  # Fusion(): RRF, each leg read to the limit
    hybrid = HybridRecaller([BM25Recaller(source), good], fusion=Fusion(depth=3))
    assert len(hybrid.recall("alpha", scopes=["user"], limit=4)) == 4
    assert source.limits[-1] == 12
    hybrid = HybridRecaller([BM25Recaller(source), broken], fusion=Fusion(depths={"bm25": 5}))
    hits = hybrid.recall("alpha", scopes=["user"], limit=2)
    assert source.limits[-1] == 10
    assert len(hits) == 2 and all(set(h.legs) == {"bm25"} for h in hits)
    assert "recall leg vector failed" in caplog.text
    with pytest.raises(NoLegAnsweredError, match="every recall leg failed"):
        HybridRecaller([broken]).recall("alpha", scopes=["user"], limit=2)
    # a leg that finds nothing adds nothing
    hits = HybridRecaller([BM25Recaller(source), good]).recall("zzz", scopes=["user"], limit=3)
    assert hits and all(set(h.legs) == {"vector"} for h in hits)
    # a leg weighing 0 is not asked
    before = len(source.limits)
    HybridRecaller([BM25Recaller(source), good], fusion=Fusion(weights={"bm25": 0})).recall(
        "alpha", scopes=["user"], limit=2
    )
    assert len(source.limits) == before
    with pytest.raises(ValueError, match="distinct names"):
        HybridRecaller([good, good])


class _ByLength:
    """A reranker that puts the longest text first (enough to reorder hits)."""

    name = "by-length"

    def rerank(self, query: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.asarray([len(t) for t in texts], dtype=np.float32)


def test_the_hits_of_a_hybrid_whose_leg_failed_name_it_in_unavailable() -> None:
    entries = [Entry("user", f"e{i}", f"alpha note {i}" + " more" * i) for i in range(6)]
    emb = HashingEmbedder(64)
    good = VectorRecaller(_vectors(entries, emb), emb)
    broken = VectorRecaller(_vectors(entries, emb), HashingEmbedder(32))  # wrong width: raises
    with pytest.raises(Exception) as raised:
        broken.recall("alpha", scopes=["user"], limit=2)
    why = str(raised.value)
    assert why
    healthy = HybridRecaller([BM25Recaller(CountingSource(entries)), good])
    assert all(h.unavailable == {} for h in healthy.recall("alpha", scopes=["user"], limit=3))
    hybrid = HybridRecaller([BM25Recaller(CountingSource(entries)), broken])
    hits = hybrid.recall("alpha", scopes=["user"], limit=3)
    assert len(hits) == 3 and all(set(h.legs) == {"bm25"} for h in hits)
    assert all(h.unavailable == {"vector": why} for h in hits)
    reranked = RerankedRecaller(hybrid, _ByLength()).recall("alpha", scopes=["user"], limit=3)
    assert [h.entry.name for h in reranked] == ["e5", "e4", "e3"]
    assert all(h.unavailable == {"vector": why} for h in reranked)
    # nothing found by the leg that answered: no hit to carry the failure
    assert hybrid.recall("zzz", scopes=["user"], limit=3) == []


def test_the_vector_floor_applies_before_fusion() -> None:
    # docs/recall.md#the-cosine-floor: a far entry, the hint "oh hi"
    entries = [Entry("user", "deploys", "deploy runs on fridays"), Entry("user", "hi", "oh hi")]
    emb = HashingEmbedder(256)
    index = _vectors(entries[:1], emb)
    assert VectorRecaller(index, emb, min_score=0.9).recall("oh hi", scopes=["user"], limit=5) == []
    assert VectorRecaller(index, emb).recall("oh hi", scopes=["user"], limit=5)
    lexical = CountingSource(entries[:1])
    floored = HybridRecaller([VectorRecaller(index, emb, min_score=0.9), BM25Recaller(lexical)])
    assert floored.recall("oh hi", scopes=["user"], limit=5) == []
    hits = floored.recall("fridays", scopes=["user"], limit=5)  # back only by an exact word
    assert [(h.entry.name, set(h.legs)) for h in hits] == [("deploys", {"bm25"})]


# -- the real model ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model() -> Embedder:
    import embedders

    return embedders.get(DEFAULT_EMBEDDER)


@pytest.fixture(params=["vecmem", "chroma"])
def model_store(
    request: pytest.FixtureRequest, model: Embedder, tmp_path: Path
) -> Iterator[object]:
    st = VecMem(model) if request.param == "vecmem" else _chroma(tmp_path, model)
    try:
        yield st
    finally:
        st.close()  # type: ignore[attr-defined]


@pytest.mark.slow
def test_the_model_remembers_dark_mode(model_store: object) -> None:
    _put(
        model_store,
        Entry("user", "editor-theme", "User prefers dark mode in editors"),
        Entry("user", "lunch", "Usually eats lunch at noon"),
        Entry("user", "commute", "Cycles to work when it is not raining"),
    )
    query = "do you remember what I said about dark mode?"
    for mode in ("auto", "vector", "hybrid"):
        assert _names(model_store, query, mode=mode)[0] == "editor-theme", mode


@pytest.mark.slow
def test_a_match_by_meaning_alone_stays_in_the_top_three(model_store: object) -> None:
    query = "What did I say about being afraid of flying?"
    _put(
        model_store,
        # shares no word with the query, means the same
        Entry("user", "travel-anxiety", "Gets anxious on planes and avoids air travel."),
        # share only common words with it
        Entry("user", "quiz", "What is the capital of France? It was asked in the quiz."),
        Entry("user", "chores", "I did the laundry on Sunday before they came over."),
        Entry("user", "deadline", "About the project: it is due at the end of May."),
        Entry("user", "office", "They were at the office by nine and left after six."),
        Entry("user", "punctual", "Being on time is important to him."),
    )
    assert "travel-anxiety" in _names(model_store, query, mode="hybrid", limit=5)[:3]
    assert "travel-anxiety" in _names(model_store, query, limit=3)


class RankedLeg:
    """A leg that answers a fixed ranking (best first), cut to the limit it is asked for."""

    def __init__(self, name: str, names: Sequence[str]) -> None:
        self.name = name
        self._entries = [Entry("user", n, f"text of {n}") for n in names]
        self.asked: list[int] = []

    def recall(self, query: str, *, scopes: Sequence[str], limit: int) -> list[Hit[Entry]]:
        self.asked.append(limit)
        top = self._entries[:limit]
        return recallers.ranked_hits(self.name, [(e, 1.0 / r) for r, e in enumerate(top, 1)])


def test_rrf_read_to_the_limit_keeps_each_legs_first_hit_ahead_of_agreement_in_the_tails() -> None:
    # BM25 is sure of "exact"; the vector leg is sure of "meaning"; ten other entries sit at
    # ranks 11 to 20 of both legs. Read three times deeper than the answer, RRF lets the ten
    # shared tail entries (2 / (60 + r) each) push both legs' first hits (1 / 61) out of a top
    # ten; read to the limit, both first hits lead the answer.
    tail = [f"tail{i:02d}" for i in range(10)]
    lexical = ["exact", *[f"lex{i}" for i in range(9)], *tail]
    semantic = ["meaning", *[f"sem{i}" for i in range(9)], *tail]
    legs = [RankedLeg("bm25", lexical), RankedLeg("vector", semantic)]
    rrf = Fusion(k=60, depth=1)
    hits = HybridRecaller(legs, fusion=rrf).recall("q", scopes=["user"], limit=10)
    assert [leg.asked for leg in legs] == [[10], [10]]
    assert [h.entry.name for h in hits[:2]] == ["exact", "meaning"]  # a tie: name order
    assert not any(h.entry.name.startswith("tail") for h in hits)
    deep = HybridRecaller(legs, fusion=Fusion(depth=3)).recall("q", scopes=["user"], limit=10)
    assert [h.entry.name for h in deep] == tail


def test_the_default_fusion_reads_each_leg_20_deep_and_weighs_their_scores() -> None:
    # The same legs (raw scores 1 / rank) under the default: z-score, BM25 0.75, vector 0.25.
    # Agreement in the tails earns little (each tail entry is near the bottom of both legs),
    # so each leg's confident first hit still leads, BM25's first and its runner-up (raw 1/2)
    # ahead of the vector leg's first: 0.75 * (1/2 - 1/20) > 0.25 * (1 - 1/20).
    assert (
        Fusion(method="z-score", candidates=20, weights={"bm25": 0.75, "vector": 0.25})
        == recallers.DEFAULT_FUSION
    )
    tail = [f"tail{i:02d}" for i in range(10)]
    lexical = ["exact", *[f"lex{i}" for i in range(9)], *tail]
    semantic = ["meaning", *[f"sem{i}" for i in range(9)], *tail]
    legs = [RankedLeg("bm25", lexical), RankedLeg("vector", semantic)]
    hits = HybridRecaller(legs).recall("q", scopes=["user"], limit=5)
    assert [leg.asked for leg in legs] == [[20], [20]]
    assert [h.entry.name for h in hits[:3]] == ["exact", "lex0", "meaning"]
    std = statistics.pstdev([1 / r for r in range(1, 21)])  # each leg's 20 scores
    assert [h.score for h in hits[:3]] == pytest.approx(
        [0.75 * 0.95 / std, 0.75 * 0.45 / std, 0.25 * 0.95 / std]
    )
    assert not any(h.entry.name.startswith("tail") for h in hits)
    assert {h.method for h in hits} == {"z-score"}
