"""The commands that read the journal: ``journal`` and ``lost-updates``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .group import main
from .opening import opened_journal
from .options import json_option, path_option
from .output import change_line, echo_json, short_hash


@main.command("journal", short_help="Print the journal of writes.")
@click.option(
    "--after", type=click.IntRange(min=0), default=0, help="Only records with seq above this."
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="At most this many records."
)
@path_option
@json_option
def journal_command(after: int, limit: int | None, path: Path | None, as_json: bool) -> None:
    """Print the journal: every write, in order (seq, time, kind, entry, content hash).

    With --json: one record per line in the Go module's journal.jsonl form.
    """
    from ..wire import encode_change

    with opened_journal(path) as store:
        shown = 0
        for change in store.journal(after):
            if limit is not None and shown >= limit:
                break
            click.echo(encode_change(change) if as_json else change_line(change))
            shown += 1
    if not shown and not as_json:
        click.echo(f"no journal records after seq {after}")


@main.command("lost-updates", short_help="List writes that overwrote a change unseen.")
@click.option(
    "--after", type=click.IntRange(min=0), default=0, help="Only records with seq above this."
)
@path_option
@json_option
def lost_updates_command(after: int, path: Path | None, as_json: bool) -> None:
    """List lost updates: writes built on another state than the one they replaced.

    Each is a journal record whose writer read (or was shown) an older version of the entry
    than the journal held when it wrote; the change in between was overwritten unseen.
    """
    from agentmemory.lost_updates import lost_updates

    from ..wire import encode_change

    with opened_journal(path) as store:
        found = lost_updates(store, after)
    if as_json:
        for lost in found:
            echo_json(
                {
                    "seq": lost.change.seq,
                    "key": lost.change.entry.key,
                    "prev": lost.change.prev,
                    "over": lost.over,
                    "session": lost.change.session,
                    "change": json.loads(encode_change(lost.change)),
                }
            )
        return
    if not found:
        click.echo(f"no lost updates after seq {after}")
        return
    for lost in found:
        c = lost.change
        who = f" by session {c.session}" if c.session else ""
        click.echo(
            f"seq {c.seq}: {c.entry.key} was written{who} on {short_hash(c.prev)}, but the "
            f"journal held {short_hash(lost.over) if lost.over else 'no entry'}"
        )
