"""The options commands share (``--path``, ``--format``, ``--dsn``, ``--chroma-url``,
``--json``, ``--embedder``, ``--shared``, ``--session``, the byte bounds, ``--policy`` and
``--neutralise``), where the options kept in click's
``ctx.meta`` are read back, and the parsing of ``SCOPE/NAME`` and ``KEY=VALUE`` arguments."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

PATH_ENV = "AGENTMEMORY_PATH"
"""Environment variable naming the store folder when ``--path`` is not given."""

FORMAT_ENV = "AGENTMEMORY_FORMAT"
"""Environment variable read for ``--format`` (the kind of store folder)."""

F = TypeVar("F", bound=Callable[..., Any])


def folder_option(f: F) -> F:
    """``--path DIRECTORY`` (or ``$AGENTMEMORY_PATH``): the store folder, a ``Path`` or ``None``;
    ``--path ""`` is a usage error."""
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
    it (:func:`agentmemory.stores.chroma.server.parse_chroma_address`, the one reader)."""
    from agentmemory.stores.chroma.server import parse_chroma_address

    from ..errors import ChromaAddressError

    try:
        url = parse_chroma_address(value).url if value else None
    except ChromaAddressError as exc:
        raise click.BadParameter(f"{exc.where}: {exc.detail}") from None
    _remember_hosted(ctx, param, url)


def hosted() -> tuple[str | None, str | None]:
    """The ``--dsn`` and ``--chroma-url`` of the current command (``None`` when not given)."""
    ctx = click.get_current_context(silent=True)
    found = ctx.meta.get(_HOSTED_META, {}) if ctx is not None else {}
    return found.get("dsn") or None, found.get("chroma_url")


def hosted_options(f: F) -> F:
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


def path_option(f: F) -> F:
    """``--path``, ``--format`` (the store folder's kind; kept in ``ctx.meta``), and ``--dsn``
    and ``--chroma-url`` (a store on servers)."""
    f = hosted_options(f)
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
    return folder_option(f)


def given_format() -> str | None:
    """The ``--format`` of the current command (``"sqlite"``, ``"markdown"``), ``None`` when not
    given."""
    ctx = click.get_current_context(silent=True)
    value = ctx.meta.get(_FORMAT_META) if ctx is not None else None
    return value if isinstance(value, str) else None


def json_option(f: F) -> F:
    """``--json`` (``as_json``): print JSON for programs instead of text."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print JSON for programs instead of text."
    )(f)


def embedder_option(f: F) -> F:
    """``--embedder NAME`` (``embedder_name``): the embedder by registry name, ``None`` for the
    store folder's rule (:func:`agentmemory.open_store`)."""
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


def server_options(f: F) -> F:
    """``--shared``: the store folder's own Chroma server holds its vector index (any other
    server is ``--chroma-url``, one of :func:`path_option`'s)."""
    return click.option(
        "--shared",
        is_flag=True,
        envvar="AGENTMEMORY_SHARED",
        show_envvar=True,
        help="Share the store with other processes through its own Chroma server: start it "
        "('agentmemory server start') when none runs. A running one is used anyway.",
    )(f)


def progress_options(f: F) -> F:
    """``--progress/--no-progress`` (``progress``: ``None`` when neither is given, meaning a bar
    only when stderr is a terminal) and ``--quiet``/``-q`` (``quiet``: no bar, as
    ``--no-progress``). The bar goes to stderr, so stdout (``--json``, an export) stays clean."""
    f = click.option(
        "--quiet",
        "-q",
        "quiet",
        is_flag=True,
        help="No progress bar (as --no-progress).",
    )(f)
    return click.option(
        "--progress/--no-progress",
        default=None,
        help="Show a progress bar on stderr (default: when stderr is a terminal).",
    )(f)


def bar_disabled(progress: bool | None, quiet: bool) -> bool | None:
    """tqdm's ``disable`` for :func:`progress_options`' values: ``True`` (no bar) with
    ``--quiet`` or ``--no-progress``, ``False`` with ``--progress``, else ``None`` (tqdm shows it
    only when its stream is a terminal)."""
    if quiet:
        return True
    return None if progress is None else not progress


def session_option(f: F) -> F:
    """``--session ID`` (``session_id``): the session id stamped on the journal records."""
    return click.option(
        "--session",
        "session_id",
        default=None,
        metavar="ID",
        help="Stamp the journal record(s) with this session id.",
    )(f)


def parse_key(key: str) -> tuple[str, str]:
    """``"scope/name"`` -> ``(scope, name)``; a usage error otherwise."""
    scope, sep, name = key.partition("/")
    if not sep or not scope or not name or "/" in name:
        raise click.BadParameter(
            f"{key!r} is not SCOPE/NAME; address an entry as e.g. user/editor-prefs",
            param_hint="KEY",
        )
    return scope, name


def parse_meta(pairs: Sequence[str]) -> dict[str, str]:
    """``--meta KEY=VALUE`` pairs as a dict (a later key wins); a usage error for a pair without
    ``=`` or with an empty key. The values are checked by the store's put."""
    meta: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(
                f"{pair!r} is not KEY=VALUE (e.g. --meta source=chat)", param_hint="--meta"
            )
        meta[key] = value
    return meta


def bytes_option(flag: str, default: int, help: str) -> Callable[[F], F]:
    """An option for a bound in UTF-8 bytes (at least 1), its default shown: ``--max-total-bytes``
    (the block, :data:`agentmemory.DEFAULT_MAX_TOTAL_BYTES`) and ``--max-bytes`` (the recalled
    part, :data:`agentmemory.recalled.DEFAULT_RECALL_BYTES`)."""
    return click.option(
        flag, type=click.IntRange(min=1), default=default, show_default=True, help=help
    )


def policy_option(help: str) -> Callable[[F], F]:
    """``--policy none|default`` (default ``none``): the kind policy of the block
    (docs/kinds.md)."""
    return click.option(
        "--policy",
        type=click.Choice(["none", "default"]),
        default="none",
        show_default=True,
        help=help,
    )


def neutralise_option(help: str) -> Callable[[F], F]:
    """``--neutralise``: headings of level 1 to 3 inside entries become level 4
    (docs/contract.md)."""
    return click.option("--neutralise", is_flag=True, help=help)


def duplicates_options(f: F) -> F:
    """``--duplicates report|refuse|off`` (default ``report``) and ``--duplicate-floor COSINE``
    (default the floor measured for the default embedder): what a save does when its content is
    a near-duplicate of live entries (docs/contract.md#near-duplicates-at-save-time)."""
    from ..duplicates import DEFAULT_DUPLICATE_POLICY, DUPLICATE_FLOOR, DUPLICATE_POLICIES

    f = click.option(
        "--duplicate-floor",
        "duplicate_floor",
        type=click.FloatRange(min=0, max=1, min_open=True),
        default=DUPLICATE_FLOOR,
        show_default=True,
        metavar="COSINE",
        help="The cosine similarity from which a live entry counts as a near-duplicate "
        "(measured for the default embedder; docs/recall.md#the-duplicate-floor).",
    )(f)
    return click.option(
        "--duplicates",
        "duplicates",
        type=click.Choice(list(DUPLICATE_POLICIES)),
        default=DEFAULT_DUPLICATE_POLICY,
        show_default=True,
        help="When the new content restates live entries: report names them (the save "
        "lands), refuse refuses the save (nothing written), off does not look.",
    )(f)
