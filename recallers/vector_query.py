"""The vector query: the part of a query text the vector leg embeds, capped before tokenizing.

An embedding model reads a text's first ``max_seq_length`` word pieces (256 for all-MiniLM-L6-v2),
but its tokenizer splits the whole text into word pieces before it truncates them, so the cost of
a query grows with its length. :func:`vector_query` cuts the
text first, to :func:`vector_query_bytes` bytes (UTF-8; a character cut in two at the end is
dropped): :data:`BYTES_PER_WORD_PIECE` bytes for each word piece of the embedder's window, or the
default model's window for an embedder without one (the hashing embedder). The bound and its
derivation are written in ``docs/recall.md#the-vector-query``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from embedders import Embedder

__all__ = ["BYTES_PER_WORD_PIECE", "WINDOWLESS_PIECES", "vector_query", "vector_query_bytes"]

BYTES_PER_WORD_PIECE = 403
"""The most bytes (UTF-8) of text one word piece of a BERT WordPiece tokenizer covers, for text
whose words are at most 100 characters (the tokenizer's ``max_input_chars_per_word``) with no
character its normaliser drops (control characters, combining marks): a word the vocabulary cannot
spell is one ``[UNK]`` piece, so 100 characters of 4 bytes each give one piece of 400 bytes, plus
the one white-space character before it, at most 3 bytes (U+3000). Every other piece covers less
(the longest entry of all-MiniLM-L6-v2's vocabulary is 18 bytes). docs/recall.md#the-vector-query."""

WINDOWLESS_PIECES = 256
"""The window, in word pieces, assumed for an embedder that has none (the hashing embedder reads
the whole text): the default model's (all-MiniLM-L6-v2's ``max_seq_length``), so a query is read to
the same length whichever embedder a store has."""


def vector_query_bytes(embedder: Embedder) -> int:
    """The bytes (UTF-8) of a query the vector leg embeds with ``embedder``:
    ``max_seq_length * BYTES_PER_WORD_PIECE`` when the embedder has a ``max_seq_length`` (a
    positive ``int``, word pieces with the special tokens), else
    ``WINDOWLESS_PIECES * BYTES_PER_WORD_PIECE`` (103,168 bytes). For all-MiniLM-L6-v2 (256
    pieces) that is 103,168 bytes."""
    window = getattr(embedder, "max_seq_length", None)
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        window = WINDOWLESS_PIECES
    return window * BYTES_PER_WORD_PIECE


def vector_query(query: str, embedder: Embedder) -> str:
    """``query`` cut to its first :func:`vector_query_bytes` bytes (UTF-8; a character cut in two
    at the end is dropped), or ``query`` itself when it is no longer. For text within the
    assumptions of :data:`BYTES_PER_WORD_PIECE` the cut text fills the embedder's window as the
    whole text does, so its vector is the same. Never raises on a ``str``."""
    limit = vector_query_bytes(embedder)
    if len(query) * 4 <= limit:  # 4 bytes per character at most: no need to encode
        return query
    raw = query.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return query
    return raw[:limit].decode("utf-8", "ignore")
