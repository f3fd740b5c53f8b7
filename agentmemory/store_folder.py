"""The store folder: where it is by default, and the one rule for opening it and its embedder.

A store folder holds ``journal.sqlite3`` (the journal, the truth) and ``chroma/`` (the vector
index, derived from the journal), or is a Markdown folder (:class:`~agentmemory.FileStore`:
``journal.jsonl`` and one ``<scope>/<name>.md`` per entry, docs/filestore-format.md#layout),
chosen by ``format="markdown"`` or found by its ``journal.jsonl``. :func:`open_store` opens both (a :class:`~agentmemory.ChromaStore`)
and chooses the embedder; :func:`open_journal` opens the journal alone, for reads that need no
model. The command line, the MCP server, the demo and the evaluation open stores through them.

The embedder rule (:func:`open_store` with ``embedder=None``): the default model,
:data:`embedders.DEFAULT_EMBEDDER` (the packaged all-MiniLM-L6-v2), run through onnxruntime when
that gives the same vectors (``onnx:all-MiniLM-L6-v2``: a cold start of about 0.4 s instead of 5 to
13 s for sentence-transformers; ``embedders.same_vectors``), indexes a new store and opens one
indexed with that model by either runtime. A store indexed with another model is opened with that
model (through onnxruntime when that gives its vectors, else as its fingerprint names it). A named
embedder is taken when it gives the store's vectors and refused otherwise
(:class:`~agentmemory.EmbedderMismatchError`); ``reindex=True`` with a named embedder switches.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .chroma_store import JOURNAL_FILE, ChromaStore
from .errors import (
    EmbedderMismatchError,
    EmbedderNameError,
    IndexOutOfStepWarning,
    NoStoreError,
)
from .file_store import FileStore
from .lock_file import DEFAULT_LOCK_TIMEOUT_S
from .rules import DEFAULT_MAX_ENTRY_BYTES
from .sqlite_store import SqliteStore

if TYPE_CHECKING:
    from embedders import Embedder

__all__ = [
    "CHROMA_URL_ENV",
    "SHARED_ENV",
    "STORE_FORMATS",
    "choose_embedder",
    "default_store_path",
    "embedder_for",
    "get_embedder",
    "open_journal",
    "open_store",
    "store_folder",
    "store_format",
]

STORE_FORMATS = ("sqlite", "markdown")
"""The kinds of store folder: ``sqlite`` (``journal.sqlite3`` plus ``chroma/``) and ``markdown``
(a :class:`~agentmemory.FileStore` folder)."""


def store_format(path: str | os.PathLike[str] | None, format: str | None = None) -> str:
    """The kind of the store folder ``path``: ``format`` when given, else ``"markdown"`` when
    the folder holds ``journal.jsonl`` (a Markdown folder), else ``"sqlite"``.

    Raises ``ValueError`` for a ``format`` not in :data:`STORE_FORMATS`.
    """
    if format is not None:
        if format not in STORE_FORMATS:
            raise ValueError(f"store format {format!r} is not one of {', '.join(STORE_FORMATS)}")
        return format
    from .journal_file import JOURNAL_NAME

    return "markdown" if (store_folder(path) / JOURNAL_NAME).is_file() else "sqlite"


SHARED_ENV = "AGENTMEMORY_SHARED"
"""Environment variable: ``1`` makes :func:`open_store` (and the command line) start the
folder's Chroma server when none runs (docs/storage.md#several-processes)."""

CHROMA_URL_ENV = "AGENTMEMORY_CHROMA_URL"
"""Environment variable naming a Chroma server (``http://host:port``) for :func:`open_store`."""


def default_store_path() -> Path:
    """The store folder when none is given: ``platformdirs.user_data_dir("agentmemory")/store``
    (``~/.local/share/agentmemory/store`` on Linux). Not created here."""
    import platformdirs

    return Path(platformdirs.user_data_dir("agentmemory")) / "store"


def store_folder(path: str | os.PathLike[str] | None) -> Path:
    """``path`` with ``~`` expanded, or :func:`default_store_path` when ``path`` is ``None``.

    Raises :class:`~agentmemory.NoStoreError` when ``path`` is an existing file (a store is a
    folder). Touches nothing.
    """
    folder = (Path(path) if path is not None else default_store_path()).expanduser()
    if folder.exists() and not folder.is_dir():
        raise NoStoreError(str(folder), is_file=True)
    return folder


def _existing_markdown(path: str | os.PathLike[str] | None) -> Path:
    from .journal_file import JOURNAL_NAME

    folder = store_folder(path)
    if not (folder / JOURNAL_NAME).is_file():
        raise NoStoreError(str(folder))
    return folder


