"""The commands that rank or show what the model reads: ``search``, ``render`` and
``recall-part``."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..kinds import KindRegistry
from ..recalled import DEFAULT_RECALL_BYTES
from ..render import DEFAULT_MAX_TOTAL_BYTES
from .group import main
from .opening import open_index, opened_journal
from .options import (
    bytes_option,
    embedder_option,
    json_option,
    neutralise_option,
    path_option,
    policy_option,
    server_options,
)
from .output import SHOW_CHARS, echo_json, note, one_line

if TYPE_CHECKING:
    from recallers import Hit

    from ..entries import Entry


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
@path_option
@embedder_option
@server_options
@json_option
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
        with opened_journal(path) as journal:
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
            open_index(
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
        note(f"the vector leg was unavailable ({missing}); these are BM25 results only")
    elif failed:  # a hybrid whose leg failed is not a hybrid: say which leg answered, and why
        answered = [leg for leg in ("bm25", "vector") if leg not in failed]
        shown_mode = "+".join(answered) or "none"
        for leg, why in failed.items():
            click.echo(f"agentmemory: the {leg} leg failed ({why}); these hits are "
                       f"{shown_mode} only", err=True)  # fmt: skip
    if as_json:
        echo_json(
            {
                "query": text,
                "mode": shown_mode,
                "failed_legs": failed,
                "scopes": wanted,
                "as_of": day.isoformat(),
                "include_superseded": include_superseded,
                "hits": [
                    _hit_json(rank, h, in_force=keep is None or keep(h.entry))
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
    from recallers import shown_score
    from recallers.hits import NEGLIGIBLE_BM25_NOTE

    shown: list[str] = []
    # the note only when a score the hits are ordered by reads "<0.001" (a BM25-ranked list);
    # a hybrid's BM25 leg shown that small does not decide its order, so it needs no note
    ranked_by_negligible = False
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
        ranked_by_negligible = ranked_by_negligible or shown[-1] == "<0.001"
        why_not = None if keep is None else keep.why_not(h.entry)
        stale = "" if why_not is None else f"  {why_not}"
        click.echo(f"{rank:>2}. {h.entry.key}  score {shown[-1]}  ({', '.join(legs)}){stale}")
        body = h.entry.content.rstrip("\n") if full else one_line(h.entry.content, SHOW_CHARS)
        click.echo("    " + body.replace("\n", "\n    "))
    if ranked_by_negligible:
        click.echo(f"note: {NEGLIGIBLE_BM25_NOTE}")


def _hit_json(rank: int, hit: Hit[Entry], *, in_force: bool) -> dict[str, Any]:
    """One hit of ``search --json``: its rank (from 1), key, score and method, each leg's rank
    and raw score, the legs that could not run, whether it is in force on the day judged, and
    the entry (content, meta, hash). The command's own form, not a Go wire form."""
    e = hit.entry
    return {
        "rank": rank,
        "scope": e.scope,
        "name": e.name,
        "score": hit.score,
        "method": hit.method,
        "legs": {leg: {"rank": s.rank, "score": s.score} for leg, s in sorted(hit.legs.items())},
        "unavailable": dict(hit.unavailable),
        "in_force": in_force,
        "content": e.content,
        "meta": e.meta or {},
        "hash": e.hash,
    }


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
@bytes_option(
    "--max-total-bytes",
    DEFAULT_MAX_TOTAL_BYTES,
    "The bound of the block, in UTF-8 bytes.",
)
@policy_option(
    "default: show only the always-shown kinds (user, feedback) and name the rest as "
    "recalled when relevant; none: show every entry."
)
@neutralise_option(
    "Make headings of level 1 to 3 inside entries level 4, so content cannot forge the "
    "block's structure."
)
@path_option
@json_option
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
    from ..render import render

    registry = KindRegistry() if policy == "default" else None
    with opened_journal(path) as store:
        block, manifest = render(
            store,
            list(scopes),
            max_total_bytes=max_total_bytes,
            policy=registry,
            neutralise=neutralise,
        )
    if as_json:
        echo_json({"block": block, "bytes": utf8_len(block), "manifest": manifest.to_dict()})
        return
    click.echo(block)


@main.command("recall-part", short_help="Print the memory recalled for one turn's hint.")
@click.argument("hint", nargs=-1, required=True)
@click.option(
    "--scope", "scopes", multiple=True, help="A scope to recall from; repeat (default: all)."
)
@bytes_option(
    "--max-bytes",
    DEFAULT_RECALL_BYTES,
    "The bound of the part, in UTF-8 bytes.",
)
@neutralise_option(
    "Make headings of level 1 to 3 inside entries level 4, so content cannot forge the "
    "part's structure."
)
@path_option
@embedder_option
@json_option
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
    with open_index(path, embedder_name, create=False) as store:
        wanted = list(scopes) or store.scopes()
        part, manifest = recall_part(
            store, wanted, text, max_bytes=max_bytes, neutralise=neutralise
        )
    if as_json:
        body = part.text if part is not None else None
        echo_json({"part": body, "bytes": utf8_len(body or ""), "manifest": manifest.to_dict()})
        return
    if part is None:
        why = manifest.reason or "nothing fits in the bound"
        click.echo(f"nothing recalled for {text!r} ({why})", err=True)
        return
    click.echo(part.text)
