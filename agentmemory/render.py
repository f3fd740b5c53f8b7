"""Render: the bounded block of memory the model reads, byte for byte as the Go module writes it.

The block is the request's prefix that prompt caches key on, and a session records it, so its bytes
are a contract (docs/contract.md#the-block-format). It is a title, one section per scope in the
order given, one part per entry that fits (a heading with its size, the store's limit and its
description, then its content), a line per scope naming what did not fit, and a summary line last::

    # Memory

    ## user

    ### style (28 of 4096 bytes) — How the user likes answers

    Short answers.

    Code in Go.

    ### timezone (13 of 4096 bytes)

    Europe/London

    Entries: 2 shown, 0 omitted. Block: 250 of 32768 bytes (32518 free). Entry limit: 4096 bytes.

All sizes are UTF-8 bytes. The bound covers the whole joined block, and the block is never over it.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Protocol

from .entries import Entry, utf8_len
from .errors import BudgetError, InvalidEntryError
from .kinds import KindRegistry, kind_of
from .manifest import OMIT_BUDGET, OMIT_KIND_LIMIT, OMIT_RECALL_ONLY, Manifest, ManifestEntry
from .rules import check_scope
from .validity import in_force_lists
from .wire import go_quote

__all__ = [
    "DEFAULT_MAX_TOTAL_BYTES",
    "PART_SEPARATOR",
    "SUMMARY_PART_ID",
    "TITLE_PART_ID",
    "Part",
    "join_parts",
    "neutralise_headings",
    "part_id",
    "render",
    "render_parts",
]

DEFAULT_MAX_TOTAL_BYTES = 32 * 1024
"""The bound :func:`render` starts with, in UTF-8 bytes: the whole block, headings and summary
included (Go ``DefaultMaxTotalBytes``)."""

PART_SEPARATOR = "\n\n"
"""What joins the parts into the block: one blank line (Go ``PartSeparator``)."""

TITLE_PART_ID = "memory"
"""The ID of the block's first part, its title ``# Memory``, which no write changes."""

SUMMARY_PART_ID = "memory:summary"
"""The ID of the block's last part, the summary line, which every write changes."""

_TITLE = "# Memory"
_NO_ENTRIES = "No entries."
_OMIT_HEAD = "Not shown, over the block budget; fetch with memory_search: "
_OMIT_SHORT = "Not shown, over the block budget: {n} entries."
_HELD_HEAD = "Recalled when relevant, not shown; fetch with memory_search: "
_HELD_SHORT = "Recalled when relevant, not shown: {n} entries."
_SEP = len(PART_SEPARATOR)


@dataclass(frozen=True, slots=True)
class Part:
    """One piece of the rendered block.

    Attributes:
        id: stable across renders while the piece exists: :data:`TITLE_PART_ID`,
            ``"memory/<scope>"`` for a scope heading, :func:`part_id` for an entry,
            ``"memory/<scope>:omitted"`` for the line naming what a scope left out, and
            :data:`SUMMARY_PART_ID`. No two parts of one block share an ID.
        text: the piece, without the blank line that separates it from the next; it never begins
            or ends with ``"\\n"`` (an entry's content can end in one when it ended in two).
    """

    id: str
    text: str


def part_id(scope: str, name: str) -> str:
    """The ID of the part holding entry ``scope/name``: ``"memory/<scope>/<name>"``.

    A product also gives this ID to an omitted entry of the manifest when it records what the
    block left out beside the parts it holds.
    """
    return f"memory/{scope}/{name}"


def join_parts(parts: Iterable[Part]) -> str:
    """The block the parts compose: their texts joined with :data:`PART_SEPARATOR`, in order."""
    return PART_SEPARATOR.join(p.text for p in parts)


class _Source(Protocol):
    """What render reads from a store: every :class:`~agentmemory.Store` satisfies it."""

    @property
    def max_entry_bytes(self) -> int: ...

    def list(self, scope: str) -> builtins.list[Entry]: ...


