"""LangChain over agentmemory: ``pip install agentmemory[langchain]``.

``AgentMemoryRetriever(store=..., scopes=[...])`` is a ``langchain_core`` ``BaseRetriever`` over a
store's hybrid recall (docs/integrations.md#langchain).
"""

from __future__ import annotations

from .retriever import AgentMemoryRetriever

__all__ = ["AgentMemoryRetriever"]
