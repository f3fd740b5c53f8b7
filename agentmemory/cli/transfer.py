"""The commands that move entries in and out of a store: ``import`` and ``export`` (JSON
Lines or a Markdown folder), and ``reconcile`` (a person's edits of a Markdown folder)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from ..jsonl import IMPORT_BATCH
from ..wording import counted
from .group import CliError, main
from .opening import open_index, opened_journal
from .options import (
    bar_disabled,
    embedder_option,
    folder_option,
    hosted_options,
    json_option,
    path_option,
    progress_options,
    server_options,
    session_option,
)
from .output import change_line, echo_json, index_behind, note


@main.command("import", short_help="Import entries from JSON Lines or a Markdown folder.")
@click.argument("source", metavar="FILE|DIR")
@click.option(
    "--scope",
    "default_scope",
    default=None,
    help="The scope of lines that name none.",
)
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=IMPORT_BATCH,
    show_default=True,
    help="Entries per journal transaction (and per progress step).",
)
@progress_options
@session_option
@path_option
@embedder_option
@server_options
@json_option
def import_command(
    source: str,
    default_scope: str | None,
    batch: int,
    progress: bool | None,
    quiet: bool,
    session_id: str | None,
    path: Path | None,
    embedder_name: str | None,
    shared: bool,
    as_json: bool,
) -> None:
    """Import entries from FILE, JSON Lines ('-' for stdin), or from DIR, a Markdown folder
    (every DIR/<scope>/<name>.md, checked whole first; the folder is only read).

    Each line is an object {"scope", "name", "content", "meta"?} (the form `list --json`
    prints; its hash and updated are ignored). Blank lines are skipped.

    All or nothing for a bad file: every line is checked first (JSON, members, entry rules,
    size, an entry given twice), and one bad line imports nothing and names its line number.
    A good file is written in batches of --batch entries, each one journal transaction. Entries
    already stored with the same content and meta are skipped, so if writing stops midway
    (store locked, disk full) the batches before it stand, and running the same import again
    finishes it.

    A batch that is written but whose vectors could not all be made still counts as imported
    (``index_pending`` in ``--json`` output counts its entries); a warning on stderr says
    so, and the index catches up at the next write or open, or with 'agentmemory verify
    --repair'.
    """
    from tqdm import tqdm

    from ..jsonl import import_entries, read_entries

    if source != "-" and Path(source).expanduser().is_dir():
        _import_markdown(
            Path(source).expanduser(),
            path,
            embedder_name,
            session_id,
            as_json,
            disable=bar_disabled(progress, quiet),
        )
        return
    lines = read_entries(
        sys.stdin.buffer if source == "-" else Path(source).expanduser(), scope=default_scope
    )
    started = time.perf_counter()
    with (
        open_index(path, embedder_name, create=True, shared=shared) as store,
        tqdm(
            total=len(lines),
            desc="import",
            unit="entry",
            disable=bar_disabled(progress, quiet),
            file=sys.stderr,
        ) as bar,
    ):
        report = import_entries(store, lines, batch=batch, session=session_id, progress=bar.update)
    seconds = time.perf_counter() - started
    if report.note:  # a store opened journal-only: the process holding the index indexes them
        note(report.note)
    if report.index_pending:
        index_behind(report.index_pending, report.index_error)
    if as_json:
        echo_json(
            {
                "imported": report.imported,
                "unchanged": report.unchanged,
                "scopes": report.scopes,
                "first_seq": report.first_seq,
                "last_seq": report.last_seq,
                "index_pending": len(report.index_pending),
                "seconds": round(seconds, 3),
            }
        )
        return
    scopes = ", ".join(f"{s} {n}" for s, n in report.scopes.items())
    click.echo(
        f"imported {counted(report.imported, 'entry')}{f' ({scopes})' if scopes else ''} in {seconds:.1f} s"
        + (f"; {report.unchanged} already stored unchanged" if report.unchanged else "")
    )


@main.command("export", short_help="Write every live entry as JSON Lines or a Markdown folder.")
@click.argument("scopes", nargs=-1)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to this file (replaced when it exists) instead of stdout.",
)
@click.option(
    "--format",
    "out_format",
    type=click.Choice(["jsonl", "markdown"]),
    default="jsonl",
    show_default=True,
    help="jsonl: JSON Lines. markdown: a new Markdown folder, the first argument (export "
    "--format markdown DIR [SCOPES]...).",
)
@progress_options
@hosted_options
@folder_option
def export_command(
    scopes: tuple[str, ...],
    output: Path | None,
    out_format: str,
    progress: bool | None,
    quiet: bool,
    path: Path | None,
) -> None:
    """Write the live entries of SCOPES (default: every scope) as JSON Lines, one entry per line
    by scope then name, in the form `agentmemory import` takes back exactly; or, with --format
    markdown DIR, as a new Markdown folder DIR (one DIR/<scope>/<name>.md per entry, a journal
    of their creation) that `agentmemory import DIR` takes back exactly.

    Reads the journal only (no model, no index), so it runs beside a running `agentmemory mcp`;
    with --dsn, the PostgreSQL journal (--chroma-url is not needed).
    """
    from tqdm import tqdm

    from ..jsonl import export_entries, export_file

    if out_format == "markdown":
        from agentmemory.stores.markdown.transfer import export_markdown

        if output is not None or not scopes:
            raise click.UsageError(
                "give the Markdown folder as the first argument: export --format markdown DIR "
                "[SCOPES]... (not --output)"
            )
        folder = Path(scopes[0]).expanduser()
        with (
            opened_journal(path) as store,
            tqdm(
                desc="export", unit="entry", disable=bar_disabled(progress, quiet), file=sys.stderr
            ) as bar,
        ):
            written = export_markdown(store, folder, scopes=scopes[1:], progress=bar.update)
        click.echo(
            f"exported {counted(len(written), 'entry')} to the Markdown folder {folder}", err=True
        )
        return
    with (
        opened_journal(path) as store,
        tqdm(
            desc="export",
            unit="entry",
            disable=bar_disabled(progress, quiet),
            file=sys.stderr,
        ) as bar,
    ):
        if output is None:
            export_entries(store, sys.stdout, scopes, progress=bar.update)
            return
        count = export_file(store, output, scopes, progress=bar.update)
    click.echo(f"exported {counted(count, 'entry')} to {output}", err=True)


def _import_markdown(
    folder: Path,
    path: Path | None,
    embedder_name: str | None,
    session_id: str | None,
    as_json: bool,
    *,
    disable: bool | None,
) -> None:
    """``agentmemory import DIR``: every entry file of the Markdown folder, all or nothing;
    a bar on stderr unless ``disable`` (tqdm's: ``None`` shows it on a terminal only)."""
    from tqdm import tqdm

    from agentmemory.stores.markdown.transfer import import_markdown

    def size(n: int) -> None:
        bar.total = n
        bar.refresh()

    started = time.perf_counter()
    with (
        open_index(path, embedder_name, create=True) as store,
        tqdm(desc="import", unit="entry", disable=disable, file=sys.stderr) as bar,
    ):
        changes = import_markdown(
            folder, store, session=session_id or "import", progress=bar.update, total=size
        )
    seconds = time.perf_counter() - started
    if as_json:
        echo_json(
            {
                "imported": len(changes),
                "first_seq": changes[0].seq if changes else 0,
                "last_seq": changes[-1].seq if changes else 0,
                "seconds": round(seconds, 3),
            }
        )
        return
    click.echo(f"imported {counted(len(changes), 'entry')} from the Markdown folder {folder}")


@main.command("reconcile", short_help="Journal what a person changed in a Markdown folder.")
@path_option
@json_option
def reconcile_command(path: Path | None, as_json: bool) -> None:
    """Journal every entry file of a Markdown folder that a person edited, added or removed
    since the journal last recorded it, as 'reconciled' records (no session), in scope/name
    order. A file the store cannot journal (empty, over the entry bound, bad meta) is left
    alone and named on stderr. Search finds a person's edit once it is journaled.
    """
    from agentmemory.stores.markdown.store import FileStore

    with opened_journal(path) as store:
        if not isinstance(store, FileStore):
            raise CliError(
                f"{store.where} is not a Markdown folder (it has no journal.jsonl); reconcile "
                "journals the hand edits of a Markdown folder"
            )
        done = store.reconcile()
    for f in done.unjournaled:
        click.echo(f"agentmemory: left alone {f.path}: {f.reason}", err=True)
    for d in done.damaged:
        click.echo(f"agentmemory: damaged journal line skipped: {d.describe()}", err=True)
    if as_json:
        from ..wire import encode_change

        echo_json(
            {
                "changes": [json.loads(encode_change(c)) for c in done.changes],
                "unjournaled": [
                    {"path": str(f.path), "key": f.key, "reason": f.reason}
                    for f in done.unjournaled
                ],
                "damaged": [d.describe() for d in done.damaged],
            }
        )
        return
    for c in done.changes:
        click.echo(change_line(c))
    n = len(done.changes)
    click.echo(f"reconciled {n} {'change' if n == 1 else 'changes'}")
