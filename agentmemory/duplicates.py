"""Near-duplicates at save time: which live entries a new content restates, found by meaning
(docs/contract.md#near-duplicates-at-save-time).

Before a save of new content lands, :func:`near_duplicates` asks the store's vector leg for the
live entries nearest that content in the scopes the writer may read, and keeps those whose
cosine similarity is at least the floor (:data:`DUPLICATE_FLOOR`, chosen on labelled pairs:
docs/recall.md#the-duplicate-floor). A policy says what the writer does with them
(:data:`DUPLICATE_POLICIES`): ``"report"`` names them in the result of a save that lands,
``"refuse"`` refuses the save (:class:`NearDuplicateError`, nothing written), ``"off"`` skips
the check. The check never merges, deletes or changes an entry; it only reads, outside any
write lock, and costs one embedding of the new text (cut to the vector query bound,
docs/recall.md#the-vector-query) and one vector search of ``limit`` + the excluded names.

A store without a vector leg (BM25 only, or a handle opened journal-only beside the process
holding its index) has nothing to measure meaning with: the check finds nothing there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .entries import Entry
from .errors import AgentMemoryError, RecallModeError, ToolConfigError

if TYPE_CHECKING:
    from .store import Store

__all__ = [
    "DEFAULT_DUPLICATE_POLICY",
    "DUPLICATE_FLOOR",
    "DUPLICATE_POLICIES",
    "MAX_DUPLICATES",
    "NearDuplicate",
    "NearDuplicateError",
    "check_duplicate_floor",
    "check_duplicate_policy",
    "cure_words",
    "duplicate_words",
    "near_duplicates",
]

DUPLICATE_FLOOR = 0.66
"""The cosine similarity (unitless, in [-1, 1]) from which an entry counts as a near-duplicate of
new content, for all-MiniLM-L6-v2, the default embedder: chosen on the fit half of
``tests/data/duplicate_facts.tsv`` and measured on the other half
(docs/recall.md#the-duplicate-floor). Another embedder has other cosines: measure its floor with
``benchmarks/duplicate_floor.py --embedder NAME`` and pass it as ``duplicate_floor``."""

MAX_DUPLICATES = 3
"""The most near-duplicates a save names."""

DUPLICATE_POLICIES = ("report", "refuse", "off")
"""What a writer does with near-duplicates: name them in the result of the save (``report``),
refuse the save (``refuse``), or not look (``off``)."""

DEFAULT_DUPLICATE_POLICY = "report"
"""The policy when none is given: the save lands and its result names the near-duplicates."""


@dataclass(frozen=True, slots=True)
class NearDuplicate:
    """A live entry whose meaning is close to new content.

    Attributes:
        entry: the live entry, as the store holds it.
        cosine: the cosine similarity of its vector and the new text's (unitless, in [-1, 1]).
        shared_terms: how many distinct terms (the BM25 tokenizer's: stemmed, no stopwords) of
            the new text it holds too.
        terms: how many distinct terms the new text has.
    """

    entry: Entry
    cosine: float
    shared_terms: int
    terms: int

    @property
    def key(self) -> str:
        """``"scope/name"`` of the entry."""
        return self.entry.key

    @property
    def reason(self) -> str:
        """One line: ``"cosine 0.83, shares 3 of 5 terms"``."""
        return f"cosine {self.cosine:.2f}, shares {self.shared_terms} of {self.terms} terms"

    def to_json(self) -> dict[str, object]:
        """``{"key", "scope", "name", "cosine", "shared_terms", "terms", "reason"}``."""
        return {
            "key": self.key,
            "scope": self.entry.scope,
            "name": self.entry.name,
            "cosine": round(self.cosine, 4),
            "shared_terms": self.shared_terms,
            "terms": self.terms,
            "reason": self.reason,
        }


class NearDuplicateError(AgentMemoryError, ValueError):
    """A save refused under the ``"refuse"`` policy: its content restates live entries.
    Nothing was written.

    Attributes:
        key: ``"scope/name"`` of the entry that was not saved.
        duplicates: the near-duplicates found, nearest first.
    """

    def __init__(self, key: str, duplicates: Sequence[NearDuplicate], cure: str) -> None:
        self.key = key
        self.duplicates = tuple(duplicates)
        super().__init__(
            f"agentmemory: {key} was not saved: its content is a near-duplicate of "
            f"{_listed(self.duplicates)}; {cure}; nothing was written"
        )


def check_duplicate_policy(value: object, *, where: str = "agentmemory.tools") -> str:
    """``value`` when it is one of :data:`DUPLICATE_POLICIES`.

    Raises:
        ToolConfigError: (a ``ValueError``) any other value, named with the choices.
    """
    if not isinstance(value, str) or value not in DUPLICATE_POLICIES:
        raise ToolConfigError(
            f"{where}: duplicates is {value!r}; use one of {', '.join(DUPLICATE_POLICIES)}"
        )
    return value


def check_duplicate_floor(value: object, *, where: str = "agentmemory.tools") -> float:
    """``value`` as a float when it is a cosine floor in (0, 1].

    Raises:
        ToolConfigError: (a ``ValueError``) not a number, or outside (0, 1].
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ToolConfigError(
            f"{where}: duplicate_floor is {value!r}; it must be a cosine above 0 and at most 1"
        )
    return float(value)


def near_duplicates(
    store: Store,
    entry: Entry,
    scopes: Sequence[str],
    *,
    floor: float = DUPLICATE_FLOOR,
    limit: int = MAX_DUPLICATES,
    exclude: Iterable[str] = (),
) -> list[NearDuplicate]:
    """The live entries of ``scopes`` whose cosine to ``entry``'s text is at least ``floor``,
    nearest first, at most ``limit``; never ``entry`` itself (its scope and name) nor an entry
    of its scope named in ``exclude`` (the one it supersedes).

    ``entry``'s text is what the vector index embeds for it (its description, then its
    content: docs/recall.md#windows), ranked by ``store.recall(..., mode="vector")``, so
    entries out of date today are not named (docs/kinds.md#out-of-date-on-purpose-only).
    Reads only. ``[]`` when the store has no vector leg, when ``entry``'s text has no word, or
    when the vector leg cannot run now (its reason is in the hits' ``unavailable``).
    """
    from recallers import tokenize

    from .errors import EmptyQueryError

    text = f"{entry.description}\n\n{entry.content}" if entry.description else entry.content
    skip = {entry.name, *exclude}
    try:
        hits = store.recall(text, scopes=list(scopes), limit=limit + len(skip), mode="vector")
    except (RecallModeError, EmptyQueryError):
        return []
    terms = set(tokenize(text))
    out: list[NearDuplicate] = []
    for hit in hits:
        found = hit.entry
        if found.scope == entry.scope and found.name in skip:
            continue
        leg = hit.legs.get("vector")
        cosine = leg.score if leg is not None else hit.score
        if cosine < floor:
            break  # nearest first: the rest are further
        held = set(tokenize(f"{found.description}\n\n{found.content}"))
        out.append(NearDuplicate(found, float(cosine), len(terms & held), len(terms)))
        if len(out) == limit:
            break
    return out


def duplicate_words(duplicates: Sequence[NearDuplicate]) -> str:
    """The entries named with their reasons: ``"user/editor (cosine 0.83, shares 3 of 5
    terms)"``, joined by ``"; "``."""
    return _listed(duplicates)


def cure_words(
    duplicates: Sequence[NearDuplicate], scope: str, *, patch: str, supersedes: str
) -> str:
    """What a writer of ``scope`` can do instead of saving a second copy: edit the nearest
    entry of its own scope with ``patch`` (the tool or command that edits; a format that may
    name its ``{key}``), or save with ``supersedes`` (a format with its ``{name}``) to replace
    it; for near-duplicates only in
    other scopes (read-only to it, or another scope), save only what they do not say."""
    own = next((d for d in duplicates if d.entry.scope == scope), None)
    if own is None:
        return "they are in other scopes; save only what they do not already say"
    return (
        f"if it restates {own.key}, edit that entry with {patch.format(key=own.key)}, or save with "
        f"{supersedes.format(name=own.entry.name)} to replace it"
    )


def _listed(duplicates: Sequence[NearDuplicate]) -> str:
    return "; ".join(f"{d.key} ({d.reason})" for d in duplicates)
