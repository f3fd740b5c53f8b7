"""The per-turn part: the recalled-only entries hybrid recall ranks for what the conversation says
now, bounded in bytes, meant to sit after the block (``docs/kinds.md#the-per-turn-part``).

The block (:func:`agentmemory.render`) is the prefix prompt caches key on; it changes only when
memory changes. What a turn needs beyond it (project notes, references) changes every turn, so it
goes in a part of its own, placed after the block's summary (for example at the start of the
latest user message), and the cached prefix stays intact::

    block, _ = render(store, scopes, policy=policy)             # in the instructions
    part, recalled = recall_part(store, scopes, last_user_text, policy=policy)
    if part is not None:
        user_text = part.text + "\\n\\n" + last_user_text           # this turn only
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from types import MappingProxyType
from typing import Any

from recallers import DEFAULT_TOKENIZER, LEG_BM25, LEG_VECTOR, Hit, LegScore, Tokenizer

from .entries import Entry, utf8_len
from .errors import BudgetError, InvalidEntryError
from .kinds import KindRegistry, kind_of
from .manifest import OMIT_BUDGET
from .render import PART_SEPARATOR, Part, neutralise_headings
from .rules import check_scope
from .validity import MAX_WIDENING
from .wire import go_quote

__all__ = [
    "DEFAULT_MIN_COSINE",
    "DEFAULT_RECALL_BYTES",
    "DEFAULT_RECALL_LIMIT",
    "RECALLED_PART_ID",
    "RECALL_ALL_SHOWN",
    "RECALL_BELOW_FLOOR",
    "RECALL_NO_SIGNAL",
    "RecalledEntry",
    "RecalledManifest",
    "recall_part",
]

RECALLED_PART_ID = "memory:recalled"
"""The ID of the per-turn part."""

DEFAULT_RECALL_BYTES = 8 * 1024
"""The bound :func:`recall_part` starts with, in UTF-8 bytes: the whole part, heading included."""

DEFAULT_RECALL_LIMIT = 8
"""Entries one per-turn part holds at most (the Go context manager's ``MaxItems`` default)."""

DEFAULT_MIN_COSINE = 0.30
"""The cosine similarity (all-MiniLM-L6-v2) a hit's vector leg must reach for the hit to count
as a signal when no word of the hint matched it (``docs/kinds.md#the-score-floor``).

Chosen on LoCoMo (pass rates per floor in that section); 0.30 is also the host default of the Go
package's vector floor. The floor is on the leg's raw score, so it does not depend on how legs are fused."""

_HEADING = "## Recalled for this turn"

RECALL_NO_SIGNAL = "no-signal"
""":attr:`RecalledManifest.reason` when the hint has no term (empty, or only stopwords)."""

RECALL_BELOW_FLOOR = "below-floor"
""":attr:`RecalledManifest.reason` when recall found candidates but none passed the floor."""

RECALL_ALL_SHOWN = "shown"
""":attr:`RecalledManifest.reason` when every candidate that passed the floor is one the block
already shows (``recall_part(..., shown=...)``)."""


@dataclass(frozen=True, slots=True)
class RecalledEntry:
    """One entry the per-turn part holds or left out.

    Attributes:
        scope, name: the entry.
        hash: its content hash (``"sha256:" + hex``).
        bytes: its content's size in UTF-8 bytes.
        score: the hit's fused score as recall returned it (unitless; see
            :attr:`recallers.Hit.score`).
        legs: each leg's rank (from 1) and raw score, by leg name (``"bm25"``, ``"vector"``).
        reason: ``""`` for an entry the part holds, :data:`~agentmemory.manifest.OMIT_BUDGET` for one
            that did not fit in ``max_bytes``.
    """

    scope: str
    name: str
    hash: str
    bytes: int
    score: float
    legs: Mapping[str, LegScore] = field(default_factory=lambda: MappingProxyType({}))
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """``{"scope", "name", "hash", "bytes", "score", "legs": {leg: {"rank", "score"}},
        "reason"?}`` for a session log."""
        d: dict[str, Any] = {
            "scope": self.scope,
            "name": self.name,
            "hash": self.hash,
            "bytes": self.bytes,
            "score": self.score,
            "legs": {k: {"rank": v.rank, "score": v.score} for k, v in self.legs.items()},
        }
        if self.reason:
            d["reason"] = self.reason
        return d


@dataclass(frozen=True, slots=True)
class RecalledManifest:
    """What one per-turn part recalled, for the host's session log.

    Attributes:
        hint: the text recall ranked for.
        entries: the entries the part holds, best first.
        omitted: the entries that passed the floor but not the byte bound, best first.
        reason: ``""`` when something was recalled or left out for size;
            :data:`RECALL_NO_SIGNAL`, :data:`RECALL_BELOW_FLOOR` or :data:`RECALL_ALL_SHOWN`
            when nothing was.
        neutralised: ``"scope/name"`` of the entries in the part whose headings of level 1 to 3
            were made level 4 (``neutralise=True``), in the part's order, as the block's
            :class:`~agentmemory.Manifest` names them (docs/kinds.md#memory-is-data).
    """

    hint: str
    entries: tuple[RecalledEntry, ...] = ()
    omitted: tuple[RecalledEntry, ...] = ()
    reason: str = ""
    neutralised: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The manifest as a JSON-ready dict: ``hint``, ``entries``, ``omitted``, ``reason``?,
        ``neutralised``? (the optional keys only when not empty)."""
        d: dict[str, Any] = {
            "hint": self.hint,
            "entries": [e.to_dict() for e in self.entries],
            "omitted": [e.to_dict() for e in self.omitted],
        }
        if self.reason:
            d["reason"] = self.reason
        if self.neutralised:
            d["neutralised"] = list(self.neutralised)
        return d

    def to_json(self) -> str:
        """:meth:`to_dict` as compact JSON (non-ASCII kept)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


def _passes(hit: Hit[Entry], min_cosine: float) -> bool:
    """The score floor: a word of the hint matched (a BM25 hit scores above 0 only then), or
    the vector leg's cosine reached ``min_cosine``."""
    if LEG_BM25 in hit.legs and hit.legs[LEG_BM25].score > 0:
        return True
    vec = hit.legs.get(LEG_VECTOR)
    return vec is not None and vec.score >= min_cosine


def _entry_text(e: Entry, limit: int, neutralise: bool) -> str:
    heading = f"### {e.scope}/{e.name} ({e.size} of {limit} bytes)"
    if e.description:
        heading += f" — {e.description}"
    content = e.content[:-1] if e.content.endswith("\n") else e.content
    if neutralise:
        content = neutralise_headings(content)
    return heading + PART_SEPARATOR + content


def _manifest_entry(hit: Hit[Entry], reason: str = "") -> RecalledEntry:
    e = hit.entry
    return RecalledEntry(e.scope, e.name, e.hash, e.size, hit.score, hit.legs, reason)


def recall_part(
    store: Any,
    scopes: Sequence[str],
    hint: str,
    *,
    max_bytes: int = DEFAULT_RECALL_BYTES,
    policy: KindRegistry | None = None,
    limit: int = DEFAULT_RECALL_LIMIT,
    min_cosine: float = DEFAULT_MIN_COSINE,
    as_of: date | str | None = None,
    neutralise: bool = False,
    shown: Collection[tuple[str, str, str]] = (),
) -> tuple[Part | None, RecalledManifest]:
    """The per-turn part for ``hint`` (the latest messages of the conversation).

    Ranks the live entries of ``scopes`` for ``hint`` with ``store.recall`` (hybrid when the
    store keeps vectors, BM25 otherwise) and keeps, best first, those that are (1) of a kind
    ``policy`` recalls only (entries of always-shown kinds are in the block and never repeated
    here), (2) in force on ``as_of`` (default today), (3) above the score floor: a word of the
    hint matched the entry, or the vector leg's cosine is at least ``min_cosine``, and (4) within
    their kind's ``max_entries`` and ``limit`` in all. They are packed, best first, into
    ``max_bytes``; one that does not fit is skipped and later ones are still tried
    (``docs/kinds.md#the-per-turn-part``).

    Args:
        store: any :class:`~agentmemory.Store`.
        scopes: the scopes to recall from, each kebab-case.
        hint: what the turn is about: the text of the last user message or two.
        max_bytes: the bound on the part's text in UTF-8 bytes (default 8192).
        policy: the :class:`~agentmemory.KindRegistry` (default ``KindRegistry()``).
        limit: entries the part holds at most (default 8), >= 1.
        min_cosine: the floor on the vector leg's cosine (default 0.30).
        as_of: the day whose entries in force are recalled (a ``date`` or ``"YYYY-MM-DD"``).
        neutralise: make headings of level 1 to 3 inside content level 4, as
            ``render(..., neutralise=True)`` does (docs/kinds.md#memory-is-data).
        shown: ``(scope, name, hash)`` of the entries the block already shows (its manifest's),
            never repeated here whatever their kind (a block rendered without a policy shows
            every kind); an entry whose content changed since is recalled.

    Returns:
        ``(part, manifest)``. ``part`` is ``Part("memory:recalled", text)`` with ``text`` =
        ``"## Recalled for this turn"`` then, per entry, ``"### <scope>/<name> (<size> of
        <limit> bytes) — <description>"`` and its content, joined by blank lines; ``None``
        when nothing is recalled (a hint with no term, nothing above the floor, or nothing that
        fits). ``manifest`` lists what the part holds and what did not fit, with each hit's
        fused score and legs.

    Raises:
        BudgetError: ``max_bytes`` under 1.
        InvalidEntryError: a scope that is not kebab-case.
        TypeError: ``scopes`` is one ``str``, ``hint`` is not a ``str``, or ``policy`` is not a
            :class:`~agentmemory.KindRegistry`.
        ValueError: ``limit`` under 1, or ``as_of`` not a day.
    """
    if isinstance(scopes, str):
        raise TypeError(f"scopes is the string {scopes!r}; pass a list, e.g. [{scopes!r}]")
    if not isinstance(hint, str):
        raise TypeError(f"hint is a {type(hint).__name__}, not a str; pass the message text")
    if policy is None:
        policy = KindRegistry()
    elif not isinstance(policy, KindRegistry):
        raise TypeError(f"policy is a {type(policy).__name__}, not a KindRegistry")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise BudgetError(f"the per-turn part's bound is {max_bytes!r} bytes; give 1 or more")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"recall_part limit is {limit!r}; it must be a positive integer")
    wanted = builtins.list(dict.fromkeys(check_scope(s) for s in scopes))
    if len(wanted) != len(scopes):
        raise InvalidEntryError(
            f"a scope is given twice in {go_quote(', '.join(scopes))}; list each scope once",
            field="scope",
        )
    tokenizer: Tokenizer = getattr(store, "tokenizer", None) or DEFAULT_TOKENIZER
    if not wanted or not tokenizer(hint):
        return None, RecalledManifest(hint, reason=RECALL_NO_SIGNAL)

    chosen, skipped = _rank(store, wanted, hint, policy, limit, min_cosine, as_of, frozenset(shown))
    if not chosen:
        why = RECALL_ALL_SHOWN if skipped else RECALL_BELOW_FLOOR
        return None, RecalledManifest(hint, reason=why)

    bound_limit = store.max_entry_bytes
    used = utf8_len(_HEADING)
    texts: list[str] = []
    held: list[RecalledEntry] = []
    left: list[RecalledEntry] = []
    changed: list[str] = []
    for hit in chosen:
        text = _entry_text(hit.entry, bound_limit, neutralise)
        cost = len(PART_SEPARATOR) + utf8_len(text)
        if used + cost <= max_bytes:
            used += cost
            texts.append(text)
            held.append(_manifest_entry(hit))
            if text != _entry_text(hit.entry, bound_limit, False):
                changed.append(hit.entry.key)
        else:
            left.append(_manifest_entry(hit, OMIT_BUDGET))
    manifest = RecalledManifest(hint, tuple(held), tuple(left), neutralised=tuple(changed))
    if not texts:
        return None, manifest
    return Part(RECALLED_PART_ID, PART_SEPARATOR.join([_HEADING, *texts])), manifest


