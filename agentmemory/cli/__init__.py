"""The ``agentmemory`` command line: a click group with one function per subcommand.

Commands parse their arguments, call one library function and print its result; the rules live in
the library. Every command works on one store folder (``DIR/journal.sqlite3`` and ``DIR/chroma/``),
taken from ``--path``, else the environment variable ``AGENTMEMORY_PATH``, else
:func:`agentmemory.default_store_path`.

- Reads (``get``, ``list``, ``export``, ``render``, ``journal``, ``lost-updates``, ``search --mode
  bm25``) open only the journal (:func:`agentmemory.open_journal`): fast, no model, and safe beside
  a running ``agentmemory mcp`` on the same store. They refuse a folder that holds no store.
- Writes and vector search (``save``, ``forget``, ``import``, ``search``, ``verify``,
  ``reindex``, ``mcp``) open the store with :func:`agentmemory.open_store`, whose vector index is
  owned by one process at a time, and which chooses the embedder: left out, the packaged
  all-MiniLM-L6-v2 through onnxruntime for a new store or one indexed with that model, else the
  store's own; ``--embedder NAME`` is taken when it gives the store's vectors, and refused
  otherwise; ``agentmemory reindex --embedder NAME`` switches.
- ``import`` and ``export`` are :mod:`agentmemory.jsonl`: ``export`` (and ``list --json``) write
  what ``import`` takes back exactly.
- Output is for people; ``--json`` prints JSON for programs (entries and journal records in the
  Go module's JSON forms, one per line where there are several).
- Errors print one line, ``agentmemory: <what happened and what to do>``, on stderr and exit 1;
  usage errors (a bad option or argument) print one line too, ending ``(see 'agentmemory
  <command> --help')``, and exit 2, as click does. Nothing is half-written: a write the store
  refuses writes nothing, and ``import`` checks the whole file before it writes any of it.
- A write that reached the journal but whose vector update failed
  (:class:`~agentmemory.IndexWriteError`) is a success: the command prints its usual output
  (``--json`` included), one ``agentmemory: warning:`` line on stderr, and exits 0; the index
  catches up at the next write or open, or with ``agentmemory verify --repair``.

Each subcommand imports what it needs when it runs, so ``agentmemory --help`` stays fast.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from ..errors import AgentMemoryError, NoStoreError
from ..jsonl import IMPORT_BATCH
from ..kinds import KindRegistry

if TYPE_CHECKING:
    from embedders import Embedder

    from ..chroma_store import ChromaStore
    from ..entries import Change, Entry
    from ..file_store import FileStore
    from ..postgres_store import PostgresStore
    from ..sqlite_store import SqliteStore

__all__ = [
    "FORMAT_ENV",
    "PATH_ENV",
    "CliError",
    "main",
]

PATH_ENV = "AGENTMEMORY_PATH"
"""Environment variable naming the store folder when ``--path`` is not given."""

FORMAT_ENV = "AGENTMEMORY_FORMAT"
"""Environment variable read for ``--format`` (the kind of store folder)."""

_SHOW_CHARS = 200  # characters of content a search or list line shows without --full

F = TypeVar("F", bound=Callable[..., Any])


class CliError(click.ClickException):
    """An error the command line reports as one line, ``agentmemory: <message>``, on stderr,
    exiting with status 1. A leading ``agentmemory: `` in the message is not repeated."""

    def __init__(self, message: str) -> None:
        for prefix in ("agentmemory: ", "agentmemory.tools: "):
            if message.startswith(prefix):
                message = message[len(prefix) :]
        super().__init__(message)

    def show(self, file: IO[Any] | None = None) -> None:
        """Print ``agentmemory: <message>`` to stderr."""
        click.echo(f"agentmemory: {self.format_message()}", err=True)


class _UsageError(click.UsageError):
    """A usage error shown as one line on stderr, ``agentmemory: <click's message> (see
    '<command> --help')``, instead of click's usage, hint and message; exit status 2."""

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the one line to stderr."""
        where = self.ctx.command_path if self.ctx is not None else "agentmemory"
        message = self.format_message()
        for prefix in ("agentmemory: ", "agentmemory.tools: "):
            message = message.removeprefix(prefix)
        click.echo(f"agentmemory: {message} (see '{where} --help')", err=True)


def _one_line_usage(exc: click.UsageError) -> click.UsageError:
    """``exc`` as a :class:`_UsageError`; ``agentmemory`` alone still prints the help."""
    if isinstance(exc, _UsageError | click.exceptions.NoArgsIsHelpError):
        return exc
    return _UsageError(exc.format_message(), exc.ctx)


class _Group(click.Group):
    """The top-level group: turns the library's errors and click's usage errors into one line
    each (:class:`CliError`, exit status 1; :class:`_UsageError`, exit status 2)."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """Parse the group's own options; a usage error is one line (:class:`_UsageError`)."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _one_line_usage(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; an :class:`~agentmemory.AgentMemoryError` or ``OSError`` it
        raises becomes a :class:`CliError` (one line, exit status 1), a usage error (a bad
        option or argument, found while parsing or later) a :class:`_UsageError` (one line,
        exit status 2)."""
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _one_line_usage(exc) from None
        except AgentMemoryError as exc:
            raise CliError(str(exc)) from None
        except BrokenPipeError:  # `agentmemory journal | head`: the reader has had enough
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(1)
        except OSError as exc:
            raise CliError(_os_error(exc)) from None


def _index_behind(changes: Sequence[Change], cause: BaseException | None) -> None:
    """Print the one-line stderr warning for a write that is in the journal (``changes``) but
    whose vector update failed (``cause``, the IndexWriteError's ``__cause__``)."""
    seqs = [c.seq for c in changes]
    where = f"seq {seqs[0]}" if len(seqs) == 1 else f"seq {min(seqs)} to {max(seqs)}"
    why = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
    click.echo(
        f"agentmemory: warning: the write is done and journaled ({where}), but the vector "
        f"index was not updated{why}; search by meaning may miss it until the index is "
        "repaired, which happens at the next write or open of the store, or with "
        "'agentmemory verify --repair'; do not repeat the write",
        err=True,
    )


def _os_error(exc: OSError) -> str:
    if exc.filename is not None and exc.strerror:
        return f"{exc.strerror}: {exc.filename}"
    return str(exc) or type(exc).__name__


@click.group(cls=_Group)
@click.version_option(package_name="agentmemory")
def main() -> None:
    """agentmemory: memory for LLM agents, kept in a journaled store.

    Entries are addressed as SCOPE/NAME (kebab-case, e.g. user/editor-prefs). The store folder
    is --path, else $AGENTMEMORY_PATH, else the user data folder. Add --json for programs.
    Try `agentmemory demo` for a tour on real data.
    """


# --- shared options -------------------------------------------------------------------------


def _folder_option(f: F) -> F:
    return click.option(
        "--path",
        "path",
        type=str,
        metavar="DIRECTORY",
        envvar=PATH_ENV,
        show_envvar=True,
        default=None,
        help="The store folder: DIR/journal.sqlite3 and DIR/chroma/, or a Markdown folder "
        "(DIR/journal.jsonl and DIR/<scope>/<name>.md) (default: $AGENTMEMORY_PATH, else the "
        "user data folder's agentmemory/store).",
        callback=_refuse_empty_path,
    )(f)


def _refuse_empty_path(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> Path | None:
    """The ``--path`` folder; refuses ``--path ""``, which would make a store in the current
    folder ("." says that)."""
    if value is None:
        return None
    if not value:
        raise click.BadParameter(
            'is empty; give the store folder (use "." for the current folder)', param_hint="--path"
        )
    return Path(value)


_FORMAT_META = "agentmemory.store_format"
"""Key in click's ``ctx.meta`` of the ``--format`` of the store folder."""


def _remember_format(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    ctx.meta[_FORMAT_META] = value


_HOSTED_META = "agentmemory.hosted"
"""Key in click's ``ctx.meta`` of ``--dsn`` and ``--chroma-url`` (where the store's journal and
vectors live)."""


def _remember_hosted(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    ctx.meta.setdefault(_HOSTED_META, {})[param.name or ""] = value


def _remember_chroma_url(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """Keep ``--chroma-url`` as ``http(s)://HOST:PORT``; a bad address is a usage error naming
    it (:func:`agentmemory.chroma_server.parse_chroma_address`, the one reader)."""
    from ..chroma_server import parse_chroma_address
    from ..errors import ChromaAddressError

    try:
        url = parse_chroma_address(value).url if value else None
    except ChromaAddressError as exc:
        raise click.BadParameter(f"{exc.where}: {exc.detail}") from None
    _remember_hosted(ctx, param, url)


def _hosted() -> tuple[str | None, str | None]:
    """The ``--dsn`` and ``--chroma-url`` of the current command (``None`` when not given)."""
    ctx = click.get_current_context(silent=True)
    found = ctx.meta.get(_HOSTED_META, {}) if ctx is not None else {}
    return found.get("dsn") or None, found.get("chroma_url")


def _hosted_options(f: F) -> F:
    """``--dsn`` and ``--chroma-url`` (alias ``--chroma``): the journal in PostgreSQL and the
    vectors on a Chroma server (kept in ``ctx.meta``; :func:`agentmemory.open_store`)."""
    f = click.option(
        "--chroma-url",
        "--chroma",
        "chroma_url",
        envvar=["AGENTMEMORY_CHROMA_URL", "AGENTMEMORY_CHROMA"],
        show_envvar=True,
        default=None,
        metavar="HOST:PORT",
        expose_value=False,
        callback=_remember_chroma_url,
        help="The Chroma server holding the vector index, as HOST:PORT or http://HOST:PORT: "
        "needed with --dsn, and used instead of a folder's own index otherwise. --chroma and "
        "$AGENTMEMORY_CHROMA are older names of the same option.",
    )(f)
    return click.option(
        "--dsn",
        "dsn",
        envvar="AGENTMEMORY_DSN",
        show_envvar=True,
        default=None,
        expose_value=False,
        callback=_remember_hosted,
        help="Keep the journal in PostgreSQL at this DSN (libpq form, e.g. 'host=db "
        "dbname=memory user=agent'; put the password in ~/.pgpass) instead of --path.",
    )(f)


def _path_option(f: F) -> F:
    """``--path``, ``--format`` (the store folder's kind; kept in ``ctx.meta``), and ``--dsn``
    and ``--chroma-url`` (a store on servers)."""
    f = _hosted_options(f)
    f = click.option(
        "--format",
        "store_format",
        type=click.Choice(["sqlite", "markdown"]),
        envvar=FORMAT_ENV,
        show_envvar=True,
        default=None,
        expose_value=False,
        callback=_remember_format,
        help="The kind of store folder: sqlite (journal.sqlite3 and chroma/) or markdown (a "
        "folder of Markdown files a person can edit). Default: markdown when the folder holds "
        "journal.jsonl, else sqlite.",
    )(f)
    return _folder_option(f)


def _store_format() -> str | None:
    ctx = click.get_current_context(silent=True)
    value = ctx.meta.get(_FORMAT_META) if ctx is not None else None
    return value if isinstance(value, str) else None


def _json_option(f: F) -> F:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print JSON for programs instead of text."
    )(f)


def _embedder_option(f: F) -> F:
    return click.option(
        "--embedder",
        "embedder_name",
        default=None,
        metavar="NAME",
        help="The embedder by registry name (e.g. onnx:all-MiniLM-L6-v2, "
        "sentence-transformers:all-MiniLM-L6-v2, hashing). Default: the packaged "
        "all-MiniLM-L6-v2 through onnxruntime (onnx:all-MiniLM-L6-v2) for a new store and for "
        "one indexed with the same model by either runtime; else the store's own.",
    )(f)


def _server_options(f: F) -> F:
    """``--shared``: the store folder's own Chroma server holds its vector index (any other
    server is ``--chroma-url``, one of :func:`_path_option`'s)."""
    return click.option(
        "--shared",
        is_flag=True,
        envvar="AGENTMEMORY_SHARED",
        show_envvar=True,
        help="Share the store with other processes through its own Chroma server: start it "
        "('agentmemory server start') when none runs. A running one is used anyway.",
    )(f)


def _session_option(f: F) -> F:
    return click.option(
        "--session",
        "session_id",
        default=None,
        metavar="ID",
        help="Stamp the journal record(s) with this session id.",
    )(f)


# --- opening stores -------------------------------------------------------------------------


def _no_store(exc: NoStoreError) -> CliError:
    if exc.is_file:
        return CliError(f"store path {exc.path} is a file, not a folder; give a folder with --path")
    return CliError(
        f"no store at {exc.path} (it has no journal.sqlite3); create one with "
        "'agentmemory save' or 'agentmemory import', or point --path or "
        f"${PATH_ENV} at an existing store"
    )


def _embedder(name: str | None) -> Embedder:
    """:func:`agentmemory.store_folder.choose_embedder`; an unknown name is a usage error."""
    from ..errors import EmbedderNameError
    from ..store_folder import choose_embedder

    try:
        return choose_embedder(name)
    except EmbedderNameError as exc:
        raise click.BadParameter(str(exc), param_hint="--embedder") from None


@contextmanager
def _open_journal(path: Path | None) -> Iterator[SqliteStore | FileStore | PostgresStore]:
    """:func:`agentmemory.open_journal` (with ``--dsn``, the PostgreSQL journal), its refusal of
    a folder without a store as one line."""
    from ..store_folder import open_journal

    dsn, _ = _hosted()
    try:  # --dsn wins over --path and $AGENTMEMORY_PATH
        store = open_journal(
            None if dsn else path, format=None if dsn else _store_format(), dsn=dsn
        )
    except NoStoreError as exc:
        raise _no_store(exc) from None
    with store:
        yield store


def _open_args(path: Path | None) -> dict[str, Any]:
    """Where :func:`agentmemory.open_store` opens the command's store: ``path``, ``format``,
    ``dsn`` and ``chroma_url`` from ``--path``, ``--format``, ``--dsn`` and ``--chroma-url``
    (``--dsn`` wins over ``--path`` and ``$AGENTMEMORY_PATH``)."""
    dsn, chroma_url = _hosted()
    return {
        "path": None if dsn else path,
        "format": None if dsn else _store_format(),
        "dsn": dsn,
        "chroma_url": chroma_url,
    }


@contextmanager
def _opening() -> Iterator[None]:
    """Opening stores with the command line's wording, around the block: an unknown embedder is a
    usage error of ``--embedder``, a missing store, a ``--dsn`` without a Chroma server or an
    embedder mismatch one line saying what to run, and an IndexOutOfStepWarning or
    ServerRecordWarning one ``agentmemory:`` line on stderr (printed when the block ends; other
    warnings are issued again)."""
    from ..errors import (
        ChromaAddressError,
        EmbedderMismatchError,
        EmbedderNameError,
        IndexOutOfStepWarning,
        ServerRecordWarning,
    )

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", IndexOutOfStepWarning)
            warnings.simplefilter("always", ServerRecordWarning)
            yield
    except ChromaAddressError as exc:
        if exc.value is not None:
            raise
        raise CliError(
            "--dsn keeps the journal in PostgreSQL; the vectors need a Chroma server: give "
            "--chroma-url HOST:PORT (or $AGENTMEMORY_CHROMA_URL), or use --mode bm25 to search "
            "without"
        ) from None
    except EmbedderNameError as exc:
        raise click.BadParameter(str(exc), param_hint="--embedder") from None
    except NoStoreError as exc:
        raise _no_store(exc) from None
    except EmbedderMismatchError as exc:
        stored = exc.stored.split(";", 1)[0]
        given = exc.given.split(";", 1)[0]
        raise CliError(
            f"store {exc.path} was indexed with embedder {stored} ({exc.stored}), not "
            f"{given}; leave out --embedder to use the store's own, or run "
            f"'agentmemory reindex --embedder {given}' to rebuild its index with the new one"
        ) from None
    for w in caught:
        if issubclass(w.category, IndexOutOfStepWarning | ServerRecordWarning):
            click.echo(f"agentmemory: {CliError(str(w.message)).message}", err=True)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _open_index(
    path: Path | None,
    embedder_name: str | None,
    *,
    create: bool,
    reindex: bool = False,
    shared: bool = False,
    read_only: bool = False,
) -> ChromaStore | FileStore:
    """:func:`agentmemory.open_store` (with ``--dsn`` and ``--chroma-url``, the store on
    servers, :func:`_open_args`) with the command line's wording (:func:`_opening`). ``shared``
    and ``read_only`` are :func:`agentmemory.open_store`'s."""
    from ..store_folder import open_store

    with _opening():
        return open_store(
            embedder=embedder_name,
            create=create,
            reindex=reindex,
            shared=shared,
            read_only=read_only,
            **_open_args(path),
        )


def _chroma_only(store: ChromaStore | FileStore, command: str) -> ChromaStore:
    """``store`` when it is a :class:`ChromaStore`; a Markdown folder is one line saying so."""
    from ..chroma_store import ChromaStore

    if isinstance(store, ChromaStore):
        return store
    store.close()
    raise CliError(
        f"{store.path} is a Markdown folder; '{command}' checks the Chroma index of a sqlite "
        "store (journal.sqlite3 and chroma/); a Markdown folder's index (.vectors/) follows its "
        "journal and catches up each time it is opened; to make it again, run 'agentmemory "
        "reindex'"
    )


# --- small helpers --------------------------------------------------------------------------


def _note(text: str) -> None:
    """One ``agentmemory: note: ...`` line on stderr (a write or search that succeeded with
    something the user should know)."""
    click.echo(f"agentmemory: note: {text}", err=True)


def _parse_key(key: str) -> tuple[str, str]:
    """``"scope/name"`` -> ``(scope, name)``; a usage error otherwise."""
    scope, sep, name = key.partition("/")
    if not sep or not scope or not name or "/" in name:
        raise click.BadParameter(
            f"{key!r} is not SCOPE/NAME; address an entry as e.g. user/editor-prefs",
            param_hint="KEY",
        )
    return scope, name


def _parse_meta(pairs: Sequence[str]) -> dict[str, str]:
    meta: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(
                f"{pair!r} is not KEY=VALUE (e.g. --meta source=chat)", param_hint="--meta"
            )
        meta[key] = value
    return meta


def _when(entry: Entry) -> str:
    return entry.updated.strftime("%Y-%m-%d %H:%M:%S") if entry.updated else "-"


def _short_hash(h: str) -> str:
    return h.removeprefix("sha256:")[:12] if h else "-"


def _one_line(text: str, limit: int | None) -> str:
    flat = " ".join(text.split())
    if limit is not None and len(flat) > limit:
        return flat[: limit - 1] + "…"
    return flat


def _echo_json(value: object) -> None:
    from ..wire import go_json

    click.echo(go_json(value))


def _change_line(change: Change) -> str:
    e = change.entry
    what = "forget" if e.deleted else ("create" if not change.replaced else "replace")
    parts = [
        f"{change.seq:>6}",
        change.at.strftime("%Y-%m-%d %H:%M:%S") if change.at else "-",
        f"{what:<7}",
        e.key,
        _short_hash(e.hash),
    ]
    if change.prev != change.replaced:
        parts.append(f"(built on {_short_hash(change.prev)})")
    if change.session:
        parts.append(f"session {change.session}")
    if change.source:
        parts.append(change.source)
    for label, value in (("message", change.message), ("tool", change.tool)):
        if value:
            parts.append(f"{label} {value}")
    if change.reason:
        parts.append(f"reason {change.reason!r}")
    return "  ".join(parts)


# --- save, get, list, forget ----------------------------------------------------------------


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
@_session_option
@_path_option
@_embedder_option
@_server_options
@_json_option
def save_command(
    key: str,
    content: str | None,
    meta_pairs: tuple[str, ...],
    description: str | None,
    no_meta: bool,
    kind: str | None,
    supersedes: str | None,
    if_hash: str | None,
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
    """
    from ..save_entry import save_entry
    from ..wire import encode_change, go_json

    scope, name = _parse_key(key)
    if content is None or content == "-":
        if content is None and sys.stdin.isatty():
            raise click.UsageError("give the content as an argument, or on stdin")
        content = sys.stdin.read()
    meta = _parse_meta(meta_pairs)
    if description is not None:
        meta["description"] = description
    if no_meta and meta:
        raise click.UsageError("--no-meta clears the meta; do not give --meta or --description")
    where = _open_args(path)
    with _opening():
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
            embedder=embedder_name,
            shared=shared,
            **where,
        )
    if saved.index_error is not None:
        _index_behind(saved.index_error.changes, saved.index_error.__cause__)
    change = saved.change
    retired = [saved.retired] if saved.retired is not None else []
    if saved.index_damaged is not None:  # the journal took the write; a repair re-indexes it
        exc = saved.index_damaged
        click.echo(
            f"agentmemory: the vector index of store {exc.path} is damaged ({exc.detail}); the "
            f"write is in the journal (seq {change.seq}): run 'agentmemory verify --repair "
            f"--path {exc.path}' to rebuild the index",
            err=True,
        )
    if change.note:
        _note(change.note)
    if as_json:
        line = encode_change(change)
        if retired:  # a member of our own after the record's: decode_change ignores it
            gone = retired[0]
            what = {"scope": gone.scope, "name": gone.name, "size": gone.size, "hash": gone.hash}
            line = go_json({**json.loads(line), "retired": what})
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


@main.command("get", short_help="Print one entry.")
@click.argument("key")
@_path_option
@_json_option
def get_command(key: str, path: Path | None, as_json: bool) -> None:
    """Print the live entry KEY (SCOPE/NAME): a header, its meta, then its content."""
    from ..wire import encode_entry

    scope, name = _parse_key(key)
    with _open_journal(path) as store:
        entry = store.get(scope, name)
    if as_json:
        click.echo(encode_entry(entry))
        return
    click.echo(f"{entry.key}  ({entry.size} bytes, updated {_when(entry)} UTC, {entry.hash})")
    for k, v in sorted((entry.meta or {}).items()):
        click.echo(f"{k}: {v}")
    click.echo("")
    click.echo(entry.content.rstrip("\n"))


@main.command("list", short_help="List the entries of some or all scopes.")
@click.argument("scopes", nargs=-1)
@click.option("--full", is_flag=True, help="Show each entry's whole content, not one line.")
@_path_option
@_json_option
def list_command(scopes: tuple[str, ...], full: bool, path: Path | None, as_json: bool) -> None:
    """List the live entries of SCOPES (default: every scope), by scope then name.

    With --json: one entry per line, in the form `agentmemory import` reads back (what
    `agentmemory export` writes).
    """
    from ..jsonl import export_entries
    from ..rules import check_scope

    for scope in scopes:
        check_scope(scope)
    with _open_journal(path) as store:
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
            click.echo(f"{e.key}  ({e.size} bytes, updated {_when(e)} UTC)")
            click.echo(e.content.rstrip("\n"))
            click.echo("")
        else:
            click.echo(f"{e.key:<{width}}  {e.size:>5} B  {_when(e)}  {_one_line(text, 80)}")


@main.command("forget", short_help="Forget an entry (journals a tombstone).")
@click.argument("key")
@_session_option
@_path_option
@_embedder_option
@_server_options
@_json_option
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

    scope, name = _parse_key(key)
    with _open_index(path, embedder_name, create=False, shared=shared) as store:
        try:
            change = store.forget(scope, name, session=session_id)
        except IndexWriteError as exc:
            change = exc.changes[0]
            _index_behind(exc.changes, exc.__cause__)
    if change.note:
        _note(change.note)
    if as_json:
        click.echo(encode_change(change))
        return
    click.echo(f"forgot {change.entry.key} (journal seq {change.seq})")


@main.command("purge", short_help="Erase an entry for good, every version (with a receipt).")
@click.argument("key")
@click.option("--reason", required=True, help="Why it is erased; recorded in the journal.")
@_session_option
@_path_option
@_embedder_option
def purge_command(
    key: str, reason: str, session_id: str | None, path: Path | None, embedder_name: str | None
) -> None:
    """Purge the entry KEY (SCOPE/NAME): tombstone it if live, replace the content and hashes of
    every journal record it has, drop it from both indexes, rewrite the files, and print the
    receipt and what verify_erased found (docs/contract.md#purge-erasing-an-entry-for-good).

    The memory tools cannot purge; only this command and the library can.
    """
    from ..errors import NotFoundError

    scope, name = _parse_key(key)
    with _open_index(path, embedder_name, create=False) as store:
        purge = getattr(store, "purge", None)
        if purge is None:
            raise CliError(f"a {type(store).__name__} cannot purge yet; open a sqlite store")
        try:
            receipt = purge(scope, name, reason=reason, session=session_id)
        except NotFoundError as exc:
            raise CliError(str(exc)) from None
        click.echo(str(receipt))
        click.echo(str(getattr(store, "verify_erased")(scope, name)))  # noqa: B009


@main.command("forget-session", short_help="Forget what one session wrote in given scopes.")
@click.argument("session")
@click.argument("scopes", nargs=-1, required=True)
@_path_option
@_embedder_option
@_server_options
@_json_option
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

    with _open_index(path, embedder_name, create=False, shared=shared) as store:
        changes = store.forget_session(session, list(scopes))
    if as_json:
        for change in changes:
            click.echo(encode_change(change))
        return
    for change in changes:
        click.echo(f"forgot {change.entry.key} (journal seq {change.seq})")
    noun = "entry" if len(changes) == 1 else "entries"
    click.echo(f"session {session}: forgot {len(changes)} {noun} in {', '.join(scopes)}")


# --- search and render ----------------------------------------------------------------------


@main.command("search", short_help="Rank entries for a query (hybrid BM25 + vector).")
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--scope", "scopes", multiple=True, help="A scope to search; repeat for several (default: all)."
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=5, show_default=True, help="At most this many."
)
@click.option(
    "--mode",
    type=click.Choice(["auto", "hybrid", "bm25", "vector"]),
    default="auto",
    show_default=True,
    help="hybrid: BM25 and vector legs fused by the store's fusion, a z-score convex combination "
    "by default (what auto means for a "
    "store with vectors); bm25 or vector: one leg alone.",
)
@click.option("--full", is_flag=True, help="Show each hit's whole content, not one line.")
@click.option(
    "--as-of",
    "as_of",
    default=None,
    metavar="DATE",
    help="Rank the entries in force on DATE (YYYY-MM-DD, UTC) instead of today: by their "
    "valid-from/valid-until and the supersedes the journal showed by then.",
)
@click.option(
    "--include-superseded",
    is_flag=True,
    help="Rank every live entry, retired and expired ones too; each hit says whether it is in "
    "force (today, or on --as-of DATE).",
)
@_path_option
@_embedder_option
@_server_options
@_json_option
def search_command(
    query: tuple[str, ...],
    scopes: tuple[str, ...],
    limit: int,
    mode: str,
    full: bool,
    as_of: str | None,
    include_superseded: bool,
    path: Path | None,
    embedder_name: str | None,
    shared: bool,
    as_json: bool,
) -> None:
    """Rank entries for QUERY as memory_search does (hybrid BM25 + vector recall).

    Each hit shows its rank, its score (the fused score for hybrid, else the leg's raw
    score) and where each leg ranked it (#rank and raw score: BM25, cosine). Entries out of
    date (docs/kinds.md#out-of-date-on-purpose-only) are left out unless --include-superseded;
    --as-of judges another day. With --json: "as_of" (the day judged), "include_superseded"
    and, per hit, "in_force".
    """
    from ..validity import InForce, in_force_filter, parse_day, today

    text = " ".join(query)
    try:  # refused before a store is opened, with the words recall(as_of=...) uses
        day = today() if as_of is None else parse_day(as_of)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--as-of") from None
    keep: InForce | None = None  # None: recall kept only the entries in force
    missing: str | None = None
    if mode == "bm25":  # the lexical leg lives in the journal: no index, no model
        with _open_journal(path) as journal:
            wanted = list(scopes) or journal.scopes()
            hits = (
                journal.recall(
                    text,
                    scopes=wanted,
                    limit=limit,
                    mode="bm25",
                    as_of=as_of,
                    include_superseded=include_superseded,
                )
                if wanted
                else []
            )
            if include_superseded:
                keep = in_force_filter(journal, wanted, as_of=as_of)
    held: list[logging.LogRecord] = []
    if mode != "bm25":
        with (
            _open_index(
                path,
                embedder_name,
                create=False,
                shared=shared,
                read_only=True,
            ) as store,
            _held_log("recallers.hybrid", held),
        ):
            wanted = list(scopes) or store.scopes()
            missing = getattr(store, "vector_unavailable", None)
            if not wanted:
                hits = []
            else:
                hits = store.recall(
                    text,
                    scopes=wanted,
                    limit=limit,
                    mode=mode,
                    as_of=as_of,
                    include_superseded=include_superseded,
                )
            if include_superseded:
                keep = in_force_filter(store, wanted, as_of=as_of)
    # a hybrid leg that raised is named in each hit's `unavailable` (recallers.HybridRecaller);
    # a store opened journal-only names its vector leg there too, and says so itself
    failed = (
        {leg: (why.splitlines() or [""])[0][:300] for leg, why in hits[0].unavailable.items()}
        if hits and missing is None
        else {}
    )
    if not hits:  # no hit to carry a failed leg: what the recaller logged is all there is
        for record in held:
            click.echo(f"agentmemory: warning: {record.getMessage()}", err=True)
    shown_mode = "hybrid" if mode == "auto" else mode
    if missing is not None:
        shown_mode = "bm25"
        _note(f"the vector leg was unavailable ({missing}); these are BM25 results only")
    elif failed:  # a hybrid whose leg failed is not a hybrid: say which leg answered, and why
        answered = [leg for leg in ("bm25", "vector") if leg not in failed]
        shown_mode = "+".join(answered) or "none"
        for leg, why in failed.items():
            click.echo(f"agentmemory: the {leg} leg failed ({why}); these hits are "
                       f"{shown_mode} only", err=True)  # fmt: skip
    if as_json:
        _echo_json(
            {
                "query": text,
                "mode": shown_mode,
                "failed_legs": failed,
                "scopes": wanted,
                "as_of": day.isoformat(),
                "include_superseded": include_superseded,
                "hits": [
                    {
                        "rank": rank,
                        "scope": h.entry.scope,
                        "name": h.entry.name,
                        "score": h.score,
                        "method": h.method,
                        "legs": {
                            leg: {"rank": s.rank, "score": s.score}
                            for leg, s in sorted(h.legs.items())
                        },
                        "unavailable": dict(h.unavailable),
                        "in_force": keep is None or keep(h.entry),
                        "content": h.entry.content,
                        "meta": h.entry.meta or {},
                        "hash": h.entry.hash,
                    }
                    for rank, h in enumerate(hits, start=1)
                ],
            }
        )
        return
    where = ", ".join(wanted) if wanted else "(no scopes)"
    how = shown_mode
    if as_of is not None:
        how += f", as of {day.isoformat()}"
    if include_superseded:
        how += ", out-of-date entries included"
    if not hits:
        click.echo(f"no entries in {where} match {text!r} ({how})")
        return
    noun = "hit" if len(hits) == 1 else "hits"
    click.echo(f"{len(hits)} {noun} in {where} for {text!r} ({how})")
    from recallers import NEGLIGIBLE_BM25_NOTE, shown_score

    shown: list[str] = []
    for rank, h in enumerate(hits, start=1):
        legs = []
        for leg in ("bm25", "vector"):
            s = h.legs.get(leg)
            if leg in h.unavailable:
                legs.append(f"{leg} unavailable")
            elif s is None:
                legs.append(f"{leg} -")
            else:
                shown.append(shown_score(leg, s.score))
                legs.append(f"{leg} #{s.rank} {shown[-1]}")
        shown.append(shown_score(h.method, h.score))
        stale = "" if keep is None or keep(h.entry) else f"  out of date on {day.isoformat()}"
        click.echo(f"{rank:>2}. {h.entry.key}  score {shown[-1]}  ({', '.join(legs)}){stale}")
        body = h.entry.content.rstrip("\n") if full else _one_line(h.entry.content, _SHOW_CHARS)
        click.echo("    " + body.replace("\n", "\n    "))
    if "<0.001" in shown:
        click.echo(f"note: {NEGLIGIBLE_BM25_NOTE}")


class _HeldRecords(logging.Handler):
    """Keeps the records of one logger in a list instead of letting them print."""

    def __init__(self, into: list[logging.LogRecord]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        """Keep ``record``."""
        self.into.append(record)


@contextmanager
def _held_log(name: str, into: list[logging.LogRecord]) -> Iterator[None]:
    """Hold in ``into`` the WARNING records of logger ``name`` while the block runs (logging's
    last resort would print each raw on stderr)."""
    log = logging.getLogger(name)
    handler = _HeldRecords(into)
    log.addHandler(handler)
    try:
        yield
    finally:
        log.removeHandler(handler)


@main.command("render", short_help="Print the memory block the model reads.")
@click.argument("scopes", nargs=-1, required=True)
@click.option(
    "--max-total-bytes",
    type=click.IntRange(min=1),
    default=32 * 1024,
    show_default=True,
    help="The bound of the block, in UTF-8 bytes.",
)
@click.option(
    "--policy",
    type=click.Choice(["none", "default"]),
    default="none",
    show_default=True,
    help="default: show only the always-shown kinds (user, feedback) and name the rest as "
    "recalled when relevant; none: show every entry.",
)
@click.option(
    "--neutralise",
    is_flag=True,
    help="Make headings of level 1 to 3 inside entries level 4, so content cannot forge the "
    "block's structure.",
)
@_path_option
@_json_option
def render_command(
    scopes: tuple[str, ...],
    max_total_bytes: int,
    policy: str,
    neutralise: bool,
    path: Path | None,
    as_json: bool,
) -> None:
    """Print the memory block of SCOPES that the model reads, byte for byte.

    With --json: {"block", "bytes", "manifest"} (the manifest lists what the block holds and
    what it left out, and why).
    """
    from ..entries import utf8_len
    from ..kinds import KindRegistry
    from ..render import render

    registry = KindRegistry() if policy == "default" else None
    with _open_journal(path) as store:
        block, manifest = render(
            store,
            list(scopes),
            max_total_bytes=max_total_bytes,
            policy=registry,
            neutralise=neutralise,
        )
    if as_json:
        _echo_json({"block": block, "bytes": utf8_len(block), "manifest": manifest.to_dict()})
        return
    click.echo(block)


@main.command("recall-part", short_help="Print the memory recalled for one turn's hint.")
@click.argument("hint", nargs=-1, required=True)
@click.option(
    "--scope", "scopes", multiple=True, help="A scope to recall from; repeat (default: all)."
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    default=8 * 1024,
    show_default=True,
    help="The bound of the part, in UTF-8 bytes.",
)
@click.option(
    "--neutralise",
    is_flag=True,
    help="Make headings of level 1 to 3 inside entries level 4, so content cannot forge the "
    "part's structure.",
)
@_path_option
@_embedder_option
@_json_option
def recall_part_command(
    hint: tuple[str, ...],
    scopes: tuple[str, ...],
    max_bytes: int,
    neutralise: bool,
    path: Path | None,
    embedder_name: str | None,
    as_json: bool,
) -> None:
    """Print the per-turn part for HINT: the recalled-only entries (project notes, references)
    hybrid recall ranks for it, above the score floor, under the default kind policy.

    Prints nothing but a line on stderr when nothing is recalled. With --json:
    {"part": text or null, "bytes", "manifest"} (each entry with its fused score and legs).
    """
    from ..entries import utf8_len
    from ..recalled import recall_part

    text = " ".join(hint)
    with _open_index(path, embedder_name, create=False) as store:
        wanted = list(scopes) or store.scopes()
        part, manifest = recall_part(
            store, wanted, text, max_bytes=max_bytes, neutralise=neutralise
        )
    if as_json:
        body = part.text if part is not None else None
        _echo_json({"part": body, "bytes": utf8_len(body or ""), "manifest": manifest.to_dict()})
        return
    if part is None:
        why = manifest.reason or "nothing fits in the bound"
        click.echo(f"nothing recalled for {text!r} ({why})", err=True)
        return
    click.echo(part.text)


# --- the journal ----------------------------------------------------------------------------


@main.command("journal", short_help="Print the journal of writes.")
@click.option(
    "--after", type=click.IntRange(min=0), default=0, help="Only records with seq above this."
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="At most this many records."
)
@_path_option
@_json_option
def journal_command(after: int, limit: int | None, path: Path | None, as_json: bool) -> None:
    """Print the journal: every write, in order (seq, time, kind, entry, content hash).

    With --json: one record per line in the Go module's journal.jsonl form.
    """
    from ..wire import encode_change

    with _open_journal(path) as store:
        shown = 0
        for change in store.journal(after):
            if limit is not None and shown >= limit:
                break
            click.echo(encode_change(change) if as_json else _change_line(change))
            shown += 1
    if not shown and not as_json:
        click.echo(f"no journal records after seq {after}")


@main.command("lost-updates", short_help="List writes that overwrote a change unseen.")
@click.option(
    "--after", type=click.IntRange(min=0), default=0, help="Only records with seq above this."
)
@_path_option
@_json_option
def lost_updates_command(after: int, path: Path | None, as_json: bool) -> None:
    """List lost updates: writes built on another state than the one they replaced.

    Each is a journal record whose writer read (or was shown) an older version of the entry
    than the journal held when it wrote; the change in between was overwritten unseen.
    """
    from ..journal import lost_updates
    from ..wire import encode_change

    with _open_journal(path) as store:
        found = lost_updates(store, after)
    if as_json:
        for lost in found:
            _echo_json(
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
            f"seq {c.seq}: {c.entry.key} was written{who} on {_short_hash(c.prev)}, but the "
            f"journal held {_short_hash(lost.over) if lost.over else 'no entry'}"
        )


# --- the index ------------------------------------------------------------------------------


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
@_path_option
@_embedder_option
@_server_options
@_json_option
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
    from ..index_damage import check_index_loads
    from ..store_check import check_store

    if repair:
        opened = _open_moving_damage(path, embedder_name, shared=shared)
    else:
        where = _open_args(path)
        with _opening():
            check_index_loads(where["path"], format=where["format"], dsn=where["dsn"])
        opened = _open_index(path, embedder_name, create=False, shared=shared)
    with _chroma_only(opened, "verify") as store:
        found = check_store(store, repair=repair, drop_orphans=drop_orphans)
    report, orphans, lexical = found.index, list(found.orphans), list(found.lexical.problems)
    rebuilt = found.lexical.rebuilt
    if as_json:
        _echo_json(
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
            click.echo(f"lexical index rebuilt: {rebuilt} entries")
        for problem in lexical:
            click.echo(f"lexical index damaged: {problem}; run 'agentmemory verify --repair'")
        if orphans:
            click.echo(
                f"journal shorter than its index: {len(orphans)} vectors belong to entries no "
                f"journal record names ({', '.join(orphans[:5])}"
                f"{', ...' if len(orphans) > 5 else ''}): the journal lost records (a truncated "
                "file, a cut WAL); they are kept as evidence: restore the journal from a backup, "
                "or run 'agentmemory verify --repair --drop-orphans' to drop them"
            )
        if not lexical and rebuilt is None:
            click.echo("lexical index ok")
    if not found.ok:
        sys.exit(1)


def _open_moving_damage(
    path: Path | None,
    embedder_name: str | None,
    *,
    reindex: bool = False,
    shared: bool = False,
) -> ChromaStore | FileStore:
    """:func:`agentmemory.index_damage.open_store_moving_damage` with the command line's
    wording (:func:`_opening`); a damaged index moved aside is one line on stderr."""
    from ..index_damage import open_store_moving_damage

    with _opening():
        store, moved = open_store_moving_damage(
            embedder=embedder_name, reindex=reindex, shared=shared, **_open_args(path)
        )
    if moved is not None:
        click.echo(
            f"agentmemory: the vector index was damaged ({moved.detail}); moved it to "
            f"{moved.aside} and rebuilt it from the journal",
            err=True,
        )
    return store


@main.command("reindex", short_help="Rebuild the vector index (or switch embedders).")
@_path_option
@_embedder_option
@_json_option
def reindex_command(path: Path | None, embedder_name: str | None, as_json: bool) -> None:
    """Rebuild the vector index from the journal (with --embedder NAME: switch to it), and the
    lexical index too when it is damaged."""
    from ..store_check import check_reindexed

    started = time.perf_counter()
    with _open_moving_damage(path, embedder_name, reindex=True) as store:
        done = check_reindexed(store)
    seconds = time.perf_counter() - started
    lexical, rebuilt = list(done.lexical.problems), done.lexical.rebuilt
    if as_json:
        _echo_json(
            {
                "indexed": done.indexed,
                "embedder": done.embedder,
                "seconds": round(seconds, 3),
                "lexical_rebuilt": rebuilt,
                "lexical": lexical,
            }
        )
    else:
        click.echo(f"reindexed {done.indexed} entries with {done.embedder} in {seconds:.1f} s")
        if rebuilt is not None:
            click.echo(f"lexical index rebuilt: {rebuilt} entries")
        for problem in lexical:
            click.echo(f"lexical index still damaged: {problem}")
    if lexical:
        sys.exit(1)


# --- import and export ----------------------------------------------------------------------


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
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar on stderr (default: when stderr is a terminal).",
)
@_session_option
@_path_option
@_embedder_option
@_server_options
@_json_option
def import_command(
    source: str,
    default_scope: str | None,
    batch: int,
    progress: bool | None,
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
        _import_markdown(Path(source).expanduser(), path, embedder_name, session_id, as_json)
        return
    lines = read_entries(
        sys.stdin.buffer if source == "-" else Path(source).expanduser(), scope=default_scope
    )
    started = time.perf_counter()
    with (
        _open_index(path, embedder_name, create=True, shared=shared) as store,
        tqdm(
            total=len(lines),
            desc="import",
            unit="entry",
            disable=(not progress) if progress is not None else None,
            file=sys.stderr,
        ) as bar,
    ):
        report = import_entries(store, lines, batch=batch, session=session_id, progress=bar.update)
    seconds = time.perf_counter() - started
    if report.note:  # a store opened journal-only: the process holding the index indexes them
        _note(report.note)
    if report.index_pending:
        _index_behind(report.index_pending, report.index_error)
    if as_json:
        _echo_json(
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
        f"imported {report.imported} entries{f' ({scopes})' if scopes else ''} in {seconds:.1f} s"
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
@_hosted_options
@_folder_option
def export_command(
    scopes: tuple[str, ...], output: Path | None, out_format: str, path: Path | None
) -> None:
    """Write the live entries of SCOPES (default: every scope) as JSON Lines, one entry per line
    by scope then name, in the form `agentmemory import` takes back exactly; or, with --format
    markdown DIR, as a new Markdown folder DIR (one DIR/<scope>/<name>.md per entry, a journal
    of their creation) that `agentmemory import DIR` takes back exactly.

    Reads the journal only (no model, no index), so it runs beside a running `agentmemory mcp`;
    with --dsn, the PostgreSQL journal (--chroma-url is not needed).
    """
    from ..jsonl import export_entries, export_file

    if out_format == "markdown":
        from ..markdown_folder import export_markdown

        if output is not None or not scopes:
            raise click.UsageError(
                "give the Markdown folder as the first argument: export --format markdown DIR "
                "[SCOPES]... (not --output)"
            )
        folder = Path(scopes[0]).expanduser()
        with _open_journal(path) as store:
            written = export_markdown(store, folder, scopes=scopes[1:])
        click.echo(f"exported {len(written)} entries to the Markdown folder {folder}", err=True)
        return
    with _open_journal(path) as store:
        if output is None:
            export_entries(store, sys.stdout, scopes)
            return
        count = export_file(store, output, scopes)
    click.echo(f"exported {count} entries to {output}", err=True)


def _import_markdown(
    folder: Path,
    path: Path | None,
    embedder_name: str | None,
    session_id: str | None,
    as_json: bool,
) -> None:
    """``agentmemory import DIR``: every entry file of the Markdown folder, all or nothing."""
    from ..markdown_folder import import_markdown

    started = time.perf_counter()
    with _open_index(path, embedder_name, create=True) as store:
        changes = import_markdown(folder, store, session=session_id or "import")
    seconds = time.perf_counter() - started
    if as_json:
        _echo_json(
            {
                "imported": len(changes),
                "first_seq": changes[0].seq if changes else 0,
                "last_seq": changes[-1].seq if changes else 0,
                "seconds": round(seconds, 3),
            }
        )
        return
    click.echo(f"imported {len(changes)} entries from the Markdown folder {folder}")


# --- a Markdown folder ------------------------------------------------------------------------


@main.command("reconcile", short_help="Journal what a person changed in a Markdown folder.")
@_path_option
@_json_option
def reconcile_command(path: Path | None, as_json: bool) -> None:
    """Journal every entry file of a Markdown folder that a person edited, added or removed
    since the journal last recorded it, as 'reconciled' records (no session), in scope/name
    order. A file the store cannot journal (empty, over the entry bound, bad meta) is left
    alone and named on stderr. Search finds a person's edit once it is journaled.
    """
    from ..file_store import FileStore

    with _open_journal(path) as store:
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

        _echo_json(
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
        click.echo(_change_line(c))
    n = len(done.changes)
    click.echo(f"reconciled {n} {'change' if n == 1 else 'changes'}")


# --- MCP ------------------------------------------------------------------------------------


@main.command("mcp", short_help="Serve the memory tools over MCP on stdio.")
@_path_option
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
@_embedder_option
@_server_options
@click.option(
    "--max-total-bytes",
    type=click.IntRange(min=1),
    default=32 * 1024,
    show_default=True,
    help="The bound of the rendered block (memory://block), in bytes.",
)
@click.option(
    "--policy",
    type=click.Choice(["none", "default"]),
    default="none",
    show_default=True,
    help="default: the block shows only user and feedback entries, and the prompt "
    "memory-recall recalls the others per turn; none: the block shows every entry.",
)
@click.option(
    "--neutralise",
    is_flag=True,
    help="Make headings of level 1 to 3 inside entries level 4 in memory://block and the "
    "memory-recall prompt, so content cannot forge their structure.",
)
def mcp_command(
    path: Path | None,
    scopes: tuple[str, ...],
    read_scopes: tuple[str, ...],
    embedder_name: str | None,
    shared: bool,
    max_total_bytes: int,
    policy: str,
    neutralise: bool,
) -> None:
    """Serve the memory tools, the rendered block and the per-turn part over MCP on stdio.

    The tools are memory_save, memory_patch, memory_forget and memory_search; the block is the
    resource memory://block; the prompt memory-recall takes a hint and returns what is recalled
    for it. Stops when the client closes stdin.
    """
    logging.basicConfig(level=logging.WARNING)  # stderr: stdout carries the protocol
    from ..mcp_server import MemoryServer, serve_stdio
    from ..tools import ToolConfigError, check_tool_scopes

    try:  # refuse bad scopes before the store folder is created or a model is loaded
        check_tool_scopes(scopes, read_scopes)
    except ToolConfigError as exc:
        raise click.UsageError(str(exc)) from None
    store = _open_index(path, embedder_name, create=True, shared=shared)
    try:
        from ..kinds import KindRegistry

        server = MemoryServer(
            store,
            scopes,
            read_scopes=read_scopes,
            max_total_bytes=max_total_bytes,
            policy=KindRegistry() if policy == "default" else None,
            neutralise=neutralise,
        )
        serve_stdio(server)
    finally:
        store.close()


# --- the folder's Chroma server ------------------------------------------------------------


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
@_path_option
@_json_option
def server_start_command(port: int | None, path: Path | None, as_json: bool) -> None:
    """Start the store's Chroma server, detached, and record it in the store folder."""
    from ..store_folder import start_folder_server, store_folder

    folder = store_folder(path)
    with _opening():
        done = start_folder_server(folder, port=port)
    record = done.record
    if as_json:
        _echo_json(_record_json(record, True))
        return
    verb = "started" if done.started else "already running"
    click.echo(f"Chroma server {verb} for {folder} at {record.url} (pid {record.pid})")


@server_group.command("stop", short_help="Stop the server.")
@_path_option
def server_stop_command(path: Path | None) -> None:
    """Stop the store's Chroma server and remove its record."""
    from ..chroma_server import stop_server
    from ..store_folder import store_folder

    folder = store_folder(path)
    record = stop_server(folder)
    if record is None:
        click.echo(f"no Chroma server recorded for {folder}")
        return
    click.echo(f"stopped the Chroma server of {folder} ({record.url}, pid {record.pid})")


@server_group.command("status", short_help="Show the server (exit 1 when none runs).")
@_path_option
@_json_option
def server_status_command(path: Path | None, as_json: bool) -> None:
    """Show whether the store's Chroma server runs, where, since when, of which chromadb."""
    from ..chroma_server import live_record, read_record
    from ..store_folder import store_folder

    folder = store_folder(path)
    record = read_record(folder)
    running = record is not None and live_record(folder, report=False) is not None
    if as_json:
        _echo_json(_record_json(record, running) if record is not None else {"running": False})
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


# --- eval and demo --------------------------------------------------------------------------


@main.command("eval", short_help="Evaluate recall on LoCoMo or SciFact.")
@click.argument("dataset", type=click.Choice(["locomo", "scifact"]))
@click.option(
    "--data",
    type=click.Path(path_type=Path),
    default=None,
    help="The data file or folder (default: shared/data next to the repository, then the cache).",
)
@click.option(
    "--download", is_flag=True, help="Fetch the public data into the cache when it is not found."
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="Run a slice: the first N conversations (locomo) or queries (scifact).",
)
@click.option(
    "--json-out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the results (every query's rankings too) as JSON here (default: the cache "
    "folder's results/).",
)
@click.option(
    "--embedder",
    "embedder_name",
    default=None,
    metavar="NAME",
    help="The embedder by registry name (default: the evaluation's, the packaged "
    "all-MiniLM-L6-v2).",
)
@click.option("--rebuild", is_flag=True, help="Build the cached evaluation stores again.")
@click.option(
    "--rerank",
    "rerank_folder",
    type=click.Path(path_type=Path),
    default=None,
    metavar="PATH",
    help="Also score the hybrid reranked by the cross-encoder in this local model folder "
    "(method hybrid+rerank; nothing is downloaded).",
)
@click.option(
    "--progress/--no-progress",
    default=True,
    show_default=True,
    help="Progress bars on stderr.",
)
@_json_option
def eval_command(
    dataset: str,
    data: Path | None,
    download: bool,
    limit: int | None,
    json_out: Path | None,
    embedder_name: str | None,
    rebuild: bool,
    rerank_folder: Path | None,
    progress: bool,
    as_json: bool,
) -> None:
    """Evaluate BM25, vector and hybrid recall on a public benchmark and print the table.

    locomo: one store per conversation, each dialog turn an entry, each question a query scored
    against its evidence turns (Recall@k, Hit@k, MRR, nDCG@10; also per category). scifact:
    each abstract an entry, the 300 test queries scored against their qrels. Evaluation stores
    are cached, so a second run embeds nothing. Every method is scored on a ranking 10 deep and
    at memory_search's default limit, 5 (rows <method>@5). --rerank adds the hybrid reordered by
    a local cross-encoder (docs/recall.md#reranking).
    """
    from recallers import RerankerFolderError

    from ..eval import evaluate, locate_data, reranker_for, results_path

    if embedder_name is not None:
        _embedder(embedder_name)  # an unknown name is a usage error before any work
    try:
        reranker = reranker_for(rerank_folder)
    except RerankerFolderError as exc:
        raise click.BadParameter(str(exc), param_hint="--rerank") from None
    result = evaluate(
        dataset,
        limit=limit,
        data=locate_data(dataset, data, download=download, announce=_to_stderr),
        embedder=embedder_name,
        rebuild=rebuild,
        progress=progress,
        reranker=reranker,
    )
    written = result.write_json(json_out if json_out is not None else results_path(dataset))
    if as_json:
        click.echo(result.to_json(queries=False))
    else:
        click.echo(result.render())
    click.echo(f"results written to {written}", err=as_json)


def _to_stderr(line: str) -> None:
    click.echo(line, err=True)


@main.command("demo", short_help="Import a LoCoMo conversation and search it as an agent.")
@click.option(
    "--data",
    type=click.Path(path_type=Path),
    default=None,
    help="The LoCoMo file, or a folder holding it (default: "
    "shared/data/locomo/locomo-dev.json next to the repository, then the cache).",
)
@click.option(
    "--download",
    is_flag=True,
    help="Fetch the public locomo10.json (checked by its SHA-256) when no data is found.",
)
@click.option(
    "--conversation",
    default=None,
    metavar="ID",
    help="Which conversation: its sample id (conv-30) or number from 1 (default: the first).",
)
@click.option(
    "--questions",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="How many of its questions to show in full (spread over the conversation); every "
    "question is searched and scored.",
)
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Build the demo store in this new folder and keep it (default: a temporary folder, "
    "removed at the end).",
)
@_embedder_option
def demo_command(
    data: Path | None,
    download: bool,
    conversation: str | None,
    questions: int,
    keep: Path | None,
    embedder_name: str | None,
) -> None:
    """Import one LoCoMo conversation and search it the way an agent does.

    Each dialog turn becomes an entry; for every one of the conversation's questions the real
    memory_search tool is called; for a few its result (what the model reads) is printed with
    the Recall@5 of the question's evidence turns. Ends with the Recall@5 over all the
    questions, also of BM25 and vector search alone. Offline; about 20 to 40 seconds once
    installed.
    """
    from ..demo import run_demo
    from ..eval import locate_data

    embedder = _embedder(embedder_name)
    run_demo(
        data=locate_data("locomo", data, download=download, announce=_to_stderr),
        conversation=conversation,
        questions=questions,
        embedder=embedder,
        path=keep,
        out=click.echo,
    )
