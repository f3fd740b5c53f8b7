"""Opening the command's store with the command line's wording: :func:`agentmemory.open_store`
and :func:`agentmemory.open_journal` where the options say, their refusals as one line saying
what to run, their warnings as ``agentmemory:`` lines on stderr."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import NoStoreError
from .group import CliError
from .options import PATH_ENV, given_format, hosted

if TYPE_CHECKING:
    from agentmemory.stores.chroma.store import ChromaStore
    from agentmemory.stores.markdown.store import FileStore
    from agentmemory.stores.postgres.store import PostgresStore
    from agentmemory.stores.sqlite.store import SqliteStore
    from embedders import Embedder


def _no_store(exc: NoStoreError) -> CliError:
    """A store path that is a file, or a folder without a store, as one line saying what to do."""
    if exc.is_file:
        return CliError(f"store path {exc.path} is a file, not a folder; give a folder with --path")
    return CliError(
        f"no store at {exc.path} (it has no journal.sqlite3); create one with "
        "'agentmemory save' or 'agentmemory import', or point --path or "
        f"${PATH_ENV} at an existing store"
    )


def embedder_named(name: str | None) -> Embedder:
    """:func:`agentmemory.opening.choose_embedder`; an unknown name is a usage error."""
    from agentmemory.opening import choose_embedder

    from ..errors import EmbedderNameError

    try:
        return choose_embedder(name)
    except EmbedderNameError as exc:
        raise click.BadParameter(str(exc), param_hint="--embedder") from None


@contextmanager
def opened_journal(path: Path | None) -> Iterator[SqliteStore | FileStore | PostgresStore]:
    """:func:`agentmemory.open_journal` (with ``--dsn``, the PostgreSQL journal), its refusal of
    a folder without a store as one line."""
    from agentmemory.opening import open_journal

    where = open_args(path)
    try:
        store = open_journal(where["path"], format=where["format"], dsn=where["dsn"])
    except NoStoreError as exc:
        raise _no_store(exc) from None
    with store:
        yield store


def open_args(path: Path | None) -> dict[str, Any]:
    """Where :func:`agentmemory.open_store` opens the command's store: ``path``, ``format``,
    ``dsn`` and ``chroma_url`` from ``--path``, ``--format``, ``--dsn`` and ``--chroma-url``
    (``--dsn`` wins over ``--path`` and ``$AGENTMEMORY_PATH``)."""
    dsn, chroma_url = hosted()
    return {
        "path": None if dsn else path,
        "format": None if dsn else given_format(),
        "dsn": dsn,
        "chroma_url": chroma_url,
    }


@contextmanager
def opening() -> Iterator[None]:
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


def open_index(
    path: Path | None,
    embedder_name: str | None,
    *,
    create: bool,
    reindex: bool = False,
    shared: bool = False,
    read_only: bool = False,
) -> ChromaStore | FileStore:
    """:func:`agentmemory.open_store` (with ``--dsn`` and ``--chroma-url``, the store on
    servers, :func:`open_args`) with the command line's wording (:func:`opening`). ``shared``
    and ``read_only`` are :func:`agentmemory.open_store`'s."""
    from agentmemory.opening import open_store

    with opening():
        return open_store(
            embedder=embedder_name,
            create=create,
            reindex=reindex,
            shared=shared,
            read_only=read_only,
            **open_args(path),
        )


def open_moving_damage(
    path: Path | None,
    embedder_name: str | None,
    *,
    reindex: bool = False,
    shared: bool = False,
) -> ChromaStore | FileStore:
    """:func:`agentmemory.opening.open_store_moving_damage` with the command line's
    wording (:func:`opening`); a damaged index moved aside is one line on stderr."""
    from agentmemory.opening import open_store_moving_damage

    with opening():
        store, moved = open_store_moving_damage(
            embedder=embedder_name, reindex=reindex, shared=shared, **open_args(path)
        )
    if moved is not None:
        click.echo(
            f"agentmemory: the vector index was damaged ({moved.detail}); moved it to "
            f"{moved.aside} and rebuilt it from the journal",
            err=True,
        )
    return store
