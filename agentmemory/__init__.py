"""agentmemory: memory for LLM agents that they can trust.

A scoped, journaled store of entries; a bounded render of them into the prompt; four tools the model
uses to change and search them; and hybrid recall (BM25 and embeddings fused by a convex combination
of their normalised scores, optionally reranked) behind ``memory_search``. See the README for a
tour.

``__all__`` is the public face: what a user of the contract needs. Subsystem names (the other
errors, index reports, purge receipts, kinds' and the manifest's constants, eval) are imported
from their module (docs/README.md#public-face-and-internal-modules).

Heavy dependencies (torch, sentence-transformers, chromadb) are imported only when first used, so
``import agentmemory`` stays fast.
"""

from __future__ import annotations

from recallers import Hit

from .entries import Change, Entry, content_hash
from .errors import (
    AgentMemoryError,
    BudgetError,
    ConflictError,
    EmbedderMismatchError,
    EmptyQueryError,
    EntryTooLargeError,
    IndexWriteError,
    InvalidEntryError,
    NoStoreError,
    NotFoundError,
    StoreFormatError,
    StoreFullError,
    StoreIOError,
    StoreLockedError,
    StoreUnavailableError,
)
from .forget_session import forget_session
from .kinds import KindPolicy, KindRegistry
from .lost_updates import LostUpdate, lost_updates
from .manifest import Manifest, ManifestEntry, ManifestFold, apply_manifest_record
from .opening import default_store_path, open_journal, open_store
from .purge import purge_session
from .recalled import RecalledEntry, RecalledManifest, recall_part
from .render import DEFAULT_MAX_TOTAL_BYTES, Part, render, render_parts
from .rules import check_entry, valid_name
from .session import Provenance, current_provenance, current_session, provenance, session
from .store import Store
from .stores.chroma.store import ChromaStore
from .stores.markdown.store import FileStore
from .stores.mem import MemStore
from .stores.sqlite.store import SqliteStore
from .tools import (
    DEFAULT_SEARCH_BYTES,
    DEFAULT_SEARCH_LIMIT,
    Tool,
    ToolResult,
    dispatch_anthropic,
    dispatch_openai,
    to_anthropic,
    to_openai,
    tools,
    usage,
)

__all__ = [
    "DEFAULT_MAX_TOTAL_BYTES",
    "DEFAULT_SEARCH_BYTES",
    "DEFAULT_SEARCH_LIMIT",
    "AgentMemoryError",
    "BudgetError",
    "Change",
    "ChromaStore",
    "ConflictError",
    "EmbedderMismatchError",
    "EmptyQueryError",
    "Entry",
    "EntryTooLargeError",
    "FileStore",
    "Hit",
    "IndexWriteError",
    "InvalidEntryError",
    "KindPolicy",
    "KindRegistry",
    "LostUpdate",
    "Manifest",
    "ManifestEntry",
    "ManifestFold",
    "MemStore",
    "NoStoreError",
    "NotFoundError",
    "Part",
    "Provenance",
    "RecalledEntry",
    "RecalledManifest",
    "SqliteStore",
    "Store",
    "StoreFormatError",
    "StoreFullError",
    "StoreIOError",
    "StoreLockedError",
    "StoreUnavailableError",
    "Tool",
    "ToolResult",
    "apply_manifest_record",
    "check_entry",
    "content_hash",
    "current_provenance",
    "current_session",
    "default_store_path",
    "dispatch_anthropic",
    "dispatch_openai",
    "forget_session",
    "lost_updates",
    "open_journal",
    "open_store",
    "provenance",
    "purge_session",
    "recall_part",
    "render",
    "render_parts",
    "session",
    "to_anthropic",
    "to_openai",
    "tools",
    "usage",
    "valid_name",
]
