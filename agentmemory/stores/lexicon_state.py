"""What the lexical indexes of the stores (``agentmemory.stores.sqlite.lexicon``,
``agentmemory.stores.postgres.lexicon``) record alike in their store's ``store_state``."""

from __future__ import annotations

from recallers import Tokenizer

__all__ = ["TOKENIZER_STATE_KEY", "TokenizedIndex"]

TOKENIZER_STATE_KEY = "lexical.tokenizer"
"""The ``store_state`` key holding the :attr:`Tokenizer.version` the index was built with."""


class TokenizedIndex:
    """A lexical index's tokenizer, and whether an index built with another must be rebuilt
    (docs/recall.md#tokenizer-version)."""

    _tokenizer: Tokenizer

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer documents and queries go through."""
        return self._tokenizer

    def needs_rebuild(self, recorded: str | None) -> bool:
        """Whether an index recorded as built with tokenizer version ``recorded`` (``None``:
        never built) must be rebuilt for this index's tokenizer."""
        return recorded != self._tokenizer.version