def _existing(path: str | os.PathLike[str] | None) -> Path:
    folder = store_folder(path)
    if not (folder / JOURNAL_FILE).is_file():
        raise NoStoreError(str(folder))
    return folder


def open_journal(
    path: str | os.PathLike[str] | None = None, *, format: str | None = None
) -> SqliteStore | FileStore:
    """Open the journal of the existing store in folder ``path`` alone: no vector index, no model,
    no folder lock, so it is fast and safe beside a process that holds the store (an ``agentmemory
    mcp``). Reads (``get``, ``list``, ``journal``, ``render``, BM25 ``recall``) need nothing more.

    ``path`` ``None`` is :func:`default_store_path`. A Markdown folder (``format="markdown"``,
    or found by its ``journal.jsonl``, :func:`store_format`) opens as a
    :class:`~agentmemory.FileStore` without vectors. The caller closes the store (it is a
    context manager). Raises :class:`~agentmemory.NoStoreError` when the folder holds no store
    (nothing is created), and what :class:`~agentmemory.SqliteStore` raises for a file it
    cannot read.
    """
    if store_format(path, format) == "markdown":
        return FileStore(_existing_markdown(path))
    return SqliteStore(_existing(path) / JOURNAL_FILE)


def get_embedder(name: str) -> Embedder:
    """The embedder the registry builds for ``name`` (``"onnx:all-MiniLM-L6-v2"``, ``"hashing"``).

    Raises :class:`~agentmemory.EmbedderNameError` for a name the registry does not know or an
    argument it refuses (``"hashing:abc"``), with the registry's message.
    """
    import embedders

    try:
        return embedders.get(name)
    except (embedders.UnknownEmbedderError, ValueError) as exc:
        raise EmbedderNameError(name, str(exc)) from None


def embedder_for(fingerprint: str) -> Embedder | None:
    """An embedder that gives the vectors of a stored ``fingerprint`` (``embedders.same_vectors``):
    the same model through onnxruntime when that works (a fast cold start), else the embedder the
    fingerprint names when the registry builds it with the same vectors; else ``None`` (an unknown
    family, a model folder that is gone, a fingerprint that does not parse)."""
    import embedders

    try:
        fields = embedders.fingerprint_fields(fingerprint)
    except ValueError:
        return None
    names = [fields["name"]]
    if fields["family"] in embedders.INTERCHANGEABLE_RUNTIMES:
        names.insert(0, f"onnx:{fields['model']}")
    for name in names:
        try:
            candidate = embedders.get(name)
            if embedders.same_vectors(fingerprint, candidate.fingerprint):
                return candidate
        except (embedders.UnknownEmbedderError, ValueError, OSError):
            continue
    return None


def choose_embedder(name: str | None = None) -> Embedder:
    """The embedder for ``name``, or for ``None`` the default: :data:`embedders.DEFAULT_EMBEDDER`
    (the packaged all-MiniLM-L6-v2) through onnxruntime (``embedders.ONNX_EMBEDDER``, the same
    vectors with a fast cold start), else through sentence-transformers when onnxruntime cannot
    run it here. Models load on first use, not here.

    Raises :class:`~agentmemory.EmbedderNameError` for a ``name`` the registry cannot build.
    """
    if name is not None:
        return get_embedder(name)
    import embedders

    try:
        return embedders.get(embedders.ONNX_EMBEDDER)
    except (embedders.UnknownEmbedderError, ValueError, OSError):
        return get_embedder(embedders.DEFAULT_EMBEDDER)


