"""BM25 (recallers.bm25, agentmemory.stores.sqlite.lexicon): the ranking agrees with rank-bm25 on the same tokens.

rank-bm25's ``BM25Okapi(k1=1.2, b=0.75, epsilon=0)`` is the reference. Ours differs on purpose in
one place: a term found in half the documents or more weighs 1e-6 (SQLite FTS5's floor) instead
of 0, so it still makes a document a candidate; that moves a score by at most a few 1e-6.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import need_shared_data
from hypothesis import given
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from agentmemory import Entry, EntryTooLargeError, MemStore, SqliteStore
from agentmemory.stores.sqlite.lexicon import COMMON_TERM_CANDIDATES, RANKED_POSTINGS, create_tables
from recallers import (
    DEFAULT_TOKENIZER,
    IDF_FLOOR,
    MAX_QUERY_BYTES,
    MAX_QUERY_TERMS,
    BM25Index,
    Tokenizer,
    document_terms,
    query_terms,
)

TOL = 1e-4  # absolute, on scores between about 0.5 and 30


def synthetic_corpus(n: int, seed: int = 7) -> list[Entry]:
    """``n`` entries of Zipf-distributed words (a few very common, many rare), with meta."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(400)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    out = []
    for i in range(n):
        words = rng.choices(vocab, weights, k=rng.randint(3, 40))
        meta = {"description": " ".join(rng.choices(vocab, weights, k=3))} if i % 3 == 0 else None
        out.append(Entry("corpus", f"doc-{i:04d}", " ".join(words), meta))
    return out


def synthetic_queries(seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(400)]
    return [" ".join(rng.choices(vocab, k=rng.randint(1, 6))) for _ in range(40)] + [
        "w0",  # in most documents: floored idf
        "w0 w0 w399",  # repeats count twice
        "doc-0007",  # a name
    ]


def locomo_corpus() -> tuple[list[Entry], list[str]]:
    conv = json.loads(need_shared_data("locomo/locomo-dev.json").read_text())[0]
    entries = []
    for key, turns in conv["conversation"].items():
        if not key.startswith("session_") or not isinstance(turns, list):
            continue
        for t in turns:
            name = t["dia_id"].lower().replace(":", "-")
            entries.append(Entry("locomo", name, f"{t['speaker']}: {t['text']}"))
    return entries, [qa["question"] for qa in conv["qa"][:60]]


def reference_scores(entries: list[Entry], query: str, tok: Tokenizer) -> dict[str, float]:
    """rank-bm25's scores of every entry, by ``scope/name``."""
    bm25 = BM25Okapi([document_terms(e, tok) for e in entries], k1=1.2, b=0.75, epsilon=0)
    scores = bm25.get_scores(tok(query))
    return {e.key: float(s) for e, s in zip(entries, scores, strict=True)}


def assert_agrees(found: list[tuple[str, float]], ref: dict[str, float], limit: int) -> None:
    """``found`` (name, score), best first, is rank-bm25's top ``limit`` up to ties and the
    1e-6 floor: same scores, same order, same set above the cut."""
    for name, score in found:
        assert score == pytest.approx(ref[name], abs=TOL), name
    for (a, _), (b, _) in itertools.pairwise(found):
        assert ref[a] >= ref[b] - TOL, f"{a} ranked above {b}"
    positive = sorted((s for s in ref.values() if s > TOL), reverse=True)
    if len(found) < limit:  # everything with a positive reference score was returned
        assert len([1 for _, s in found if s > TOL]) == len(positive)
    elif len(positive) > limit:
        cut = positive[limit - 1]
        must = {n for n, s in ref.items() if s > cut + TOL}
        assert must <= {n for n, _ in found}


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqliteStore]:
    with SqliteStore(tmp_path / "bm25.sqlite3") as st:
        yield st


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["synthetic", "locomo"])
def test_ranking_agrees_with_rank_bm25(corpus: str, sqlite_store: SqliteStore) -> None:
    if corpus == "synthetic":
        entries, queries = synthetic_corpus(300), synthetic_queries()
    else:
        entries, queries = locomo_corpus()
    mem = MemStore()
    for e in entries:
        mem.put(e)
    sqlite_store.put_many(entries)
    scope = entries[0].scope
    checked = 0
    for q in queries:
        ref = reference_scores(entries, q, DEFAULT_TOKENIZER)
        for st_ in (mem, sqlite_store):
            for limit in (10, len(entries)):
                found = st_.search_text(q, scopes=[scope], limit=limit)
                assert_agrees([(e.key, s) for e, s in found], ref, limit)
                checked += 1
        if any(s > TOL for s in ref.values()):
            hits = mem.recall(q, scopes=[scope], limit=5)
            assert hits and hits[0].legs["bm25"].rank == 1
    assert checked >= 4 * 40


