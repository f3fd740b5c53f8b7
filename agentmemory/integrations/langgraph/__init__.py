"""LangGraph's long-term memory over agentmemory: ``pip install agentmemory[langgraph]``.

``AgentMemoryStore(store)`` is a ``langgraph.store.base.BaseStore`` (what ``create_react_agent(...,
store=...)``, ``graph.compile(store=...)`` and LangMem's memory tools take) over any of our stores;
the mapping of namespaces, keys and values to entries is :mod:`.mapping`
(docs/integrations.md#langgraph).
"""

from __future__ import annotations

from .mapping import MappingError, entry_for, item_of, key_name, namespace_scope
from .store import AgentMemoryStore

__all__ = [
    "AgentMemoryStore",
    "MappingError",
    "entry_for",
    "item_of",
    "key_name",
    "namespace_scope",
]
