"""Windows: an entry longer than the embedder's input is embedded as overlapping windows, and the
vector leg scores an entry by its best window (docs/recall.md#windows,
docs/storage.md#ids-and-metadata).

The index cases use the hashing embedder with a window of 8 words every 4, so a text of ``n``
distinct words has ``1`` window when ``n <= 8`` and ``ceil((n - 8) / 4) + 1`` otherwise (computed
here, not by the code under test); the real packaged model is used for the case of the issue.
Real Chroma throughout, read back through its own client.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import embedders
from agentmemory import ChromaStore, Entry, SqliteStore
from embedders import HashingEmbedder, TokenWindows, text_windows, token_windows, window_layout

WINDOW, STRIDE = 8, 4
DIM = 256


def windowed() -> HashingEmbedder:
    return HashingEmbedder(DIM, window_words=WINDOW, window_stride=STRIDE)


def expected_windows(n_words: int) -> int:
    return 1 if n_words <= WINDOW else math.ceil((n_words - WINDOW) / STRIDE) + 1


def words(tag: str, n: int) -> str:
    """``n`` distinct words ``<tag>0 <tag>1 ...`` (each one hashing feature)."""
    return " ".join(f"{tag}{i}" for i in range(n))


class NoWindows:
    """A user's own embedder: name, dim, fingerprint and embed, nothing about windows."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    @property
    def fingerprint(self) -> str:
        return str(self.inner.fingerprint)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.asarray(self.inner.embed(texts), dtype=np.float32)


class Counting(HashingEmbedder):
    """The windowed hashing embedder, remembering every text it embedded."""

    def __init__(self) -> None:
        super().__init__(DIM, window_words=WINDOW, window_stride=STRIDE)
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.texts += list(texts)
        return super().embed(texts)


def vectors_of(st: ChromaStore, scope: str, name: str) -> dict[str, dict[str, Any]]:
    """Every vector Chroma holds whose metadata names ``name``: id to metadata."""
    col = st.client.get_collection(st.collection_name(scope), embedding_function=None)
    got = col.get(where={"name": name}, include=["metadatas"])
    return dict(zip(got["ids"], got["metadatas"], strict=True))


def all_ids(st: ChromaStore, scope: str) -> set[str]:
    col = st.client.get_collection(st.collection_name(scope), embedding_function=None)
    return set(col.get(include=[])["ids"])


# --- splitting -----------------------------------------------------------------------------


def test_the_window_rule_on_tokens() -> None:
    assert token_windows([True] * 5, window=8, stride=4) == [(0, 5)]
    assert token_windows([True] * 20, window=8, stride=4) == [(0, 8), (4, 12), (8, 16), (12, 20)]
    # the last window ends at the text's end and is full
    assert token_windows([True] * 10, window=8, stride=4) == [(0, 8), (2, 10)]
    # a word's pieces stay together: tokens 7 and 8 are one word, so the first window ends at 7
    pieces = [True] * 20
    pieces[8] = False
    assert token_windows(pieces, window=8, stride=4)[0] == (0, 7)
    # one word longer than the window is cut (nothing else fits)
    assert token_windows([True] + [False] * 19, window=8, stride=4)[0] == (0, 8)
    with pytest.raises(ValueError, match="stride"):
        token_windows([True] * 20, window=8, stride=9)


def test_hashing_windows_are_words_and_cover_the_text() -> None:
    text = words("w", 20) + "."
    got = text_windows(windowed(), text)
    assert got == [words("w", 8), "w4 w5 w6 w7 w8 w9 w10 w11", "w8 w9 w10 w11 w12 w13 w14 w15",
                   "w12 w13 w14 w15 w16 w17 w18 w19."]  # fmt: skip
    assert windowed().window_layout == "words:8/4;win-1"
    assert text_windows(HashingEmbedder(DIM), text) == [text], "no window: one, the whole text"
    assert window_layout(HashingEmbedder(DIM)) == "whole"
    with pytest.raises(ValueError, match="window_stride"):
        HashingEmbedder(DIM, window_words=4, window_stride=5)


def test_an_embedder_without_windows_embeds_each_text_whole() -> None:
    plain = NoWindows(windowed())
    assert text_windows(plain, words("w", 40)) == [words("w", 40)]
    assert window_layout(plain) == "whole"


def _model_windows() -> TokenWindows:
    return TokenWindows(embedders.packaged_model_path() / "tokenizer.json", 256)


