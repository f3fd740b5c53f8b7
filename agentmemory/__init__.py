"""agentmemory: memory for LLM agents that they can trust.

A scoped, journaled store of entries; a bounded render of them into the prompt; four tools the model
uses to change and search them; and hybrid recall (BM25 and embeddings fused by reciprocal rank
fusion) behind ``memory_search``. See the README for a tour.

Heavy dependencies (torch, sentence-transformers, chromadb) are imported only when first used, so
``import agentmemory`` stays fast.
"""

from __future__ import annotations

from .entries import (
    DEFAULT_MAX_ENTRY_BYTES,
    MAX_META_BYTES,
    MAX_NAME_BYTES,
    META_DESCRIPTION,
    SOURCE_RECONCILED,
    Change,
    Entry,
    check_entry,
    content_hash,
    matches,
    valid_name,
)
from .errors import (
    AgentMemoryError,
    BudgetError,
    ConflictError,
    EmbedderMismatchError,
    EmptyQueryError,
    EntryTooLargeError,
    IndexOutOfStepError,
    InvalidEntryError,
    ManifestBaseError,
    NotFoundError,
    StoreFormatError,
    StoreLockedError,
)
from .journal import LostUpdate, lost_updates
from .mem_store import MemStore
from .session import current_session, session
from .sqlite_store import SqliteStore
from .store import Store

__all__ = [
    "DEFAULT_MAX_ENTRY_BYTES",
    "MAX_META_BYTES",
    "MAX_NAME_BYTES",
    "META_DESCRIPTION",
    "SOURCE_RECONCILED",
    "AgentMemoryError",
    "BudgetError",
    "Change",
    "ConflictError",
    "EmbedderMismatchError",
    "EmptyQueryError",
    "Entry",
    "EntryTooLargeError",
    "IndexOutOfStepError",
    "InvalidEntryError",
    "LostUpdate",
    "ManifestBaseError",
    "MemStore",
    "NotFoundError",
    "SqliteStore",
    "Store",
    "StoreFormatError",
    "StoreLockedError",
    "check_entry",
    "content_hash",
    "current_session",
    "lost_updates",
    "matches",
    "session",
    "valid_name",
]
