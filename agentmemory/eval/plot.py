"""The picture of an evaluation run: Recall@k for k = 1 to the ranking depth per method, and
Recall@10 per question category (LoCoMo), as one PNG (``agentmemory eval ... --plot FILE``).

Needs matplotlib (a dev dependency, as for the notebook); drawn with its Agg backend, so no
display is needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .metrics import mean, recall_at_k

if TYPE_CHECKING:
    from .runner import EvalResult

__all__ = ["plot_result"]


def plot_result(result: EvalResult, path: str | Path) -> Path:
    """Draw ``result`` into the PNG ``path`` (parents created) and return the path.

    Left: mean Recall@k of each method ranked ``depth`` deep (the ``@5`` rows left out), k = 1 to
    ``result.depth``. Right, when the run has categories: Recall@10 of each method per category,
    one bar each, the category's question count in its label.

    Raises ``ModuleNotFoundError`` naming matplotlib when it is not installed.
    """
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "--plot draws with matplotlib, which is not installed: pip install matplotlib"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = [m for m in result.methods if "@" not in m]
    ks = list(range(1, result.depth + 1))
    panels = 2 if result.groups else 1
    fig, axes = plt.subplots(1, panels, figsize=(6.4 * panels, 4.2), squeeze=False)
    curve = axes[0][0]
    for m in methods:
        values = [
            mean(recall_at_k(q.rankings[m], q.relevant, k) for q in result.queries) for k in ks
        ]
        curve.plot(ks, values, marker="o", markersize=3, label=m)
    curve.set(
        xlabel="k",
        ylabel="Recall@k",
        ylim=(0, 1),
        title=f"{result.dataset}: Recall@k ({len(result.queries)} queries)",
    )
    curve.set_xticks(ks)
    curve.grid(alpha=0.3)
    curve.legend()
    if result.groups:
        bars = axes[0][1]
        groups = list(result.groups)
        width = 0.8 / max(len(methods), 1)
        for i, m in enumerate(methods):
            values = [result.groups[g][m].get("recall@10", 0.0) for g in groups]
            bars.bar([x + i * width for x in range(len(groups))], values, width, label=m)
        bars.set_xticks(
            [x + width * (len(methods) - 1) / 2 for x in range(len(groups))],
            [f"{g}\n({result.group_sizes.get(g, 0)})" for g in groups],
        )
        bars.set(ylabel="Recall@10", ylim=(0, 1), title="Recall@10 by category")
        bars.grid(axis="y", alpha=0.3)
        bars.legend()
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
