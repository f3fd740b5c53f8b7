"""The commands that write or read entries one by one: ``save``, ``get``, ``list``,
``forget``, ``purge`` and ``forget-session``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..duplicates import cure_words, duplicate_words
from ..kinds import KindRegistry
from ..wording import counted
from .group import CliError, main
from .opening import open_args, open_index, opened_journal, opening
from .options import (
    duplicates_options,
    embedder_option,
    json_option,
    parse_key,
    parse_meta,
    path_option,
    server_options,
    session_option,
)
from .output import index_behind, note, one_line, when


@main.command("save", short_help="Create or replace an entry.")
@click.argument("key")
@click.argument("content", required=False)
@click.option(
    "--meta",
    "meta_pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="A meta value (repeat for several). Left out, with no --description, the stored "
    "entry's meta is kept.",
)
@click.option("--description", default=None, help="Shorthand for --meta description=TEXT.")
@click.option("--no-meta", is_flag=True, help="Clear the stored entry's meta.")
@click.option(
    "--type",
    "kind",
    type=click.Choice(KindRegistry().kinds()),
    default=None,
    help="The kind of memory, as memory_save's type: user (facts about the user), feedback (how "
    "the user wants the work done), project (notes on the work), reference (where to find "
    "outside material); stored as the type in meta, beside the meta kept or given.",
)
@click.option(
    "--supersedes",
    default=None,
    metavar="NAME",
    help="The name of an entry of the same scope that this one makes out of date: it leaves the "
    "block and search, and stays in the journal and get (docs/kinds.md). It must exist.",
)
@click.option(
    "--if-hash",
    default=None,
    metavar="HASH",
    help="Write only if the stored content hash is HASH ('' means: only if absent).",
)
@duplicates_options
@session_option
@path_option
@embedder_option
@server_options
@json_option
def save_command(
    key: str,
    content: str | None,
    meta_pairs: tuple[str, ...],
    description: str | None,
    no_meta: bool,
    kind: str | None,
    supersedes: str | None,
    if_hash: str | None,
    duplicates: str,
    duplicate_floor: float,
    session_id: str | None,
    path: Path | None,
    embedder_name: str | None,
    shared: bool,
    as_json: bool,
) -> None:
    """Create or replace the entry KEY (SCOPE/NAME) with CONTENT.

    CONTENT is the argument, or stdin when it is '-' or left out. The write is journaled and
    the entry's vector updated before the command returns. With --supersedes, the output says
    what the write retired (with --json, the member "retired": scope, name, size, hash).
    When live entries say nearly the same (by meaning), it names up to 3 of them on stderr
    (with --json, the member "duplicates"); --duplicates refuse refuses such a save instead.
    """
    from ..save_entry import CLI_CURES, save_entry
    from ..wire import encode_change, go_json

    scope, name = parse_key(key)
    if content is None or content == "-":
        if content is None and sys.stdin.isatty():
            raise click.UsageError("give the content as an argument, or on stdin")
        content = sys.stdin.read()
    meta = parse_meta(meta_pairs)
    if description is not None:
        meta["description"] = description
    if no_meta and meta:
        raise click.UsageError("--no-meta clears the meta; do not give --meta or --description")
    where = open_args(path)
    with opening():
        saved = save_entry(
            where.pop("path"),
            scope,
            name,
            content,
            meta=meta or ({} if no_meta else None),  # None keeps the stored entry's meta
            kind=kind,
            supersedes=supersedes,
            if_hash=if_hash,
            session=session_id,
            duplicates=duplicates,
            duplicate_floor=duplicate_floor,
            embedder=embedder_name,
            shared=shared,
            **where,
        )
    if saved.index_error is not None:
        index_behind(saved.index_error.changes, saved.index_error.__cause__)
    change = saved.change
    retired = [saved.retired] if saved.retired is not None else []
    if change.note:  # journal-only (the index held elsewhere, damaged, read-only): say so
        note(change.note)
    if as_json:
        line = encode_change(change)
        extra: dict[str, object] = {}  # members of our own after the record's: decode ignores
        if retired:
            gone = retired[0]
            extra["retired"] = {
                "scope": gone.scope,
                "name": gone.name,
                "size": gone.size,
                "hash": gone.hash,
            }
        if saved.duplicates:
            extra["duplicates"] = [d.to_json() for d in saved.duplicates]
        if extra:
            line = go_json({**json.loads(line), **extra})
        click.echo(line)
        return
    verb = "replaced" if change.replaced else "created"
    click.echo(
        f"{verb} {change.entry.key}: {change.entry.size} bytes, "
        f"{change.entry.hash}, journal seq {change.seq}"
    )
    for gone in retired:  # memory_save's words
        click.echo(
            f"retired {gone.key} ({gone.size} bytes), which leaves the memory block and search "
            "and stays in the journal"
        )
    if saved.duplicates:
        cure = cure_words(saved.duplicates, change.entry.key, CLI_CURES, landed=True)
        note(f"near-duplicates: {duplicate_words(saved.duplicates)}; {cure}")


@main.command("get", short_help="Print one entry.")
@click.argument("key")
@path_option
@json_option
def get_command(key: str, path: Path | None, as_json: bool) -> None:
    """Print the live entry KEY (SCOPE/NAME): a header, its meta, then its content."""
    from ..wire import encode_entry

    scope, name = parse_key(key)
    with opened_journal(path) as store:
        entry = store.get(scope, name)
    if as_json:
        click.echo(encode_entry(entry))
        return
    click.echo(f"{entry.key}  ({entry.size} bytes, updated {when(entry)} UTC, {entry.hash})")
    for k, v in sorted((entry.meta or {}).items()):
        click.echo(f"{k}: {v}")
    click.echo("")
    click.echo(entry.content.rstrip("\n"))


@main.command("list", short_help="List the entries of some or all scopes.")
@click.argument("scopes", nargs=-1)
@click.option("--full", is_flag=True, help="Show each entry's whole content, not one line.")
@path_option
@json_option
def list_command(scopes: tuple[str, ...], full: bool, path: Path | None, as_json: bool) -> None:
    """List the live entries of SCOPES (default: every scope), by scope then name.

    With --json: one entry per line, in the form `agentmemory import` reads back (what
    `agentmemory export` writes).
    """
    from ..jsonl import export_entries
    from ..rules import check_scope

    for scope in scopes:
        check_scope(scope)
    with opened_journal(path) as store:
        if as_json:
            export_entries(store, sys.stdout, scopes)
            return
        wanted = list(dict.fromkeys(scopes)) or store.scopes()
        entries = [e for scope in wanted for e in store.list(scope)]
    if not entries:
        where = ", ".join(wanted) if wanted else "the store"
        click.echo(f"no entries in {where}")
        return
    width = max(len(e.key) for e in entries)
    for e in entries:
        text = e.description or e.content
        if full:
            click.echo(f"{e.key}  ({e.size} bytes, updated {when(e)} UTC)")
            click.echo(e.content.rstrip("\n"))
            click.echo("")
        else:
            click.echo(f"{e.key:<{width}}  {e.size:>5} B  {when(e)}  {one_line(text, 80)}")


@main.command("forget", short_help="Forget an entry (journals a tombstone).")
@click.argument("key")
@session_option
@path_option
@embedder_option
@server_options
@json_option
def forget_command(
    key: str,
    session_id: str | None,
    path: Path | None,
    embedder_name: str | None,
    shared: bool,
    as_json: bool,
) -> None:
    """Forget the entry KEY (SCOPE/NAME): journal a tombstone and drop its vector.

    The tombstone keeps the last content, so `agentmemory journal` still shows it.
    """
    from ..errors import IndexWriteError
    from ..wire import encode_change

    scope, name = parse_key(key)
    with open_index(path, embedder_name, create=False, shared=shared) as store:
        try:
            change = store.forget(scope, name, session=session_id)
        except IndexWriteError as exc:
            change = exc.changes[0]
            index_behind(exc.changes, exc.__cause__)
    if change.note:
        note(change.note)
    if as_json:
        click.echo(encode_change(change))
        return
    click.echo(f"forgot {change.entry.key} (journal seq {change.seq})")


@main.command("purge", short_help="Erase an entry for good, every version (with a receipt).")
@click.argument("key")
@click.option("--reason", required=True, help="Why it is erased; recorded in the journal.")
@session_option
@path_option
@embedder_option
def purge_command(
    key: str, reason: str, session_id: str | None, path: Path | None, embedder_name: str | None
) -> None:
    """Purge the entry KEY (SCOPE/NAME): tombstone it if live, replace the content and hashes of
    every journal record it has, drop it from both indexes, rewrite the files, and print the
    receipt and what verify_erased found (docs/contract.md#purge-erasing-an-entry-for-good).

    The memory tools cannot purge; only this command and the library can.
    """
    from ..errors import NotFoundError

    scope, name = parse_key(key)
    with open_index(path, embedder_name, create=False) as store:
        purge = getattr(store, "purge", None)
        if purge is None or not getattr(store, "can_purge", True):
            raise CliError(f"this {type(store).__name__}'s journal cannot purge yet")
        try:
            receipt = purge(scope, name, reason=reason, session=session_id)
        except NotFoundError as exc:
            raise CliError(str(exc)) from None
        click.echo(str(receipt))
        click.echo(str(getattr(store, "verify_erased")(scope, name)))  # noqa: B009


@main.command("forget-session", short_help="Forget what one session wrote in given scopes.")
@click.argument("session")
@click.argument("scopes", nargs=-1, required=True)
@path_option
@embedder_option
@server_options
@json_option
def forget_session_command(
    session: str,
    scopes: tuple[str, ...],
    path: Path | None,
    embedder_name: str | None,
    shared: bool,
    as_json: bool,
) -> None:
    """Forget every live entry of SCOPES whose current state session SESSION wrote: one
    tombstone each (``store.forget_session``, docs/kinds.md). At least one scope is required
    and every scope must be known to the store, so a typo never widens what is forgotten."""
    from ..wire import encode_change

    with open_index(path, embedder_name, create=False, shared=shared) as store:
        changes = store.forget_session(session, list(scopes))
    if as_json:
        for change in changes:
            click.echo(encode_change(change))
        return
    for change in changes:
        click.echo(f"forgot {change.entry.key} (journal seq {change.seq})")
    click.echo(f"session {session}: forgot {counted(len(changes), 'entry')} in {', '.join(scopes)}")
