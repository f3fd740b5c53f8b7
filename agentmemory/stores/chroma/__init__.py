"""The Chroma vector index over a journal: :class:`ChromaStore`, a journal (sqlite, or any
journal store) with an embedding index beside it, embedded or on a Chroma server
(docs/storage.md#the-chroma-index).

The face is this package's ``__all__``; its modules are internal
(docs/storage.md#the-modules-of-the-chroma-store, docs/README.md#public-face-and-internal-modules).
"""

from __future__ import annotations

from .store import (
    CHROMA_FOLDER,
    DEFAULT_COLLECTION_PREFIX,
    JOURNAL_FILE,
    ChromaStore,
    ChromaStoreOptions,
    IndexReport,
)

__all__ = [
    "CHROMA_FOLDER",
    "DEFAULT_COLLECTION_PREFIX",
    "JOURNAL_FILE",
    "ChromaStore",
    "ChromaStoreOptions",
    "IndexReport",
]
