"""The one tokenizer (recallers.Tokenizer): identifiers, CJK, normalisation, options, no raising."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recallers import (
    DEFAULT_TOKENIZER,
    ENGLISH_STOPWORDS,
    TOKENIZER_VERSION,
    Tokenizer,
    stemmer_languages,
    tokenize,
)

PLAIN = Tokenizer(stopwords=frozenset(), stemmer=None)  # the splitting rules alone


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("FOO_BAR_BAZ", ["foo", "bar", "baz", "foo_bar_baz"]),
        ("parseHTMLResponse", ["parse", "html", "response", "parsehtmlresponse"]),
        ("kebab-case-name", ["kebab", "case", "name", "kebab-case-name"]),
        ("parsehtmlresponse", ["parsehtmlresponse"]),
        ("utf8Decode", ["utf8", "decode", "utf8decode"]),
        ("HTML5Parser", ["html5", "parser", "html5parser"]),
        ("BENCH-100821", ["bench", "100821", "bench-100821"]),
        ("config.yaml", ["config", "yaml", "config.yaml"]),
        ("__init__", ["init"]),
        ("GB/s", ["gb", "s"]),
        ("C++", ["c"]),
        ("(foo", ["foo"]),
        ('"unterminated', ["unterminated"]),
        ("don't", ["don", "t", "don't"]),
        ("user’s", ["user", "s", "user's"]),
        (
            "call FOO_BAR_BAZ then parseHTMLResponse()",
            [
                "call",
                "foo",
                "bar",
                "baz",
                "foo_bar_baz",
                "then",
                "parse",
                "html",
                "response",
                "parsehtmlresponse",
            ],
        ),
    ],
)
def test_identifiers_are_split_and_kept_whole(text: str, terms: list[str]) -> None:
    assert PLAIN(text) == terms


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("成语接龙", ["成语", "语接", "接龙"]),
        ("今天玩成语接龙游戏", ["今天", "天玩", "玩成", "成语", "语接", "接龙", "龙游", "游戏"]),
        ("しりとり", ["しり", "りと", "とり"]),
        (
            "今日はしりとりをした。",
            ["今日", "日は", "はし", "しり", "りと", "とり", "りを", "をし", "した"],
        ),
        ("猫", ["猫"]),
        ("iPhone手机", ["i", "phone", "iphone", "手机"]),
        ("한국어 문장", ["한국", "국어", "문장"]),
    ],
)
def test_cjk_runs_become_character_bigrams(text: str, terms: list[str]) -> None:
    assert PLAIN(text) == terms


@pytest.mark.parametrize(
    ("wide", "narrow"),
    [
        ("ＦＯＯ＿ＢＡＲ", "FOO_BAR"),  # full-width Latin
        ("ｼﾘﾄﾘ", "シリトリ"),  # half-width katakana
        ("１２３", "123"),
        ("ﬁle", "file"),  # ligature
        ("STRASSE", "straße"),  # case folding, not lowercasing
    ],
)
def test_width_ligatures_and_case_fold_to_one_form(wide: str, narrow: str) -> None:
    assert PLAIN(wide) == PLAIN(narrow) != []


def test_default_tokenizer_drops_english_stopwords_and_stems() -> None:
    assert tokenize("the of and to") == []
    assert tokenize("what?!") == []
    # stopwords go before stemming: "remember" stems to "rememb" (Snowball English)
    assert tokenize("do you remember what I said about dark mode?") == [
        "rememb",
        "said",
        "dark",
        "mode",
    ]
    # the whole of a compound is a term of its own: kept unless it is itself a stopword;
    # a term holding a connector or a digit is not stemmed
    assert tokenize("a to-do list") == ["to-do", "list"]
    assert tokenize("running BENCH-100821 tests") == [
        "run",
        "bench",
        "100821",
        "bench-100821",
        "test",
    ]
    assert tokenize("don't") == []
    assert len(ENGLISH_STOPWORDS) == 179
    assert DEFAULT_TOKENIZER("The Cats") == ["cat"]
    # a question and a memory that inflect a word differently share its term
    assert set(tokenize("Which hobbies did she mention?")) & set(tokenize("she mentioned a hobby"))
    assert Tokenizer() == DEFAULT_TOKENIZER
    assert Tokenizer(stemmer=None)("running users") == ["running", "users"]


def test_stemming_is_an_option_and_applies_to_index_and_query_alike() -> None:
    english = Tokenizer(stemmer="english", stopwords=frozenset())
    assert english("running users") == ["run", "user"]
    # a camel-case whole and the same word typed in one piece stem alike
    assert english("parseHTMLResponse")[-1] == english("parsehtmlresponse")[0]
    assert english("成语接龙") == PLAIN("成语接龙")
    assert "english" in stemmer_languages()
    with pytest.raises(ValueError, match="not a Snowball language"):
        Tokenizer(stemmer="klingon")


def test_custom_stopwords_are_case_folded() -> None:
    tok = Tokenizer(stopwords=frozenset({"Foo"}))
    assert tok("foo bar FOO") == ["bar"]


def test_version_names_the_rules_and_the_options() -> None:
    versions = {
        Tokenizer().version,
        Tokenizer(stopwords=frozenset()).version,
        Tokenizer(stemmer=None).version,
        Tokenizer(stopwords=frozenset({"x"})).version,
    }
    assert len(versions) == 4
    assert all(v.startswith(TOKENIZER_VERSION + ";") for v in versions)
    assert Tokenizer().version == DEFAULT_TOKENIZER.version


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "\t\n",
        "BENCH-100821",
        "GB/s",
        "don't",
        "C++",
        "(foo",
        '"unterminated',
        "😀🎉",
        "!?" * 5000,
        "a" * 10_000,
        "\ud800 lone surrogate",
        "-_-.'",
        "x" + "_-" * 1000 + "y",
    ],
)
def test_awkward_text_never_raises(text: str) -> None:
    for tok in (DEFAULT_TOKENIZER, PLAIN, Tokenizer(stemmer=None)):
        terms = tok(text)
        assert all(t and not any(c.isspace() for c in t) and '"' not in t for t in terms)


@given(st.text(max_size=200))
def test_any_text_gives_terms_an_fts5_index_can_store(text: str) -> None:
    terms = PLAIN(text)
    assert all(isinstance(t, str) and t for t in terms)
    assert all(not any(c.isspace() for c in t) and '"' not in t for t in terms)
    assert all(t == t.casefold() for t in terms if t.isascii())


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        # Devanagari vowel signs and virama are combining marks (Mc/Mn): the words stay whole.
        ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),
        # Arabic with harakat (Mn) is one word, not its consonants one by one.
        ("مُحَمَّد", ["مُحَمَّد"]),
        # A combining accent NFKC cannot compose onto its letter stays inside the word.
        ("x\u0301y", ["x\u0301y"]),
    ],
)
def test_combining_marks_stay_inside_their_word(text: str, terms: list[str]) -> None:
    assert PLAIN(text) == terms