@pytest.mark.slow
def test_every_score_of_the_in_memory_index_matches_rank_bm25() -> None:
    entries = synthetic_corpus(200)
    index: BM25Index[Entry] = BM25Index()
    for e in entries:
        index.put(e)
    for q in synthetic_queries():
        ref = reference_scores(entries, q, DEFAULT_TOKENIZER)
        ours = index.scores(DEFAULT_TOKENIZER(q), scopes=["corpus"])
        for key, want in ref.items():
            scope, _, name = key.partition("/")
            got = ours.get((scope, name), 0.0)
            assert got == pytest.approx(want, abs=TOL), (q, key)


def test_a_small_example_computed_by_hand(sqlite_store: SqliteStore) -> None:
    # terms: d1 = [d1 apple banana] (3), d2 = [d2 apple cherry cherry] (4), d3 = [d3 durian] (2)
    docs = [
        Entry("fruit", "d1", "apple banana"),
        Entry("fruit", "d2", "apple cherry cherry"),
        Entry("fruit", "d3", "durian"),
    ]
    mem = MemStore()
    for e in docs:
        mem.put(e)
    sqlite_store.put_many(docs)
    avgdl = 9 / 3
    # "cherry": N = 3, n = 1, tf = 2, |d2| = 4
    want = math.log((3 - 1 + 0.5) / (1 + 0.5)) * (2 * 2.2) / (2 + 1.2 * (0.25 + 0.75 * 4 / avgdl))
    assert want == pytest.approx(0.6421808, abs=1e-6)  # ln(5/3) * 4.4 / 3.5
    # "apple": in 2 of 3 documents, idf ln(1.5 / 2.5) < 0 is floored; the shorter d1 wins
    apple_d1 = IDF_FLOOR * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 3 / avgdl))
    apple_d2 = IDF_FLOOR * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 4 / avgdl))
    for st_ in (mem, sqlite_store):
        [(e, score)] = st_.search_text("cherry", scopes=["fruit"], limit=5)
        assert (e.name, score) == ("d2", pytest.approx(want, rel=1e-9))
        got = [(e.name, s) for e, s in st_.search_text("apple", scopes=["fruit"], limit=5)]
        assert got == [
            ("d1", pytest.approx(apple_d1, rel=1e-6)),
            ("d2", pytest.approx(apple_d2, rel=1e-6)),
        ]
        assert st_.search_text("kiwi", scopes=["fruit"], limit=5) == []
        assert st_.search_text("the of", scopes=["fruit"], limit=5) == []


@pytest.mark.slow
def test_in_memory_statistics_are_those_of_the_requested_scopes() -> None:
    a = synthetic_corpus(120, seed=1)
    b = [Entry("other", e.name, e.content) for e in synthetic_corpus(80, seed=2)]
    mem = MemStore()
    for e in a + b:
        mem.put(e)
    for q in synthetic_queries()[:15]:
        ref_a = reference_scores(a, q, DEFAULT_TOKENIZER)
        found = mem.search_text(q, scopes=["corpus"], limit=10)
        assert_agrees([(e.key, s) for e, s in found], ref_a, 10)
        ref_ab = reference_scores(a + b, q, DEFAULT_TOKENIZER)
        found = mem.search_text(q, scopes=["corpus", "other"], limit=10)
        assert_agrees([(e.key, s) for e, s in found], ref_ab, 10)


