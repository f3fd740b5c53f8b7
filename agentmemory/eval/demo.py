"""``agentmemory demo``: one LoCoMo conversation in a memory store, searched the way an agent
searches it.

:func:`run_demo` imports every dialog turn of one conversation as an entry of a
:class:`~agentmemory.ChromaStore` (scope: the conversation's id, name: the turn's, content:
``"[date] speaker: text"``, :class:`agentmemory.eval.TurnFormat`), then calls the real
``memory_search`` tool of :func:`agentmemory.tools` for every one of the conversation's questions,
prints a few of them in full (what the model would read, the question's evidence turns and its
Recall@5: the fraction of evidence turns among the hits, LoCoMo's retrieval measure, Maharana et
al., ACL 2024), and ends with the mean Recall@5 over all the questions of ``memory_search``
(hybrid recall) and, on the same questions, of BM25 and of vector search alone.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from agentmemory.errors import AgentMemoryError

if TYPE_CHECKING:
    from embedders import Embedder

    from .locomo import LocomoConversation

__all__ = [
    "DEFAULT_DEMO_QUESTIONS",
    "DEMO_LIMIT",
    "DemoQuestion",
    "DemoResult",
    "pick_questions",
    "run_demo",
    "shown_names",
]

DEMO_LIMIT = 5
"""Hits ``memory_search`` is asked for per question; Recall@5 is scored on them."""

DEFAULT_DEMO_QUESTIONS = 8
"""Questions the demo shows in full by default (it searches for all of them)."""

_IMPORT_BATCH = 256
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class DemoQuestion:
    """One question the demo searched for.

    Attributes:
        id: ``"conv-30/q4"``.
        question: the text, used as the query.
        answer: the gold answer; for an adversarial question (LoCoMo category 5) the planted
            wrong answer.
        category: the LoCoMo category name (``"single-hop"``...).
        relevant: entry names of the evidence turns.
        found: entry names the ``memory_search`` result shows, best first.
        recall: Recall@5 of ``found`` against ``relevant``, in ``[0, 1]``.
        tool_text: the ``memory_search`` result text, as the model reads it.
    """

    id: str
    question: str
    answer: str
    category: str
    relevant: tuple[str, ...]
    found: tuple[str, ...]
    recall: float
    tool_text: str


@dataclass(slots=True)
class DemoResult:
    """What :func:`run_demo` did.

    Attributes:
        data_path: the LoCoMo file read.
        scope: the conversation's scope (``"conv-30"``).
        turns: entries imported (one per dialog turn).
        embedder: the embedder's registry name.
        questions: the questions shown in full, in order.
        searched: how many questions were searched: all of the conversation's.
        recall: mean Recall@5 over every question of the conversation: ``"memory_search"``
            (the tool, hybrid), ``"bm25"`` and ``"vector"`` (``store.recall`` with that mode
            alone).
        timings: seconds: ``"import_s"`` (writing and embedding), ``"search_s"`` (all the
            ``memory_search`` calls), ``"total_s"``.
    """

    data_path: Path
    scope: str
    turns: int
    embedder: str
    questions: list[DemoQuestion] = field(default_factory=list)
    searched: int = 0
    recall: dict[str, float] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


def pick_questions(items: Sequence[T], n: int) -> list[T]:
    """``n`` items spread evenly over ``items`` (the middle of each of ``n`` equal stretches),
    in order; all of them when there are no more than ``n``. Deterministic."""
    if n >= len(items):
        return list(items)
    return [items[(2 * i + 1) * len(items) // (2 * n)] for i in range(n)]


def shown_names(tool_text: str, scope: str) -> list[str]:
    """The entry names a ``memory_search`` result shows, in order: its ``<scope>/<name> (<n>
    bytes)`` head lines (entries listed past the byte limit were not shown, and do not count)."""
    pattern = re.compile(rf"^{re.escape(scope)}/([a-z0-9-]+) \(\d+ bytes\)", re.MULTILINE)
    return pattern.findall(tool_text)


def _choose(conversations: Sequence[LocomoConversation], which: str | None) -> LocomoConversation:
    if not conversations:
        raise AgentMemoryError(
            "agentmemory: the LoCoMo data holds no conversations; give a file with at least one "
            "(--data)"
        )
    if which is None:
        return conversations[0]
    for conv in conversations:
        if which in (conv.sample_id, conv.scope):
            return conv
    if which.isdigit() and 1 <= int(which) <= len(conversations):
        return conversations[int(which) - 1]
    known = ", ".join(c.sample_id for c in conversations)
    raise AgentMemoryError(
        f"agentmemory: no conversation {which!r} in the data; give one of {known}, or its "
        f"number from 1 to {len(conversations)}"
    )


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.split("\n"))


def run_demo(
    *,
    data: str | Path,
    embedder: Embedder,
    conversation: str | None = None,
    questions: int = DEFAULT_DEMO_QUESTIONS,
    path: str | Path | None = None,
    out: Callable[[str], object] = print,
    progress: bool | None = None,
) -> DemoResult:
    """Import one LoCoMo conversation into a store and search it with ``memory_search``.

    Args:
        data: the LoCoMo JSON file (``locomo10.json`` schema).
        embedder: makes the store's vectors.
        conversation: a sample id (``"conv-30"``) or a number from 1; default the first.
        questions: how many of its questions to show in full, spread over the conversation
            (:func:`pick_questions`); every question is searched and scored.
        path: the folder of the demo store (``--keep``), new or empty, kept afterwards; default
            a temporary folder, removed at the end.
        out: where the lines of the walk-through go (``print``, ``click.echo``).
        progress: a tqdm bar on stderr while importing (default: when stderr is a terminal).

    Returns a :class:`DemoResult`. Raises :class:`~agentmemory.AgentMemoryError` for a ``path``
    that holds something, an unknown conversation, a file with no conversations or a
    conversation with no dialog turns (before any store is made), ``OSError``/``ValueError`` for an unreadable file, and the store's
    errors.
    """
    from tqdm import tqdm

    from agentmemory.opening import open_store
    from agentmemory.tools import tools

    from .locomo import TurnFormat, load_locomo, turn_entries
    from .metrics import mean, recall_at_k

    if path is not None and Path(path).exists() and any(Path(path).iterdir()):
        raise AgentMemoryError(
            f"agentmemory: --keep folder {path} is not empty; give a new or empty folder"
        )
    started = time.perf_counter()
    dataset = load_locomo(data)
    conv = _choose(dataset.conversations, conversation)
    chosen = pick_questions(conv.questions, questions)
    entries = turn_entries(conv, fmt=TurnFormat())
    if not entries:
        raise AgentMemoryError(
            f"agentmemory: conversation {conv.sample_id} in {dataset.path} has no dialog turns "
            "to import; choose another with --conversation"
        )
    temporary = path is None
    folder = Path(tempfile.mkdtemp(prefix="agentmemory-demo-")) if path is None else Path(path)
    result = DemoResult(
        data_path=Path(dataset.path), scope=conv.scope, turns=len(entries), embedder=embedder.name
    )
    a, b = conv.speakers
    sessions = len({t.session for t in conv.turns})
    out("agentmemory demo: a LoCoMo conversation in a memory store, searched as an agent does")
    out("")
    out(f"data:    {dataset.path}")
    out(
        f"         conversation {conv.sample_id} between {a} and {b}: {sessions} sessions, "
        f"{len(conv.turns)} dialog turns, {len(conv.questions)} questions with evidence"
    )
    out(f"store:   {folder}{' (temporary)' if temporary else ''}, embedder {embedder.name}")
    try:
        with open_store(folder, embedder=embedder, format="sqlite") as store:
            t0 = time.perf_counter()
            with tqdm(
                total=len(entries),
                desc="import",
                unit="turn",
                disable=progress is False if progress is not None else None,
            ) as bar:
                for i in range(0, len(entries), _IMPORT_BATCH):
                    chunk = entries[i : i + _IMPORT_BATCH]
                    store.put_many(chunk)
                    bar.update(len(chunk))
            result.timings["import_s"] = time.perf_counter() - t0
            first = entries[0]
            out(
                f"import:  {len(entries)} turns as entries {conv.scope}/{first.name} ... "
                f"{conv.scope}/{entries[-1].name} in {result.timings['import_s']:.1f} s"
            )
            out(f"         e.g. {first.key}: {first.content}")
            out("")
            search = next(t for t in tools(store, [conv.scope]) if t.name == "memory_search")
            shown = {q.id for q in chosen}
            legs: dict[str, list[float]] = {"bm25": [], "vector": []}
            tool_recall: list[float] = []
            search_s = 0.0
            for q in conv.questions:
                args = {"query": q.question, "limit": DEMO_LIMIT}
                t1 = time.perf_counter()
                called = search(args)
                search_s += time.perf_counter() - t1
                found = shown_names(called.text, conv.scope)
                recall = recall_at_k(found, q.relevant, DEMO_LIMIT)
                tool_recall.append(recall)
                for mode in legs:
                    hits = store.recall(
                        q.question, scopes=[conv.scope], limit=DEMO_LIMIT, mode=mode
                    )
                    legs[mode].append(
                        recall_at_k([h.entry.name for h in hits], q.relevant, DEMO_LIMIT)
                    )
                if q.id not in shown:
                    continue
                item = DemoQuestion(
                    id=q.id,
                    question=q.question,
                    answer=q.answer,
                    category=q.category_name,
                    relevant=q.relevant,
                    found=tuple(found),
                    recall=recall,
                    tool_text=called.text,
                )
                result.questions.append(item)
                _show_question(out, len(result.questions), len(chosen), item)
            result.timings["search_s"] = search_s
            result.searched = len(conv.questions)
            result.recall = {
                "memory_search": mean(tool_recall),
                "bm25": mean(legs["bm25"]),
                "vector": mean(legs["vector"]),
            }
    finally:
        if temporary:
            shutil.rmtree(folder, ignore_errors=True)
    result.timings["total_s"] = time.perf_counter() - started
    _show_summary(out, result, kept=None if temporary else folder)
    return result


def _show_question(out: Callable[[str], object], n: int, total: int, q: DemoQuestion) -> None:
    out(f"[{n}/{total}] {q.category} question: {q.question}")
    if q.category == "adversarial":
        # LoCoMo's category 5: the question's premise is false, so its ``adversarial_answer`` is
        # the planted wrong answer a model must not give, not a gold answer.
        out(f"      (adversarial: the premise is false; the planted wrong answer is {q.answer!r})")
    else:
        out(f"      answer: {q.answer}")
    args = json.dumps({"query": q.question, "limit": DEMO_LIMIT}, ensure_ascii=False)
    out(f"  memory_search {args} returns:")
    out(_indent(q.tool_text.rstrip("\n"), "  │ "))
    ranks = {name: i for i, name in enumerate(q.found, start=1)}
    where = [
        f"{name} at rank {ranks[name]}" if name in ranks else f"{name} missed"
        for name in q.relevant
    ]
    hits = sum(1 for name in q.relevant if name in ranks)
    out(
        f"  evidence: {', '.join(where)}  ->  Recall@{DEMO_LIMIT} = {hits}/{len(q.relevant)}"
        f" = {q.recall:.2f}"
    )
    out("")


def _show_summary(out: Callable[[str], object], r: DemoResult, kept: Path | None) -> None:
    n = r.searched
    out(
        f"Recall@{DEMO_LIMIT} over all {n} questions of {r.scope} (fraction of evidence turns "
        f"among the {DEMO_LIMIT} hits, averaged; {len(r.questions)} shown above):"
    )
    out(f"  memory_search (hybrid: BM25 + vector)  {r.recall['memory_search']:.3f}")
    out(f"  BM25 alone                             {r.recall['bm25']:.3f}")
    out(f"  vector alone ({r.embedder})  {r.recall['vector']:.3f}")
    t = r.timings
    out(
        f"time: import {t.get('import_s', 0):.1f} s, {n} searches "
        f"{t.get('search_s', 0):.1f} s, total {t.get('total_s', 0):.1f} s"
    )
    out("")
    if kept is not None:
        out(f"the store is kept in {kept}; search it yourself:")
        out(f"  agentmemory search --path {kept} --scope {r.scope} 'what did they talk about'")
    out(
        "all questions and conversations: agentmemory eval locomo (BM25, vector and hybrid, "
        "per category)"
    )
