"""Adapters for agent frameworks, each behind an optional extra: ``langgraph``
(:class:`agentmemory.integrations.langgraph.AgentMemoryStore`, ``pip install agentmemory[langgraph]``)
and ``langchain`` (:class:`agentmemory.integrations.langchain.AgentMemoryRetriever`,
``pip install agentmemory[langchain]``). ``import agentmemory`` imports neither
(docs/integrations.md)."""
