"""The memory tools in the shapes provider APIs take, and dispatchers for the calls they send back.

Plain dicts in, plain dicts out: no provider SDK is needed. A call may be a dict or an SDK object
with the same attributes (``tool_call.function.name``, ``block.input``), so the dispatchers take
what ``openai`` and ``anthropic`` return as they are.

* OpenAI Chat Completions: :func:`to_openai` gives the ``tools=`` list
  (``{"type": "function", "function": {"name", "description", "parameters"}}``);
  :func:`dispatch_openai` takes one ``message.tool_calls[i]`` and returns the
  ``{"role": "tool", "tool_call_id", "content"}`` message to append.
* Anthropic Messages: :func:`to_anthropic` gives the ``tools=`` list
  (``{"name", "description", "input_schema"}``); :func:`dispatch_anthropic` takes one
  ``tool_use`` content block and returns the ``{"type": "tool_result", "tool_use_id", "content",
  "is_error"}`` block to send in the next user message.

Neither tool list is ``strict``: ``memory_save``'s ``meta`` is a map of free keys, which strict
function calling cannot express (as in the Go module).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from .tool import Tool, ToolResult

__all__ = [
    "OPENAI_ERROR_PREFIX",
    "call_tool",
    "dispatch_anthropic",
    "dispatch_openai",
    "to_anthropic",
    "to_openai",
]

OPENAI_ERROR_PREFIX = "Error: "
"""Put before an error's text in an OpenAI tool message, which has no error flag of its own."""


def to_openai(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """The tools as OpenAI Chat Completions ``tools=`` entries, in order.

    Each is ``{"type": "function", "function": {"name", "description", "parameters"}}`` with the
    tool's JSON Schema as ``parameters`` (a copy).
    """
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
            },
        }
        for t in tools
    ]


def to_anthropic(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """The tools as Anthropic Messages ``tools=`` entries, in order:
    ``{"name", "description", "input_schema"}`` (the schema a copy)."""
    return [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in tools
    ]


def call_tool(tools: Iterable[Tool], name: object, arguments: object) -> ToolResult:
    """Run the tool called ``name`` on ``arguments`` (a mapping, JSON text or ``None``).

    A name that is none of ``tools`` gives an error result naming the tools there are; never
    raises on what the model sent.
    """
    by_name = {t.name: t for t in tools}
    tool = by_name.get(name) if isinstance(name, str) else None
    if tool is None:
        shown = f'"{name}"' if isinstance(name, str) else repr(name)
        return ToolResult(
            f"unknown tool {shown}; the memory tools are {', '.join(by_name)}", is_error=True
        )
    # a tool answers anything that is not a mapping or JSON text with an error result
    return tool(cast("Mapping[str, Any] | str | bytes | None", arguments))


def _field(obj: object, name: str) -> Any:
    """``obj[name]`` for a mapping, ``obj.name`` for an SDK object, ``None`` when absent."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def dispatch_openai(
    tools: Iterable[Tool],
    tool_call: object,
    *,
    on_result: Callable[[ToolResult], None] | None = None,
) -> dict[str, Any]:
    """Run one OpenAI Chat Completions tool call and return the tool message that answers it.

    Args:
        tools: the tools offered (see :func:`to_openai`).
        tool_call: one of ``message.tool_calls``: ``{"id", "type": "function", "function":
            {"name", "arguments"}}`` as a dict or SDK object; ``arguments`` is the JSON text the
            model wrote (a dict is taken too).
        on_result: called with the whole :class:`~agentmemory.ToolResult`, for the host that
            wants the journal record of a write.

    Returns:
        ``{"role": "tool", "tool_call_id": <id>, "content": <text>}``; an error's text starts
        with :data:`OPENAI_ERROR_PREFIX`, since the message has no error flag. Never raises on
        what the model sent.
    """
    function = _field(tool_call, "function")
    result = call_tool(tools, _field(function, "name"), _field(function, "arguments"))
    if on_result is not None:
        on_result(result)
    text = OPENAI_ERROR_PREFIX + result.text if result.is_error else result.text
    return {"role": "tool", "tool_call_id": _field(tool_call, "id"), "content": text}


def dispatch_anthropic(
    tools: Iterable[Tool],
    tool_use: object,
    *,
    on_result: Callable[[ToolResult], None] | None = None,
) -> dict[str, Any]:
    """Run one Anthropic ``tool_use`` block and return the ``tool_result`` block that answers it.

    Args:
        tools: the tools offered (see :func:`to_anthropic`).
        tool_use: ``{"type": "tool_use", "id", "name", "input"}`` as a dict or SDK object;
            ``input`` is the arguments object.
        on_result: called with the whole :class:`~agentmemory.ToolResult`, for the host that
            wants the journal record of a write.

    Returns:
        ``{"type": "tool_result", "tool_use_id": <id>, "content": <text>, "is_error": <bool>}``.
        Never raises on what the model sent.
    """
    result = call_tool(tools, _field(tool_use, "name"), _field(tool_use, "input"))
    if on_result is not None:
        on_result(result)
    return {
        "type": "tool_result",
        "tool_use_id": _field(tool_use, "id"),
        "content": result.text,
        "is_error": result.is_error,
    }