def test_model_windows_fit_the_model_and_keep_words_whole() -> None:
    """all-MiniLM-L6-v2 reads 256 word pieces, two of them [CLS] and [SEP]: every window holds at
    most 254 (counted here with a tokenizer of our own), windows overlap, cover the text, never
    start or end inside a word, and the first holds the description."""
    from tokenizers import Tokenizer

    counter = Tokenizer.from_file(str(embedders.packaged_model_path() / "tokenizer.json"))
    counter.no_truncation()
    sentence = (
        "Antidisestablishmentarianism and pneumonoultramicroscopic words split into many "
        "pieces, while short ones do not. "
    )
    text = "Weekly planning notes\n\n" + sentence * 40 + "The budget freeze starts in March."
    win = _model_windows()
    assert (win.window, win.stride) == (254, 127)
    spans = win.windows(text)
    assert len(spans) > 3 and spans[0][0] == 0 and spans[-1][1] == len(text)
    pieces = [len(counter.encode(text[a:b], add_special_tokens=False).ids) for a, b in spans]
    assert max(pieces) <= 254 and min(pieces) > 200, pieces
    for (a0, b0), (a1, b1) in itertools.pairwise(spans):
        assert a0 < a1 < b0 < b1, "consecutive windows overlap, in order"
    for a, b in spans:
        assert a == 0 or not (text[a - 1].isalnum() and text[a].isalnum()), text[a - 5 : a + 5]
        assert b == len(text) or not (text[b - 1].isalnum() and text[b].isalnum())
    assert text[spans[0][0] : spans[0][1]].startswith("Weekly planning notes\n\n")
    assert text[spans[-1][0] : spans[-1][1]].endswith("The budget freeze starts in March.")
    assert win.windows("a short note") == [(0, len("a short note"))]


def test_both_runtimes_of_the_packaged_model_split_alike() -> None:
    """sentence-transformers and onnxruntime read the same tokenizer.json: same layout, same
    windows, so a store opened with either keeps its vectors (built without loading a model)."""
    st = embedders.SentenceTransformerEmbedder()
    onnx = embedders.OnnxEmbedder()
    text = "Every word counts here. " * 200
    assert st.window_layout == onnx.window_layout == "tokens:254/127;win-1"
    assert st.windows(text) == onnx.windows(text) == _model_windows().windows(text)


# --- the index ------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_window_is_indexed_and_verify_counts_entries(tmp_path: Path) -> None:
    sizes = {"short": 5, "ten": 10, "long": 20, "longer": 41}
    with ChromaStore.open(tmp_path / "s", embedder=windowed()) as st:
        st.put_many([Entry("user", name, words(name, n)) for name, n in sizes.items()])
        for name, n in sizes.items():
            held = vectors_of(st, "user", name)
            want = expected_windows(n)
            ids = {f"user/{name}"} | {f"user/{name}#{k}" for k in range(1, want)}
            assert set(held) == ids, name
            if want == 1:  # an entry of one window stores no window keys
                assert [set(m) for m in held.values()] == [{"name", "text_hash"}]
            else:
                assert {m["windows"] for m in held.values()} == {want}
                assert sorted(m["window"] for m in held.values()) == list(range(want))
        report = st.verify()
        assert report.ok, report
        assert (report.live, report.indexed) == (4, 4)
        assert report.vectors == sum(expected_windows(n) for n in sizes.values())
        assert f"4 entries indexed ({report.vectors} vectors)" in str(report)


def test_a_replace_with_fewer_windows_leaves_none_behind_and_forget_removes_all(
    tmp_path: Path,
) -> None:
    with ChromaStore.open(tmp_path / "s", embedder=windowed()) as st:
        st.put(Entry("user", "notes", words("a", 41)))
        assert len(vectors_of(st, "user", "notes")) == expected_windows(41) == 10
        st.put(Entry("user", "notes", words("b", 12)))
        held = vectors_of(st, "user", "notes")
        assert set(held) == {"user/notes", "user/notes#1"}
        assert {m["windows"] for m in held.values()} == {2}
        st.put(Entry("user", "other", words("c", 20)))
        st.forget("user", "notes")
        assert vectors_of(st, "user", "notes") == {}
        assert all_ids(st, "user") == {"user/other", "user/other#1", "user/other#2", "user/other#3"}
        assert st.verify().ok