@pytest.mark.slow
def test_the_index_follows_writes_without_a_rebuild(sqlite_store: SqliteStore) -> None:
    rng = random.Random(3)
    pool = synthetic_corpus(150, seed=5)
    mem = MemStore()
    live: dict[str, Entry] = {}
    for step in range(400):
        e = rng.choice(pool)
        if e.name in live and rng.random() < 0.3:
            mem.forget(e.scope, e.name)
            sqlite_store.forget(e.scope, e.name)
            del live[e.name]
        else:
            new = Entry(e.scope, e.name, f"{e.content} w{step % 50}")  # put and re-put
            mem.put(new)
            sqlite_store.put(new)
            live[e.name] = new
    final = sorted(live.values(), key=lambda e: e.name)
    for q in synthetic_queries()[:20]:
        ref = reference_scores(final, q, DEFAULT_TOKENIZER)
        for st_ in (mem, sqlite_store):
            found = st_.search_text(q, scopes=["corpus"], limit=len(final))
            assert_agrees([(e.key, s) for e, s in found], ref, len(final))
            assert {e.name for e, _ in found} <= set(live)


def test_options_of_the_in_memory_index_are_checked() -> None:
    with pytest.raises(ValueError, match="k1"):
        BM25Index(k1=-1)
    with pytest.raises(ValueError, match="b is"):
        BM25Index(b=1.5)
    index: BM25Index[Entry] = BM25Index(k1=0.9, b=0.4)
    docs = synthetic_corpus(50)
    for e in docs:
        index.put(e)
    q = "w3 w17"
    ref = BM25Okapi([document_terms(e) for e in docs], k1=0.9, b=0.4, epsilon=0)
    scores = ref.get_scores(DEFAULT_TOKENIZER(q))
    want = {e.key: float(s) for e, s in zip(docs, scores, strict=True)}
    found = index.search_text(q, scopes=["corpus"], limit=50)
    assert_agrees([(e.key, s) for e, s in found], want, 50)


@pytest.mark.slow
@given(st.lists(st.text(max_size=60), min_size=1, max_size=4))
def test_fts5_counts_exactly_our_terms(texts: list[str]) -> None:
    tok = Tokenizer(stopwords=frozenset())
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        create_tables(conn)
        conn.execute("CREATE VIRTUAL TABLE vocab USING fts5vocab(memory_lexical, 'instance')")
        want: Counter[tuple[int, str]] = Counter()
        for i, text in enumerate(texts, start=1):
            terms = tok(text)
            conn.execute(
                "INSERT INTO memory_lexical (rowid, terms) VALUES (?, ?)", (i, " ".join(terms))
            )
            want.update((i, t) for t in terms)
        got = Counter((int(d), str(t)) for t, d in conn.execute("SELECT term, doc FROM vocab"))
        assert got == want
    finally:
        conn.close()


