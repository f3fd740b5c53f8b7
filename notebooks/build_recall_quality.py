"""Build ``notebooks/recall_quality.ipynb`` from the cells below (run it after editing them).

    .venv/bin/python notebooks/build_recall_quality.py          # writes the notebook
    .venv/bin/python notebooks/build_recall_quality.py --check  # exit 1 if it is out of date

The notebook is kept without outputs, so a diff of it is a diff of these cells. It compares BM25,
vector and hybrid recall on LoCoMo or SciFact through :mod:`agentmemory.eval` and is parameterised
by environment variables in its first code cell (tests/test_notebook.py runs it on a slice).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

NOTEBOOK = Path(__file__).with_name("recall_quality.ipynb")

INTRO = """\
# Recall quality: BM25, vector and hybrid

This notebook loads a public benchmark into agentmemory stores and compares the three ways
`store.recall` can rank entries:

- **bm25**: Okapi BM25 over each entry's name, description and content (the lexical leg);
- **vector**: cosine similarity of all-MiniLM-L6-v2 embeddings (the vector leg);
- **hybrid**: both legs fused (reciprocal rank fusion), what `memory_search` uses.

Data sets (retrieval only; see `agentmemory.eval`):

- **LoCoMo** (`locomo`): long two-person conversations; every dialog turn is an entry, one store per
  conversation; each question is a query scored against its evidence turns.
- **SciFact** (`scifact`, BEIR): 5,183 abstracts as entries; the 300 test claims are queries
  scored against their relevance judgements.

The first code cell holds the parameters, read from environment variables so a test (or CI) can run
a small slice: `RECALL_DATASET`, `RECALL_SLICE`, `RECALL_QUESTIONS`, `RECALL_DATA`,
`RECALL_EMBEDDER`, `RECALL_STORE_CACHE`. Evaluation stores are cached, so a second run embeds
nothing. Data is looked up in `--data`, then `../shared/data`, then the cache; `agentmemory eval
locomo --download` fetches the public files.
"""

PARAMETERS = """\
# Parameters (papermill-style: this cell is tagged "parameters")
import os

DATASET = os.environ.get("RECALL_DATASET", "locomo")  # "locomo" or "scifact"
# a slice: the first N conversations (locomo) or judged queries (scifact); None runs everything
SLICE = int(os.environ["RECALL_SLICE"]) if os.environ.get("RECALL_SLICE") else None
# locomo only: at most this many questions of each conversation; None keeps them all
QUESTIONS = int(os.environ["RECALL_QUESTIONS"]) if os.environ.get("RECALL_QUESTIONS") else None
DATA = os.environ.get("RECALL_DATA") or None  # a file or folder; None looks in the usual places
EMBEDDER = os.environ.get("RECALL_EMBEDDER") or None  # None: the packaged all-MiniLM-L6-v2
STORE_CACHE = os.environ.get("RECALL_STORE_CACHE") or None  # None: the user cache folder
KS = list(range(1, 21))  # the cut-offs of the Recall@k curve
"""

REFERENCES_MD = """\
## Published reference points

| data | method | metric | published |
|---|---|---|---|
| SciFact (BEIR) | BM25 (Elasticsearch) | nDCG@10 | 0.665 (Thakur et al., BEIR, 2021) |
| SciFact (BEIR) | all-MiniLM-L6-v2 | nDCG@10 | 0.645 (MTEB leaderboard) |
| LoCoMo | DRAGON retriever, dialog turns | Recall@5 / Recall@10 | 0.567 / 0.662 (Maharana et al., ACL 2024) |

Our numbers are not expected to equal them exactly: our BM25 has its own tokenizer (Snowball
stemming, our stopwords), LoCoMo turns are indexed with speaker, date and image caption, and the
development file holds 7 of the 10 conversations. They say whether we are in the right range.
"""

RUN = """\
import time

import matplotlib

matplotlib.use("Agg")  # no display needed; figures are shown as PNG images below
import io

import matplotlib.pyplot as plt
from IPython.display import Image, display

from agentmemory.eval import evaluate_beir, evaluate_locomo

REFERENCE = {
    "locomo": {"recall@5": 0.567, "recall@10": 0.662},  # DRAGON, LoCoMo paper
    "scifact": {"ndcg@10": {"bm25": 0.665, "vector": 0.645}},  # BEIR paper, MTEB
}