def _summary(shown: int, omitted: int, size: int, free: int, bound: int, limit: int) -> str:
    # The free count is padded to the bound's digit width, so the summary's width depends on the
    # size it states alone and the size settles (docs/contract.md#the-summary-line).
    width = len(str(bound))
    return (
        f"Entries: {shown} shown, {omitted} omitted. Block: {size} of {bound} bytes "
        f"({free:>{width}d} free). Entry limit: {limit} bytes."
    )


def _scope_text(scope: str, empty: bool) -> str:
    return f"## {scope}{PART_SEPARATOR}{_NO_ENTRIES}" if empty else f"## {scope}"


def _entry_text(e: Entry, limit: int, neutralise: bool = False) -> str:
    heading = f"### {e.name} ({e.size} of {limit} bytes)"
    if e.description:
        heading += f" — {e.description}"
    content = e.content[:-1] if e.content.endswith("\n") else e.content
    if neutralise:
        content = neutralise_headings(content)
    return heading + PART_SEPARATOR + content


_ATX = re.compile(r"( {0,3})(#{1,3})(?=[ \t]|$)")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_BARE_CR = re.compile(r"\r(?!\n)")


def neutralise_headings(content: str) -> str:
    """``content`` with its Markdown headings of level 1 to 3 made harmless inside the block
    (docs/kinds.md#memory-is-data).

    Outside fenced code blocks: an ATX heading of level 1 to 3 (``# ``, ``## ``, ``### ``, up
    to 3 spaces of indent) becomes level 4 (``#### ``), the level ``usage()`` asks entries to
    use; a setext underline (a line of ``=`` or ``-`` right under a line of text) gets a
    backslash in front, so it is text, not a level 1 or 2 heading. A bare CR (one not followed
    by LF), which CommonMark reads as a line end, becomes LF, so the line after it is checked
    too; a fenced code block the content leaves open is closed at its end (a fence line of the
    same character and length), so it cannot turn the rest of the block into code. Everything
    else is kept byte for byte; content without any of these is returned unchanged.
    """
    lines = _BARE_CR.sub("\n", content).split("\n")
    fence = ""
    prev_text = False
    for i, line in enumerate(lines):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            prev_text = False
            continue
        if opened:
            fence = opened.group(1)
            prev_text = False
            continue
        atx = _ATX.match(line)
        if atx:
            lines[i] = atx.group(1) + "####" + line[atx.end() :]
            prev_text = False
            continue
        if prev_text and _SETEXT.fullmatch(line):
            lines[i] = "\\" + line.lstrip(" ")
            prev_text = False
            continue
        prev_text = line.strip() != ""
    if fence:
        lines.append(fence)
    return "\n".join(lines)


def _omit_item(e: Entry) -> str:
    return f"{e.name} ({e.size} bytes)"


def _more(n: int) -> str:
    return f", and {n} more"


def _pack(costs: Sequence[int], room: int) -> tuple[builtins.list[bool], int]:
    """Which entries fit in ``room`` bytes, in list order, skipping one that does not."""
    fits: builtins.list[bool] = []
    used = 0
    for n in costs:
        ok = used + n <= room
        fits.append(ok)
        if ok:
            used += n
    return fits, used


def _omit_line_reserve(es: Sequence[Entry]) -> int:
    """The most a scope's omission line can take, separator included, in bytes."""
    widest = max(utf8_len(_omit_item(e)) for e in es)
    return _SEP + utf8_len(_OMIT_HEAD) + widest + utf8_len(_more(len(es)))


def _omit_line(
    dropped: Sequence[Entry], room: int, lead: str = _OMIT_HEAD, short_form: str = _OMIT_SHORT
) -> str:
    """Name the dropped entries within ``room`` bytes (separator included): as many names as fit
    and how many more; with room for no name, the count alone; with room for neither, ``""``."""
    head = _SEP + utf8_len(lead)
    pieces: builtins.list[str] = []
    listed = 0
    for i, e in enumerate(dropped):
        piece = (", " if pieces else "") + _omit_item(e)
        rest = len(dropped) - i - 1
        tail = utf8_len(_more(rest)) if rest > 0 else 0
        if head + listed + utf8_len(piece) + tail > room:
            break
        pieces.append(piece)
        listed += utf8_len(piece)
    if not pieces:
        short = short_form.format(n=len(dropped))
        return short if _SEP + utf8_len(short) <= room else ""
    line = lead + "".join(pieces)
    rest = len(dropped) - len(pieces)
    return line + _more(rest) if rest else line