def _rank(
    store: Any,
    scopes: list[str],
    hint: str,
    policy: KindRegistry,
    limit: int,
    min_cosine: float,
    as_of: date | str | None,
    shown: frozenset[tuple[str, str, str]],
) -> tuple[list[Hit[Entry]], bool]:
    """The hits of recalled-only kinds above the floor and not in ``shown``, best first, within
    each kind's cap and ``limit``; and whether a hit above the floor was left out for being in
    ``shown``. Recall is asked for 4 times ``limit`` and, while it returned as many as asked and
    too few were kept, 4 times deeper, up to 64 times ``limit``."""
    depth = limit * 4
    while True:
        day: dict[str, Any] = {} if as_of is None else {"as_of": as_of}
        hits = store.recall(hint, scopes=scopes, limit=depth, **day)
        chosen: list[Hit[Entry]] = []
        per_kind: dict[str, int] = {}
        skipped = False
        for hit in hits:
            kind = kind_of(hit.entry)
            rule = policy.policy_for(kind)
            if rule.always or not _passes(hit, min_cosine):
                continue
            if (hit.entry.scope, hit.entry.name, hit.entry.hash) in shown:
                skipped = True
                continue
            if per_kind.get(kind, 0) >= rule.max_entries:
                continue
            per_kind[kind] = per_kind.get(kind, 0) + 1
            chosen.append(hit)
            if len(chosen) == limit:
                return chosen, skipped
        if len(hits) < depth or depth >= limit * MAX_WIDENING:
            return chosen, skipped
        depth = min(depth * 4, limit * MAX_WIDENING)