def test_a_late_window_finds_its_entry_once_with_that_windows_score(tmp_path: Path) -> None:
    emb = windowed()
    long_text = words("early", 24) + " " + " ".join(f"late{i}" for i in range(8))
    query = " ".join(f"late{i}" for i in range(8))
    with ChromaStore.open(tmp_path / "s", embedder=emb) as st:
        st.put(Entry("user", "long", long_text))
        for i in range(6):
            st.put(Entry("user", f"short-{i}", f"late{i} other{i} filler{i}"))
        hits = st.recall(query, scopes=["user"], mode="vector", limit=10)
        names = [h.entry.name for h in hits]
        assert names[0] == "long" and names.count("long") == 1 and len(names) == 7
        # the last window holds exactly the query's eight words, so its cosine is 1; the first
        # three windows share none of them
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_crowding_windows_still_give_limit_entries_scored_by_their_best(tmp_path: Path) -> None:
    """Eight entries, each a block of 8 words said 5 times (9 windows of the same 8 words):
    entry ``e-j`` has ``j`` of the query's words in its block. The nearest vectors are the 9
    windows of ``e-8``, yet 5 distinct entries come back, each scored by its best window's
    cosine (computed here with numpy from the block's words)."""
    emb = windowed()
    blocks = {
        f"e-{j}": [f"q{k}" for k in range(j)] + [f"x{j}y{k}" for k in range(WINDOW - j)]
        for j in range(1, 9)
    }
    query = words("q", 16)
    qv = emb.embed([query])[0]
    best = {n: float(qv @ emb.embed([" ".join(b)])[0]) for n, b in blocks.items()}
    with ChromaStore.open(tmp_path / "s", embedder=emb) as st:
        st.put_many([Entry("user", n, " ".join(b * 5)) for n, b in blocks.items()])
        assert len(vectors_of(st, "user", "e-8")) == expected_windows(40) == 9
        hits = st.search_vector(qv, limit=5, scopes=["user"])
        want = sorted(best, key=lambda n: -best[n])[:5]
        assert [e.name for e, _ in hits] == want
        for e, score in hits:
            assert score == pytest.approx(best[e.name], abs=1e-5)


def test_reindex_rebuilds_every_window(tmp_path: Path) -> None:
    with ChromaStore.open(tmp_path / "s", embedder=windowed()) as st:
        st.put_many([Entry("user", f"n-{i}", words(f"t{i}x", 8 + 3 * i)) for i in range(6)])
        before = all_ids(st, "user")
        assert st.reindex() == 6
        assert all_ids(st, "user") == before
        assert len(before) == sum(expected_windows(8 + 3 * i) for i in range(6))
        assert st.verify().ok


def test_a_missing_or_stray_window_is_stale_and_repair_fixes_it(tmp_path: Path) -> None:
    with ChromaStore.open(tmp_path / "s", embedder=windowed()) as st:
        st.put(Entry("user", "long", words("a", 20)))
        st.put(Entry("user", "other", words("b", 20)))
        col = st.client.get_collection(st.collection_name("user"), embedding_function=None)
        col.delete(ids=["user/long#2"])
        stray = dict(vectors_of(st, "user", "other")["user/other#1"], window=9, windows=10)
        col.upsert(ids=["user/other#9"], embeddings=[np.ones(DIM) / 16], metadatas=[stray])
        report = st.verify()
        assert report.stale == ["user/long", "user/other"] and not report.ok
        fixed = st.repair()
        assert fixed.ok, fixed
        assert "user/long#2" in all_ids(st, "user") and "user/other#9" not in all_ids(st, "user")


def test_an_embedder_without_windows_keeps_one_vector_per_entry(tmp_path: Path) -> None:
    with ChromaStore.open(tmp_path / "s", embedder=NoWindows(windowed())) as st:
        st.put(Entry("user", "long", words("a", 40)))
        assert set(vectors_of(st, "user", "long")) == {"user/long"}
        assert [h.entry.name for h in st.recall("a3 a7", scopes=["user"], mode="vector")] == [
            "long"
        ]
        assert st.verify().ok


