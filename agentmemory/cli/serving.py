"""The commands that serve a store to other processes: ``mcp`` (the tools over MCP on stdio)
and the ``server`` group (the folder's own Chroma server)."""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import click

from ..render import DEFAULT_MAX_TOTAL_BYTES
from .group import main, progress_muted
from .opening import embedder_named, open_args, opening
from .options import (
    bytes_option,
    duplicates_options,
    embedder_option,
    json_option,
    neutralise_option,
    path_option,
    policy_option,
    server_options,
)
from .output import echo_json, to_stderr

STOP_WAIT_S = 10.0
"""How long ``agentmemory mcp`` lets a call in progress finish on Ctrl-C or SIGTERM, in seconds."""


@main.command("mcp", short_help="Serve the memory tools over MCP on stdio.")
@path_option
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
@embedder_option
@server_options
@bytes_option(
    "--max-total-bytes",
    DEFAULT_MAX_TOTAL_BYTES,
    "The bound of the rendered block (memory://block), in bytes.",
)
@policy_option(
    "default: the block shows only user and feedback entries, and the prompt "
    "memory-recall recalls the others per turn; none: the block shows every entry."
)
@neutralise_option(
    "Make headings of level 1 to 3 inside entries level 4 in memory://block and the "
    "memory-recall prompt, so content cannot forge their structure."
)
@duplicates_options
def mcp_command(
    path: Path | None,
    scopes: tuple[str, ...],
    read_scopes: tuple[str, ...],
    embedder_name: str | None,
    shared: bool,
    max_total_bytes: int,
    policy: str,
    neutralise: bool,
    duplicates: str,
    duplicate_floor: float,
) -> None:
    """Serve the memory tools, the rendered block and the per-turn part over MCP on stdio.

    The tools are memory_save, memory_patch, memory_forget and memory_search; the block is the
    resource memory://block; the prompt memory-recall takes a hint and returns what is recalled
    for it. Stops when the client closes stdin.
    """
    logging.basicConfig(level=logging.WARNING)  # stderr: stdout carries the protocol
    from agentmemory.opening import open_store

    from ..tools import ToolConfigError, check_tool_scopes
    from ..tools.mcp_opening import OpeningServer, serve_stdio_opening
    from ..tools.mcp_server import MemoryServer

    try:  # refuse bad scopes before the store folder is created or a model is loaded
        check_tool_scopes(scopes, read_scopes)
    except ToolConfigError as exc:
        raise click.UsageError(str(exc)) from None
    embedder = embedder_named(embedder_name) if embedder_name is not None else None
    where = open_args(path)  # read from the command line here; the store opens in a worker
    opened: list[Any] = []

    def open_memory() -> MemoryServer:
        """Open the store (answered meanwhile: docs/contract.md#serving-over-mcp)."""
        from ..kinds import KindRegistry

        with opening():
            store = open_store(embedder=embedder, create=True, shared=shared, **where)
        opened.append(store)
        return MemoryServer(
            store,
            scopes,
            read_scopes=read_scopes,
            max_total_bytes=max_total_bytes,
            policy=KindRegistry() if policy == "default" else None,
            neutralise=neutralise,
            duplicates=duplicates,
            duplicate_floor=duplicate_floor,
        )

    serving = OpeningServer(open_memory)

    def stop(signum: int, frame: object) -> None:
        """Ctrl-C or SIGTERM: let the call in progress end (10 s at most), close the store and
        exit at once, without waiting for the thread that reads stdin (it cannot be stopped)."""
        memory = serving.memory
        if memory is not None:
            memory.finish_calls(STOP_WAIT_S)
        for store in opened:
            store.close()
        click.echo(f"agentmemory: mcp stopped ({signal.Signals(signum).name})", err=True)
        sys.stderr.flush()
        os._exit(128 + signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    try:
        serve_stdio_opening(serving)
    finally:
        for store in opened:
            store.close()
    if serving.failure is not None:  # logged when it happened: exit without a second line
        sys.exit(2 if isinstance(serving.failure, click.UsageError) else 1)


@main.group("server", short_help="Start, stop or show the store's own Chroma server.")
def server_group() -> None:
    """The store folder's own Chroma server (`chroma run` from the installed chromadb), on
    127.0.0.1 and a free port, detached. While it runs, every agentmemory process opening the
    folder (the command line, `agentmemory mcp`, Python) uses it, so several of them can search
    and write the store at once."""


def _record_json(record: Any, running: bool) -> dict[str, Any]:
    return {
        "running": running,
        "url": record.url,
        "pid": record.pid,
        "port": record.port,
        "started": record.started,
        "chromadb": record.chromadb,
    }


@server_group.command("start", short_help="Start the server (nothing when one runs).")
@click.option(
    "--port",
    type=click.IntRange(min=1, max=65535),
    default=None,
    help="The TCP port on 127.0.0.1 (default: a free one).",
)
@path_option
@json_option
def server_start_command(port: int | None, path: Path | None, as_json: bool) -> None:
    """Start the store's Chroma server, detached, and record it in the store folder."""
    from agentmemory.opening import start_folder_server, store_folder

    folder = store_folder(path)
    with opening(), progress_muted():  # it counts the entries it indexes itself
        done = start_folder_server(folder, port=port, announce=to_stderr)
    record = done.record
    if as_json:
        echo_json(_record_json(record, True))
        return
    verb = "started" if done.started else "already running"
    click.echo(f"Chroma server {verb} for {folder} at {record.url} (pid {record.pid})")


@server_group.command("stop", short_help="Stop the server.")
@path_option
def server_stop_command(path: Path | None) -> None:
    """Stop the store's Chroma server and remove its record."""
    from agentmemory.opening import store_folder
    from agentmemory.stores.chroma.server import stop_server

    folder = store_folder(path)
    record = stop_server(folder)
    if record is None:
        click.echo(f"no Chroma server recorded for {folder}")
        return
    click.echo(f"stopped the Chroma server of {folder} ({record.url}, pid {record.pid})")


@server_group.command("status", short_help="Show the server (exit 1 when none runs).")
@path_option
@json_option
def server_status_command(path: Path | None, as_json: bool) -> None:
    """Show whether the store's Chroma server runs, where, since when, of which chromadb."""
    from agentmemory.opening import store_folder
    from agentmemory.stores.chroma.server import live_record, read_record

    folder = store_folder(path)
    record = read_record(folder)
    running = record is not None and live_record(folder, report=False) is not None
    if as_json:
        echo_json(_record_json(record, running) if record is not None else {"running": False})
    elif record is None:
        click.echo(f"no Chroma server recorded for {folder}")
    elif running:
        click.echo(
            f"Chroma server of {folder} running at {record.url} (pid {record.pid}, since "
            f"{record.started}, chromadb {record.chromadb})"
        )
    else:
        click.echo(
            f"the Chroma server recorded for {folder} ({record.url}, pid {record.pid}) is not "
            f"running; 'agentmemory server start --path {folder}' replaces it"
        )
    if not running:
        sys.exit(1)