def test_a_tokenizer_change_rebuilds_the_sqlite_index(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    unstemmed = Tokenizer(stemmer=None)
    with SqliteStore(path, tokenizer=unstemmed) as st_:
        st_.put(Entry("user", "runner", "She was running the marathon"))
        assert st_.search_text("runs", scopes=["user"], limit=5) == []
        assert st_.search_text("the", scopes=["user"], limit=5) == []
    with SqliteStore(path, tokenizer=Tokenizer(stopwords=frozenset(), stemmer="english")) as st_:
        assert [e.name for e, _ in st_.search_text("runs", scopes=["user"], limit=5)] == ["runner"]
        assert [e.name for e, _ in st_.search_text("the", scopes=["user"], limit=5)] == ["runner"]
        st_.put(Entry("user", "walker", "He walks"))
        assert [e.name for e, _ in st_.search_text("walking", scopes=["user"], limit=5)] == [
            "walker"
        ]
    with SqliteStore(path) as st_:  # the default stems and drops stopwords: rebuilt
        assert [e.name for e, _ in st_.search_text("runs", scopes=["user"], limit=5)] == ["runner"]
        assert st_.search_text("the", scopes=["user"], limit=5) == []
    with SqliteStore(path, tokenizer=unstemmed) as st_:  # rebuilt unstemmed again
        assert st_.search_text("runs", scopes=["user"], limit=5) == []
        assert [e.name for e, _ in st_.search_text("running", scopes=["user"], limit=5)] == [
            "runner"
        ]
        assert [e.name for e, _ in st_.search_text("walks", scopes=["user"], limit=5)] == ["walker"]


def test_a_store_made_before_the_lexical_index_gets_one(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with SqliteStore(path) as st_:
        st_.put(Entry("user", "prefs", "prefers dark mode"))
    conn = sqlite3.connect(path)
    conn.executescript(
        "DROP TABLE memory_lexical; DROP TABLE memory_lexical_docs;"
        " DELETE FROM store_schema WHERE version = 2;"
        " DELETE FROM store_state WHERE key = 'lexical.tokenizer';"
    )
    conn.close()
    with SqliteStore(path) as st_:
        assert [h.entry.name for h in st_.recall("dark", scopes=["user"])] == ["prefs"]


# -- the lexical query's cost is bounded (docs/recall.md#the-lexical-query) -------------------


@pytest.fixture(scope="module")
def capped_stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[object]]:
    """A MemStore and an SqliteStore holding the same 30 entries."""
    entries = [Entry("q", f"e-{i:02d}", f"filler{i} text number {i}") for i in range(29)]
    entries.append(Entry("q", "target", "the zebra crossing"))
    mem = MemStore()
    for e in entries:
        mem.put(e)
    sql = SqliteStore(tmp_path_factory.mktemp("cap") / "cap.sqlite3")
    sql.put_many(entries)
    yield [mem, sql]
    sql.close()


def test_a_query_reads_its_first_terms_and_bytes_only(capped_stores: list[object]) -> None:
    pad = "unmatched " * (MAX_QUERY_TERMS - 1)  # each a term found nowhere
    for st_ in capped_stores:
        assert isinstance(st_, MemStore | SqliteStore)
        # the 64th term is read, the 65th is not
        assert [e.name for e, _ in st_.search_text(pad + "zebra", scopes=["q"], limit=5)] == [
            "target"
        ]
        assert st_.search_text(pad + "unmatched zebra", scopes=["q"], limit=5) == []
        # a term inside the first MAX_QUERY_BYTES bytes is read, one after them is not
        spaces = " " * (MAX_QUERY_BYTES - len("zebra"))
        assert st_.search_text(spaces + "zebra", scopes=["q"], limit=5)
        assert st_.search_text(spaces + " zebra", scopes=["q"], limit=5) == []


def test_a_huge_repeated_query_is_scored_as_its_capped_terms(capped_stores: list[object]) -> None:
    """10 MB of one word used to take minutes (quadratic in FTS5); now it is its first 64 terms,
    counted once with weight 64: rank-bm25's score for 64 copies of the term."""
    entries = [Entry("q", f"e-{i:02d}", f"filler{i} text number {i}") for i in range(29)]
    entries.append(Entry("q", "target", "the zebra crossing"))
    ref = reference_scores(entries, "zebra " * 64, DEFAULT_TOKENIZER)
    assert query_terms("zebra " * 2_000_000) == Counter({"zebra": 64})
    for st_ in capped_stores:
        assert isinstance(st_, MemStore | SqliteStore)
        found = st_.search_text("zebra " * 2_000_000, scopes=["q"], limit=5)
        assert [(e.key, pytest.approx(ref[e.key], abs=TOL)) for e, _ in found] == [
            ("q/target", s) for _, s in found
        ]


def test_query_terms_counts_each_term_once_with_its_weight() -> None:
    assert query_terms("Zebra zebras, the ZEBRA and a lion") == Counter({"zebra": 3, "lion": 1})
    assert list(query_terms("lion zebra lion")) == ["lion", "zebra"]  # first occurrence order
    assert query_terms("the and of") == Counter()
    # a character cut by the byte cap is dropped, not garbled
    assert query_terms("a" * (MAX_QUERY_BYTES - 1) + "é" + " zebra") == Counter(
        {"a" * (MAX_QUERY_BYTES - 1): 1}
    )


def common_entries() -> list[Entry]:
    """2,600 entries: "alpha" in the 1,200 of them with an even number below 2,400, "rare" in
    twelve of those, and lengths that vary so BM25's length normalisation matters."""
    rng = random.Random(3)
    entries = []
    for i in range(2600):
        words = [f"pad{rng.randrange(3000)}" for _ in range(rng.randint(2, 12))]
        if i % 2 == 0 and i < 2400:
            words += ["alpha"] * rng.randint(1, 3)
        if i % 200 == 0 and i < 2400:
            words.append("rare")
        entries.append(Entry("c", f"n-{i:04d}", " ".join(words)))
    return entries


@pytest.fixture(scope="module")
def common_word_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteStore]:
    """:func:`common_entries` in an sqlite store."""
    st_ = SqliteStore(tmp_path_factory.mktemp("common") / "common.sqlite3")
    st_.put_many(common_entries())
    yield st_
    st_.close()


