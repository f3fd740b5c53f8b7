"""An import of a real history with a real model: how close the store comes to the raw embedder.

Issue 25 asks that importing real text with the packaged model run at 0.9 or more of the model's
own throughput, so that an import is bounded by the embedder, not by the store. This script puts
LoCoMo's conversation turns (real dialogue, 20 to 450 bytes each) through, in the same run:

- ``raw embedder``: ``Embedder.embed`` on the turns in chunks of ``SYNC_CHUNK`` (what the store
  hands the embedder per step), nothing else: the baseline;
- ``store import``: ``open_store(fresh folder).put_many`` in batches of ``--batch`` turns, the way
  ``agentmemory import`` writes: journal, lexical index, embedding and Chroma upsert.

Both use the same embedder object (``embedders.ONNX_EMBEDDER``, the packaged all-MiniLM-L6-v2,
loaded by path; nothing downloaded). The two are alternated ``--rounds`` times, each round on the
same turns (the store a fresh folder each time), and the table gives turns per second (median and
slowest round) and the ratio of the medians.

    .venv/bin/python benchmarks/import_throughput.py [--turns 2000] [--rounds 3] [--batch 500]

Needs ``../shared/data/locomo/locomo-dev.json`` (``--data``). About a minute per round here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

# Run as a script, this folder comes first on sys.path; the packages live one level up.
_ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _ROOT / "benchmarks"]
sys.path.insert(0, str(_ROOT))

import embedders  # noqa: E402
from agentmemory import Entry, open_store  # noqa: E402
from agentmemory.eval.locomo import load_locomo, turn_entries  # noqa: E402
from agentmemory.stores.chroma.store import SYNC_CHUNK  # noqa: E402

DEFAULT_DATA = _ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev.json"


def turns(path: Path, n: int) -> list[Entry]:
    """The first ``n`` turns of the file's conversations, in order, each in its own scope."""
    out: list[Entry] = []
    for conversation in load_locomo(path).conversations:
        out += turn_entries(conversation)
        if len(out) >= n:
            break
    return out[:n]


def raw_rate(embedder: embedders.Embedder, texts: list[str]) -> float:
    """Texts per second of ``embedder.embed`` over ``texts`` in chunks of ``SYNC_CHUNK``."""
    start = time.perf_counter()
    for i in range(0, len(texts), SYNC_CHUNK):
        embedder.embed(texts[i : i + SYNC_CHUNK])
    return len(texts) / (time.perf_counter() - start)


def store_rate(embedder: embedders.Embedder, entries: list[Entry], batch: int) -> float:
    """Entries per second of ``put_many`` in batches of ``batch`` into a fresh store folder
    (the open and the close counted: an import opens and closes its store)."""
    folder = Path(tempfile.mkdtemp(prefix="agentmemory-import-"))
    try:
        start = time.perf_counter()
        with open_store(folder / "store", embedder=embedder) as store:
            for i in range(0, len(entries), batch):
                store.put_many(entries[i : i + batch])
        return len(entries) / (time.perf_counter() - start)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments, alternate the two measurements, print one Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=2000, help="LoCoMo turns to import")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the two")
    parser.add_argument("--batch", type=int, default=500, help="entries per put_many")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo JSON file")
    args = parser.parse_args(argv)

    entries = turns(args.data, args.turns)
    texts = [e.content for e in entries]
    embedder = embedders.get(embedders.ONNX_EMBEDDER)
    embedder.embed(texts[:64])  # load the model and warm it before either is timed
    raw: list[float] = []
    stored: list[float] = []
    for _ in range(args.rounds):
        raw.append(raw_rate(embedder, texts))
        stored.append(store_rate(embedder, entries, args.batch))
    load = os.getloadavg()
    mean_bytes = sum(len(t.encode()) for t in texts) / len(texts)
    print(
        f"import throughput: {len(entries)} LoCoMo turns (mean {mean_bytes:.0f} bytes), "
        f"{embedders.ONNX_EMBEDDER}, {args.rounds} rounds, put_many batch {args.batch}, "
        f"cpus {os.cpu_count()}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print()
    print("| path | turns/s, median | slowest round | x raw embedder |")
    print("|---|---:|---:|---:|")
    base = statistics.median(raw)
    for label, rates in (("raw embedder (baseline)", raw), ("store import", stored)):
        med = statistics.median(rates)
        print(f"| {label} | {med:.1f} | {min(rates):.1f} | {med / base:.2f} |")


if __name__ == "__main__":
    main()
