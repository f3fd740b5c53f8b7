"""Opening a store: where its folder is by default, the one rule for opening it (a folder, a
Markdown folder, or servers) and its embedder, and opening it for a repair.

A store folder holds ``journal.sqlite3`` (the journal, the truth) and ``chroma/`` (the vector
index, derived from the journal), or is a Markdown folder (:class:`~agentmemory.FileStore`:
``journal.jsonl`` and one ``<scope>/<name>.md`` per entry, docs/filestore-format.md#layout),
chosen by ``format="markdown"`` or found by its ``journal.jsonl``. :func:`open_store` opens both (a :class:`~agentmemory.ChromaStore`)
and chooses the embedder; :func:`open_journal` opens the journal alone, for reads that need no
model. The command line, the MCP server, the demo and the evaluation open stores through them.

A store on servers has no folder: ``dsn=`` (or ``$AGENTMEMORY_DSN`` when no folder is named)
puts the journal in PostgreSQL, and ``chroma_url=`` (or ``$AGENTMEMORY_CHROMA_URL``) names the
Chroma server holding its vectors (:func:`open_hosted_store`,
docs/storage.md#the-vector-index-over-postgresql). Every Chroma server address is read by
:func:`agentmemory.stores.chroma.server.parse_chroma_address`.

The embedder rule (:func:`open_store` with ``embedder=None``, folder or servers): the packaged
all-MiniLM-L6-v2 run through onnxruntime (:data:`embedders.ONNX_EMBEDDER`: the faster cold start,
``benchmarks/README.md``, "Embedders"), else through sentence-transformers (:data:`embedders.DEFAULT_EMBEDDER`)
when onnxruntime cannot run it here (:func:`choose_embedder`; the two give the same vectors,
``embedders.same_vectors``), indexes a new store and opens one indexed with that model by either
runtime. A store indexed with another model is opened with that
model (through onnxruntime when that gives its vectors, else as its fingerprint names it). A named
embedder is taken when it gives the store's vectors and refused otherwise
(:class:`~agentmemory.EmbedderMismatchError`); ``reindex=True`` with a named embedder switches.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import (
    ChromaAddressError,
    EmbedderMismatchError,
    EmbedderNameError,
    IndexDamagedError,
    IndexOutOfStepWarning,
    IndexReadOnlyError,
    NoStoreError,
    StoreFullError,
)
from .rules import DEFAULT_MAX_ENTRY_BYTES
from .stores.chroma.damage import MovedIndex, move_index_aside
from .stores.chroma.store import JOURNAL_FILE, ChromaStore
from .stores.markdown.lock_file import DEFAULT_LOCK_TIMEOUT_S
from .stores.markdown.store import FileStore
from .stores.space import out_of_space
from .stores.sqlite.store import SqliteStore
from .wording import counted

if TYPE_CHECKING:
    from embedders import Embedder

    from .stores.chroma.server import ServerRecord
    from .stores.postgres.store import PostgresStore

__all__ = [
    "CHROMA_ENV_ALIAS",
    "CHROMA_URL_ENV",
    "DSN_ENV",
    "SHARED_ENV",
    "STORE_FORMATS",
    "FolderServer",
    "check_index_loads",
    "choose_embedder",
    "chroma_server_url",
    "default_store_path",
    "embedder_for",
    "get_embedder",
    "journal_dsn",
    "open_hosted_journal",
    "open_hosted_store",
    "open_journal",
    "open_store",
    "open_store_moving_damage",
    "start_folder_server",
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
    from .stores.markdown.journal_file import JOURNAL_NAME

    return "markdown" if (store_folder(path) / JOURNAL_NAME).is_file() else "sqlite"


SHARED_ENV = "AGENTMEMORY_SHARED"
"""Environment variable: ``1`` makes :func:`open_store` (and the command line) start the
folder's Chroma server when none runs (docs/storage.md#several-processes)."""

CHROMA_URL_ENV = "AGENTMEMORY_CHROMA_URL"
"""Environment variable naming the Chroma server of :func:`open_store` when ``chroma_url`` is not
given: ``HOST:PORT`` or ``http://HOST:PORT`` (docs/storage.md#the-chroma-server-address)."""

CHROMA_ENV_ALIAS = "AGENTMEMORY_CHROMA"
"""The older name of :data:`CHROMA_URL_ENV`, read when that one is unset or empty (kept so
existing configurations go on working)."""

