"""Benchmark the rerank stage: what a cross-encoder pass over the fused candidates costs per query.

Run from the repository root:

    .venv/bin/python benchmarks/rerank.py [--candidates 20] [--queries 20] [--threads 1]

No cross-encoder weights ship in any package installable here, so both models are built from a
config in a temporary folder, with random weights (seed 0) and the packaged all-MiniLM-L6-v2's
tokenizer, and loaded through the real path (``recallers.CrossEncoderReranker``, a
sentence-transformers ``CrossEncoder``). The cost of a forward pass depends on the model's shape
and the text's length, not on what the weights are, so the second model says what a real
MiniLM-L6 cross-encoder (``cross-encoder/ms-marco-MiniLM-L-6-v2`` has this shape) would cost:

- tiny: hidden 32, 1 layer, 2 heads (what the tests use);
- MiniLM-L6-sized: hidden 384, 6 layers, 12 heads, intermediate 1,536 (the packaged model's
  config), one output.

Each query reranks ``--candidates`` texts (``recallers.DEFAULT_RERANK_CANDIDATES``, 20), one
``rerank`` call, after a warm-up; median and 95th percentile per query, in ms. Two kinds of text:
LoCoMo dialog turns (short: about 25 words) and SciFact abstracts (long: the pair is cut at the
model's 512 word pieces), from ``../shared/data`` when present, else synthetic text of those
lengths. The baseline is the same run's query embedding with the packaged model
(sentence-transformers, one sentence), the cost every hybrid recall already pays.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
_DATA = _ROOT.parent / "shared" / "data"

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
)

SHAPES: dict[str, dict[str, int]] = {
    "tiny (hidden 32, 1 layer)": {
        "hidden_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 64,
    },
    "MiniLM-L6-sized (hidden 384, 6 layers)": {
        "hidden_size": 384,
        "num_hidden_layers": 6,
        "num_attention_heads": 12,
        "intermediate_size": 1536,
    },
}


def build(folder: Path, shape: dict[str, int]) -> Path:
    """A one-output BERT cross-encoder of ``shape`` with random weights, saved in ``folder``."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from embedders import packaged_model_path

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    BertForSequenceClassification(BertConfig(num_labels=1, **shape)).save_pretrained(folder)
    for name in TOKENIZER_FILES:
        shutil.copy(packaged_model_path() / name, folder / name)
    return folder


def texts(kind: str, n: int) -> list[str]:
    """``n`` texts of ``kind`` (``"locomo"`` turns or ``"scifact"`` abstracts)."""
    if kind == "locomo" and (_DATA / "locomo" / "locomo-dev.json").is_file():
        from agentmemory.eval import TurnFormat, load_locomo, turn_entries

        conv = load_locomo(_DATA / "locomo" / "locomo-dev.json").conversations[0]
        return [e.content for e in turn_entries(conv, fmt=TurnFormat())[:n]]
    if kind == "scifact" and (_DATA / "scifact" / "corpus.jsonl").is_file():
        out = []
        with open(_DATA / "scifact" / "corpus.jsonl", encoding="utf-8") as f:
            for line in f:
                doc = json.loads(line)
                out.append(f"{doc.get('title', '')}\n\n{doc['text']}")
                if len(out) == n:
                    break
        return out
    words = 25 if kind == "locomo" else 250
    return [" ".join(f"word{(i * 7 + j) % 997}" for j in range(words)) for i in range(n)]


def questions(n: int) -> list[str]:
    """``n`` question-like queries."""
    subjects = ["the budget", "the trip", "the test", "the garden", "the report"]
    return [f"what did they decide about {subjects[i % len(subjects)]} ({i})?" for i in range(n)]


def timed(fn: Callable[[str], object], queries: Sequence[str]) -> tuple[float, float]:
    """Median and 95th percentile of ``fn(query)`` over ``queries``, in ms (one warm-up)."""
    fn(queries[0])
    times = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    return statistics.median(times), p95


def main(argv: Sequence[str] | None = None) -> int:
    """Build the models, time them, print the table; returns the exit status (0)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    import embedders
    from recallers import CrossEncoderReranker

    qs = questions(args.queries)
    rows: list[list[str]] = []
    embedder = embedders.get(embedders.DEFAULT_EMBEDDER, threads=args.threads)
    base_ms, base_p95 = timed(lambda q: embedder.embed([q]), qs)
    with tempfile.TemporaryDirectory(prefix="rerank-bench-") as tmp:
        for label, shape in SHAPES.items():
            folder = build(Path(tmp) / label.split()[0], shape)
            reranker = CrossEncoderReranker(folder, threads=args.threads)
            for kind in ("locomo", "scifact"):
                candidates = texts(kind, args.candidates)
                median, p95 = timed(lambda q, c=candidates, r=reranker: r.rerank(q, c), qs)
                rows.append(
                    [
                        label,
                        f"{kind} ({len(candidates)} texts)",
                        f"{median:.1f}",
                        f"{p95:.1f}",
                        f"{median / base_ms:.1f}x",
                    ]
                )
    load = os.getloadavg()[0]
    print(
        f"rerank cost per query, {args.candidates} candidates, {args.queries} queries, "
        f"torch threads {args.threads}, load average {load:.2f}\n"
    )
    print("| model | candidates | median ms | p95 ms | x query embedding |")
    print("|---|---|---:|---:|---:|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(
        f"\nbaseline: one query embedding (all-MiniLM-L6-v2, sentence-transformers) "
        f"{base_ms:.1f} ms median (p95 {base_p95:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
