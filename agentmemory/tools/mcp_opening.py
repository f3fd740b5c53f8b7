"""Answering an MCP client at once while the store opens: ``agentmemory mcp``'s start
(docs/contract.md#serving-over-mcp).

Opening a store imports chromadb and loads the embedding model (most of a second here), and an
MCP client waits for its ``initialize`` answer before anything else, some with a short timeout.
:class:`OpeningServer` answers ``initialize`` (which needs no store: the server's name, version
and :func:`agentmemory.usage` as instructions) as soon as the process has started, opens the
store in a worker thread meanwhile, and answers every other request with the
:class:`~agentmemory.tools.mcp_server.MemoryServer` it opened, once it is open, in the order the
requests came. When the open fails, each request gets an MCP error naming why, the reason is
logged on stderr, and :meth:`OpeningServer.run_stdio` raises it when the client goes away.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from .mcp_server import MemoryServer, new_server

__all__ = ["OpeningServer", "serve_stdio_opening"]

log = logging.getLogger("agentmemory.tools.mcp_server")


class OpeningServer:
    """The MCP server of a store that ``open_memory`` opens (in a worker thread) while the
    client is answered.

    Args:
        open_memory: opens the store and returns its :class:`MemoryServer`; what it raises is
            the reason every request but ``initialize`` fails.

    Attributes:
        memory: the opened server, ``None`` until it is (and when opening failed); whoever
            runs this closes its store.
        failure: what opening raised, or ``None``.
    """

    def __init__(self, open_memory: Callable[[], MemoryServer]) -> None:
        self._open_memory = open_memory
        self.memory: MemoryServer | None = None
        self.failure: BaseException | None = None
        self._opened: anyio.Event | None = None
        self.server = new_server(self)

    async def _open(self, opened: anyio.Event) -> None:
        try:
            # abandoned when the client goes away first: the process does not wait for a slow
            # open (a server that does not answer) before it exits
            self.memory = await anyio.to_thread.run_sync(self._open_memory, abandon_on_cancel=True)
        except Exception as exc:
            self.failure = exc
            log.error("the memory store could not be opened: %s", _why(exc))
        finally:
            opened.set()

    async def _ready(self) -> MemoryServer:
        assert self._opened is not None, "run_stdio starts the open"
        await self._opened.wait()
        if self.memory is None:
            raise MCPError(
                types.INTERNAL_ERROR,
                f"the memory store could not be opened: {_why(self.failure)}",
            )
        return self.memory

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return await (await self._ready())._list_tools(ctx, params)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await (await self._ready())._call_tool(ctx, params)

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return await (await self._ready())._list_resources(ctx, params)

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return await (await self._ready())._read_resource(ctx, params)

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return await (await self._ready())._list_prompts(ctx, params)

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        return await (await self._ready())._get_prompt(ctx, params)

    async def run_stdio(self) -> None:
        """Serve over stdin and stdout until the client closes stdin, opening the store
        meanwhile; an open still running then is abandoned (:attr:`memory` stays ``None``).
        What the open raised is :attr:`failure` (logged when it happened)."""
        opened = self._opened = anyio.Event()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._open, opened)
            async with stdio_server() as (read_stream, write_stream):
                await self.server.run(
                    read_stream, write_stream, self.server.create_initialization_options()
                )
            tasks.cancel_scope.cancel()


def _why(exc: BaseException | None) -> str:
    """``exc``'s message without the ``agentmemory:`` every error of ours starts with."""
    return str(exc).removeprefix("agentmemory: ")


def serve_stdio_opening(server: OpeningServer) -> None:
    """Run ``server`` over stdio until the client disconnects (blocks; starts an event loop)."""
    anyio.run(server.run_stdio)