DSN_ENV = "AGENTMEMORY_DSN"
"""Environment variable holding the PostgreSQL journal's DSN, read by :func:`open_store` and
:func:`open_journal` when neither ``dsn`` nor a folder (``path``, ``format``) is given."""


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
    from .stores.markdown.journal_file import JOURNAL_NAME

    folder = store_folder(path)
    if not (folder / JOURNAL_NAME).is_file():
        raise NoStoreError(str(folder))
    return folder


def _existing(path: str | os.PathLike[str] | None) -> Path:
    folder = store_folder(path)
    if not (folder / JOURNAL_FILE).is_file():
        raise NoStoreError(str(folder))
    return folder


def journal_dsn(
    path: str | os.PathLike[str] | None = None,
    *,
    format: str | None = None,
    dsn: str | None = None,
) -> str | None:
    """The DSN of the PostgreSQL journal :func:`open_store` and :func:`open_journal` open, or
    ``None`` for a store folder: ``dsn`` when given; else, when no folder is named (``path`` and
    ``format`` ``None``), ``$AGENTMEMORY_DSN`` (:data:`DSN_ENV`); else ``None``. An empty string
    is not a DSN (as an unset variable).

    Raises:
        ValueError: ``dsn`` is given together with ``path`` or ``format`` (a store is a folder
            or a database, not both).
    """
    if dsn:
        if path is not None or format is not None:
            named = "path" if path is not None else "format"
            value = str(path if path is not None else format)
            raise ValueError(
                f"dsn= and {named}={value!r} were both given; a store is a folder (path, "
                "format) or a PostgreSQL journal (dsn), not both"
            )
        return dsn
    if path is None and format is None:
        return os.environ.get(DSN_ENV) or None
    return None


def chroma_server_url(chroma_url: str | None = None) -> str | None:
    """The Chroma server :func:`open_store` connects to, as ``http(s)://HOST:PORT``: ``chroma_url``
    when given, else ``$AGENTMEMORY_CHROMA_URL`` (:data:`CHROMA_URL_ENV`), else
    ``$AGENTMEMORY_CHROMA`` (:data:`CHROMA_ENV_ALIAS`); ``None`` when none is (an empty value is
    none). Each is read by :func:`agentmemory.stores.chroma.server.parse_chroma_address`.

    Raises:
        ChromaAddressError: the address is not ``HOST:PORT`` or ``http(s)://HOST[:PORT]``
            (the message names it).
    """
    from .stores.chroma.server import parse_chroma_address

    address = (
        chroma_url or os.environ.get(CHROMA_URL_ENV) or os.environ.get(CHROMA_ENV_ALIAS) or None
    )
    return parse_chroma_address(address).url if address is not None else None


def open_journal(
    path: str | os.PathLike[str] | None = None,
    *,
    format: str | None = None,
    dsn: str | None = None,
) -> SqliteStore | FileStore | PostgresStore:
    """Open the journal of the existing store in folder ``path`` alone: no vector index, no model,
    no folder lock, so it is fast and safe beside a process that holds the store (an ``agentmemory
    mcp``). Reads (``get``, ``list``, ``journal``, ``render``, BM25 ``recall``) need nothing more.

    ``path`` ``None`` is :func:`default_store_path`. A Markdown folder (``format="markdown"``,
    or found by its ``journal.jsonl``, :func:`store_format`) opens as a
    :class:`~agentmemory.FileStore` without vectors. With ``dsn`` (or ``$AGENTMEMORY_DSN`` when
    neither ``path`` nor ``format`` is given, :func:`journal_dsn`) the journal is the
    :class:`~agentmemory.stores.postgres.store.PostgresStore` there, BM25 recall included (its tables
    are made on first open). The caller closes the store (it is a context manager).

    Raises:
        NoStoreError: the folder holds no store (nothing is created).
        ValueError: ``dsn`` together with ``path`` or ``format``.
        StoreUnavailableError: the database cannot be reached (naming it, never the password).

    Also what :class:`~agentmemory.SqliteStore` and ``PostgresStore`` raise for a store they
    cannot read.
    """
    found = journal_dsn(path, format=format, dsn=dsn)
    if found is not None:
        return open_hosted_journal(found)
    if store_format(path, format) == "markdown":
        return FileStore(_existing_markdown(path))
    return SqliteStore(_existing(path) / JOURNAL_FILE)