def render_parts(
    store: _Source,
    scopes: Sequence[str],
    *,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    scope_max_bytes: Mapping[str, int] | None = None,
    policy: KindRegistry | None = None,
    as_of: date | str | None = None,
    neutralise: bool = False,
) -> tuple[list[Part], Manifest]:
    """Render the memory block as its parts, and the :class:`Manifest` of what it holds.

    Args:
        store: any :class:`~agentmemory.Store` (only ``list(scope)`` and ``max_entry_bytes`` are
            used); its errors propagate unchanged.
        scopes: the scopes to render, in this order; each kebab-case and given once. Entries come
            in ``store.list`` order (by name).
        max_total_bytes: the bound on the joined block in UTF-8 bytes, separators, headings,
            omission lines and summary included (default 32768).
        scope_max_bytes: per-scope caps in bytes on what a scope's entries and omission line take,
            separators included, not its heading. A cap of 0 shows none of the scope's entries and
            names them if there is room; a cap larger than the room left, or on a scope not
            rendered, does nothing.
        policy: a :class:`~agentmemory.KindRegistry`. With one, the block shows only entries of
            the kinds it always shows, at most ``max_entries`` of each kind over all the scopes
            (the most recently written), and leaves the rest out under reason
            :data:`~agentmemory.manifest.OMIT_RECALL_ONLY` or :data:`~agentmemory.manifest.OMIT_KIND_LIMIT`,
            naming them in a line per scope so the model knows they exist and can search them
            (``docs/kinds.md#the-block-under-a-policy``). Without one (the default), every entry
            is a candidate and the block is the contract's, byte for byte.
        as_of: the day (a ``date`` or ``"YYYY-MM-DD"``) whose entries in force are rendered;
            default today (UTC). An entry out of date on that day (past its ``valid-until``,
            before its ``valid-from``, or retired by another's ``supersedes``) is neither
            shown nor listed in the manifest, as if it were not live
            (docs/kinds.md#out-of-date-on-purpose-only). A store without such meta renders the
            same on every day.
        neutralise: ``True``: headings of level 1 to 3 inside an entry's content are made
            level 4 (and setext underlines escaped, :func:`neutralise_headings`), so a saved
            entry cannot forge the block's structure; the manifest's ``neutralised`` names the
            shown entries that had one. ``False`` (default): content as stored, the contract's
            bytes (docs/kinds.md#memory-is-data).

    Returns:
        ``(parts, manifest)``: the title, then per scope its heading (``"## <scope>"``, with
        ``"No entries."`` when the scope lists none), the entries that fit and the line naming
        those that did not, and last the summary
        ``"Entries: S shown, O omitted. Block: N of M bytes (F free). Entry limit: L bytes."``,
        where ``N`` is the joined block's exact size and ``F`` is padded with spaces to the digit
        width of ``M``. ``manifest.entries`` are the shown entries in block order;
        ``manifest.omitted`` every entry that did not fit, with reason :data:`OMIT_BUDGET`
        (or a policy's reason), in the order they would have appeared.

    The budget (docs/contract.md#bounds-and-the-budget): the title, one heading per scope and the widest
    possible summary are reserved first; then each scope packs its entries, in list order, into
    what is left (or its cap, if smaller): an entry that does not fit is skipped and later ones are
    still tried; when some are skipped the scope packs again holding room for its omission line.
    The summary's size is settled by a fixed point, so the block can come out a few bytes under
    the bound, never over it. The output depends only on the store's state, the bounds, the
    policy and the day.

    Content is not transformed except that one trailing ``"\\n"`` is dropped; a Markdown heading of
    level 1 to 3 inside an entry stays as it is (``usage()`` asks the model for level 4 or none)
    unless ``neutralise`` is given.

    Raises:
        BudgetError: ``max_total_bytes < 1``; a negative cap; or a bound under what the title, the
            summary and the scope headings take. No block is returned.
        InvalidEntryError: a scope that is not kebab-case, or one given twice.
        TypeError: ``scopes`` is a single ``str`` (pass ``["user"]``, not ``"user"``), or
            ``policy`` is not a :class:`~agentmemory.KindRegistry`.
        ValueError: ``as_of`` is text that is not an ISO date.
    """
    if isinstance(scopes, str):
        raise TypeError(
            f"scopes is the string {scopes!r}; pass a list of scopes, e.g. [{scopes!r}]"
        )
    if policy is not None and not isinstance(policy, KindRegistry):
        raise TypeError(
            f"policy is a {type(policy).__name__}, not a KindRegistry; pass KindRegistry() for "
            "the default policy, or None for none"
        )
    scopes = list(scopes)
    caps = dict(scope_max_bytes or {})
    bound = max_total_bytes
    if bound < 1:
        raise BudgetError(
            f"the bound is {bound} bytes; give a bound of at least 1, or leave the block out"
        )
    for scope, cap in caps.items():
        if cap < 0:
            raise BudgetError(
                f"scope {go_quote(str(scope))} is capped at {cap} bytes; give a cap of 0 or more"
            )
    for i, scope in enumerate(scopes):
        check_scope(scope)
        if scope in scopes[:i]:
            raise InvalidEntryError(
                f"scope {go_quote(scope)} is given twice; list each scope once", field="scope"
            )

    limit = store.max_entry_bytes
    lists = in_force_lists([store.list(scope) for scope in scopes], as_of=as_of)
    held = _held_by_policy(policy, scopes, lists) if policy is not None else {}
    total = sum(len(es) for es in lists)
    headings = [_scope_text(s, not es) for s, es in zip(scopes, lists, strict=True)]
    fixed = utf8_len(_TITLE) + _SEP + utf8_len(_summary(total, total, bound, bound, bound, limit))
    fixed += sum(_SEP + utf8_len(h) for h in headings)
    if fixed > bound:
        raise BudgetError(
            f"the title, the summary and {len(scopes)} scope headings take {fixed} bytes, "
            f"the bound is {bound}; raise the bound to at least {fixed} bytes, or leave the "
            "block out"
        )

    parts = [Part(TITLE_PART_ID, _TITLE)]
    shown: list[ManifestEntry] = []
    omitted: list[ManifestEntry] = []
    spent = 0  # bytes of the entries and omission lines placed so far, separators included
    changed: list[str] = []  # "scope/name" of shown entries whose headings were neutralised
    for scope, all_es, heading in zip(scopes, lists, headings, strict=True):
        parts.append(Part(f"memory/{scope}", heading))
        if not all_es:
            continue
        room = bound - fixed - spent
        if scope in caps:
            room = min(room, caps[scope])
        kept = [e for e in all_es if (scope, e.name) not in held]
        out = [e for e in all_es if (scope, e.name) in held]
        # Room for the short form of the line naming what the policy keeps out, so the model is
        # always told those entries exist when the scope has room for a line at all.
        reserve = _SEP + utf8_len(_HELD_SHORT.format(n=len(out))) if out else 0
        used = 0
        dropped: list[Entry] = []
        if kept:
            texts = [_entry_text(e, limit, neutralise) for e in kept]
            costs = [_SEP + utf8_len(t) for t in texts]
            fits, used = _pack(costs, room - reserve)
            if not all(fits):
                # The first pass says whether there will be an omission line; the second holds
                # room for it. Holding room back can only leave more out, so it settles it.
                fits, used = _pack(costs, room - reserve - _omit_line_reserve(kept))
            for e, text, ok in zip(kept, texts, fits, strict=True):
                if ok:
                    parts.append(Part(part_id(scope, e.name), text))
                    shown.append(ManifestEntry(scope, e.name, e.hash, e.size))
                    if neutralise and text != _entry_text(e, limit):
                        changed.append(e.key)
                else:
                    dropped.append(e)
        dropped_names = {e.name for e in dropped}
        for e in all_es:  # every left-out entry, in the order it would have appeared
            if e.name in dropped_names:
                omitted.append(ManifestEntry(scope, e.name, e.hash, e.size, OMIT_BUDGET))
            elif (scope, e.name) in held:
                reason = held[(scope, e.name)]
                omitted.append(ManifestEntry(scope, e.name, e.hash, e.size, reason))
        if dropped:
            line = _omit_line(dropped, room - reserve - used)
            if line:
                parts.append(Part(f"memory/{scope}:omitted", line))
                used += _SEP + utf8_len(line)
        if out:
            line = _omit_line(out, room - used, _HELD_HEAD, _HELD_SHORT)
            if line:
                parts.append(Part(f"memory/{scope}:recalled", line))
                used += _SEP + utf8_len(line)
        spent += used

    # The summary states the block's own size: a fixed point. The reservation above is the widest
    # summary there can be, and each pass is no wider than the one before, so every pass is inside
    # the bound and a few of them settle (docs/contract.md#bounds-and-the-budget).
    rest = sum(utf8_len(p.text) for p in parts) + _SEP * len(parts)  # all but the summary's text
    size = fixed + spent
    last = ""
    for _ in range(8):
        last = _summary(len(shown), len(omitted), size, bound - size, bound, limit)
        n = rest + utf8_len(last)
        if n == size:
            break
        size = n
    parts.append(Part(SUMMARY_PART_ID, last))
    return parts, Manifest(tuple(shown), tuple(omitted), tuple(changed))


