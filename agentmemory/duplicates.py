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

import inspect
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .entries import Entry
from .errors import AgentMemoryError, EmptyQueryError, RecallModeError, ToolConfigError

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

log = logging.getLogger("agentmemory.duplicates")

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
            f"{duplicate_words(self.duplicates)}; {cure}; nothing was written"
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
    content: docs/recall.md#windows), ranked by ``store.recall(..., mode="vector")`` with the
    store's reranker off (``rerank=False`` where ``recall`` takes it), so the figure is the
    cosine and entries out of date today are not named (docs/kinds.md#out-of-date-on-purpose-only).
    Reads only. ``[]`` when the store has no vector leg, when ``entry``'s text has no word, or
    when the vector leg cannot run now: held by another process (its reason is in the hits'
    ``unavailable``), or failing (a damaged index, a server that does not answer: logged as a
    warning on ``agentmemory.duplicates``, and the save goes on as it would without the check).
    """
    from recallers import tokenize

    text = f"{entry.description}\n\n{entry.content}" if entry.description else entry.content
    skip = {entry.name, *exclude}
    # a store's reranker would reorder the hits by its own score (and cost a model call)
    recall: Any = store.recall  # rerank is not in the Store protocol; most stores take it
    options = {"rerank": False} if "rerank" in inspect.signature(recall).parameters else {}
    try:
        hits = recall(text, scopes=list(scopes), limit=limit + len(skip), mode="vector", **options)
    except (RecallModeError, EmptyQueryError):
        return []
    except Exception as exc:  # the check is advice: a failing vector leg never costs the write
        log.warning("near-duplicate check skipped for %s: %s", entry.key, exc)
        return []
    terms = set(tokenize(text))
    near: list[tuple[float, Entry]] = []
    for hit in hits:
        found = hit.entry
        leg = hit.legs.get("vector")
        cosine = float(leg.score if leg is not None else hit.score)
        if cosine >= floor and not (found.scope == entry.scope and found.name in skip):
            near.append((cosine, found))
    near.sort(key=lambda pair: -pair[0])  # stable: the store's order among equal cosines
    out = []
    for cosine, found in near[:limit]:
        held = set(tokenize(f"{found.description}\n\n{found.content}"))
        out.append(NearDuplicate(found, cosine, len(terms & held), len(terms)))
    return out


def duplicate_words(duplicates: Sequence[NearDuplicate]) -> str:
    """The entries named with their reasons: ``"user/editor (cosine 0.83, shares 3 of 5
    terms)"``, joined by ``"; "``."""
    return "; ".join(f"{d.key} ({d.reason})" for d in duplicates)


@dataclass(frozen=True, slots=True)
class Cures:
    """How a writer says the cures in its own terms: formats naming ``{key}`` (``scope/name``)
    or ``{name}``.

    Attributes:
        patch: edit an entry (``"memory_patch"``).
        supersedes: save with a ``supersedes`` (``'supersedes "{name}"'``).
        forget: forget an entry (``"memory_forget"``).
        others_writable: the writer may write every scope (the command line), not only the
            scope it saves in.
    """

    patch: str
    supersedes: str
    forget: str
    others_writable: bool = False


def cure_words(duplicates: Sequence[NearDuplicate], key: str, cures: Cures, *, landed: bool) -> str:
    """What the writer of ``key`` can do so the memory keeps one copy, for the nearest of
    ``duplicates`` it can act on (first of its own scope, else any when ``others_writable``).

    Refused (``landed`` false): edit that entry, or save with ``supersedes`` to replace it (its
    own scope only). Landed: save ``key`` again with ``supersedes`` (it retires that entry), or
    forget ``key``. Near-duplicates only in scopes the writer may only read: save (or keep) only
    what they do not already say."""
    scope = key.split("/", 1)[0]
    own = next((d for d in duplicates if d.entry.scope == scope), None)
    if own is None and cures.others_writable and duplicates:
        own = duplicates[0]
    if own is None:
        if landed:
            return (
                "they are in scopes this writer only reads; if it restates one, forget "
                f"{key} with {cures.forget.format(key=key)}"
            )
        return "they are in scopes this writer only reads; save only what they do not already say"
    fields = {"key": own.key, "name": own.entry.name}
    same = own.entry.scope == scope
    if landed:
        again = (
            f"save {key} again with {cures.supersedes.format(**fields)} (it retires {own.key}), "
            if same
            else ""
        )
        return (
            f"if it restates {own.key}, keep one copy: {again}"
            f"{'or ' if again else ''}forget {key} with {cures.forget.format(key=key)}"
        )
    replace = f", or save with {cures.supersedes.format(**fields)} to replace it" if same else ""
    return f"if it restates {own.key}, edit that entry with {cures.patch.format(**fields)}{replace}"
