"""The labelled pairs the near-duplicate floor is chosen on, the rule, and the floor we ship
(docs/recall.md#the-duplicate-floor)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from agentmemory.duplicates import DUPLICATE_FLOOR
from agentmemory.eval.duplicate_pairs import (
    LABELS,
    Pair,
    choose_floor,
    figures_at,
    load_pairs,
    pair_cosines,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "duplicate_facts.tsv"


def test_the_set_has_400_pairs_four_per_fact_split_in_halves() -> None:
    pairs = load_pairs(DATA)
    assert len(pairs) == 400
    assert {label: sum(p.label == label for p in pairs) for label in LABELS} == dict.fromkeys(
        LABELS, 100
    )
    assert sum(p.held_out for p in pairs) == 200
    first = [p for p in pairs if p.fact_id == 0]
    assert first[3].second == next(p for p in pairs if p.fact_id == 37).first  # unrelated: i+37


def test_a_malformed_file_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("id\tfact\trestatement\tupdate\trelated\n0\ta\tb\tc\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.tsv: line 2 needs five non-empty fields"):
        load_pairs(bad)
    bad.write_text("id\tfact\trestatement\tupdate\trelated\n1\ta\tb\tc\td\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 2 has id '1'; expected 0"):
        load_pairs(bad)
    bad.write_text("id\tfact\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 1 is \['id', 'fact'\]"):
        load_pairs(bad)


def test_figures_count_restatements_right_related_wrong_and_updates_apart() -> None:
    pairs = [
        Pair(0, "restatement", "a", "b"),
        Pair(0, "update", "a", "c"),
        Pair(0, "related", "a", "d"),
        Pair(0, "unrelated", "a", "e"),
        Pair(2, "restatement", "f", "g"),
    ]
    got = figures_at(pairs, [0.8, 0.9, 0.7, 0.1, 0.5], 0.6)
    assert (got.precision, got.recall, got.updates_named, got.named) == (0.5, 0.5, 1.0, 2)
    assert math.isnan(figures_at(pairs, [0.1] * 5, 0.6).precision)


def test_the_floor_is_the_lowest_from_which_precision_stays_up() -> None:
    # precision by floor: 1.0 from 0.81 up, 0.5 at 0.71..0.80 (one related at 0.75), 2/3 lower
    pairs = [
        Pair(0, "restatement", "a", "b"),
        Pair(0, "related", "a", "c"),
        Pair(2, "restatement", "d", "e"),
        Pair(2, "related", "d", "f"),
    ]
    cosines = [0.9, 0.75, 0.7, 0.2]
    assert choose_floor(pairs, cosines, precision=0.9) == 0.76
    assert choose_floor(pairs, cosines, precision=0.5) == 0.30


@pytest.mark.slow  # the real model
def test_the_shipped_floor_is_the_rules_and_meets_the_target_on_the_held_out_half() -> None:
    import embedders

    model = embedders.get(embedders.ONNX_EMBEDDER)  # the packaged model, by path
    pairs = load_pairs(DATA)
    cosines = [float(c) for c in pair_cosines(pairs, lambda texts: model.embed(texts))]
    fit = [(p, c) for p, c in zip(pairs, cosines, strict=True) if not p.held_out]
    held = [(p, c) for p, c in zip(pairs, cosines, strict=True) if p.held_out]
    chosen = choose_floor([p for p, _ in fit], [c for _, c in fit])
    assert chosen == DUPLICATE_FLOOR  # docs/recall.md#the-duplicate-floor says where it came from
    got = figures_at([p for p, _ in held], [c for _, c in held], DUPLICATE_FLOOR)
    assert got.precision >= 0.9 and got.recall >= 0.7, got
