"""The lexical query: the terms a query text gives the BM25 leg, capped and counted once each.

A query's cost must not grow with its length without bound (the vector leg is bounded by the
embedding model's window). :func:`query_terms` therefore

1. reads at most :data:`MAX_QUERY_BYTES` of the query (UTF-8; a character cut in two at the end is
   dropped), then
2. tokenizes that text with the index's tokenizer and keeps its first :data:`MAX_QUERY_TERMS` terms
   (repeats included, in text order), and
3. counts each distinct term once, with its *weight*: how many times it occurs among those terms.

A term's BM25 contribution is multiplied by its weight, which is what scoring every occurrence
separately gives (rank-bm25's ``get_scores`` and FTS5's ``bm25()`` both sum over the query's terms,
repeats included), at the cost of one term instead of ``weight`` terms. The rules are written in
``docs/recall.md#the-lexical-query``.
"""

from __future__ import annotations

from collections import Counter

from .tokenizer import DEFAULT_TOKENIZER, Tokenizer

__all__ = ["MAX_QUERY_BYTES", "MAX_QUERY_TERMS", "query_terms"]

MAX_QUERY_BYTES = 4096
"""The bytes (UTF-8) of a query the lexical leg reads; the rest is ignored. 4,096 is the default
``max_entry_bytes`` of an entry: a query as long as the longest entry is still read whole."""

MAX_QUERY_TERMS = 64
"""The terms (after tokenizing, repeats included) of a query the lexical leg scores by; the rest
are ignored. A question usually has under 20 terms once stopwords are dropped."""


def query_terms(query: str, tokenizer: Tokenizer = DEFAULT_TOKENIZER) -> Counter[str]:
    """The distinct terms of ``query`` with their weights (a ``Counter``: term to occurrences), in
    the order of their first occurrence, after the caps of :data:`MAX_QUERY_BYTES` and
    :data:`MAX_QUERY_TERMS`. Empty when the query has no term (stopwords or punctuation only).
    Never raises on a ``str``."""
    raw = query.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_QUERY_BYTES:
        query = raw[:MAX_QUERY_BYTES].decode("utf-8", "ignore")
    return Counter(tokenizer(query)[:MAX_QUERY_TERMS])
