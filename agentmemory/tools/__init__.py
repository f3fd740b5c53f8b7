"""The four memory tools a model uses: ``memory_save``, ``memory_patch``, ``memory_forget`` and
``memory_search``, and the ways to hand them to a model.

:func:`tools` builds them over a store for a fixed set of scopes. Each is a :class:`Tool`: a name,
a description and a JSON Schema the model reads, MCP annotations, and a call that takes the
model's arguments (a dict or a JSON string) and returns a :class:`ToolResult`: the text the model
sees, whether it is an error, and for a write the journal record (never shown to the model).

A tool never raises on the model's input. Invalid JSON, a missing, extra or mistyped property, a
scope outside the tool set, a read-only scope, a name that is not kebab-case, content over the
limit, an ``old_text`` that is absent or repeated, an empty query: each is an error result whose
text names the property, the value and what is allowed, and nothing is written.

The schemas, descriptions, annotations, call pipeline and result lines follow the Go module
(docs/contract.md#the-tools), in our words, except that ``memory_search`` ranks with
``store.recall`` (hybrid BM25 and embedding recall when the store keeps vectors, BM25 otherwise;
docs/contract.md#memory_search) instead of filtering by the every-word predicate, and its
description says so.

The wing, one concept per module (all internal but this face; docs/README.md#layout-and-the-direction-of-imports):
``tool`` (the call pipeline), ``arguments`` (schema violations in words), ``schemas`` (what the
model is told), ``texts`` (result lines and error texts), ``handlers`` (the four bodies),
``toolset`` (:func:`tools`), ``adapters`` (OpenAI and Anthropic shapes), ``usage`` (the
system-prompt paragraph) and ``mcp_server`` (the MCP server, imported on its own: it loads the
``mcp`` SDK).
"""

from __future__ import annotations

from ..errors import ToolConfigError
from .adapters import (
    OPENAI_ERROR_PREFIX,
    call_tool,
    dispatch_anthropic,
    dispatch_openai,
    to_anthropic,
    to_openai,
)
from .handlers import PATCH_ATTEMPTS
from .schemas import DEFAULT_SEARCH_BYTES, DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT
from .texts import ECHO_CHARS, MAX_ERROR_CHARS
from .tool import Tool, ToolResult
from .toolset import check_tool_scopes, tools
from .usage import usage

__all__ = [
    "DEFAULT_SEARCH_BYTES",
    "DEFAULT_SEARCH_LIMIT",
    "ECHO_CHARS",
    "MAX_ERROR_CHARS",
    "MAX_SEARCH_LIMIT",
    "OPENAI_ERROR_PREFIX",
    "PATCH_ATTEMPTS",
    "Tool",
    "ToolConfigError",
    "ToolResult",
    "call_tool",
    "check_tool_scopes",
    "dispatch_anthropic",
    "dispatch_openai",
    "to_anthropic",
    "to_openai",
    "tools",
    "usage",
]