@pytest.mark.slow
def test_a_store_indexed_before_windows_re_embeds_its_long_entries_once(tmp_path: Path) -> None:
    """Indexed with one vector per entry (what every store held before windows), then opened with
    a windowed embedder of the same vectors: the long entries, and only they, are embedded
    again as windows on open, once; the layout is recorded in the journal's state."""
    folder = tmp_path / "s"
    long_ones = {f"long-{i}": words(f"l{i}x", 20) for i in range(3)}
    short_ones = {f"short-{i}": words(f"s{i}x", 6) for i in range(3)}
    with ChromaStore.open(folder, embedder=NoWindows(windowed())) as st:
        st.put_many([Entry("user", n, t) for n, t in {**long_ones, **short_ones}.items()])
        assert st.verify().vectors == 6
    counting = Counting()
    with ChromaStore.open(folder, embedder=counting) as st:
        assert sorted(counting.texts) == sorted(
            w for t in long_ones.values() for w in text_windows(windowed(), t)
        )
        for name in long_ones:
            assert len(vectors_of(st, "user", name)) == expected_windows(20)
        assert st.verify().ok
        query = " ".join(f"l1x{i}" for i in range(12, 20))
        assert st.recall(query, scopes=["user"], mode="vector", limit=1)[0].entry.name == "long-1"
    with SqliteStore(folder / "journal.sqlite3") as journal:
        assert journal.get_state("chroma-index:embedded:agentmemory:windows") == "words:8/4;win-1"
    again = Counting()
    with ChromaStore.open(folder, embedder=again) as st:
        assert again.texts == [], "re-embedded once, not at every open"


@pytest.mark.slow
def test_the_end_of_a_long_entry_is_found_by_meaning_with_the_packaged_model(
    tmp_path: Path,
) -> None:
    """The issue's case: 2,473 bytes of ordinary meeting notes whose only mention of a budget
    freeze is the last sentence, among 30 short fillers (many about money and dates). Embedded
    whole, the model reads the first 256 word pieces and the entry is not in the vector leg's
    top 5; embedded as windows it is in the top 3."""
    assert len(MEETING_NOTES.encode()) == 2473
    assert sum("budget" in s or "freeze" in s for s in re.split(r"(?<=\.) ", MEETING_NOTES)) == 1
    assert "budget freeze" in MEETING_NOTES.rsplit(". ", 1)[-1]
    model = embedders.get(embedders.DEFAULT_EMBEDDER)
    entries = [Entry("team", f"filler-{i}", t) for i, t in enumerate(FILLERS)]
    entries.append(Entry("team", "meeting-notes", MEETING_NOTES))
    query = "when does the budget freeze start?"
    ranks = {}
    for label, embedder in (("whole", NoWindows(model)), ("windows", model)):
        with ChromaStore.open(tmp_path / label, embedder=embedder) as st:
            st.put_many(entries)
            hits = st.recall(query, scopes=["team"], mode="vector", limit=10)
            names = [h.entry.name for h in hits]
            ranks[label] = names.index("meeting-notes") + 1 if "meeting-notes" in names else 99
            assert st.verify().ok
    assert ranks["whole"] > 5, ranks
    assert ranks["windows"] <= 3, ranks


MEETING_NOTES = (
    "The team met on Tuesday morning in the large room on the third floor to go over the plans "
    "for the coming quarter. Maria opened with a summary of the customer interviews from last "
    "month: most people liked the new onboarding flow, but several found the settings page hard "
    "to read on small screens, and two asked for a dark theme. Tom said the mobile release had "
    "slipped by a week because the review of the payment screens took longer than expected, and "
    "that the store listing still needed new screenshots. We agreed that Aisha would own the "
    "screenshots and that the release notes would be written by Friday. Next came the hiring "
    "plan. We have two open roles for backend engineers and one for a designer; the recruiter "
    "has a shortlist of six people, and interviews will run over the next three weeks. Sam asked "
    "whether we could move the design interviews earlier, since the designer would help with the "
    "settings page, and everyone agreed. Then we talked about the office move. The lease on the "
    "current building ends in the spring, and the facilities group has found two places near "
    "the station; a visit is planned for the second week of next month, and anyone who wants to "
    "come should tell Priya. The discussion of the support queue took a while: response times "
    "have grown since the holidays, partly because one person left and partly because the new "
    "release brought more questions about exports. Ravi proposed a rota so that each engineer "
    "spends one afternoon a week on support tickets, which most people liked, although a few "
    "worried about losing focus time. We will try it for a month and look at the numbers again. "
    "Lena gave an update on the data pipeline: the nightly jobs now finish before six, the "
    "dashboards load faster, and the old reports will be turned off at the end of the month "
    "once the finance team confirms they no longer use them. We closed with a short round of "
    "thanks for the people who handled the outage two weeks ago, and a reminder that the "
    "summer party is on the last Friday of June. Someone asked about the new chairs for the "
    "meeting rooms, which were ordered in January and should arrive soon, and Tom mentioned that "
    "the team lunch next week will be at the Italian place instead of the usual one, because the "
    "usual one is closed for repairs. Aisha showed a short demo of the new search page, which "
    "people liked very, very much. Before leaving, Maria said the budget freeze starts on the "
    "first of March, so every purchase must be approved before then."
)

