"""``agentmemory ui``: the memory inspector, a local web page over the store
(:mod:`agentmemory.ui`, docs/inspector.md)."""

from __future__ import annotations

import secrets
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import click

from .group import CliError, main
from .opening import open_args
from .options import embedder_option, path_option


@main.command("ui", short_help="Look at the memory in a local web page.")
@click.option(
    "--port",
    type=click.IntRange(min=0, max=65535),
    default=0,
    show_default=True,
    help="The TCP port on 127.0.0.1 (0: a free one).",
)
@click.option(
    "--write",
    is_flag=True,
    help="Allow edit, forget and purge from the page (conditional writes; the store's write "
    "lock is taken for each one). Default: read-only, never taking the lock.",
)
@click.option(
    "--browser/--no-browser",
    default=None,
    help="Open the page in a browser (default: when stdout is a terminal).",
)
@path_option
@embedder_option
def ui_command(
    port: int, write: bool, browser: bool | None, path: Path | None, embedder_name: str | None
) -> None:
    """Serve the memory inspector on 127.0.0.1 until Ctrl-C: scopes and entries, each entry's
    history with diffs, the block the model reads with its manifest, search with each leg's
    rank, and verify's findings. The first line printed is the page's URL, with the random
    token every request needs."""
    from agentmemory.opening import open_journal, open_store
    from agentmemory.ui import Source, create_app, serve
    from agentmemory.ui.serve import DEFAULT_HOST, bind

    where = open_args(path)
    with _opened(open_journal(where["path"], format=where["format"], dsn=where["dsn"])) as j:
        # a folder's journal file names its folder; a Markdown folder is its path; else its DSN
        found = getattr(j, "path", None) or getattr(j, "where", "")
        label = _home_short(found.parent if isinstance(found, Path) and found.is_file() else found)

    def journal() -> AbstractContextManager[Any]:
        return _opened(open_journal(where["path"], format=where["format"], dsn=where["dsn"]))

    def index() -> AbstractContextManager[Any]:
        return _opened(open_store(embedder=embedder_name, create=False, read_only=True, **where))

    def writer() -> AbstractContextManager[Any]:
        return _opened(open_store(embedder=embedder_name, create=False, **where))

    target = _target_args(where)
    verify = [sys.executable, "-c", "from agentmemory.cli import main; main()", "verify", "--json"]
    repair = "agentmemory verify --repair " + " ".join(target)
    source = Source(
        label=label,
        journal=journal,
        index=index,
        writer=writer if write else None,
        verify=[*verify, *target],
        repair=repair.strip(),
    )
    token = secrets.token_urlsafe(24)
    try:
        sock = bind(DEFAULT_HOST, port)
    except OSError as exc:
        raise CliError(f"cannot listen on {DEFAULT_HOST}:{port}: {exc.strerror or exc}") from None
    url = f"http://{DEFAULT_HOST}:{sock.getsockname()[1]}/?token={token}"
    show = sys.stdout.isatty() if browser is None else browser

    def ready() -> None:
        click.echo(url)
        click.echo(
            f"agentmemory: inspecting {label} ({'read-write' if write else 'read-only'}); "
            "Ctrl-C stops it",
            err=True,
        )
        sys.stdout.flush()
        if show:
            import webbrowser  # only here: every command loads this module

            webbrowser.open(url)

    serve(create_app(source, token=token), sock, ready=ready)


def _opened(store: Any) -> AbstractContextManager[Any]:
    return store  # type: ignore[no-any-return]


def _target_args(where: dict[str, Any]) -> list[str]:
    """The options that name the same store to another agentmemory command."""
    if where.get("dsn"):
        out = ["--dsn", str(where["dsn"])]
        if where.get("chroma_url"):
            out += ["--chroma-url", str(where["chroma_url"])]
        return out
    return ["--path", str(where["path"])] if where.get("path") else []


def _home_short(where: object) -> str:
    """A folder as the page's header names it: under the home folder as ``~/...``, as a shell
    does; anything else (another folder, a DSN) as it is."""
    if isinstance(where, Path):
        try:
            return str(Path("~") / where.resolve().relative_to(Path.home().resolve()))
        except (ValueError, RuntimeError):  # not under home, or no home
            return str(where)
    return str(where)
