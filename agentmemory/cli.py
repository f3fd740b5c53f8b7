"""The ``agentmemory`` command line: a click group with one function per subcommand.

``agentmemory mcp --path DIR --scope user --scope project [--read-scope rules]`` serves the memory
tools and block of the store in ``DIR`` over MCP on stdio (also ``python -m agentmemory mcp``).

Each subcommand imports what it needs when it runs, so ``agentmemory --help`` stays fast.
"""

from __future__ import annotations

import logging
from pathlib import Path

import click

__all__ = ["main"]

JOURNAL_FILE = "journal.sqlite3"
"""The journal's file name inside a store folder (SPEC section 4)."""


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
    help="The store folder (created when missing): DIR/journal.sqlite3.",
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
    "--max-total-bytes",
    type=click.IntRange(min=1),
    default=32 * 1024,
    show_default=True,
    help="The bound of the rendered block (memory://block), in bytes.",
)
def mcp_command(
    path: Path, scopes: tuple[str, ...], read_scopes: tuple[str, ...], max_total_bytes: int
) -> None:
    """Serve the memory tools and the rendered block over MCP on stdio.

    The tools are memory_save, memory_patch, memory_forget and memory_search; the block is the
    resource memory://block. Stops when the client closes stdin.
    """
    logging.basicConfig(level=logging.WARNING)  # stderr: stdout carries the protocol
    from .mcp_server import MemoryServer, serve_stdio
    from .sqlite_store import SqliteStore
    from .tools import ToolConfigError

    store = SqliteStore(path / JOURNAL_FILE)
    try:
        try:
            server = MemoryServer(
                store, scopes, read_scopes=read_scopes, max_total_bytes=max_total_bytes
            )
        except ToolConfigError as exc:
            raise click.UsageError(str(exc)) from None
        serve_stdio(server)
    finally:
        store.close()
