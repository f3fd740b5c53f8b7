"""OpenAI and Anthropic tool shapes and dispatchers, and a scripted agent loop through each.

The script is a fixed list of tool calls (no model). Its transcript is pinned by
``tests/golden/tools/transcript.txt``, which the MCP test (tests/tools/test_mcp.py) checks too, so all
three ways an agent reaches the tools answer alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentmemory import MemStore, Store, ToolResult, tools
from agentmemory.tools import (
    OPENAI_ERROR_PREFIX,
    call_tool,
    dispatch_anthropic,
    dispatch_openai,
    to_anthropic,
    to_openai,
)

TRANSCRIPT = Path(__file__).resolve().parents[1] / "golden" / "tools" / "transcript.txt"
SCOPES = ["user", "project"]
READ_SCOPES = ["rules"]

SCRIPT: list[tuple[str, dict[str, Any]]] = [
    (
        "memory_save",
        {
            "scope": "user",
            "name": "editor",
            "content": "Uses Neovim with a dark theme.",
            "meta": {"description": "Editor preference"},
        },
    ),
    (
        "memory_save",
        {
            "scope": "project",
            "name": "build",
            "content": "Run `make test` before every commit.\n",
            "meta": {"description": "Build steps"},
        },
    ),
    ("memory_search", {"query": "neovim", "limit": 1}),
    ("memory_patch", {"scope": "user", "name": "editor", "old_text": "dark", "new_text": "light"}),
    ("memory_patch", {"scope": "user", "name": "editor", "old_text": "emacs", "new_text": "vi"}),
    ("memory_save", {"scope": "rules", "name": "tabs", "content": "Never use tabs."}),
    ("memory_save", {"scope": "user", "name": "Editor Choice", "content": "Helix"}),
    ("memory_save", {"scope": "user", "name": "editor", "content": "Uses Helix, light theme."}),
    ("memory_search", {"query": "   "}),
    ("memory_search", {"query": "helix", "scopes": ["user"]}),
    ("memory_search", {"query": "build", "scopes": ["project", "nope"]}),
    ("memory_forget", {"scope": "user", "name": "editor"}),
    ("memory_search", {"query": "helix", "scopes": ["user"]}),
    ("memory_forget", {"scope": "user", "name": "editor"}),
    ("memory_save", {"scope": "user", "name": "x", "content": "y", "when": "now"}),
    ("memory_delete", {"scope": "user", "name": "build"}),
]


def transcript_entry(name: str, args: dict[str, Any], text: str, is_error: bool) -> str:
    """One step of the transcript: the call, then ``-> ok`` or ``-> error`` and the text."""
    return f"## {name} {json.dumps(args, ensure_ascii=False)}\n-> {'error' if is_error else 'ok'}\n{text}\n"


def check_transcript(entries: list[str], update_golden: bool) -> None:
    text = "\n".join(entries)
    if update_golden:
        TRANSCRIPT.parent.mkdir(parents=True, exist_ok=True)
        TRANSCRIPT.write_text(text, encoding="utf-8")
    assert text == TRANSCRIPT.read_text(encoding="utf-8")


def new_tools(store: Store | None = None) -> list[Any]:
    return tools(store or MemStore(), SCOPES, read_scopes=READ_SCOPES)


# --------------------------------------------------------------------------------------------
# Shapes


def test_openai_shape() -> None:
    ts = new_tools()
    listed = to_openai(ts)
    assert [d["function"]["name"] for d in listed] == [t.name for t in ts]
    for d, t in zip(listed, ts, strict=True):
        assert set(d) == {"type", "function"} and d["type"] == "function"
        assert d["function"] == {
            "name": t.name,
            "description": t.description,
            "parameters": t.input_schema,
        }
    json.dumps(listed)  # what goes on the wire


def test_anthropic_shape() -> None:
    ts = new_tools()
    listed = to_anthropic(ts)
    for d, t in zip(listed, ts, strict=True):
        assert d == {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        assert d["input_schema"]["type"] == "object"
    json.dumps(listed)


# --------------------------------------------------------------------------------------------
# Dispatchers


def test_openai_dispatch_takes_dicts_and_sdk_objects() -> None:
    ts = new_tools()
    call = {
        "id": "call_1",
        "type": "function",
        "function": {
            "name": "memory_save",
            "arguments": '{"scope": "user", "name": "a", "content": "x"}',
        },
    }
    seen: list[ToolResult] = []
    msg = dispatch_openai(ts, call, on_result=seen.append)
    assert msg["role"] == "tool" and msg["tool_call_id"] == "call_1"
    assert msg["content"].startswith("Saved user/a (1 of 4096 bytes, sha256:")
    assert seen[0].record is not None and seen[0].record.entry.name == "a"
    sdk_call = SimpleNamespace(
        id="call_2",
        type="function",
        function=SimpleNamespace(name="memory_forget", arguments='{"scope": "user", "name": "a"}'),
    )
    assert dispatch_openai(ts, sdk_call) == {
        "role": "tool",
        "tool_call_id": "call_2",
        "content": "Forgot user/a (1 bytes); the journal keeps its last content",
    }


def test_openai_errors_are_marked_in_the_text() -> None:
    ts = new_tools()
    bad_json = {"id": "c", "function": {"name": "memory_search", "arguments": '{"query": '}}
    assert dispatch_openai(ts, bad_json)["content"].startswith(
        OPENAI_ERROR_PREFIX + "invalid arguments: not valid JSON: "
    )
    unknown = {"id": "c", "function": {"name": "memory_delete", "arguments": "{}"}}
    assert dispatch_openai(ts, unknown)["content"] == (
        'Error: unknown tool "memory_delete"; the memory tools are memory_save, memory_patch, '
        "memory_forget, memory_search"
    )
    assert dispatch_openai(ts, {})["content"].startswith("Error: unknown tool None")


def test_anthropic_dispatch_flags_errors() -> None:
    ts = new_tools()
    block = {"type": "tool_use", "id": "toolu_1", "name": "memory_search", "input": {"query": ""}}
    assert dispatch_anthropic(ts, block) == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "query is empty; give one or more words",
        "is_error": True,
    }
    sdk_block = SimpleNamespace(
        type="tool_use", id="toolu_2", name="memory_save", input={"scope": "user", "name": "a"}
    )
    out = dispatch_anthropic(ts, sdk_block)
    assert out["is_error"] is True and out["tool_use_id"] == "toolu_2"
    assert out["content"] == 'invalid arguments: missing required property "content"'


@pytest.mark.parametrize("arguments", [None, 5, ["a"], "null", '"text"', object()])
def test_call_tool_never_raises_on_odd_arguments(arguments: object) -> None:
    result = call_tool(new_tools(), "memory_search", arguments)
    assert result.is_error
    assert result.text.startswith("invalid arguments: ")


# --------------------------------------------------------------------------------------------
# The scripted agent loop, through each adapter


def test_scripted_agent_loop_through_openai(update_golden: bool) -> None:
    ts = new_tools()
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Remember my editor."}]
    entries = []
    for i, (name, args) in enumerate(SCRIPT):
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        reply = dispatch_openai(ts, call)
        messages.append(reply)
        assert reply["tool_call_id"] == f"call_{i}"
        text = reply["content"]
        is_error = text.startswith(OPENAI_ERROR_PREFIX)
        entries.append(
            transcript_entry(name, args, text.removeprefix(OPENAI_ERROR_PREFIX), is_error)
        )
    json.dumps(messages)
    check_transcript(entries, update_golden)


def test_scripted_agent_loop_through_anthropic() -> None:
    ts = new_tools()
    entries = []
    for i, (name, args) in enumerate(SCRIPT):
        block = {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": args}
        reply = dispatch_anthropic(ts, block)
        assert reply["tool_use_id"] == f"toolu_{i}"
        entries.append(transcript_entry(name, args, reply["content"], reply["is_error"]))
    check_transcript(entries, update_golden=False)


def test_scripted_agent_loop_writes_the_journal_it_reports() -> None:
    store = MemStore()
    ts = new_tools(store)
    records = []
    for i, (name, args) in enumerate(SCRIPT):
        block = {"type": "tool_use", "id": f"t{i}", "name": name, "input": args}
        dispatch_anthropic(
            ts, block, on_result=lambda r: records.append(r.record) if r.record else None
        )
    assert records == list(store.journal())
    assert [(c.entry.key, c.entry.deleted) for c in records] == [
        ("user/editor", False),
        ("project/build", False),
        ("user/editor", False),
        ("user/editor", False),
        ("user/editor", True),
    ]
