"""The README's MCP client configurations (Claude Desktop, Claude Code, Cursor): each is parsed as
printed, its command started through the MCP SDK's stdio client, the way the client would, and
used: the four tools listed, a save found by a search. Real processes, the packaged model."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCUMENTED_PATH = "/home/you/memory"
TIMEOUT_S = 300


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## From an MCP client")
    return text[start : text.index("\n## ", start + 5)]


def _block_after(marker: str, lang: str) -> str:
    section = _section()
    at = section.index(marker)
    found = re.search(rf"```{lang}\n(.*?)\n```", section[at:], re.S)
    assert found is not None, f"no {lang} block after {marker!r}"
    return found.group(1)


def _from_json(marker: str) -> tuple[str, list[str]]:
    server = json.loads(_block_after(marker, "json"))["mcpServers"]["agentmemory"]
    return server["command"], server["args"]


def _from_claude_code() -> tuple[str, list[str]]:
    words = shlex.split(_block_after("Claude Code", "bash"))
    assert words[:4] == ["claude", "mcp", "add", "agentmemory"] and words[4] == "--", words
    return words[5], words[6:]


CONFIGS: dict[str, Callable[[], tuple[str, list[str]]]] = {
    "claude-desktop": lambda: _from_json("Claude Desktop"),
    "claude-code": _from_claude_code,
    "cursor": lambda: _from_json("Cursor"),
}


@pytest.mark.parametrize("client", sorted(CONFIGS))
def test_the_documented_configuration_starts_a_working_server(client: str, tmp_path: Path) -> None:
    command, args = CONFIGS[client]()
    assert command == "agentmemory" and DOCUMENTED_PATH in args, (command, args)
    folder = tmp_path / "memory"
    params = StdioServerParameters(
        # the installed console script, as `which agentmemory` would name it
        command=str(Path(sys.executable).parent / command),
        args=[str(folder) if a == DOCUMENTED_PATH else a for a in args],
        cwd=str(tmp_path),
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("AGENTMEMORY_")},
            "HF_HUB_OFFLINE": "1",
            "ANONYMIZED_TELEMETRY": "False",
        },
    )

    async def main() -> None:
        with (tmp_path / "server.err").open("w") as err:
            async with Client(stdio_client(params, errlog=err)) as mcp:
                with anyio.fail_after(TIMEOUT_S):
                    names = {t.name for t in (await mcp.list_tools()).tools}
                    assert {"memory_save", "memory_search"} <= names, names
                    saved = await mcp.call_tool(
                        "memory_save",
                        {"scope": "user", "name": "editor", "content": "Prefers dark mode in Vim."},
                    )
                    assert not saved.is_error, saved
                    found = await mcp.call_tool("memory_search", {"query": "editor theme"})
                    assert "user/editor" in found.content[0].text  # type: ignore[union-attr]

    anyio.run(main)
    assert (folder / "journal.sqlite3").is_file()
