"""An MCP server over the memory tools, with the official ``mcp`` SDK (low-level ``Server``).

It offers the four tools of :func:`agentmemory.tools` (schemas, descriptions and annotations as
they are), the rendered memory block as the resource ``memory://block`` (Markdown), and the
per-turn part as the prompt ``memory-recall``, which takes the turn's ``hint`` (the latest user
message) and returns one user message holding the entries recalled for it
(:func:`agentmemory.recall_part`, ``docs/kinds.md#the-per-turn-part``); with ``neutralise``
(``agentmemory mcp --neutralise``) both make entries' headings of level 1 to 3 level 4
(``docs/kinds.md#memory-is-data``). Its ``instructions`` are :func:`agentmemory.usage`. ``agentmemory mcp --path DIR --scope user --scope
project`` runs it over stdio (see :mod:`agentmemory.cli`).

A ``memory_save`` is built on the block the client last read through ``memory://block``: the
server keeps the manifest of the last block it served and hands it to the tools as ``rendered``
(before any read, saves are built on the stored entry, as without a block).

Tool calls and block reads run in a worker thread, one at a time and in the order the client sent
them (a first-in first-out lock taken on the event loop, so calls a client pipelines without waiting
for answers land in the journal in that order); the event loop keeps answering while a search
embeds its query. A call that has not started when the client cancels it
(``notifications/cancelled``) or goes away (closes stdin) never runs: the server drops the calls
queued behind the one in progress, lets that one finish (its cost is bounded:
``docs/recall.md#the-lexical-querys-cost``), and returns, so the caller closes the store and
releases its folder lock at once.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from ..duplicates import DEFAULT_DUPLICATE_POLICY, DUPLICATE_FLOOR
from ..kinds import DEFAULT_KIND_POLICIES, KindRegistry
from ..manifest import Manifest
from ..recalled import DEFAULT_RECALL_BYTES, recall_part
from ..render import DEFAULT_MAX_TOTAL_BYTES, render
from ..store import Store
from .adapters import call_tool
from .schemas import DEFAULT_SEARCH_BYTES, DEFAULT_SEARCH_LIMIT
from .texts import printable
from .tool import Tool
from .toolset import tools
from .usage import usage

__all__ = ["BLOCK_URI", "RECALL_PROMPT", "SERVER_NAME", "MemoryServer", "serve_stdio"]

log = logging.getLogger("agentmemory.tools.mcp_server")

BLOCK_URI = "memory://block"
"""The URI of the resource holding the rendered memory block (``text/markdown``)."""

RECALL_PROMPT = "memory-recall"
"""The name of the prompt that returns the per-turn part for its ``hint`` argument."""

NOTHING_RECALLED = "No memory recalled for this turn."
"""The prompt's message when recall finds nothing for the hint (so a client can always insert
what it gets)."""

SERVER_NAME = "agentmemory"
"""The server name given to MCP clients."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentmemory")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree not installed
        return "0"


class Handlers(Protocol):
    """What answers each MCP request the server takes: :class:`MemoryServer`, or
    :class:`agentmemory.tools.mcp_opening.OpeningServer` while the store opens."""

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult: ...

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult: ...

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult: ...

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult: ...

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult: ...

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult: ...


def new_server(handlers: Handlers) -> Server[Any]:
    """The SDK's low-level ``Server`` named :data:`SERVER_NAME`, with :func:`agentmemory.usage`
    as its instructions, answering with ``handlers``' methods. ``initialize`` needs no store."""
    return Server(
        SERVER_NAME,
        version=_version(),
        title="Agent memory",
        instructions=usage(),
        on_list_tools=handlers._list_tools,
        on_call_tool=handlers._call_tool,
        on_list_resources=handlers._list_resources,
        on_read_resource=handlers._read_resource,
        on_list_prompts=handlers._list_prompts,
        on_get_prompt=handlers._get_prompt,
    )


