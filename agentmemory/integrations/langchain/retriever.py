"""A LangChain retriever over a store's recall (docs/integrations.md#langchain).

:class:`AgentMemoryRetriever` answers ``invoke(query)`` with the store's ranked recall
(:meth:`agentmemory.Store.recall`, docs/recall.md) as LangChain ``Document`` objects: the entry's
content as ``page_content``; ``scope``, ``name``, ``key`` (``scope/name``), ``hash``, ``updated``
(ISO 8601), ``description``, ``score`` (the fused score, or one leg's raw score), ``method``
(what made the score), ``bm25_rank`` and ``vector_rank`` (1-based, ``None`` when that leg did
not return the entry) and ``unavailable`` (each leg that could not run, with why) in ``metadata``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

__all__ = ["AgentMemoryRetriever"]


class AgentMemoryRetriever(BaseRetriever):
    """The ``limit`` best entries of ``scopes`` for a query, as Documents.

    Attributes:
        store: any of our stores (the caller opens and closes it).
        scopes: the scopes searched (kebab-case names; at least one).
        limit: at most this many Documents (a positive int, default 5).
        mode: ``"auto"`` (hybrid when the store keeps vectors, else BM25), ``"hybrid"``,
            ``"bm25"`` or ``"vector"``.

    The store's errors pass through: an empty query raises
    :class:`~agentmemory.EmptyQueryError`, a scope that is not kebab-case
    :class:`~agentmemory.InvalidEntryError`, a mode the store cannot run
    :class:`~agentmemory.errors.RecallModeError`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Any
    scopes: list[str] = Field(min_length=1)
    limit: int = Field(default=5, gt=0)
    mode: str = "auto"

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits = self.store.recall(query, scopes=self.scopes, limit=self.limit, mode=self.mode)
        docs = []
        for hit in hits:
            e = hit.entry
            bm25, vector = hit.legs.get("bm25"), hit.legs.get("vector")
            docs.append(
                Document(
                    page_content=e.content,
                    id=e.key,
                    metadata={
                        "scope": e.scope,
                        "name": e.name,
                        "key": e.key,
                        "hash": e.hash,
                        "updated": e.updated.isoformat() if e.updated is not None else None,
                        "description": e.description,
                        "score": hit.score,
                        "method": hit.method,
                        "bm25_rank": bm25.rank if bm25 is not None else None,
                        "vector_rank": vector.rank if vector is not None else None,
                        "unavailable": dict(hit.unavailable),
                    },
                )
            )
        return docs