def open_store(
    path: str | os.PathLike[str] | None = None,
    *,
    embedder: Embedder | str | None = None,
    create: bool = True,
    reindex: bool = False,
    max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    format: str | None = None,
    shared: bool | None = None,
    chroma_url: str | None = None,
    read_only: bool = False,
    **store_options: Any,
) -> ChromaStore | FileStore:
    """Open the store in folder ``path`` (journal and vector index) with the embedder chosen by the
    rule in the module docstring. The caller closes it (it is a context manager).

    Args:
        path: the store folder; ``None`` is :func:`default_store_path`.
        embedder: ``None`` for the rule's choice, a registry name, or an :class:`embedders.Embedder`.
            A named or given embedder must give the store's vectors.
        create: ``True`` creates the folder and an empty store when there is none; ``False``
            refuses a folder without a store (:class:`~agentmemory.NoStoreError`, nothing created).
        reindex: rebuild the vector index from the journal before returning: with ``embedder``
            given, with that embedder (switching to it); else with the one the rule chose (so it
            never switches models unasked). The :class:`~agentmemory.IndexOutOfStepWarning` an
            index that is about to be rebuilt would give is not issued.
        max_entry_bytes: the content bound of writes, in UTF-8 bytes.
        format: ``"markdown"`` opens (or creates) a Markdown folder, a
            :class:`~agentmemory.FileStore` with its vector index beside the files (same
            embedder rule; ``reindex`` makes every vector again; ``lock_timeout_s`` of
            ``store_options`` is the folder's lock timeout, other options are ignored);
            ``"sqlite"`` the journal and Chroma folder; ``None`` finds a Markdown folder by its
            ``journal.jsonl`` (:func:`store_format`).
        shared: start the folder's own Chroma server when none runs and connect to it
            (docs/storage.md#several-processes); ``None`` takes ``$AGENTMEMORY_SHARED``
            (``1`` is on). A server the folder records as running is used either way.
        chroma_url: the Chroma server to use instead (``http://host:port``); ``None`` takes
            ``$AGENTMEMORY_CHROMA_URL``.
        read_only: open to read (search, get, list, render): never wait on another process's
            hold of the embedded folder, and replay nothing into the index.
        **store_options: passed to :meth:`ChromaStore.open` (``lock_timeout_s``,
            ``busy_timeout_s``, ``fusion``, ``client``, ...).

    Raises:
        NoStoreError: ``path`` is a file, or (``create=False``) holds no store.
        EmbedderNameError: ``embedder`` names nothing the registry builds.
        EmbedderMismatchError: the store was indexed with other vectors than the named or given
            embedder makes (without ``reindex``), or, with ``embedder=None``, than any embedder
            this machine can build for it.
        ChromaServerError: the folder's server (or ``chroma_url``) does not answer, is of
            another chromadb version, or could not be started.

    When another process holds the embedded folder (past ``lock_timeout_s``, 0 s for
    ``read_only``), the store opens journal-only (:attr:`ChromaStore.vector_unavailable` says
    why): writes land in the journal with a ``note``, and recall runs the BM25 leg alone.

    Also what :meth:`ChromaStore.open` raises. An :class:`~agentmemory.IndexOutOfStepWarning` is
    issued (``warnings.warn``) when the index misses what the journal holds.
    """
    markdown = store_format(path, format) == "markdown"
    folder = store_folder(path) if create else (_existing_markdown if markdown else _existing)(path)
    if shared is None:
        shared = os.environ.get(SHARED_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    if chroma_url is None:
        chroma_url = os.environ.get(CHROMA_URL_ENV) or None
    store_options.setdefault("journal_only_when_held", True)
    if read_only:
        store_options.setdefault("lock_timeout_s", 0.0)
        store_options["read_only"] = True
    if shared:
        store_options["shared"] = True
    if chroma_url:
        store_options["chroma_url"] = chroma_url
    chosen = (
        choose_embedder(embedder) if embedder is None or isinstance(embedder, str) else embedder
    )
    if markdown:
        timeout = float(store_options.get("lock_timeout_s", DEFAULT_LOCK_TIMEOUT_S))

        def folder_store(model: Embedder, rebuild: bool) -> FileStore:
            try:
                return FileStore(
                    folder,
                    max_entry_bytes=max_entry_bytes,
                    lock_timeout_s=timeout,
                    embedder=model,
                    reindex=rebuild,
                )
            except EmbedderMismatchError as exc:
                own = embedder_for(exc.stored) if embedder is None else None
                if own is None:
                    raise
                return folder_store(own, rebuild)

        if reindex and embedder is None:
            # A rebuild never switches models unasked: open with the folder's own embedder
            # first (the rule above), then make every vector again with it.
            with folder_store(chosen, False) as current:
                own_model = current.embedder or chosen
            return folder_store(own_model, True)
        return folder_store(chosen, reindex)
    switch = reindex and embedder is not None

    def attempt(model: Embedder) -> ChromaStore:
        with warnings.catch_warnings():
            if reindex:
                warnings.simplefilter("ignore", IndexOutOfStepWarning)
            store = ChromaStore.open(
                folder,
                embedder=model,
                reindex=switch,
                max_entry_bytes=max_entry_bytes,
                **store_options,
            )
        if reindex and not switch:
            try:
                store.reindex()
            except BaseException:
                store.close()
                raise
        return store

    try:
        return attempt(chosen)
    except EmbedderMismatchError as exc:
        if embedder is None:
            own = embedder_for(exc.stored)
            if own is not None:
                return attempt(own)
        raise
