"""The near-duplicate floor, chosen on labelled pairs (docs/recall.md#the-duplicate-floor).

    .venv/bin/python benchmarks/duplicate_floor.py [--embedder onnx:all-MiniLM-L6-v2]
        [--pairs tests/data/duplicate_facts.tsv] [--precision 0.9]

Embeds the 400 pairs of ``tests/data/duplicate_facts.tsv`` (100 facts, each with a
restatement, an update, a related and an unrelated fact; how it was made: tests/data/README.md),
chooses the floor on the fit half (even ids) by :func:`agentmemory.eval.duplicate_pairs.choose_floor`
and prints, for floors around it, precision and recall of restatements and the share of updates
named on both halves, then the cosines by label. The held-out half (odd ids) is what the floor is
judged on: nothing is chosen on it.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

from agentmemory.eval.duplicate_pairs import (
    LABELS,
    choose_floor,
    figures_at,
    load_pairs,
    pair_cosines,
)
from embedders import ONNX_EMBEDDER

HERE = Path(__file__).resolve().parent
DEFAULT_PAIRS = HERE.parent / "tests" / "data" / "duplicate_facts.tsv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", default=ONNX_EMBEDDER)  # the packaged model
    parser.add_argument("--pairs", type=Path, default=DEFAULT_PAIRS)
    parser.add_argument("--precision", type=float, default=0.9)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import embedders

    embedder = embedders.get(args.embedder)
    pairs = load_pairs(args.pairs)
    cosines = pair_cosines(pairs, lambda texts: embedder.embed(texts))
    fit = [i for i, p in enumerate(pairs) if not p.held_out]
    held = [i for i, p in enumerate(pairs) if p.held_out]
    fit_pairs, fit_cos = [pairs[i] for i in fit], [float(cosines[i]) for i in fit]
    held_pairs, held_cos = [pairs[i] for i in held], [float(cosines[i]) for i in held]
    floor = choose_floor(fit_pairs, fit_cos, precision=args.precision)
    print(
        f"{len(pairs)} pairs ({len(fit)} fit, {len(held)} held out), embedder {embedder.name}; "
        f"floor chosen on the fit half (precision >= {args.precision} from it up): {floor:.2f}\n"
    )
    print("| floor | fit P | fit R | fit updates | held-out P | held-out R | held-out updates |")
    print("|---|---|---|---|---|---|---|")
    for step in range(-10, 11, 2):
        at = round(floor + step / 100, 2)
        a = figures_at(fit_pairs, fit_cos, at)
        b = figures_at(held_pairs, held_cos, at)
        mark = " **chosen**" if step == 0 else ""
        print(
            f"| {at:.2f}{mark} | {a.precision:.2f} | {a.recall:.2f} | {a.updates_named:.2f} "
            f"| {b.precision:.2f} | {b.recall:.2f} | {b.updates_named:.2f} |"
        )
    print("\n| label | median cosine | min | max |\n|---|---|---|---|")
    for label in LABELS:
        values = [float(c) for p, c in zip(pairs, cosines, strict=True) if p.label == label]
        print(
            f"| {label} | {statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f} |"
        )


if __name__ == "__main__":
    main()
