"""Opening a store that lives on servers: the journal in PostgreSQL (a DSN), the vectors on a
Chroma server; no local folder (docs/storage.md#the-vector-index-over-postgresql).

:func:`agentmemory.open_store` with ``dsn=`` (``$AGENTMEMORY_DSN``) and ``chroma_url=``
(``$AGENTMEMORY_CHROMA_URL``) opens such a store through :func:`open_hosted_store`, and
:func:`agentmemory.open_journal` with ``dsn=`` the journal alone through
:func:`open_hosted_journal`; the command line's ``--dsn`` and ``--chroma-url`` go through them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .opening import DSN_ENV, choose_embedder, embedder_for, get_embedder
from .rules import DEFAULT_MAX_ENTRY_BYTES

if TYPE_CHECKING:
    from embedders import Embedder

    from .stores.chroma.store import ChromaStore
    from .stores.postgres.store import PostgresStore

__all__ = ["DSN_ENV", "open_hosted_journal", "open_hosted_store"]


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
    onnxruntime where possible); else :func:`~agentmemory.opening.choose_embedder`'s
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
    from .stores.chroma.index import store_prefix
    from .stores.chroma.index_state import IndexStateKeys
    from .stores.chroma.server import connect_url, parse_chroma_address
    from .stores.chroma.store import ChromaStore

    parse_chroma_address(chroma_url)  # a bad address is refused before any connection
    journal_options = {k: store_options.pop(k) for k in ("lock_timeout_s",) if k in store_options}
    journal = open_hosted_journal(dsn, max_entry_bytes=max_entry_bytes, **journal_options)
    try:
        client = connect_url(chroma_url)
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
