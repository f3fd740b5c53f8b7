"""The labelled pairs the near-duplicate floor is chosen on, and the rule that chooses it
(docs/recall.md#the-duplicate-floor).

``tests/data/duplicate_facts.tsv`` holds 100 hand-written memory-style facts, each with a
restatement, an update (the same attribute, a new value) and a related but distinct fact (how
it was made: ``tests/data/README.md``). :func:`load_pairs` makes four pairs per fact, 400 in all:
``restatement`` (a near-duplicate), ``update``, ``related`` and ``unrelated`` (fact ``i`` with
fact ``(i + 37) mod n``). Even ids are the fit half, odd ids the held-out half.

:func:`figures_at` scores a floor on pairs whose cosines are known: a pair is named when its
cosine is at least the floor; precision counts restatements as right and related or unrelated
pairs as wrong; updates are neither (the model should supersede them; they are reported apart as
the share named). :func:`choose_floor` is the rule: the lowest floor on a 0.01 grid from which
precision on the fit half stays at least the target at every higher floor (the first floor that
meets it on the way up can be an accident of small counts).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

__all__ = [
    "LABELS",
    "UNRELATED_OFFSET",
    "FloorFigures",
    "Pair",
    "choose_floor",
    "figures_at",
    "load_pairs",
    "pair_cosines",
]

LABELS = ("restatement", "update", "related", "unrelated")
"""The label of each pair: a near-duplicate, the same fact with a new value, a related but
distinct fact, an unrelated fact."""

UNRELATED_OFFSET = 37
"""Fact ``i`` is paired with fact ``(i + 37) mod n`` as its unrelated pair."""

_COLUMNS = ("id", "fact", "restatement", "update", "related")


@dataclass(frozen=True, slots=True)
class Pair:
    """Two texts and what the second is to the first.

    Attributes:
        fact_id: the id of the fact (the first text).
        label: one of :data:`LABELS`.
        first, second: the stored fact, and the text saved after it.
    """

    fact_id: int
    label: str
    first: str
    second: str

    @property
    def held_out(self) -> bool:
        """``True`` for the held-out half (odd ids), ``False`` for the fit half."""
        return self.fact_id % 2 == 1


def load_pairs(path: str | Path) -> list[Pair]:
    """The four pairs of each fact of the TSV at ``path`` (columns ``id fact restatement update
    related``, ids 0..n-1 in order), fact by fact.

    Raises:
        ValueError: another header, a row without five fields or with an empty one, or ids out
            of order; the message names the file and the line.
    """
    rows: list[list[str]] = []
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if header is None or tuple(header) != _COLUMNS:
            raise ValueError(f"{path}: line 1 is {header!r}; expected the columns {_COLUMNS}")
        for line, row in enumerate(reader, start=2):
            if len(row) != len(_COLUMNS) or not all(field.strip() for field in row):
                raise ValueError(f"{path}: line {line} needs five non-empty fields; got {row!r}")
            if row[0] != str(len(rows)):
                raise ValueError(f"{path}: line {line} has id {row[0]!r}; expected {len(rows)}")
            rows.append(row)
    n = len(rows)
    pairs: list[Pair] = []
    for i, (_, fact, restatement, update, related) in enumerate(rows):
        other = rows[(i + UNRELATED_OFFSET) % n][1]
        for label, second in zip(LABELS, (restatement, update, related, other), strict=True):
            pairs.append(Pair(i, label, fact, second))
    return pairs


def pair_cosines(
    pairs: Sequence[Pair], embed: Callable[[list[str]], npt.ArrayLike]
) -> npt.NDArray[np.float64]:
    """The cosine similarity of each pair's two texts, as ``embed`` (texts to ``(n, dim)``)
    makes their vectors; shape ``(len(pairs),)``, float64."""
    texts = sorted({t for p in pairs for t in (p.first, p.second)})
    at = {t: i for i, t in enumerate(texts)}
    vectors = np.asarray(embed(texts), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1.0, norms)
    first = unit[[at[p.first] for p in pairs]]
    second = unit[[at[p.second] for p in pairs]]
    return np.asarray(np.sum(first * second, axis=1), dtype=np.float64)


@dataclass(frozen=True, slots=True)
class FloorFigures:
    """How a floor does on some pairs.

    Attributes:
        floor: the cosine floor.
        precision: named restatements over named restatements, related and unrelated pairs
            (``nan`` when none is named).
        recall: named restatements over restatements.
        updates_named: the share of updates named.
        named: how many restatement, related and unrelated pairs are named.
    """

    floor: float
    precision: float
    recall: float
    updates_named: float
    named: int


def figures_at(pairs: Sequence[Pair], cosines: Sequence[float], floor: float) -> FloorFigures:
    """The figures of ``floor`` on ``pairs`` whose cosines are ``cosines`` (same order)."""
    counts = {label: [0, 0] for label in LABELS}  # label -> [named, all]
    for pair, cosine in zip(pairs, cosines, strict=True):
        tally = counts[pair.label]
        tally[1] += 1
        if cosine >= floor:
            tally[0] += 1
    right = counts["restatement"][0]
    wrong = counts["related"][0] + counts["unrelated"][0]
    named = right + wrong
    return FloorFigures(
        floor=floor,
        precision=right / named if named else float("nan"),
        recall=right / counts["restatement"][1] if counts["restatement"][1] else float("nan"),
        updates_named=counts["update"][0] / counts["update"][1] if counts["update"][1] else 0.0,
        named=named,
    )


def choose_floor(
    pairs: Sequence[Pair], cosines: Sequence[float], *, precision: float = 0.9
) -> float:
    """The lowest floor on the 0.01 grid from 0.30 to 1.00 from which precision on ``pairs``
    stays at least ``precision`` at every higher floor that names a pair (1.00 when none does).
    """
    grid = [round(0.30 + 0.01 * i, 2) for i in range(71)]
    chosen = 1.0
    for floor in reversed(grid):
        got = figures_at(pairs, cosines, floor)
        if got.named and got.precision < precision:
            break
        chosen = floor
    return chosen
