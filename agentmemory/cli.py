"""The ``agentmemory`` command line: a click group with one function per subcommand.

``agentmemory mcp --path DIR --scope user --scope project [--read-scope rules] [--embedder NAME]``
serves the memory tools and block of the store in ``DIR`` (a :class:`~agentmemory.ChromaStore`:
``DIR/journal.sqlite3`` and ``DIR/chroma/``) over MCP on stdio (also ``python -m agentmemory mcp``).

Each subcommand imports what it needs when it runs, so ``agentmemory --help`` stays fast.
"""

from __future__ import annotations

import logging
from pathlib import Path

import click

__all__ = ["main"]


@click.group()
@click.version_option(package_name="agentmemory")
def main() -> None:
    """agentmemory: memory for LLM agents, kept in a journaled store."""


@main.command("mcp")
@click.option(
    "--path",
    "path",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The store folder (created when missing): DIR/journal.sqlite3 and DIR/chroma/.",
)
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    required=True,
    help="A scope the tools may read and write; repeat for several (e.g. user, project).",
)
@click.option(
    "--read-scope",
    "read_scopes",
    multiple=True,
    help="A scope memory_search reads and the writers refuse; repeat for several.",
)
@click.option(
    "--embedder",
    "embedder_name",
    default=None,
    metavar="NAME",
    help="The embedder by registry name (default: the packaged all-MiniLM-L6-v2, "
    "sentence-transformers:all-MiniLM-L6-v2; 'hashing' needs no model). A store keeps the "
    "embedder it was indexed with.",
)
@click.option(
    "--max-total-bytes",
    type=click.IntRange(min=1),
    default=32 * 1024,
    show_default=True,
    help="The bound of the rendered block (memory://block), in bytes.",
)
def mcp_command(
    path: Path,
    scopes: tuple[str, ...],
    read_scopes: tuple[str, ...],
    embedder_name: str | None,
    max_total_bytes: int,
) -> None:
    """Serve the memory tools and the rendered block over MCP on stdio.

    The tools are memory_save, memory_patch, memory_forget and memory_search; the block is the
    resource memory://block. Stops when the client closes stdin.
    """
    logging.basicConfig(level=logging.WARNING)  # stderr: stdout carries the protocol
    import embedders

    from .chroma_store import ChromaStore
    from .errors import AgentMemoryError
    from .mcp_server import MemoryServer, serve_stdio
    from .mem_store import MemStore
    from .tools import ToolConfigError, tools

    try:  # refuse bad scopes before the store folder is created or a model is loaded
        tools(MemStore(), scopes, read_scopes=read_scopes)
    except ToolConfigError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        embedder = embedders.get(embedder_name or embedders.DEFAULT_EMBEDDER)
    except embedders.UnknownEmbedderError as exc:
        raise click.BadParameter(str(exc), param_hint="--embedder") from None
    try:
        store = ChromaStore.open(path, embedder=embedder)
    except AgentMemoryError as exc:  # locked by another process, another embedder, not ours
        raise click.ClickException(str(exc)) from None
    try:
        server = MemoryServer(
            store, scopes, read_scopes=read_scopes, max_total_bytes=max_total_bytes
        )
        serve_stdio(server)
    finally:
        store.close()
