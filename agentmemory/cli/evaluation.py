"""The commands that measure recall on public data: ``eval`` and ``demo``."""

from __future__ import annotations

from pathlib import Path

import click

from .group import CliError, main
from .opening import embedder_named
from .options import embedder_option, json_option
from .output import to_stderr

PLOT_DEPTH = 20
"""How deep ``eval --plot`` ranks, so its Recall@k curve runs to k = 20."""


@main.command("eval", short_help="Evaluate recall on LoCoMo, LongMemEval or SciFact.")
@click.argument("dataset", type=click.Choice(["locomo", "longmemeval", "scifact"]))
@click.option(
    "--data",
    type=click.Path(path_type=Path),
    default=None,
    help="The data file or folder (default: shared/data next to the repository, then the cache).",
)
@click.option(
    "--download",
    is_flag=True,
    help="Fetch the public data when it is not found: into the --data folder, else the cache.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="Run a slice: the first N conversations (locomo), questions of the file (longmemeval) "
    "or queries (scifact).",
)
@click.option(
    "--json-out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the results (every query's rankings too) as JSON here (default: the cache "
    "folder's results/).",
)
@click.option(
    "--embedder",
    "embedder_name",
    default=None,
    metavar="NAME",
    help="The embedder by registry name (default: the one a new store and the demo take, the "
    "packaged all-MiniLM-L6-v2 through onnxruntime: onnx:all-MiniLM-L6-v2).",
)
@click.option("--rebuild", is_flag=True, help="Build the cached evaluation stores again.")
@click.option(
    "--rerank",
    "rerank_folder",
    type=click.Path(path_type=Path),
    default=None,
    metavar="PATH",
    help="Also score the hybrid reranked by the cross-encoder in this local model folder "
    "(method hybrid+rerank; nothing is downloaded).",
)
@click.option(
    "--plot",
    "plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE.png",
    help="Also draw Recall@k (k = 1 to 20; the run ranks 20 deep) per method and Recall@10 per "
    "category into this PNG (needs matplotlib).",
)
@click.option(
    "--progress/--no-progress",
    default=True,
    show_default=True,
    help="Progress bars on stderr.",
)
@json_option
def eval_command(
    dataset: str,
    data: Path | None,
    download: bool,
    limit: int | None,
    json_out: Path | None,
    embedder_name: str | None,
    rebuild: bool,
    rerank_folder: Path | None,
    plot: Path | None,
    progress: bool,
    as_json: bool,
) -> None:
    """Evaluate BM25, vector and hybrid recall on a public benchmark and print the table.

    locomo: one store per conversation, each dialog turn an entry, each question a query scored
    against its evidence turns (Recall@k, Hit@k, MRR, nDCG@10; also per category). longmemeval:
    one store per question holding its haystack's turns, scored against its has_answer turns,
    with session_any@k against its answer sessions (per question type; abstention questions,
    ids ending _abs, are skipped and counted). scifact:
    each abstract an entry, the 300 test queries scored against their qrels. Evaluation stores
    are cached, so a second run embeds nothing. Every method is scored on a ranking 10 deep and
    at memory_search's default limit, 5 (rows <method>@5). --rerank adds the hybrid reordered by
    a local cross-encoder (docs/recall.md#reranking).
    """
    from recallers import RerankerFolderError

    from ..eval import evaluate, locate_data, reranker_for, results_path

    if embedder_name is not None:
        embedder_named(embedder_name)  # an unknown name is a usage error before any work
    try:
        reranker = reranker_for(rerank_folder)
    except RerankerFolderError as exc:
        raise click.BadParameter(str(exc), param_hint="--rerank") from None
    result = evaluate(
        dataset,
        limit=limit,
        data=locate_data(dataset, data, download=download, announce=to_stderr),
        embedder=embedder_name,
        rebuild=rebuild,
        progress=progress,
        reranker=reranker,
        **({"depth": PLOT_DEPTH} if plot is not None else {}),
    )
    if plot is not None:
        from ..eval.plot import plot_result

        try:
            drawn = plot_result(result, plot)
        except ModuleNotFoundError as exc:
            raise CliError(str(exc)) from None
        click.echo(f"figure written to {drawn}", err=True)
    written = result.write_json(json_out if json_out is not None else results_path(dataset))
    if as_json:
        click.echo(result.to_json(queries=False))
    else:
        click.echo(result.render())
    click.echo(f"results written to {written}", err=as_json)


@main.command("demo", short_help="Import a LoCoMo conversation and search it as an agent.")
@click.option(
    "--data",
    type=click.Path(path_type=Path),
    default=None,
    help="The LoCoMo file, or a folder holding it (default: "
    "shared/data/locomo/locomo-dev.json next to the repository, then the cache).",
)
@click.option(
    "--download",
    is_flag=True,
    help="Fetch the public locomo10.json (checked by its SHA-256) when no data is found: into "
    "the --data folder, else the cache.",
)
@click.option(
    "--conversation",
    default=None,
    metavar="ID",
    help="Which conversation: its sample id (conv-30) or number from 1 (default: the first).",
)
@click.option(
    "--questions",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="How many of its questions to show in full (spread over the conversation); every "
    "question is searched and scored.",
)
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Build the demo store in this new folder and keep it (default: a temporary folder, "
    "removed at the end).",
)
@embedder_option
def demo_command(
    data: Path | None,
    download: bool,
    conversation: str | None,
    questions: int,
    keep: Path | None,
    embedder_name: str | None,
) -> None:
    """Import one LoCoMo conversation and search it the way an agent does.

    Each dialog turn becomes an entry; for every one of the conversation's questions the real
    memory_search tool is called; for a few its result (what the model reads) is printed with
    the Recall@5 of the question's evidence turns. Ends with the Recall@5 over all the
    questions, also of BM25 and vector search alone. Offline; about 20 to 40 seconds once
    installed.
    """
    from agentmemory.eval.demo import run_demo

    from ..eval import locate_data

    embedder = embedder_named(embedder_name)
    run_demo(
        data=locate_data("locomo", data, download=download, announce=to_stderr),
        conversation=conversation,
        questions=questions,
        embedder=embedder,
        path=keep,
        out=click.echo,
    )