def show(fig):
    \"\"\"Display a matplotlib figure as a PNG (works with any backend, in Jupyter and nbclient).\"\"\"
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    display(Image(data=buf.getvalue()))


started = time.perf_counter()
options = dict(
    data=DATA, ks=(1, 5, 10, max(KS)), embedder=EMBEDDER, store_cache=STORE_CACHE, progress=False
)
if DATASET == "locomo":
    result = evaluate_locomo(conversations=SLICE, questions=QUESTIONS, **options)
else:
    result = evaluate_beir(dataset=DATASET, queries=SLICE, **options)
print(result.render())
print(f"\\nnotebook run: {time.perf_counter() - started:.1f} s")
"""

CURVE_MD = """\
## Recall@k against k

Recall@k is the fraction of a query's relevant entries (LoCoMo: evidence turns) among the first `k`
hits, averaged over queries. All three methods were asked for the same ranking depth.
"""

CURVE = """\
fig, ax = plt.subplots(figsize=(7, 4))
for method in result.methods:
    ax.plot(KS, result.recall_curve(method, KS), marker="o", markersize=3, label=method)
if DATASET == "locomo":
    ref = REFERENCE["locomo"]
    ax.scatter(
        [5, 10],
        [ref["recall@5"], ref["recall@10"]],
        marker="*",
        s=120,
        color="black",
        label="DRAGON (LoCoMo paper)",
        zorder=3,
    )
ax.set_xlabel("k (hits read)")
ax.set_ylabel("Recall@k")
ax.set_title(f"{result.dataset}: {len(result.queries)} queries")
ax.set_xticks([1, 5, 10, 15, 20])
ax.set_ylim(0, 1)
ax.grid(alpha=0.3)
ax.legend()
show(fig)

for method in result.methods:
    curve = dict(zip(KS, result.recall_curve(method, KS), strict=True))
    print(f"{method:>7}: " + "  ".join(f"R@{k}={curve[k]:.3f}" for k in (1, 5, 10, 20)))
"""

VERSUS_MD = """\
## Against the published numbers
"""

VERSUS = """\
rows = []
if DATASET == "locomo":
    for metric, published in REFERENCE["locomo"].items():
        ours = "  ".join(f"{m} {result.summary[m][metric]:.3f}" for m in result.methods)
        rows.append(f"{metric:>9}: DRAGON {published:.3f} | ours: {ours}")
else:
    for method, published in REFERENCE["scifact"]["ndcg@10"].items():
        rows.append(
            f"nDCG@10 {method:>6}: published {published:.3f} | ours "
            f"{result.summary[method]['ndcg@10']:.3f}"
        )
    rows.append(f"nDCG@10 hybrid: ours {result.summary['hybrid']['ndcg@10']:.3f}")
if SLICE is not None or QUESTIONS is not None:
    rows.append("(a slice: compare the full run, not this one, with the published numbers)")
print("\\n".join(rows))
"""

CATEGORY_MD = """\
## Per category (LoCoMo)

LoCoMo's questions come in five categories (single-hop, multi-hop, temporal, open-domain,
adversarial); the methods do not fail in the same places.
"""

CATEGORY = """\
if result.groups:
    print(result.group_table(metrics=["recall@5", "recall@10", "mrr", "ndcg@10"]))
    groups = list(result.groups)
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(result.methods)
    for i, method in enumerate(result.methods):
        values = [result.groups[g][method]["recall@10"] for g in groups]
        ax.bar([x + i * width for x in range(len(groups))], values, width, label=method)
    ax.set_xticks([x + width * (len(result.methods) - 1) / 2 for x in range(len(groups))])
    ax.set_xticklabels([f"{g}\\n({result.group_sizes[g]})" for g in groups])
    ax.set_ylabel("Recall@10")
    ax.set_title(f"{result.dataset}: Recall@10 by category (questions)")
    ax.set_ylim(0, 1)
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    show(fig)
else:
    print(f"{result.dataset} has no categories")
"""

EXAMPLES_MD = """\
## Where the hybrid wins and where it loses

