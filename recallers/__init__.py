"""recallers: rank documents for a query by exact words (BM25), by meaning (vectors), or both.

* :class:`Tokenizer` / :data:`DEFAULT_TOKENIZER`: the one tokenizer for documents and queries.
* :class:`BM25Recaller` over any :class:`LexicalSource`: a :class:`BM25Index` (in memory,
  incremental) or a store's own lexical index (each store family owns its tables, e.g.
  ``agentmemory.stores.sqlite.lexicon``).
* :class:`VectorRecaller` over any :class:`VectorSource` (a ``ChromaStore``, an
  :class:`ExactVectorIndex`), with an optional ``min_score`` floor.
* :class:`HybridRecaller`: the fusion of legs, its parameters in :class:`Fusion`: reciprocal
  rank fusion or a convex combination of normalised scores; :data:`DEFAULT_FUSION` is a z-score
  combination, BM25 0.75 and vector 0.25, each leg read 20 deep (docs/recall.md#the-default-fusion).
* :class:`RerankedRecaller`: a :class:`Reranker` (a cross-encoder, reading the query and each
  document together) reorders another recaller's first candidates (docs/recall.md#reranking).
  :func:`get_reranker` builds one by name, as ``embedders.get`` builds an embedder:
  ``get_reranker("cross-encoder:/models/ms-marco-MiniLM-L-6-v2")`` gives a
  :class:`CrossEncoderReranker` over that local folder (nothing is downloaded: a hub name is
  refused with :class:`RerankerFolderError`); :func:`register_reranker` adds a family and
  :func:`reranker_names` lists them.

Every recaller returns :class:`Hit` objects: the document, the score the list is ordered by, and
each leg's rank and raw score. Documents are anything with ``scope``, ``name``, ``content`` and
``description`` (:class:`Document`); this package never imports agentmemory.

The hybrid of a store with vectors, in one line::

    HybridRecaller([BM25Recaller(lexical_index), VectorRecaller(store, store.embedder)])

Importing this package imports numpy only: PyStemmer is imported on the first text to stem, torch
and sentence-transformers on a cross-encoder's first ``rerank``.
"""

from __future__ import annotations

import typing

from .bm25 import DEFAULT_B, DEFAULT_K1, IDF_FLOOR, BM25Index, BM25Recaller, document_terms
from .cross_encoder import CrossEncoderReranker
from .errors import (
    EmptyQueryError,
    NoLegAnsweredError,
    Query,
    RecallerError,
    RerankerFolderError,
    UnknownChoiceError,
    UnknownFusionMethodError,
    UnknownRerankerError,
    check_query,
)
from .hits import LEG_BM25, LEG_VECTOR, NEGLIGIBLE_BM25, Hit, LegScore, ranked_hits, shown_score
from .hybrid import DEFAULT_DEPTH, DEFAULT_FUSION, FUSION_METHODS, Fusion, HybridRecaller, fuse
from .lexical_query import MAX_QUERY_BYTES, MAX_QUERY_TERMS, query_terms
from .protocol import Document, Keyed, LexicalSource, Recaller, Reranker, VectorSource
from .rerank import DEFAULT_RERANK_CANDIDATES, RerankedRecaller
from .reranker_registry import RerankerFactory, get_reranker, register_reranker, reranker_names
from .tokenizer import (
    DEFAULT_TOKENIZER,
    ENGLISH_STOPWORDS,
    TOKENIZER_VERSION,
    Tokenizer,
    stemmer_languages,
    tokenize,
)
from .vector import ExactVectorIndex, VectorRecaller
from .vector_query import vector_query

if typing.TYPE_CHECKING:  # annotations only: the package binds no name it does not export
    from pathlib import Path
    from typing import Any


def _cross_encoder(folder: str | Path, **kwargs: Any) -> Reranker:
    return CrossEncoderReranker(folder, **kwargs)


register_reranker("cross-encoder", _cross_encoder, argument="<folder>")

__all__ = [
    "DEFAULT_B",
    "DEFAULT_DEPTH",
    "DEFAULT_FUSION",
    "DEFAULT_K1",
    "DEFAULT_RERANK_CANDIDATES",
    "DEFAULT_TOKENIZER",
    "ENGLISH_STOPWORDS",
    "FUSION_METHODS",
    "IDF_FLOOR",
    "LEG_BM25",
    "LEG_VECTOR",
    "MAX_QUERY_BYTES",
    "MAX_QUERY_TERMS",
    "NEGLIGIBLE_BM25",
    "TOKENIZER_VERSION",
    "BM25Index",
    "BM25Recaller",
    "CrossEncoderReranker",
    "Document",
    "EmptyQueryError",
    "ExactVectorIndex",
    "Fusion",
    "Hit",
    "HybridRecaller",
    "Keyed",
    "LegScore",
    "LexicalSource",
    "NoLegAnsweredError",
    "Query",
    "Recaller",
    "RecallerError",
    "RerankedRecaller",
    "Reranker",
    "RerankerFactory",
    "RerankerFolderError",
    "Tokenizer",
    "UnknownChoiceError",
    "UnknownFusionMethodError",
    "UnknownRerankerError",
    "VectorRecaller",
    "VectorSource",
    "check_query",
    "document_terms",
    "fuse",
    "get_reranker",
    "query_terms",
    "ranked_hits",
    "register_reranker",
    "reranker_names",
    "shown_score",
    "stemmer_languages",
    "tokenize",
    "vector_query",
]