@pytest.mark.slow
def test_a_very_common_term_adds_its_score_to_rarer_terms_candidates(
    common_word_store: SqliteStore,
) -> None:
    """ "alpha" weighted 17 costs 1,200 x 17 postings, over RANKED_POSTINGS: FTS5 ranks "rare"
    alone and alpha's share is added to those candidates; the ranking is rank-bm25's."""
    entries = common_entries()
    query = "rare " + "alpha " * 17
    assert RANKED_POSTINGS < 1200 * 17
    ref = reference_scores(entries, query, DEFAULT_TOKENIZER)
    found = common_word_store.search_text(query, scopes=["c"], limit=10)
    assert len(found) == 10
    assert_agrees([(e.key, s) for e, s in found], ref, 10)


def test_a_query_of_very_common_terms_only_reads_a_bounded_set_of_candidates(
    common_word_store: SqliteStore,
) -> None:
    """Only "alpha" (weight 17): the candidates are the COMMON_TERM_CANDIDATES entries holding it
    indexed last, each scored as rank-bm25 scores it."""
    entries = common_entries()
    query = "alpha " * 17
    ref = reference_scores(entries, query, DEFAULT_TOKENIZER)
    holders = [e.key for e in entries if "alpha" in e.content]  # in the order they were written
    newest = holders[-COMMON_TERM_CANDIDATES:]
    best_newest = sorted(newest, key=lambda k: (-ref[k], k))[:10]
    found = common_word_store.search_text(query, scopes=["c"], limit=10)
    assert [e.key for e, _ in found] == best_newest
    for e, s in found:
        assert s == pytest.approx(ref[e.key], abs=TOL)


def deep_entries() -> list[Entry]:
    """3,000 entries: "alpha" (1 to 4 times) in the 1,200 whose number ends in 0, 2, 5 or 7, "rare"
    (once or twice) in the 300 ending in 0, lengths that vary."""
    rng = random.Random(5)
    entries = []
    for i in range(3000):
        words = [f"pad{rng.randrange(3000)}" for _ in range(rng.randint(2, 12))]
        if i % 5 in (0, 2):
            words += ["alpha"] * rng.randint(1, 4)
        if i % 10 == 0:
            words += ["rare"] * rng.randint(1, 2)
        rng.shuffle(words)
        entries.append(Entry("c", f"n-{i:04d}", " ".join(words)))
    return entries


