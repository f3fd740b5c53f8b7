"""The public face: what ``import agentmemory`` (and ``recallers``, ``embedders``) offers by name.

``__all__`` of each package is written out here, so a change to the face is deliberate: add or
remove a name in the package and in the list below together
(docs/README.md#public-face-and-internal-modules). Every error class of each package's ``errors``
module derives from that wing's root (``AgentMemoryError``, ``RecallerError``,
``EmbedderError``), or is a warning.
"""

from __future__ import annotations
import __future__

import importlib
import inspect
import types

import pytest

AGENTMEMORY_FACE = [
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

RECALLERS_FACE = [
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

EMBEDDERS_FACE = [
    "CACHE_DIR_ENV",
    "DEFAULT_EMBEDDER",
    "DEFAULT_HASHING_DIM",
    "INTERCHANGEABLE_RUNTIMES",
    "ONNX_EMBEDDER",
    "PACKAGED_MODEL_NAME",
    "WHOLE_TEXT",
    "ChromaEmbedder",
    "Embedder",
    "EmbedderError",
    "EmbedderFactory",
    "HashingEmbedder",
    "OnnxEmbedder",
    "SentenceTransformerEmbedder",
    "TokenWindows",
    "UnknownEmbedderError",
    "Windowed",
    "as_chroma_embedding_function",
    "default_cache_dir",
    "export_onnx",
    "fingerprint_fields",
    "get",
    "l2_normalize",
    "names",
    "packaged_model_path",
    "register",
    "same_vectors",
    "text_windows",
    "token_windows",
    "weights_digest",
    "window_layout",
]

FACES = {
    "agentmemory": AGENTMEMORY_FACE,
    "recallers": RECALLERS_FACE,
    "embedders": EMBEDDERS_FACE,
}
ROOTS = {
    "agentmemory.errors": "AgentMemoryError",
    "recallers.errors": "RecallerError",
    "embedders.errors": "EmbedderError",
}
ROOT_FACE_MAX = 62


def _public_attributes(mod: types.ModuleType) -> set[str]:
    """Names bound in ``mod`` that are neither private, a module nor a ``__future__`` feature."""
    return {
        name
        for name, value in vars(mod).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType | __future__._Feature)
    }


@pytest.mark.parametrize("package", FACES)
def test_all_has_no_duplicates_and_every_name_resolves(package: str) -> None:
    mod = importlib.import_module(package)
    assert len(mod.__all__) == len(set(mod.__all__))
    missing = [name for name in mod.__all__ if not hasattr(mod, name)]
    assert missing == []


@pytest.mark.parametrize("package", FACES)
def test_every_public_attribute_is_in_all(package: str) -> None:
    mod = importlib.import_module(package)
    assert sorted(_public_attributes(mod) - set(mod.__all__)) == []


@pytest.mark.parametrize("package", FACES)
def test_all_is_the_face_written_here(package: str) -> None:
    assert importlib.import_module(package).__all__ == FACES[package]


def test_the_root_face_is_small() -> None:
    assert len(AGENTMEMORY_FACE) <= ROOT_FACE_MAX


@pytest.mark.parametrize("module", ROOTS)
def test_every_error_of_a_wing_derives_from_its_root(module: str) -> None:
    mod = importlib.import_module(module)
    root = getattr(mod, ROOTS[module])
    exceptions = [
        value
        for value in vars(mod).values()
        if inspect.isclass(value) and issubclass(value, BaseException)
    ]
    assert root in exceptions
    strays = [
        cls.__name__
        for cls in exceptions
        if cls.__module__ == module and not issubclass(cls, root | Warning)
    ]
    assert strays == []
    assert all(
        name in mod.__all__ for name in (c.__name__ for c in exceptions if c.__module__ == module)
    )


@pytest.mark.parametrize("module", ROOTS)
def test_the_tree_in_the_docstring_names_every_error(module: str) -> None:
    mod = importlib.import_module(module)
    defined = [
        name
        for name, value in vars(mod).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == module
    ]
    doc = mod.__doc__ or ""
    assert [
        name for name in defined if f" {name} " not in doc and not doc.count(f" {name}\n")
    ] == []


def test_every_error_the_root_exports_derives_from_agentmemory_error() -> None:
    import agentmemory

    errors = [
        getattr(agentmemory, name)
        for name in AGENTMEMORY_FACE
        if inspect.isclass(getattr(agentmemory, name))
        and issubclass(getattr(agentmemory, name), BaseException)
    ]
    assert errors and all(issubclass(e, agentmemory.AgentMemoryError) for e in errors)
