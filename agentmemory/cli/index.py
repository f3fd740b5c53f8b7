"""The commands that check and rebuild the indexes: ``verify`` and ``reindex``."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..wording import counted
from .group import CliError, main, progress_muted
from .opening import open_args, open_index, open_moving_damage, opened_journal, opening
from .options import embedder_option, json_option, path_option, server_options
from .output import echo_json

if TYPE_CHECKING:
    from agentmemory.stores.markdown.store import FileStore


@main.command("verify", short_help="Check the vector index against the journal.")
@click.option(
    "--repair", is_flag=True, help="Embed what is missing or stale and drop what is extra."
)
@click.option(
    "--drop-orphans",
    is_flag=True,
    help="With --repair: also drop the vectors of entries the journal never had (kept by "
    "default as evidence that the journal lost records).",
)
@path_option
@embedder_option
@server_options
@json_option
def verify_command(
    repair: bool,
    drop_orphans: bool,
    path: Path | None,
    embedder_name: str | None,
    shared: bool,
    as_json: bool,
) -> None:
    """Check that the vector index matches the journal (exit status 1 when it does not).

    Opening the store first replays journal records the index has not seen.
    """
    with _journal_damage_reported(as_json=as_json):
        from agentmemory.errors import IndexDamagedError, IndexReadOnlyError
        from agentmemory.opening import check_index_loads
        from agentmemory.stores.chroma.damage import move_index_aside
        from agentmemory.stores.markdown.store import FileStore
        from agentmemory.verify import check_store

        if repair:
            opened = open_moving_damage(path, embedder_name, shared=shared)
        else:
            where = open_args(path)
            with opening():
                check_index_loads(where["path"], format=where["format"], dsn=where["dsn"])
            opened = open_index(path, embedder_name, create=False, shared=shared)
        if isinstance(opened, FileStore):
            _verify_folder(opened, path, embedder_name, repair=repair, as_json=as_json)
            return
        damaged: IndexDamagedError | None = None
        with opened as store:
            try:
                found = check_store(store, repair=repair, drop_orphans=drop_orphans)
            except IndexDamagedError as exc:  # Chroma found its database damaged mid-check
                if not repair or exc.index != "vector" or isinstance(exc, IndexReadOnlyError):
                    raise
                if not (store.path / "chroma").is_dir():
                    raise  # not an embedded folder of ours: nothing here to move aside
                damaged, folder = exc, store.path
        if damaged is not None:
            with opening():
                aside = move_index_aside(folder)
            click.echo(
                f"agentmemory: the vector index was damaged ({damaged.detail}); moved it to "
                f"{aside} and rebuilt it from the journal",
                err=True,
            )
            with open_index(
                path, embedder_name, create=False, reindex=True, shared=shared
            ) as again:
                assert not isinstance(again, FileStore)
                found = check_store(again, repair=True, drop_orphans=drop_orphans)
        report, orphans, lexical = found.index, list(found.orphans), list(found.lexical.problems)
        rebuilt = found.lexical.rebuilt
        if as_json:
            echo_json(
                {
                    "ok": found.ok,
                    "orphans": orphans,
                    "lexical": lexical,
                    "lexical_rebuilt": rebuilt,
                    "missing": report.missing,
                    "stale": report.stale,
                    "extra": report.extra,
                    "live": report.live,
                    "indexed": report.indexed,
                    "vectors": report.vectors,
                    "self_search": {
                        "searched": report.searched,
                        "found": report.found,
                        "lost": report.lost,
                        "unsearchable_scopes": report.unsearchable_scopes,
                    },
                    "cursor": report.cursor,
                    "last_seq": report.last_seq,
                }
            )
        else:
            text = str(report)
            if not report.ok:
                text = text.replace("repair() or reindex()", "'agentmemory verify --repair'")
            click.echo(text)
            if rebuilt is not None:
                click.echo(f"lexical index rebuilt: {counted(rebuilt, 'entry')}")
            for problem in lexical:
                click.echo(f"lexical index damaged: {problem}; run 'agentmemory verify --repair'")
            if orphans:
                click.echo(
                    f"journal shorter than its index: the index holds vectors of "
                    f"{counted(len(orphans), 'entry')} "
                    f"no journal record names ({', '.join(orphans[:5])}"
                    f"{', ...' if len(orphans) > 5 else ''}): the journal lost records (a truncated "
                    "file, a cut WAL); they are kept as evidence: restore the journal from a backup, "
                    "or run 'agentmemory verify --repair --drop-orphans' to drop them"
                )
            if not lexical and rebuilt is None:
                click.echo("lexical index ok")
        if not found.ok:
            sys.exit(1)


@contextmanager
def _journal_damage_reported(*, as_json: bool) -> Iterator[None]:
    """Around ``verify``: a damaged journal database (``StoreIOError`` ``"damaged"`` of a
    sqlite store) is reported by :func:`_journal_damaged` instead of the one line every other
    command prints, which says to run ``verify``."""
    from agentmemory.errors import StoreIOError

    try:
        yield
    except StoreIOError as exc:
        journal = Path(exc.path) / "journal.sqlite3"
        if exc.kind != "damaged" or not journal.is_file():
            raise
        _journal_damaged(journal, exc, as_json=as_json)


def _journal_damaged(journal: Path, exc: Exception, *, as_json: bool) -> None:
    """``verify`` on a store whose journal database is damaged: what is left of it, and the
    cure (a backup; nothing rebuilds the journal). Exit status 1."""
    import sqlite3

    from agentmemory.stores.sqlite.salvage import inspect_damaged_journal

    try:
        found = inspect_damaged_journal(journal)
    except sqlite3.Error as err:
        raise CliError(f"{exc} (and it cannot be read at all: {err})") from err
    folder = journal.parent
    if as_json:
        echo_json(
            {
                "ok": False,
                "journal_damaged": True,
                "problems": list(found.problems),
                "records": found.records,
                "last_seq": found.last_seq,
                "read_to_end": found.read_to_end,
                "entries": found.entries,
                "entries_read_to_end": found.entries_to_end,
            }
        )
    else:
        click.echo(f"the journal database of store {folder} is damaged: {found.describe()}")
        click.echo(
            f"nothing was changed; restore {folder} from a backup (the journal is the truth and "
            "nothing rebuilds it); meanwhile 'agentmemory journal --path "
            f"{folder}' prints the records before the damage and 'agentmemory export' saves "
            "what reads"
        )
    sys.exit(1)


def _verify_folder(
    store: FileStore, path: Path | None, embedder_name: str | None, *, repair: bool, as_json: bool
) -> None:
    """``verify`` on a Markdown folder (:func:`agentmemory.verify.check_folder`); with ``repair``,
    vectors still missing after the reconcile are made again (the folder opened with
    ``reindex``). Exit status 1 when the check is not ok."""
    from agentmemory.stores.markdown.store import FileStore
    from agentmemory.verify import check_folder

    root = store.path
    try:
        found = check_folder(store, repair=repair)
    finally:
        store.close()
    rebuilt = None
    if repair and found.missing:
        again = open_index(path, embedder_name, create=False, reindex=True)
        try:
            assert isinstance(again, FileStore)
            found = check_folder(again)
            rebuilt = found.live
        finally:
            again.close()
    cure = f"agentmemory verify --repair --path {root}"
    if as_json:
        echo_json(
            {
                "ok": found.ok,
                "format": "markdown",
                "live": found.live,
                "vector_unavailable": found.vector_unavailable,
                "missing": list(found.missing),
                "pending": list(found.pending),
                "reconciled": found.reconciled,
                "vectors_rebuilt": rebuilt,
                "unjournaled": [
                    {"path": str(f.path), "key": f.key, "reason": f.reason}
                    for f in found.unjournaled
                ],
            }
        )
    else:
        if found.vector_unavailable is not None:
            click.echo(f"vector index unavailable: {found.vector_unavailable}")
        elif found.missing:
            shown = ", ".join(found.missing[:5]) + (", ..." if len(found.missing) > 5 else "")
            click.echo(
                f"vector index: {len(found.missing)} of {counted(found.live, 'entry')} have no vector "
                f"({shown}); run '{cure}'"
            )
        elif store.embedder is not None:
            click.echo(f"vector index ok: {found.live} entr{'y' if found.live == 1 else 'ies'}")
        if rebuilt is not None:
            click.echo(f"vector index rebuilt: {counted(rebuilt, 'entry')}")
        if found.reconciled:
            n = found.reconciled
            click.echo(f"journaled {n} file{'' if n == 1 else 's'} changed by hand")
        if found.pending:
            n = len(found.pending)
            click.echo(
                f"{n} file{' changed by hand is' if n == 1 else 's changed by hand are'} not "
                "journaled yet (the next "
                f"write journals them, or run 'agentmemory reconcile --path {root}')"
            )
        for f in found.unjournaled:
            click.echo(f"not journaled: {f.path}: {f.reason}")
        if not found.unjournaled:
            click.echo("every entry file is journaled or journalable")
    if not found.ok:
        sys.exit(1)


@main.command("reindex", short_help="Rebuild the vector index (or switch embedders).")
@path_option
@embedder_option
@json_option
def reindex_command(path: Path | None, embedder_name: str | None, as_json: bool) -> None:
    """Rebuild the vector index from the journal (with --embedder NAME: switch to it), and the
    lexical index too when it is damaged."""
    from agentmemory.verify import check_reindexed

    with opened_journal(path) as journal:  # the wait ahead, counted before it starts
        counter = getattr(journal, "live_count", None)
        live = (
            counter() if callable(counter) else sum(len(journal.list(s)) for s in journal.scopes())
        )
        # a folder's journal file names its folder; a Markdown folder is its path; else its DSN
        where = getattr(journal, "path", None) or getattr(journal, "where", "the store")
        if isinstance(where, Path) and where.is_file():
            where = where.parent
    if live:
        click.echo(
            f"agentmemory: reindexing {counted(live, 'live entry', 'live entries')} of {where} "
            "(each embedded again)",
            err=True,
        )
    started = time.perf_counter()
    with progress_muted(), open_moving_damage(path, embedder_name, reindex=True) as store:
        done = check_reindexed(store)
    seconds = time.perf_counter() - started
    lexical, rebuilt = list(done.lexical.problems), done.lexical.rebuilt
    if as_json:
        echo_json(
            {
                "indexed": done.indexed,
                "embedder": done.embedder,
                "seconds": round(seconds, 3),
                "lexical_rebuilt": rebuilt,
                "lexical": lexical,
            }
        )
    else:
        click.echo(
            f"reindexed {counted(done.indexed, 'entry')} with {done.embedder} in {seconds:.1f} s"
        )
        if rebuilt is not None:
            click.echo(f"lexical index rebuilt: {counted(rebuilt, 'entry')}")
        for problem in lexical:
            click.echo(f"lexical index still damaged: {problem}")
    if lexical:
        sys.exit(1)