class MemoryServer:
    """The memory tools and block of one store, served over MCP.

    Args:
        store: the store to serve; the caller keeps ownership (closes it).
        scopes: writable scopes (see :func:`agentmemory.tools`).
        read_scopes: scopes search reads and writers refuse; the block renders them after
            ``scopes``.
        max_total_bytes: the bound of the rendered block, in UTF-8 bytes (default 32768).
        search_limit, search_bytes: as :func:`agentmemory.tools` takes them.
        policy: a :class:`~agentmemory.KindRegistry`: the block shows only its always-shown
            kinds, the ``memory-recall`` prompt recalls the others, and ``memory_save``'s
            ``type`` lists its kinds. ``None`` (default): the block shows every entry, and the
            prompt recalls only entries the block the model last read does not show as they
            are now (those its bound left out, and those saved or changed since), of any kind.
        recall_bytes: the bound of the per-turn part, in UTF-8 bytes (default 8192).
        neutralise: ``True``: headings of level 1 to 3 inside entries are made level 4 in the
            block and the per-turn part, so a saved entry cannot forge their structure
            (docs/kinds.md#memory-is-data), and the block's manifest names those entries in
            ``neutralised`` (saves are built on the stored hashes all the same). Default
            ``False``: the contract's bytes.
        duplicates, duplicate_floor: what ``memory_save`` does with near-duplicates, as
            :func:`agentmemory.tools` takes them (default ``"report"``).

    Raises:
        ToolConfigError: (a ``ValueError``) for scopes the tools refuse.
    """

    def __init__(
        self,
        store: Store,
        scopes: Sequence[str],
        *,
        read_scopes: Sequence[str] = (),
        max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
        search_limit: int = DEFAULT_SEARCH_LIMIT,
        search_bytes: int = DEFAULT_SEARCH_BYTES,
        policy: KindRegistry | None = None,
        recall_bytes: int = DEFAULT_RECALL_BYTES,
        neutralise: bool = False,
        duplicates: str = DEFAULT_DUPLICATE_POLICY,
        duplicate_floor: float = DUPLICATE_FLOOR,
    ) -> None:
        self.store = store
        self.policy = policy
        self.recall_bytes = recall_bytes
        self.neutralise = neutralise
        self._lock = threading.Lock()
        self._turns = anyio.Lock()  # first in, first out: calls run in the order they came
        self._shown: Manifest | None = None
        self.tools: list[Tool] = tools(
            store,
            scopes,
            read_scopes=read_scopes,
            rendered=self._last_shown,
            search_limit=search_limit,
            search_bytes=search_bytes,
            kinds=policy,
            duplicates=duplicates,
            duplicate_floor=duplicate_floor,
        )
        self.block_scopes = [*scopes, *read_scopes]
        self.max_total_bytes = max_total_bytes

    @functools.cached_property
    def server(self) -> Server[Any]:
        """The SDK server answering with this object's handlers (:func:`new_server`), made on
        first use: ``agentmemory mcp`` serves :class:`~agentmemory.tools.mcp_opening.OpeningServer`'s
        instead and never needs this one."""
        return new_server(self)

    def finish_calls(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` seconds for the call, read or prompt in progress to end and
        keep the next from starting (for a process about to stop: it never lets go); ``False``
        when one was still running at the bound."""
        return self._lock.acquire(timeout=timeout_s)

    def _last_shown(self) -> Manifest | None:
        return self._shown

    def block(self) -> str:
        """Render the block now (``memory://block``) and remember its manifest for saves."""
        text, manifest = render(
            self.store,
            self.block_scopes,
            max_total_bytes=self.max_total_bytes,
            policy=self.policy,
            neutralise=self.neutralise,
        )
        self._shown = manifest
        return self._sendable(text, ((m.scope, m.name) for m in manifest.entries if not m.reason))

    def recalled(self, hint: str) -> str:
        """The per-turn part for ``hint`` (``memory-recall``), or :data:`NOTHING_RECALLED`.
        Without a policy the block shows entries of every kind: those in the block the model
        last read (rendered now when it has read none) are not repeated here unless they
        changed since, and what its bound left out is recalled, of any kind."""
        policy = self.policy
        shown: list[tuple[str, str, str]] = []
        if policy is None:
            policy = _every_kind_recalled()
            manifest = self._shown
            if manifest is None:
                _, manifest = render(
                    self.store,
                    self.block_scopes,
                    max_total_bytes=self.max_total_bytes,
                    neutralise=self.neutralise,
                )
            shown = [(m.scope, m.name, m.hash) for m in manifest.entries if not m.reason]
        part, recalled = recall_part(
            self.store,
            self.block_scopes,
            hint,
            max_bytes=self.recall_bytes,
            policy=policy,
            neutralise=self.neutralise,
            shown=shown,
        )
        if part is None:
            return NOTHING_RECALLED
        return self._sendable(part.text, ((e.scope, e.name) for e in recalled.entries))

    def _sendable(self, text: str, shown: Iterable[tuple[str, str]]) -> str:
        """``text`` as valid UTF-8 (:func:`~agentmemory.tools.texts.printable`); when it was
        not, a warning on the server's log names the shown entries whose content holds
        undecodable bytes (a Markdown entry file edited by hand), so one such file never stops
        the server answering."""
        sent = printable(text)
        if sent is not text:
            bad = []
            for scope, name in shown:
                try:
                    content = self.store.get(scope, name).content
                except Exception:  # the entry changed meanwhile: nothing to name
                    continue
                if printable(content) is not content:
                    bad.append(f"{scope}/{name}")
            log.warning(
                "entries hold bytes that are not UTF-8, sent escaped (\\udcXX): %s",
                ", ".join(bad) or "(none shown now)",
            )
        return sent

    def mcp_tools(self) -> list[types.Tool]:
        """The tools as MCP ``Tool`` definitions, annotations included."""
        out = []
        for t in self.tools:
            a = t.annotations
            out.append(
                types.Tool(
                    name=t.name,
                    title=a["title"],
                    description=t.description,
                    input_schema=t.input_schema,
                    annotations=types.ToolAnnotations(
                        title=a["title"],
                        read_only_hint=a["readOnlyHint"],
                        destructive_hint=a["destructiveHint"],
                        idempotent_hint=a["idempotentHint"],
                        open_world_hint=a["openWorldHint"],
                    ),
                )
            )
        return out

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.mcp_tools())

    def _call_locked(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        with self._lock:
            result = call_tool(self.tools, name, arguments)
        return types.CallToolResult(
            content=[types.TextContent(text=result.text)], is_error=result.is_error
        )

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        async with self._turns:  # a call cancelled while it waits here never runs
            return await anyio.to_thread.run_sync(self._call_locked, params.name, params.arguments)

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        block = types.Resource(
            uri=BLOCK_URI,
            name="memory-block",
            title="Memory block",
            description="The memory the agent carries between sessions, rendered within its "
            f"budget of {self.max_total_bytes} bytes; read it into the system prompt each turn",
            mime_type="text/markdown",
        )
        return types.ListResourcesResult(resources=[block])

    def _block_locked(self) -> str:
        with self._lock:
            return self.block()

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if str(params.uri) != BLOCK_URI:
            raise MCPError(
                types.INVALID_PARAMS, f"no resource {params.uri}; this server has {BLOCK_URI}"
            )
        async with self._turns:
            text = await anyio.to_thread.run_sync(self._block_locked)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=BLOCK_URI, mime_type="text/markdown", text=text)
            ]
        )

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        prompt = types.Prompt(
            name=RECALL_PROMPT,
            title="Memory recalled for this turn",
            description="The memory entries recalled for what the conversation is about now "
            "(project notes, references), to put after the memory block for this turn only",
            arguments=[
                types.PromptArgument(
                    name="hint",
                    description="What the turn is about: the latest user message",
                    required=True,
                )
            ],
        )
        return types.ListPromptsResult(prompts=[prompt])

    def _recalled_locked(self, hint: str) -> str:
        with self._lock:
            return self.recalled(hint)

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != RECALL_PROMPT:
            raise MCPError(
                types.INVALID_PARAMS, f"no prompt {params.name}; this server has {RECALL_PROMPT}"
            )
        hint = (params.arguments or {}).get("hint")
        if not isinstance(hint, str):
            raise MCPError(
                types.INVALID_PARAMS, f"prompt {RECALL_PROMPT} needs the argument hint (text)"
            )
        async with self._turns:  # in order with the calls and reads sent before it
            text = await anyio.to_thread.run_sync(self._recalled_locked, hint)
        return types.GetPromptResult(
            description="Memory recalled for this turn",
            messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
        )

    async def run_stdio(self) -> None:
        """Serve over this process's stdin and stdout until the client closes stdin."""
        async with stdio_server() as (read_stream, write_stream):
            await self.server.run(
                read_stream, write_stream, self.server.create_initialization_options()
            )


def serve_stdio(server: MemoryServer) -> None:
    """Run ``server`` over stdio until the client disconnects (blocks; starts an event loop)."""
    anyio.run(server.run_stdio)


def _every_kind_recalled() -> KindRegistry:
    """The default kinds' caps with none always shown: the policy of the per-turn part beside a
    block rendered without a policy, which shows every kind (docs/kinds.md#the-per-turn-part)."""
    return KindRegistry(
        {k: dataclasses.replace(p, always=False) for k, p in DEFAULT_KIND_POLICIES.items()}
    )