Queries where the hybrid's Recall@10 differs most from the better of its two legs (the leg with the
higher mean Recall@10 on this run), with the first hits of each method. `*` marks a relevant entry.
"""

EXAMPLES = """\
from agentmemory.eval import TurnFormat, load_beir, load_locomo

if DATASET == "locomo":
    loaded = load_locomo(result.data_path, conversations=SLICE)
    fmt = TurnFormat()
    TEXT = {(c.scope, t.name): fmt.render(t) for c in loaded.conversations for t in c.turns}
else:
    loaded = load_beir(result.data_path)
    scope = result.stores[0]["scope"]
    TEXT = {(scope, d.name): f"{d.title}. {d.text}" for d in loaded.documents}

best_leg = max(("bm25", "vector"), key=lambda m: result.summary[m]["recall@10"])
diffs = result.compare("hybrid", best_leg, "recall@10")


def show_query(q, diff, n=3):
    print(f"{q.query_id} [{q.group or result.dataset}] hybrid - {best_leg} = {diff:+.2f}")
    print(f"  query: {q.text}")
    for name in q.relevant[:3]:
        print(f"  relevant {name}: {TEXT.get((q.scope, name), '')[:110]}")
    for method in ("hybrid", best_leg):
        ranking = q.rankings[method]
        top = [f"{name}{'*' if name in q.relevant else ''}" for name in ranking[:n]]
        found = [str(ranking.index(r) + 1) for r in q.relevant if r in ranking]
        print(
            f"  {method:>7}: top {n} {', '.join(top)}; relevant at rank "
            f"{', '.join(found) or '-'} of {len(ranking)} (R@10 {q.scores[method]['recall@10']:.2f})"
        )
    print()


wins = [item for item in diffs if item[1] > 0][:3]
losses = [item for item in reversed(diffs) if item[1] < 0][:3]
print(
    f"hybrid better than {best_leg} on {sum(d > 0 for _, d in diffs)} queries, worse on "
    f"{sum(d < 0 for _, d in diffs)}, equal on {len(result.queries) - len(diffs)}\\n"
)
print("== hybrid wins ==")
for q, d in wins:
    show_query(q, d)
print("== hybrid loses ==")
for q, d in losses:
    show_query(q, d)
"""

END_MD = """\
## Reading the results

- The Recall@k curve shows whether fusion helps at the cut-off an agent reads (`memory_search`
  returns 5 entries by default): a hybrid under its best leg at small `k` is the known failure of
  naive reciprocal rank fusion.
- Per category, the legs fail in different places: BM25 where the question paraphrases the turn,
  the vector leg where a rare name or date decides.
- `result.to_json()` (or `agentmemory eval ... --json-out FILE`) keeps every query's rankings for
  further analysis.
"""


def build() -> nbformat.NotebookNode:
    """The notebook, without outputs."""
    params = new_code_cell(PARAMETERS.rstrip("\n"))
    params.metadata["tags"] = ["parameters"]
    cells = [
        new_markdown_cell(INTRO),
        params,
        new_markdown_cell(REFERENCES_MD),
        new_code_cell(RUN.rstrip("\n")),
        new_markdown_cell(CURVE_MD),
        new_code_cell(CURVE.rstrip("\n")),
        new_markdown_cell(VERSUS_MD),
        new_code_cell(VERSUS.rstrip("\n")),
        new_markdown_cell(CATEGORY_MD),
        new_code_cell(CATEGORY.rstrip("\n")),
        new_markdown_cell(EXAMPLES_MD),
        new_code_cell(EXAMPLES.rstrip("\n")),
        new_markdown_cell(END_MD),
    ]
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i:02d}"  # stable ids, so a rebuild is byte-identical
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def text() -> str:
    """The notebook file's text, as :func:`main` writes it."""
    return nbformat.writes(build()) + "\n"


def main(argv: list[str]) -> int:
    """Write the notebook, or with ``--check`` report whether the file is up to date."""
    want = text()
    if "--check" in argv:
        have = NOTEBOOK.read_text(encoding="utf-8") if NOTEBOOK.is_file() else ""
        if have != want:
            print(f"{NOTEBOOK} is out of date; run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    NOTEBOOK.write_text(want, encoding="utf-8")
    print(f"wrote {NOTEBOOK}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