def _held_by_policy(
    policy: KindRegistry, scopes: Sequence[str], lists: Sequence[Sequence[Entry]]
) -> dict[tuple[str, str], str]:
    """The entries ``policy`` keeps out of the block, by ``(scope, name)``, with the reason.

    An entry of a recalled-only kind is held as :data:`OMIT_RECALL_ONLY`. Of an always-shown kind,
    the ``max_entries`` most recently written (``updated`` descending, then scope order, then
    name) over all the scopes are candidates and the rest are held as :data:`OMIT_KIND_LIMIT`.
    """
    held: dict[tuple[str, str], str] = {}
    by_kind: dict[str, list[tuple[int, Entry]]] = {}
    for i, es in enumerate(lists):
        for e in es:
            kind = kind_of(e)
            if policy.policy_for(kind).always:
                by_kind.setdefault(kind, []).append((i, e))
            else:
                held[(scopes[i], e.name)] = OMIT_RECALL_ONLY
    for kind, found in by_kind.items():
        cap = policy.policy_for(kind).max_entries
        if len(found) <= cap:
            continue
        found.sort(key=lambda ie: (-_stamp(ie[1]), ie[0], ie[1].name.encode()))
        for i, e in found[cap:]:
            held[(scopes[i], e.name)] = OMIT_KIND_LIMIT
    return held


def _stamp(e: Entry) -> float:
    """``e.updated`` as seconds since the epoch, 0 when unknown (sorts as the oldest)."""
    return e.updated.timestamp() if e.updated is not None else 0.0


def render(
    store: _Source,
    scopes: Sequence[str],
    *,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    scope_max_bytes: Mapping[str, int] | None = None,
    policy: KindRegistry | None = None,
    as_of: date | str | None = None,
    neutralise: bool = False,
) -> tuple[str, Manifest]:
    """Render the memory block the model reads: ``join_parts(render_parts(...))``.

    Returns ``(block, manifest)``; ``block`` is at most ``max_total_bytes`` UTF-8 bytes and has no
    trailing newline. See :func:`render_parts` for the format, the budget and the errors
    (:class:`~agentmemory.BudgetError`, :class:`~agentmemory.InvalidEntryError`, and the store's own
    errors, unchanged).
    """
    parts, manifest = render_parts(
        store,
        scopes,
        max_total_bytes=max_total_bytes,
        scope_max_bytes=scope_max_bytes,
        policy=policy,
        as_of=as_of,
        neutralise=neutralise,
    )
    return join_parts(parts), manifest