FILLERS = [
    "The fiscal year starts on the first of April.",
    "Expense reports are due on the fifth of each month.",
    "The finance team meets every Monday at ten.",
    "Travel must be booked through the company portal.",
    "The new pricing for customers takes effect in May.",
    "Salaries are paid on the twenty-fifth.",
    "The spring sale starts next Thursday.",
    "Quarterly reviews begin in the second week of July.",
    "The hiring freeze on contractors ended last year.",
    "Invoices above a thousand euros need two signatures.",
    "The winter break starts on the twentieth of December.",
    "Our cloud bill doubled in February.",
    "The office move is planned for the spring.",
    "The marketing plan for next year is due in October.",
    "Overtime has to be approved by a manager.",
    "The audit starts at the end of the month.",
    "The new laptops will be ordered in the summer.",
    "Daylight saving time starts on the last Sunday of March.",
    "The training budget per person is five hundred euros.",
    "The support rota starts on Monday.",
    "Tom prefers tea over coffee in the morning.",
    "The printer on floor two is out of toner.",
    "Aisha's birthday is on the ninth of May.",
    "The wifi password changed last week.",
    "Sam is on holiday until Monday.",
    "Lunch on Thursdays is pizza from the corner place.",
    "The parking garage closes at ten.",
    "Priya books the meeting rooms.",
    "Backups run every night at two.",
    "Standup is at half past nine.",
]


def _strays_after_a_race(st: ChromaStore) -> None:
    """The end state two writers of one entry on a server can leave (one wrote 6 windows, the
    other, having read the count before, wrote 2 over windows 0 and 1): window 0 counts 2 while
    windows 2 to 4 remain. Made here with Chroma's own client on a real collection."""
    st.put(Entry("user", "racy", words("a", 24)))  # 24 words, 8 every 4: 5 windows
    col = st.client.get_collection(st.collection_name("user"), embedding_function=None)
    got = col.get(ids=["user/racy"], include=["metadatas"])
    meta = dict(got["metadatas"][0])
    meta["windows"] = 2
    col.update(ids=["user/racy"], metadatas=[meta])
    assert len([i for i in all_ids(st, "user") if i.startswith("user/racy")]) == 5


def test_forget_and_purge_remove_windows_past_the_count_window_0_records(tmp_path: Path) -> None:
    """docs/storage.md#ids-and-metadata: a forget and a purge delete every vector naming the
    entry, not the ids window 0's count names."""
    with ChromaStore.open(tmp_path / "s", embedder=windowed()) as st:
        st.put(Entry("user", "other", "other words here"))
        _strays_after_a_race(st)
        st.forget("user", "racy")
        assert all_ids(st, "user") == {"user/other"}
        _strays_after_a_race(st)
        receipt = st.purge("user", "racy", reason="erasure")
        assert receipt.vectors == 5
        assert all_ids(st, "user") == {"user/other"}
        assert st.verify_erased("user", "racy").erased


class _BrokenWindows:
    """An embedder whose ``windows`` gives the spans it is built with."""

    name = "broken"
    dim = 4
    window_layout = "chars:6/3;test"

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.spans = spans

    def fingerprint(self) -> str:
        return "broken"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.ones((len(texts), 4), dtype=np.float32)

    def windows(self, text: str) -> list[tuple[int, int]]:
        return self.spans


@pytest.mark.parametrize(
    "spans",
    [[], [(1, 10)], [(0, 5)], [(0, 6), (3, 2), (4, 10)], [(0, 6), (7, 10)], [(0, 6), (0, 10)]],
    ids=["none", "late-start", "short", "backwards", "gap", "same-start"],
)
def test_windows_that_do_not_cover_the_text_in_order_are_refused(
    spans: list[tuple[int, int]],
) -> None:
    with pytest.raises(ValueError, match="embedder 'broken' returned windows"):
        text_windows(_BrokenWindows(spans), "0123456789")
    assert text_windows(_BrokenWindows([(0, 6), (3, 10)]), "0123456789") == ["012345", "3456789"]
