"""The one tokenizer: the same function turns documents and queries into BM25 terms.

:class:`Tokenizer` (its default instance is :data:`DEFAULT_TOKENIZER`) does, in order:

1. Unicode NFKC normalisation of the whole text (full-width ``ＡＢＣ`` becomes ``ABC``, half-width
   ``ｼﾘﾄﾘ`` becomes ``シリトリ``, the ligature ``ﬁ`` becomes ``fi``).
2. Splitting on white space and punctuation. A *chunk* is a run of letters, digits and
   combining marks (a mark never starts one),
   possibly joined by the connectors ``_ - . '`` (and ``’``, read as ``'``): ``FOO_BAR_BAZ``,
   ``kebab-case-name``, ``file.py``, ``don't``, ``BENCH-100821``.
3. Runs of CJK characters (Han, Hiragana, Katakana, Hangul) become overlapping character bigrams
   (``成语接龙`` gives ``成语 语接 接龙``); a lone CJK character stays a unigram. This is the CJK
   bigram scheme of Lucene's ``CJKBigramFilter``; it needs no dictionary.
4. Every other chunk is split into its parts at the connectors and at case changes
   (``parseHTMLResponse`` gives ``parse html response``, ``utf8Decode`` gives ``utf8 decode``);
   when there is more than one part the whole chunk is kept too, so an exact identifier matches
   as one rare term (``FOO_BAR_BAZ`` gives ``foo bar baz foo_bar_baz``).
5. Case folding (``str.casefold``) of every term.
6. Stopwords (a set of case-folded words; NLTK's English list by default) are dropped, parts and
   wholes alike (``to-do`` keeps ``to-do``; ``to`` and ``do`` are stopwords).
7. Snowball stemming (PyStemmer; English by default) of alphabetic terms (``parsehtmlresponse``
   included); CJK bigrams and terms holding a digit or a connector are never stemmed.

The defaults (English stopwords and English Snowball stemming) are what a BM25 baseline usually
runs with (Anserini's and Lucene's English analyzers: Porter-family stemming plus a stopword list).
Chosen on LoCoMo and SciFact; see docs/recall.md#stemming-and-stopwords.

A tokenizer never raises on a ``str``: ``"C++"``, ``"(foo"``, an unterminated quote, emoji and
10 KB of punctuation all give a (possibly empty) list. Terms never contain white space or a double
quote, so a lexical index may store them space-joined and quote them in a query.

:attr:`Tokenizer.version` names the rules and the options. An index that stores terms records it
and rebuilds itself when it changes; bump :data:`TOKENIZER_VERSION` whenever the output of the rules
above changes for some text.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_TOKENIZER",
    "ENGLISH_STOPWORDS",
    "TOKENIZER_VERSION",
    "Tokenizer",
    "stemmer_languages",
    "tokenize",
]

TOKENIZER_VERSION = "am-tok-3"
"""Version of the splitting rules (steps 1 to 5 of the module docstring). Part of
:attr:`Tokenizer.version`, which a lexical index records to know when to rebuild itself.
``am-tok-3``: combining marks stay inside their word (``हिन्दी`` is one term, not three);
``am-tok-2``: the default tokenizer stems (English Snowball); ``am-tok-1`` did not."""

ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them their
    theirs themselves what which who whom this that that'll these those am is are was were be been
    being have has had having do does did doing a an the and but if or because as until while of
    at by for with about against between into through during before after above below to from up
    down in out on off over under again further then once here there when where why how all any
    both each few more most other some such no nor not only own same so than too very s t can will
    just don don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn
    didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn
    mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn
    wouldn't
    """.split()  # noqa: SIM905 (a list literal of 179 words would read worse)
)
"""The 179 English stopwords of NLTK's ``stopwords.words("english")`` (BSD licence): pronouns,
articles, auxiliaries, prepositions and the pieces of contractions (``don``, ``t``), all case-folded.
"""

# CJK scripts that are written without spaces between words: Hiragana, Katakana (and its phonetic
# extensions), CJK Unified Ideographs (with extension A and the compatibility block), Hangul
# syllables and jamo. NFKC has already mapped half-width katakana to full width.
_CJK = (
    "\u1100-\u11ff\u3040-\u309f\u30a0-\u30ff\u3130-\u318f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
    "\U00020000-\U0002fa1f"
)
_CONNECTORS = "_\\-.'"
_SPLIT = re.compile(rf"[{_CONNECTORS}]+")


def _mark_class() -> str:
    """A regex class body of every combining mark (Unicode categories Mn, Mc, Me): the vowel
    signs and viramas of Indic scripts, Arabic harakat, accents NFKC cannot compose. Python's
    ``\\w`` leaves them out, so without them ``हिन्दी`` would split into its consonants."""
    ranges: list[tuple[int, int]] = []
    for cp in itertools.chain(range(0x20000), range(0xE0100, 0xE01F0)):
        if unicodedata.category(chr(cp))[0] == "M":
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


@functools.cache
def _scan() -> re.Pattern[str]:
    """The scanner: a CJK run, or a chunk: word characters other than ``_`` and CJK, each
    followed by any combining marks, joined by connectors. Built on first use (docs/recall.md#combining-marks)."""
    word = rf"[^\W_{_CJK}]+[{_mark_class()}]*"
    return re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<chunk>(?:{word})+(?:[{_CONNECTORS}]+(?:{word})+)*)")


