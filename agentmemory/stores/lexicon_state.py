"""What the lexical indexes of the stores (``agentmemory.stores.sqlite.lexicon``,
``agentmemory.stores.postgres.lexicon``) record alike in their store's ``store_state``."""

from __future__ import annotations

__all__ = ["TOKENIZER_STATE_KEY"]

TOKENIZER_STATE_KEY = "lexical.tokenizer"
"""The ``store_state`` key holding the :attr:`Tokenizer.version` the index was built with."""