@pytest.mark.slow
def test_a_common_term_that_reorders_the_rarer_terms_candidates_is_read_deep_enough(
    tmp_path: Path,
) -> None:
    """ "alpha" weighted 17 (1,200 x 17 postings, past RANKED_POSTINGS) outweighs "rare": the best
    entries by "rare" alone (the first 2 x limit + 20 that FTS5 ranks) are not the best in full.
    The candidates are read deeper until the MaxScore bound (docs/recall.md#the-lexical-querys-cost)
    proves the top: the ranking is rank-bm25's (reading 40 deep, as before, it was not)."""
    entries = deep_entries()
    query = "rare " + "alpha " * 17
    ref = reference_scores(entries, query, DEFAULT_TOKENIZER)
    by_rare = reference_scores(entries, "rare", DEFAULT_TOKENIZER)
    best = sorted(ref, key=lambda k: -ref[k])[:10]
    first_by_rare = set(sorted(by_rare, key=lambda k: -by_rare[k])[:40])
    assert not set(best) <= first_by_rare  # the case the deeper read is for
    with SqliteStore(tmp_path / "deep.sqlite3") as st_:
        st_.put_many(entries)
        for limit in (1, 10, 25):
            found = st_.search_text(query, scopes=["c"], limit=limit)
            assert len(found) == limit
            assert_agrees([(e.key, s) for e, s in found], ref, limit)


@pytest.mark.slow
def test_document_frequencies_follow_every_write(tmp_path: Path) -> None:
    """How many entries hold a term is read from the index's document frequency table; a write
    by the same store or by another store on the same file changes the scores of the next search
    exactly as rank-bm25 over the new entries says. "zebra" weighted 60 is past RANKED_POSTINGS
    (400 x 60 postings), so its score is computed from that count, not by FTS5."""
    path = tmp_path / "freqs.sqlite3"
    entries = [Entry("f", f"e-{i:03d}", f"zebra filler{i % 7}") for i in range(400)]
    entries += [Entry("f", f"x-{i:03d}", f"other words {i}") for i in range(600)]
    query = "filler1 " + "zebra " * 60
    assert RANKED_POSTINGS < 400 * 60
    with SqliteStore(path) as st_, SqliteStore(path) as other:
        st_.put_many(entries)
        for step in range(4):
            ref = reference_scores(entries, query, DEFAULT_TOKENIZER)
            for _ in range(2):
                found = st_.search_text(query, scopes=["f"], limit=10)
                assert_agrees([(e.key, s) for e, s in found], ref, 10)
            writer = st_ if step % 2 else other
            new = [Entry("f", f"z-{step}-{i}", "zebra zebra filler1") for i in range(30)]
            writer.put_many(new)
            entries += new
            if step == 2:
                writer.forget("f", "e-001")
                entries = [e for e in entries if e.name != "e-001"]


# -- the document frequency table (docs/storage.md#the-lexical-index-tables) ------------------


def table_doc_freqs(path: Path) -> dict[str, int]:
    """``memory_lexical_df`` of the file, read by a connection of its own."""
    conn = sqlite3.connect(path)
    try:
        return {str(t): int(d) for t, d in conn.execute("SELECT term, docs FROM memory_lexical_df")}
    finally:
        conn.close()


