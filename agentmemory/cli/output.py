"""What commands print besides their results: notes and warnings on stderr, times, short
hashes, one-line content, JSON in the Go module's form, a journal record as one line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from ..entries import SOURCE_PURGED

if TYPE_CHECKING:
    from ..entries import Change, Entry


SHOW_CHARS = 200  # characters of content a search or list line shows without --full


def note(text: str) -> None:
    """One ``agentmemory: note: ...`` line on stderr (a write or search that succeeded with
    something the user should know)."""
    click.echo(f"agentmemory: note: {text}", err=True)


def to_stderr(line: str) -> None:
    """Print ``line`` on stderr (what a library function announces, such as a download)."""
    click.echo(line, err=True)


def index_behind(changes: Sequence[Change], cause: BaseException | None) -> None:
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


def when(entry: Entry) -> str:
    """The entry's ``updated`` time as ``YYYY-MM-DD HH:MM:SS`` (UTC), ``"-"`` when unknown."""
    return entry.updated.strftime("%Y-%m-%d %H:%M:%S") if entry.updated else "-"


def short_hash(h: str) -> str:
    """The first 12 hex digits of a ``sha256:`` content hash, ``"-"`` for none."""
    return h.removeprefix("sha256:")[:12] if h else "-"


def one_line(text: str, limit: int | None) -> str:
    """``text`` with its white space runs made one space, cut to ``limit`` characters (the last
    one ``…``) when longer; ``limit`` ``None`` cuts nothing."""
    flat = " ".join(text.split())
    if limit is not None and len(flat) > limit:
        return flat[: limit - 1] + "…"
    return flat


def echo_json(value: object) -> None:
    """Print ``value`` as one line of the Go module's compact JSON
    (:func:`agentmemory.wire.go_json`)."""
    from ..wire import go_json

    click.echo(go_json(value))


def change_line(change: Change) -> str:
    """A journal record as one line: seq, time (UTC), create/replace/forget/purge, the key, the short
    hash, and what else it holds (built on, session, source, message, tool, reason)."""
    e = change.entry
    purge = change.source == SOURCE_PURGED  # the record a purge appends (content: the reason)
    what = (
        "purge" if purge else "forget" if e.deleted else "replace" if change.replaced else "create"
    )
    parts = [
        f"{change.seq:>6}",
        change.at.strftime("%Y-%m-%d %H:%M:%S") if change.at else "-",
        f"{what:<7}",
        e.key,
        short_hash(e.hash),
    ]
    if change.prev != change.replaced:
        parts.append(f"(built on {short_hash(change.prev)})")
    if change.session:
        parts.append(f"session {change.session}")
    if change.source and not purge:
        parts.append(change.source)
    for label, value in (("message", change.message), ("tool", change.tool)):
        if value:
            parts.append(f"{label} {value}")
    if change.reason:
        parts.append(f"reason {change.reason!r}")
    return "  ".join(parts)