def get_embedder(name: str) -> Embedder:
    """The embedder the registry builds for ``name`` (``"onnx:all-MiniLM-L6-v2"``, ``"hashing"``).

    Raises :class:`~agentmemory.errors.EmbedderNameError` for a name the registry does not know or an
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

    Raises :class:`~agentmemory.errors.EmbedderNameError` for a ``name`` the registry cannot build.
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
    dsn: str | None = None,
    **store_options: Any,
) -> ChromaStore | FileStore:
    """Open the store in folder ``path``, or the one whose journal is in PostgreSQL at ``dsn``
    (journal and vector index), with the embedder chosen by the rule in the module docstring.
    The caller closes it (it is a context manager).

    ``open_store(dsn=..., chroma_url="HOST:PORT")`` is the store for several hosts: the
    PostgreSQL journal and its vectors on that Chroma server, no local folder
    (:func:`open_hosted_store`). Without a Chroma server it raises
    :class:`~agentmemory.errors.ChromaAddressError` saying so; :func:`open_journal` with ``dsn`` opens
    the journal alone (BM25 recall).

    Args:
        path: the store folder; ``None`` is :func:`default_store_path` (or, with
            ``$AGENTMEMORY_DSN`` set and no ``format``, that journal: :func:`journal_dsn`).
        embedder: ``None`` for the rule's choice, a registry name, or an :class:`embedders.Embedder`.
            A named or given embedder must give the store's vectors.
        create: ``True`` creates the folder and an empty store when there is none; ``False``
            refuses a folder without a store (:class:`~agentmemory.NoStoreError`, nothing created).
        reindex: rebuild the vector index from the journal before returning: with ``embedder``
            given, with that embedder (switching to it); else with the one the rule chose (so it
            never switches models unasked). The :class:`~agentmemory.errors.IndexOutOfStepWarning` an
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
        chroma_url: the Chroma server holding the vectors, ``HOST:PORT`` or
            ``http://HOST:PORT``, instead of the folder's own (needed with ``dsn``); ``None``
            takes ``$AGENTMEMORY_CHROMA_URL``, else ``$AGENTMEMORY_CHROMA``
            (:func:`chroma_server_url`).
        read_only: open to read (search, get, list, render): never wait on another process's
            hold of the embedded folder, and replay nothing into the index.
        dsn: the PostgreSQL journal's DSN (libpq form; the password belongs in ``~/.pgpass`` or
            ``PGPASSWORD``), instead of ``path`` and ``format``; ``None`` takes
            ``$AGENTMEMORY_DSN`` when no folder is named. With ``dsn``, ``create`` (the tables
            are made on first open) and ``shared`` (there is no folder server) are not used.
        **store_options: passed to :meth:`ChromaStore.open` (``lock_timeout_s``,
            ``busy_timeout_s``, ``fusion``, ``client``, ...); with ``dsn``, to
            :func:`open_hosted_store`.

    Raises:
        ValueError: ``dsn`` together with ``path`` or ``format``.
        ChromaAddressError: ``chroma_url`` (or its variable) is not a Chroma server address,
            or ``dsn`` has none.
        StoreUnavailableError: the database at ``dsn`` cannot be reached.
        NoStoreError: ``path`` is a file, or (``create=False``) holds no store.
        EmbedderNameError: ``embedder`` names nothing the registry builds.
        EmbedderMismatchError: the store was indexed with other vectors than the named or given
            embedder makes (without ``reindex``), or, with ``embedder=None``, than any embedder
            this machine can build for it.
        ChromaServerError: the folder's server (or ``chroma_url``) does not answer, is of
            another chromadb version, or could not be started.

    When another process holds the embedded folder (past ``lock_timeout_s``, 0 s for
    ``read_only``), or the folder's Chroma server (or ``chroma_url``) runs but does not answer
    within ``server_timeout_s`` (``store_options``; docs/storage.md#a-stuck-server), the store
    opens journal-only (:attr:`ChromaStore.vector_unavailable` says why): writes land in the
    journal with a ``note``, and recall runs the BM25 leg alone.

    Also what :meth:`ChromaStore.open` raises. An :class:`~agentmemory.errors.IndexOutOfStepWarning` is
    issued (``warnings.warn``) when the index misses what the journal holds.
    """
    found_dsn = journal_dsn(path, format=format, dsn=dsn)
    chroma_url = chroma_server_url(chroma_url)
    if found_dsn is not None:
        if chroma_url is None:
            raise ChromaAddressError(
                None,
                "a store whose journal is in PostgreSQL (dsn=, $AGENTMEMORY_DSN) keeps its "
                "vectors on a Chroma server: give chroma_url='HOST:PORT' (or "
                "$AGENTMEMORY_CHROMA_URL), or open the journal alone with open_journal(dsn=...) "
                "for BM25 recall",
            )
        return open_hosted_store(
            found_dsn,
            chroma_url,
            embedder=embedder,
            reindex=reindex,
            max_entry_bytes=max_entry_bytes,
            read_only=read_only,
            **store_options,
        )
    markdown = store_format(path, format) == "markdown"
    folder = store_folder(path) if create else (_existing_markdown if markdown else _existing)(path)
    if shared is None:
        shared = os.environ.get(SHARED_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    store_options.setdefault("journal_only_when_held", True)
    store_options.setdefault("journal_only_when_unreachable", True)
    if not reindex:  # a rebuild needs to know (open_store_moving_damage moves it aside)
        store_options.setdefault("journal_only_when_damaged", True)
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
                    journal_only_when_damaged=bool(
                        store_options.get("journal_only_when_damaged", False)
                    ),
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


def open_hosted_journal(
    dsn: str, *, max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES, **options: Any
) -> PostgresStore:
    """The journal alone (no vectors, no model): a ``PostgresStore`` on ``dsn``, its content
    bound ``max_entry_bytes`` (UTF-8 bytes); ``options`` are ``PostgresStore``'s
    (``lock_timeout_s``, ...).

    Raises what :class:`~agentmemory.stores.postgres.store.PostgresStore` raises
    (``StoreUnavailableError`` naming the database, never the password).
    """
    from .stores.postgres.store import PostgresStore

    return PostgresStore(dsn, max_entry_bytes=max_entry_bytes, **options)


def open_hosted_store(
    dsn: str,
    chroma_url: str,
    *,
    embedder: Embedder | str | None = None,
    reindex: bool = False,
    max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    read_only: bool = False,
    **store_options: Any,
) -> ChromaStore:
    """A :class:`~agentmemory.ChromaStore` over the PostgreSQL journal at ``dsn`` with its
    vectors on the Chroma server at ``chroma_url`` (``HOST:PORT`` or ``http://HOST:PORT``,
    :func:`agentmemory.stores.chroma.server.parse_chroma_address`), collection prefix
    :func:`agentmemory.stores.chroma.index.store_prefix` of the journal's id, telemetry off. :func:`agentmemory.open_store` with ``dsn=`` calls it.

    The embedder: the one given (an :class:`embedders.Embedder` or a registry name); else one
    giving the vectors whose fingerprint the journal records for this index (through
    onnxruntime where possible); else :func:`choose_embedder`'s
    default (the rule every store uses). ``max_entry_bytes`` (UTF-8 bytes) and
    ``lock_timeout_s`` (seconds, in ``store_options``) go to the ``PostgresStore``;
    ``read_only`` and the other ``store_options`` (``fusion``, ``reranker``, ...) to the
    ``ChromaStore``.

    Raises:
        ChromaAddressError: ``chroma_url`` is not a Chroma server address.
        ChromaServerError: the Chroma server does not answer.
        StoreUnavailableError: the database cannot be reached.
        EmbedderNameError, EmbedderMismatchError: as :func:`agentmemory.open_store`.
    """
    from .stores.chroma.cursor import IndexStateKeys
    from .stores.chroma.index import store_prefix
    from .stores.chroma.server import connect_url, parse_chroma_address
    from .stores.chroma.store import ChromaStore

    parse_chroma_address(chroma_url)  # a bad address is refused before any connection
    journal_options = {k: store_options.pop(k) for k in ("lock_timeout_s",) if k in store_options}
    journal = open_hosted_journal(dsn, max_entry_bytes=max_entry_bytes, **journal_options)
    try:
        client = connect_url(chroma_url, timeout_s=store_options.get("server_timeout_s"))
        if isinstance(embedder, str):
            chosen = get_embedder(embedder)
        elif embedder is not None:
            chosen = embedder
        else:
            keys = IndexStateKeys(embedded=False, prefix=store_prefix(journal.store_id))
            stored = journal.get_state(keys.embedder)
            found = embedder_for(stored) if stored else None
            chosen = found or choose_embedder(None)
        return ChromaStore(
            None,
            journal=journal,
            client=client,
            embedder=chosen,
            reindex=reindex,
            read_only=read_only,
            **store_options,
        )
    except BaseException:
        journal.close()
        raise


def check_index_loads(
    path: str | os.PathLike[str] | None = None,
    *,
    format: str | None = None,
    dsn: str | None = None,
) -> None:
    """Load the vector index of the store folder ``path`` (``None``: the default folder,
    :func:`store_folder`) in a child process and search each collection
    once (:func:`agentmemory.stores.chroma.damage.probe_index`); nothing when it has no
    ``chroma/``, or when the store is not a folder (``path``, ``format`` and ``dsn`` name its
    journal as :func:`agentmemory.open_store` reads them: :func:`journal_dsn`).

    Raises:
        IndexDamagedError: ``index`` ``"vector"``, when the child crashed (a segmentation fault),
            failed or timed out: loading it in this process could kill it.
        NoStoreError: ``path`` is a file.
        ValueError: ``dsn`` together with ``path`` or ``format``.
    """
    from .stores.chroma.damage import probe_index

    if journal_dsn(path, format=format, dsn=dsn) is not None:
        return
    folder = store_folder(path)
    crashed = probe_index(folder)
    if crashed is not None:
        if out_of_space(folder):  # the child could not write: full, not damaged
            raise StoreFullError(str(folder), "no room to load the vector index and check it")
        raise IndexDamagedError(str(folder), "vector", crashed)


def open_store_moving_damage(
    path: str | os.PathLike[str] | None = None, *, reindex: bool = False, **options: Any
) -> tuple[ChromaStore | FileStore, MovedIndex | None]:
    """Open the existing store ``path`` for a repair: :func:`check_index_loads`, then
    :func:`agentmemory.open_store` (``create=False``, ``reindex``, ``options``). When the index
    is damaged (the probe, or :class:`~agentmemory.errors.IndexDamagedError` ``"vector"`` at open), move
    it aside (:func:`move_index_aside`) and open the store again with ``reindex=True``, which
    rebuilds it from the journal (docs/storage.md#a-damaged-vector-index).

    Returns the store (the caller closes it) and what was moved aside, or ``None`` when nothing
    was.

    Raises what :func:`agentmemory.open_store` raises (a damaged lexical index included), and
    ``OSError`` when the damaged folder cannot be moved.
    """
    try:
        # never load a crashing index here: it would kill this process
        check_index_loads(path, format=options.get("format"), dsn=options.get("dsn"))
        found = open_store(
            path, create=False, reindex=reindex, journal_only_when_damaged=False, **options
        )
        return found, None
    except IndexDamagedError as exc:
        if exc.index != "vector" or isinstance(exc, IndexReadOnlyError):
            raise  # nothing to move aside: a read-only index is made writable, not rebuilt
        moved = MovedIndex(move_index_aside(exc.path), exc.detail)
    return open_store(path, create=False, reindex=True, **options), moved


@dataclass(frozen=True, slots=True)
class FolderServer:
    """What :func:`start_folder_server` found or started.

    Attributes:
        record: the server as the folder records it (``chroma-server/server.json``).
        started: ``True`` when this call started it, ``False`` when one was running already.
    """

    record: ServerRecord
    started: bool


def start_folder_server(
    path: str | os.PathLike[str] | None = None,
    *,
    port: int | None = None,
    announce: Callable[[str], object] | None = None,
) -> FolderServer:
    """Start the Chroma server of the store folder ``path`` (``None``: :func:`default_store_path`)
    unless one runs (:func:`agentmemory.stores.chroma.server.start_server` on 127.0.0.1, ``port`` or a
    free one, detached; docs/storage.md#the-folders-chroma-server). A server this call started
    is given the folder's journal at once (the store is opened on it and closed, which indexes
    every live entry there), so readers, which replay nothing, find every entry by meaning from
    the first search. ``announce``, when given, is called first with one line saying how many
    live entries are embedded for the new server (what the caller waits for), when there are any.

    A record whose process is gone is reported (:class:`~agentmemory.errors.ServerRecordWarning`) and
    replaced; opening the store may warn :class:`~agentmemory.errors.IndexOutOfStepWarning`.

    Raises:
        NoStoreError: ``path`` is a file.
        ChromaServerError: the server could not be started (``port`` taken, no answer).
        StoreLockedError: another process kept the start lock too long.

    Also what :func:`open_store` raises when indexing the journal.
    """
    from .stores.chroma.server import live_record, start_server

    folder = store_folder(path)
    before = live_record(folder)
    if before is not None:
        return FolderServer(before, started=False)
    record = start_server(folder, port=port)
    if (folder / JOURNAL_FILE).is_file():
        if announce is not None:
            with SqliteStore(folder / JOURNAL_FILE) as journal:
                live = journal.live_count()
            if live:
                announce(
                    f"agentmemory: indexing {counted(live, 'live entry', 'live entries')} of "
                    f"{folder} on the new server (each embedded once)"
                )
        with open_store(folder, create=False, format="sqlite"):
            pass
    return FolderServer(record, started=True)