def _camel_parts(part: str) -> list[str]:
    """Split ``part`` (no connectors) at case changes: lower or digit to upper (``parseHtml``,
    ``utf8Decode``) and before the last capital of a capital run followed by a lower-case letter
    (``HTMLResponse`` gives ``HTML``, ``Response``). Text that is all one case is one part."""
    if part.islower() or part.isupper() or not any(c.isupper() for c in part):
        return [part]
    out: list[str] = []
    start = 0
    n = len(part)
    for i in range(1, n):
        c = part[i]
        if not c.isupper():
            continue
        p = part[i - 1]
        if p.islower() or p.isdigit() or (p.isupper() and i + 1 < n and part[i + 1].islower()):
            out.append(part[start:i])
            start = i
    out.append(part[start:])
    return out


def _chunk_terms(chunk: str) -> tuple[list[str], str | None]:
    """The parts of ``chunk`` (case-folded) and its whole form when it has more than one part."""
    if chunk.isalnum() and (chunk.islower() or not any(c.isupper() for c in chunk)):
        return [chunk.casefold()], None
    parts: list[str] = []
    for piece in _SPLIT.split(chunk):
        if piece:
            parts.extend(_camel_parts(piece))
    folded = [p.casefold() for p in parts]
    if len(folded) > 1:
        return folded, chunk.casefold()
    return folded, None


def _cjk_terms(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


class _StemmerCache(threading.local):
    """One PyStemmer object per thread and language (PyStemmer's objects are not thread-safe)."""

    def __init__(self) -> None:
        self.by_language: dict[str, Any] = {}


_STEMMERS = _StemmerCache()


def _stemmer(language: str) -> Any:
    found = _STEMMERS.by_language.get(language)
    if found is None:
        import Stemmer  # PyStemmer; a small C extension, imported on first use

        found = Stemmer.Stemmer(language)
        _STEMMERS.by_language[language] = found
    return found


def stemmer_languages() -> list[str]:
    """The Snowball stemmer names :class:`Tokenizer` accepts (``"english"``, ``"french"``, ...),
    sorted, as PyStemmer lists them."""
    import Stemmer

    return sorted(str(a) for a in Stemmer.algorithms())


def _digest(words: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(sorted(words)).encode("utf-8")).hexdigest()[:12]


_DEFAULT_STEMMER = "english"
"""The default Snowball language. Every Snowball release has it, so it is not checked against
PyStemmer's list at construction: building :data:`DEFAULT_TOKENIZER` imports nothing, and PyStemmer
is loaded on the first text that has a word to stem."""


@dataclass(frozen=True, slots=True)
class Tokenizer:
    """The tokenizer, with its two options; call it on a text to get its terms.

    ``Tokenizer()`` is :data:`DEFAULT_TOKENIZER`: English stopwords and English stemming.
    ``Tokenizer(stemmer=None)`` keeps words as written; ``Tokenizer(stopwords=frozenset())`` keeps
    every word.

    ``Tokenizer()(text)`` returns a ``list[str]`` of terms in text order, repeats kept (a term
    that occurs twice counts twice in BM25). See the module docstring for the rules.

    Attributes:
        stopwords: case-folded words to drop (:data:`ENGLISH_STOPWORDS` by default; pass
            ``frozenset()`` to keep every word). Matched before stemming.
        stemmer: a Snowball language for PyStemmer (``"english"``, the default; see
            :func:`stemmer_languages`), or ``None`` for no stemming.

    PyStemmer is imported on first use: when a text first has a word to stem, or when a language
    other than ``"english"`` is checked at construction.

    Raises:
        ValueError: ``stemmer`` names no Snowball language (at construction, never on a text).
    """

    stopwords: frozenset[str] = field(default=ENGLISH_STOPWORDS)
    stemmer: str | None = _DEFAULT_STEMMER

    def __post_init__(self) -> None:
        words = frozenset(w.casefold() for w in self.stopwords)
        object.__setattr__(self, "stopwords", words)
        if self.stemmer is not None and self.stemmer != _DEFAULT_STEMMER:
            languages = stemmer_languages()
            if self.stemmer not in languages:
                raise ValueError(
                    f"stemmer {self.stemmer!r} is not a Snowball language; "
                    f"use one of {', '.join(languages)}, or None for no stemming"
                )

    @property
    def version(self) -> str:
        """``"<TOKENIZER_VERSION>;stem=<language or none>;stop=<12 hex of the stopword set>"``:
        equal for two tokenizers exactly when they give the same terms for every text."""
        stop = _digest(self.stopwords) if self.stopwords else "none"
        return f"{TOKENIZER_VERSION};stem={self.stemmer or 'none'};stop={stop}"

    def __call__(self, text: str) -> list[str]:
        """Return the terms of ``text`` (a list of non-empty ``str`` without white space or
        ``"``), in text order with repeats. Never raises on a ``str``; ``""`` gives ``[]``."""
        text = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
        stop = self.stopwords
        stem = self.stemmer is not None
        terms: list[str] = []
        stemmable: list[int] = []
        for m in _scan().finditer(text):
            run = m.group("cjk")
            if run is not None:
                terms.extend(_cjk_terms(run))
                continue
            parts, whole = _chunk_terms(m.group("chunk"))
            if whole is not None:
                parts.append(whole)
            for p in parts:
                if p not in stop:
                    if stem and p.isalpha():
                        stemmable.append(len(terms))
                    terms.append(p)
        if stemmable:
            stemmer = _stemmer(self.stemmer or _DEFAULT_STEMMER)
            stems = stemmer.stemWords([terms[i] for i in stemmable])
            for i, s in zip(stemmable, stems, strict=True):
                if s:
                    terms[i] = str(s)
        return terms


DEFAULT_TOKENIZER = Tokenizer()
"""The tokenizer stores use unless given another: English stopwords, English Snowball stemming."""


def tokenize(text: str) -> list[str]:
    """``DEFAULT_TOKENIZER(text)``: the terms of ``text`` with the default options."""
    return DEFAULT_TOKENIZER(text)
