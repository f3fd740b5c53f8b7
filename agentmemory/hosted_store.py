"""Opening a store that lives on servers: the journal in PostgreSQL (a DSN), the vectors on a
Chroma server (``HOST:PORT``); no local folder (docs/storage.md#the-vector-index-over-postgresql).

The command line's ``--dsn`` (``$AGENTMEMORY_DSN``) and ``--chroma`` (``$AGENTMEMORY_CHROMA``)
open stores with these functions, as ``--path`` opens a folder with ``open_store``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import AgentMemoryError
from .store_folder import embedder_for, get_embedder

if TYPE_CHECKING:
    from embedders import Embedder

    from .chroma_store import ChromaStore
    from .postgres_store import PostgresStore

__all__ = ["DSN_ENV", "hosted_prefix", "open_hosted_journal", "open_hosted_store", "parse_address"]

DSN_ENV = "AGENTMEMORY_DSN"
"""The environment variable holding the journal's DSN."""


def hosted_prefix(journal: PostgresStore) -> str:
    """The collection prefix of the journal's vectors on a Chroma server: ``am-`` and the first
    16 hex digits of its store id, so stores sharing one server never share a collection and
    every process of one store finds the same ones."""
    return "am-" + journal.store_id.replace("-", "")[:16]


def parse_address(address: str) -> tuple[str, int]:
    """``(host, port)`` of ``"HOST:PORT"`` (``http://`` allowed before it, IPv6 in brackets).

    Raises:
        AgentMemoryError: no port, or a port that is not a number from 1 to 65535.
    """
    text = address.strip().removeprefix("http://").rstrip("/")
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise AgentMemoryError(
            f"agentmemory: Chroma server address {address!r} is not HOST:PORT "
            "(for example 127.0.0.1:8000)"
        )
    return host.strip("[]"), int(port)


def open_hosted_journal(dsn: str) -> PostgresStore:
    """The journal alone (no vectors, no model): a ``PostgresStore`` on ``dsn``.

    Raises what :class:`~agentmemory.postgres_store.PostgresStore` raises
    (``StoreUnavailableError`` naming the database, never the password).
    """
    from .postgres_store import PostgresStore

    return PostgresStore(dsn)


def open_hosted_store(
    dsn: str,
    chroma: str,
    *,
    embedder: Embedder | str | None = None,
    reindex: bool = False,
) -> ChromaStore:
    """A :class:`~agentmemory.ChromaStore` over the PostgreSQL journal at ``dsn`` with its
    vectors on the Chroma server at ``chroma`` (``HOST:PORT``), collection prefix
    :func:`hosted_prefix`, telemetry off.

    The embedder: the one given (an :class:`embedders.Embedder` or a registry name); else the
    one whose fingerprint the journal records for this index (the same vectors, through
    onnxruntime where possible); else the default embedder.

    Raises:
        AgentMemoryError: ``chroma`` is not ``HOST:PORT``, or the Chroma server does not answer.
        StoreUnavailableError: the database cannot be reached.
        EmbedderNameError, EmbedderMismatchError: as :func:`agentmemory.open_store`.
    """
    import chromadb
    from chromadb.config import Settings

    import embedders

    from .chroma_store import ChromaStore

    host, port = parse_address(chroma)
    journal = open_hosted_journal(dsn)
    try:
        try:
            client: Any = chromadb.HttpClient(
                host=host, port=port, settings=Settings(anonymized_telemetry=False)
            )
            client.heartbeat()
        except Exception as exc:
            raise AgentMemoryError(
                f"agentmemory: the Chroma server at {host}:{port} does not answer "
                f"({type(exc).__name__}); start it (chroma run --host {host} --port {port}) "
                "or give its address with --chroma"
            ) from None
        if isinstance(embedder, str):
            chosen = get_embedder(embedder)
        elif embedder is not None:
            chosen = embedder
        else:
            stored = journal.get_state(f"chroma-index:client:{hosted_prefix(journal)}:embedder")
            found = embedder_for(stored) if stored else None
            chosen = found or get_embedder(embedders.DEFAULT_EMBEDDER)
        return ChromaStore(
            None,
            journal=journal,
            client=client,
            collection_prefix=hosted_prefix(journal),
            embedder=chosen,
            reindex=reindex,
        )
    except BaseException:
        journal.close()
        raise