def fts5_doc_freqs(path: Path) -> dict[str, int]:
    """How many documents hold each term, as FTS5 counts them (``fts5vocab``, walking the
    postings), read by a connection of its own."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, memory_lexical, row)")
        return {str(t): int(d) for t, d in conn.execute("SELECT term, doc FROM temp.v") if d}
    finally:
        conn.close()


def live_doc_freqs(live: dict[str, Entry]) -> Counter[str]:
    """How many of the live entries hold each term, counted from their texts."""
    return Counter(t for e in live.values() for t in set(document_terms(e)))


@pytest.mark.slow
def test_the_document_frequency_table_stays_exact_through_every_kind_of_write(
    tmp_path: Path,
) -> None:
    """300 seeded random writes by two handles on one file: puts that add, replace (with some
    words kept, some dropped) and empty an entry, forgets, put_many with a name given twice, a
    put_many refused half-way, purges and lexical rebuilds (verify --repair's). After each 30,
    memory_lexical_df is exactly FTS5's own count and the count over the live entries, and a
    query of a common and a rare word ranks as rank-bm25 does."""
    rng = random.Random(17)
    vocab = [f"word{i}" for i in range(40)] + ["zebra", "crossing", "marathon", "running"]
    path = tmp_path / "df.sqlite3"
    live: dict[str, Entry] = {}
    ever: set[str] = set()
    purges = 0

    def text() -> str:
        words = rng.choices(vocab, [1 / (i + 1) for i in range(len(vocab))], k=rng.randint(0, 12))
        return " ".join(words + rng.choices(["the", "of", "and"], k=rng.randint(0, 3)))

    def entry() -> Entry:
        meta = {"description": text()} if rng.random() < 0.2 else None
        return Entry("s", f"n-{rng.randrange(60)}", text() or "the of", meta)

    with SqliteStore(path) as one, SqliteStore(path) as two:
        for step in range(300):
            st_ = one if rng.random() < 0.6 else two
            roll = rng.random()
            if roll < 0.55:
                e = entry()
                st_.put(e)
                live[e.name] = e
            elif roll < 0.7 and live:
                name = rng.choice(sorted(live))
                st_.forget("s", name)
                del live[name]
            elif roll < 0.85:
                batch = [entry() for _ in range(rng.randint(1, 5))]
                batch.append(Entry("s", batch[0].name, text() or "and"))  # the name again
                st_.put_many(batch)
                live.update((e.name, e) for e in batch)
            elif roll < 0.92:
                with pytest.raises(EntryTooLargeError):
                    st_.put_many([entry(), entry(), Entry("s", "too-big", "zebra " * 1000)])
            elif roll < 0.96 and purges < 4 and ever:
                name = rng.choice(sorted(ever))
                st_.purge("s", name, reason="test")
                live.pop(name, None)
                ever.discard(name)
                purges += 1
            elif roll >= 0.98:
                assert st_.rebuild_lexical() == len(live)
            ever.update(live)
            if step % 30 == 29 or step == 299:
                want = dict(live_doc_freqs(live))
                assert table_doc_freqs(path) == want, f"after step {step}"
                assert fts5_doc_freqs(path) == want, f"after step {step}"
                ref = reference_scores(list(live.values()), "word0 marathon", DEFAULT_TOKENIZER)
                found = one.search_text("word0 marathon", scopes=["s"], limit=10)
                assert_agrees([(e.key, s) for e, s in found], ref, 10)
        assert purges >= 2
        assert one.check_lexical() == []


def test_a_purged_entrys_own_words_leave_the_document_frequency_table(tmp_path: Path) -> None:
    """A purge erases every copy of what the entry held: a word only it held has no row left."""
    path = tmp_path / "purge.sqlite3"
    with SqliteStore(path) as st_:
        st_.put_many([Entry("u", "address", "lives at 12 quixotic lane"), Entry("u", "b", "lane")])
        assert table_doc_freqs(path)["quixot"] == 1
        st_.purge("u", "address", reason="erase")
        freqs = table_doc_freqs(path)
        assert "quixot" not in freqs and freqs["lane"] == 1
        assert st_.verify_erased("u", "address").found == ()
