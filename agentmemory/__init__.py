"""agentmemory: memory for LLM agents that they can trust.

A scoped, journaled store of entries; a bounded render of them into the prompt; four tools the model
uses to change and search them; and hybrid recall (BM25 and embeddings fused by a convex combination
of their normalised scores, optionally reranked) behind ``memory_search``. See the README for a
tour.

Heavy dependencies (torch, sentence-transformers, chromadb) are imported only when first used, so
``import agentmemory`` stays fast.
"""

from __future__ import annotations

from recallers import Hit

from .chroma_store import ChromaStore, IndexReport
from .entries import META_DESCRIPTION, SOURCE_RECONCILED, Change, Entry, content_hash
from .erasure import ErasureCheck, PurgeReceipt, purge_session
from .errors import (
    AgentMemoryError,
    BudgetError,
    ConflictError,
    DataFormatError,
    DataNotFoundError,
    DownloadError,
    EmbedderMismatchError,
    EmbedderNameError,
    EntryTooLargeError,
    ImportIncompleteError,
    ImportLineError,
    IndexOutOfStepError,
    IndexOutOfStepWarning,
    IndexWriteError,
    InvalidEntryError,
    KindPolicyError,
    ManifestBaseError,
    ManifestRecordError,
    NoStoreError,
    NotFoundError,
    RecallModeError,
    RerankError,
    StoreFormatError,
    StoreLockedError,
    StoreUnavailableError,
    ToolConfigError,
)
from .file_store import FileStore, Reconciliation, UnjournaledFile
from .forget_session import forget_session
from .journal import LostUpdate, lost_updates
from .kinds import (
    DEFAULT_KIND_POLICIES,
    FALLBACK_KIND_POLICY,
    KIND_META,
    KNOWN_KINDS,
    KindPolicy,
    KindRegistry,
    kind_of,
)
from .manifest import (
    MANIFEST_FOLD_DEPTH,
    MANIFEST_NS,
    OMIT_BLOCK,
    OMIT_BUDGET,
    OMIT_KIND_LIMIT,
    OMIT_RECALL_ONLY,
    Manifest,
    ManifestEntry,
    ManifestFold,
    apply_manifest_record,
)
from .mem_store import MemStore
from .recalled import (
    DEFAULT_MIN_COSINE,
    DEFAULT_RECALL_BYTES,
    DEFAULT_RECALL_LIMIT,
    RECALLED_PART_ID,
    RecalledEntry,
    RecalledManifest,
    recall_part,
)
from .render import (
    DEFAULT_MAX_TOTAL_BYTES,
    PART_SEPARATOR,
    SUMMARY_PART_ID,
    TITLE_PART_ID,
    Part,
    join_parts,
    neutralise_headings,
    part_id,
    render,
    render_parts,
)
from .rules import (
    DEFAULT_MAX_ENTRY_BYTES,
    MAX_META_BYTES,
    MAX_NAME_BYTES,
    check_entry,
    matches,
    valid_name,
)
from .session import Provenance, current_provenance, current_session, provenance, session
from .sqlite_store import SqliteStore
from .store import EmptyQueryError, Store
from .store_folder import default_store_path, open_journal, open_store
from .tool_adapters import dispatch_anthropic, dispatch_openai, to_anthropic, to_openai
from .tools import (
    DEFAULT_SEARCH_BYTES,
    DEFAULT_SEARCH_LIMIT,
    Tool,
    ToolResult,
    tools,
)
from .usage import usage

__all__ = [
    "DEFAULT_KIND_POLICIES",
    "DEFAULT_MAX_ENTRY_BYTES",
    "DEFAULT_MAX_TOTAL_BYTES",
    "DEFAULT_MIN_COSINE",
    "DEFAULT_RECALL_BYTES",
    "DEFAULT_RECALL_LIMIT",
    "DEFAULT_SEARCH_BYTES",
    "DEFAULT_SEARCH_LIMIT",
    "FALLBACK_KIND_POLICY",
    "KIND_META",
    "KNOWN_KINDS",
    "MANIFEST_FOLD_DEPTH",
    "MANIFEST_NS",
    "MAX_META_BYTES",
    "MAX_NAME_BYTES",
    "META_DESCRIPTION",
    "OMIT_BLOCK",
    "OMIT_BUDGET",
    "OMIT_KIND_LIMIT",
    "OMIT_RECALL_ONLY",
    "PART_SEPARATOR",
    "RECALLED_PART_ID",
    "SOURCE_RECONCILED",
    "SUMMARY_PART_ID",
    "TITLE_PART_ID",
    "AgentMemoryError",
    "BudgetError",
    "Change",
    "ChromaStore",
    "ConflictError",
    "DataFormatError",
    "DataNotFoundError",
    "DownloadError",
    "EmbedderMismatchError",
    "EmbedderNameError",
    "EmptyQueryError",
    "Entry",
    "EntryTooLargeError",
    "ErasureCheck",
    "FileStore",
    "Hit",
    "ImportIncompleteError",
    "ImportLineError",
    "IndexOutOfStepError",
    "IndexOutOfStepWarning",
    "IndexReport",
    "IndexWriteError",
    "InvalidEntryError",
    "KindPolicy",
    "KindPolicyError",
    "KindRegistry",
    "LostUpdate",
    "Manifest",
    "ManifestBaseError",
    "ManifestEntry",
    "ManifestFold",
    "ManifestRecordError",
    "MemStore",
    "NoStoreError",
    "NotFoundError",
    "Part",
    "Provenance",
    "PurgeReceipt",
    "RecallModeError",
    "RecalledEntry",
    "RecalledManifest",
    "Reconciliation",
    "RerankError",
    "SqliteStore",
    "Store",
    "StoreFormatError",
    "StoreLockedError",
    "StoreUnavailableError",
    "Tool",
    "ToolConfigError",
    "ToolResult",
    "UnjournaledFile",
    "apply_manifest_record",
    "check_entry",
    "content_hash",
    "current_provenance",
    "current_session",
    "default_store_path",
    "dispatch_anthropic",
    "dispatch_openai",
    "forget_session",
    "join_parts",
    "kind_of",
    "lost_updates",
    "matches",
    "neutralise_headings",
    "open_journal",
    "open_store",
    "part_id",
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
