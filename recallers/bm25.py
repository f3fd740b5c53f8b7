"""Okapi BM25: the scoring rule, an incremental in-memory index and the lexical leg.

The score of a document ``d`` for the query terms ``q1 .. qn`` (repeats counted) is

    sum_i idf(qi) * tf(qi, d) * (k1 + 1) / (tf(qi, d) + k1 * (1 - b + b * |d| / avgdl))

with ``idf(t) = ln((N - n(t) + 0.5) / (n(t) + 0.5))`` over the ``N`` documents of the corpus, ``n(t)``
of them holding ``t`` (Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25 and
Beyond", 2009; rank-bm25's ``BM25Okapi``). An ``idf`` at or below 0 (a term in half the documents or
more) becomes :data:`IDF_FLOOR`, as SQLite FTS5's ``bm25()`` does, so such a term still makes a
document a candidate but weighs less than any rarer term. rank-bm25 with ``epsilon=0`` gives those
terms 0 instead; apart from that, and from rounding, the scores are equal (a test checks it).

A document is the terms of its ``name``, then its ``description``, then its ``content``
(:func:`document_terms`). Documents scoring 0 (no query term) are not candidates.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from .errors import check_query
from .hits import LEG_BM25, Hit, ranked_hits
from .lexical_query import query_terms
from .protocol import Document, LexicalSource
from .tokenizer import DEFAULT_TOKENIZER, Tokenizer

__all__ = [
    "DEFAULT_B",
    "DEFAULT_K1",
    "IDF_FLOOR",
    "BM25Index",
    "BM25Recaller",
    "bm25_idf",
    "document_terms",
]

DEFAULT_K1 = 1.2
"""BM25 term-frequency saturation ``k1`` (rank-bm25's and SQLite FTS5's default)."""

DEFAULT_B = 0.75
"""BM25 length normalisation ``b`` (rank-bm25's and SQLite FTS5's default)."""

IDF_FLOOR = 1e-6
"""The ``idf`` of a term found in half the documents or more (SQLite FTS5's ``bm25()`` value)."""

DocT = TypeVar("DocT", bound=Document)
D = TypeVar("D")


def document_terms(doc: Document, tokenizer: Tokenizer = DEFAULT_TOKENIZER) -> list[str]:
    """The BM25 terms of ``doc``: ``tokenizer(name) + tokenizer(description) +
    tokenizer(content)``. Every lexical index of this package indexes exactly these."""
    return tokenizer(doc.name) + tokenizer(doc.description) + tokenizer(doc.content)


def bm25_idf(n_docs: int, doc_freq: int) -> float:
    """``ln((N - n + 0.5) / (n + 0.5))`` for ``N = n_docs`` documents, ``n = doc_freq`` of them
    holding the term; :data:`IDF_FLOOR` when that is 0 or less. Unitless."""
    idf = math.log((n_docs - doc_freq + 0.5) / (doc_freq + 0.5))
    return idf if idf > 0 else IDF_FLOOR


@dataclass(slots=True)
class _ScopeIndex:
    """The postings and document lengths of one scope."""

    lengths: dict[str, int] = field(default_factory=dict)
    total: int = 0
    postings: dict[str, dict[str, int]] = field(default_factory=dict)


class BM25Index(Generic[DocT]):
    """An in-memory inverted index scored by Okapi BM25, kept current one document at a time.

    How it stays current: :meth:`put` and :meth:`remove` change only the postings of the
    document's own terms; nothing is ever rebuilt. A write costs one tokenization of the document
    (linear in its length) plus one dictionary update per distinct term. A search reads the
    postings of the query's terms only, in the requested scopes, so its cost grows with how
    many documents hold those terms, not with the size of the store.

    Corpus statistics (``N``, ``avgdl``, document frequencies) are those of the requested
    scopes together, exactly as if rank-bm25 were built over their documents.

    Not safe for concurrent use: callers serialise writes and searches (``MemStore`` holds its
    lock).

    Args:
        tokenizer: turns text into terms, for documents and queries alike.
        k1: term-frequency saturation, >= 0 (default :data:`DEFAULT_K1`).
        b: length normalisation, 0 to 1 (default :data:`DEFAULT_B`).

    Raises:
        ValueError: ``k1`` negative or ``b`` outside 0 to 1.
    """

    def __init__(
        self,
        *,
        tokenizer: Tokenizer = DEFAULT_TOKENIZER,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
    ) -> None:
        if k1 < 0:
            raise ValueError(f"BM25 k1 is {k1}; it must be 0 or more (1.2 is usual)")
        if not 0 <= b <= 1:
            raise ValueError(f"BM25 b is {b}; it must be between 0 and 1 (0.75 is usual)")
        self._tokenizer = tokenizer
        self._k1 = float(k1)
        self._b = float(b)
        self._docs: dict[tuple[str, str], tuple[DocT, Counter[str]]] = {}
        self._scopes: dict[str, _ScopeIndex] = {}

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer documents and queries go through."""
        return self._tokenizer

    def documents(self, scopes: Sequence[str]) -> list[DocT]:
        """The indexed documents of ``scopes``, in the order they were first put (no copies)."""
        wanted = set(scopes)
        return [doc for (scope, _), (doc, _) in self._docs.items() if scope in wanted]

    def __len__(self) -> int:
        """The number of documents indexed."""
        return len(self._docs)

    def put(self, doc: DocT) -> None:
        """Index ``doc``, replacing the document of the same ``(scope, name)`` if there is one."""
        self.remove(doc.scope, doc.name)
        terms = document_terms(doc, self._tokenizer)
        counts = Counter(terms)
        sc = self._scopes.get(doc.scope)
        if sc is None:
            sc = self._scopes[doc.scope] = _ScopeIndex()
        sc.lengths[doc.name] = len(terms)
        sc.total += len(terms)
        for term, tf in counts.items():
            posting = sc.postings.get(term)
            if posting is None:
                sc.postings[term] = {doc.name: tf}
            else:
                posting[doc.name] = tf
        self._docs[(doc.scope, doc.name)] = (doc, counts)

    def remove(self, scope: str, name: str) -> None:
        """Drop the document ``(scope, name)``; nothing happens when it is not indexed."""
        found = self._docs.pop((scope, name), None)
        if found is None:
            return
        _, counts = found
        sc = self._scopes[scope]
        sc.total -= sc.lengths.pop(name)
        for term in counts:
            posting = sc.postings[term]
            del posting[name]
            if not posting:
                del sc.postings[term]
        if not sc.lengths:
            del self._scopes[scope]

    def clear(self) -> None:
        """Drop every document."""
        self._docs.clear()
        self._scopes.clear()

    def scores(
        self, terms: Sequence[str] | Mapping[str, int], *, scopes: Sequence[str]
    ) -> dict[tuple[str, str], float]:
        """The BM25 score of every document of ``scopes`` holding at least one of ``terms``
        (a list: repeats counted; or a mapping of each distinct term to its weight, as
        :func:`recallers.query_terms` gives), keyed ``(scope, name)``. Documents without a query
        term are absent. Each distinct term's postings are read once."""
        named = [s for s in dict.fromkeys(scopes) if s in self._scopes]
        present = [self._scopes[s] for s in named]
        n_docs = sum(len(sc.lengths) for sc in present)
        if n_docs == 0 or not terms:
            return {}
        avgdl = sum(sc.total for sc in present) / n_docs
        k1, b = self._k1, self._b
        out: dict[tuple[str, str], float] = {}
        for term, repeat in Counter(terms).items():
            postings = [sc.postings.get(term) for sc in present]
            doc_freq = sum(len(p) for p in postings if p)
            if doc_freq == 0:
                continue
            idf = bm25_idf(n_docs, doc_freq)
            for scope, sc, posting in zip(named, present, postings, strict=True):
                if not posting:
                    continue
                lengths = sc.lengths
                for name, tf in posting.items():
                    num = tf * (k1 + 1.0)
                    denom = tf + k1 * (1.0 - b + b * lengths[name] / avgdl)
                    key = (scope, name)
                    out[key] = out.get(key, 0.0) + repeat * (idf * (num / denom))
        return out

    def search_text(
        self, query: str, *, scopes: Sequence[str], limit: int
    ) -> list[tuple[DocT, float]]:
        """At most ``limit`` ``(document, BM25 score)`` pairs of ``scopes``, best first; ties
        by the order of ``scopes``, then by name (UTF-8 byte order). ``[]`` when ``limit < 1``
        or no document holds a query term (a query of stopwords only has none)."""
        if limit < 1:
            return []
        scored = self.scores(query_terms(query, self._tokenizer), scopes=scopes)
        order = {s: i for i, s in enumerate(dict.fromkeys(scopes))}
        best = heapq.nsmallest(
            limit,
            scored.items(),
            key=lambda kv: (-kv[1], order[kv[0][0]], kv[0][1].encode()),
        )
        return [(self._docs[key][0], score) for key, score in best if score > 0]


class BM25Recaller(Generic[D]):
    """The lexical leg (``"bm25"``): ranks by the BM25 score a :class:`LexicalSource` gives.

    ``source`` is a :class:`BM25Index` for an in-memory store, or a store's own lexical index
    (e.g. the sqlite store's ``Fts5Index``). Each :class:`Hit` has ``score`` = the BM25 score and ``legs = {"bm25": ...}``.
    """

    def __init__(self, source: LexicalSource[D]) -> None:
        self._source = source

    @property
    def name(self) -> str:
        """``"bm25"``."""
        return LEG_BM25

    def recall(self, query: str, *, scopes: Sequence[str], limit: int) -> list[Hit[D]]:
        """At most ``limit`` hits of ``scopes``, best BM25 score first; ``[]`` when no document
        shares a term with the query (or every query word is a stopword).

        Raises ``recallers.EmptyQueryError`` for an empty or white-space query."""
        check_query(query)
        return ranked_hits(LEG_BM25, self._source.search_text(query, scopes=scopes, limit=limit))
