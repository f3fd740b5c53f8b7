"""Load LoCoMo conversations (the public ``locomo10.json`` schema) for retrieval evaluation.

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL
2024) holds long two-person conversations split into sessions of dialog turns, and questions whose
``evidence`` lists the dialog ids (``"D<session>:<turn>"``) that answer them. The retrieval-only
protocol here: each turn is one entry (name from its dialog id, ``"D1:3"`` -> ``"d1-3"``), each
conversation is one store with one scope, each question is a query, and its evidence turns are the
relevant entries.

Evidence ids in the public file are not all clean. :func:`normalise_evidence` turns ``"D1:3 "``,
``"D1: 3"``, ``"(D1:3)"``, ``"D30:05"`` into canonical ids and splits ``"D10:1; D1:2"`` and
``"D9:1 D4:4"`` into their parts; ids that name no turn of the conversation (``"D"``, a turn past the
end of its session) are dropped. A question left with no evidence is skipped. :class:`LoadReport`
counts each case, so the numbers a table shows can be traced.

Adversarial questions (category 5) ask about something the conversation does not say; their
evidence marks the turn the question twists. The LoCoMo paper scores retrieval recall on them
like any other category (its ``task_eval/evaluation_stats.py`` reports categories 4, 1, 2, 3, 5),
so they are kept by default and reported as their own category; pass ``categories`` to leave them
out.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..entries import Entry
from ..errors import DataFormatError
from ..rules import valid_name

__all__ = [
    "CATEGORY_NAMES",
    "LoadReport",
    "LocomoConversation",
    "LocomoDataset",
    "LocomoQuestion",
    "LocomoTurn",
    "TurnFormat",
    "dia_id_name",
    "file_sha256",
    "load_locomo",
    "normalise_evidence",
    "session_of",
    "turn_entries",
]

CATEGORY_NAMES: Mapping[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""LoCoMo's question categories by number. The public file gives numbers only; the names are the
paper's five kinds, matched to the numbers by the questions themselves (category 2 asks "when",
category 1 needs several turns, category 5 carries an ``adversarial_answer``), as later work on the
same file reads them (e.g. Chhikara et al., Mem0, 2025)."""

_DIA_ID_RE = re.compile(r"D\s*(\d+)\s*:\s*(\d+)", re.IGNORECASE)
_SESSION_RE = re.compile(r"session_(\d+)")


def file_sha256(path: str | Path) -> str:
    """Lowercase hex SHA-256 of the file's bytes (64 characters), read in 1 MiB blocks.

    Raises ``OSError`` when the file cannot be read.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dia_id_name(dia_id: str) -> str:
    """Entry name of a dialog id: ``"D1:3"`` -> ``"d1-3"`` (lowercased, runs of other characters
    made single hyphens). Raises ``ValueError`` when nothing kebab-case is left."""
    name = re.sub(r"[^a-z0-9]+", "-", dia_id.lower()).strip("-")
    if not valid_name(name):
        raise DataFormatError(f"dialog id {dia_id!r} gives no kebab-case entry name ({name!r})")
    return name


def session_of(name: str) -> str:
    """The session of a turn's entry name: ``"d3-12"`` -> ``"d3"`` (the part before the first
    hyphen, :func:`dia_id_name`'s ``D<session>:<turn>``); a name without a hyphen is its own."""
    return name.split("-", 1)[0]


def normalise_evidence(raw: str) -> tuple[list[str], bool]:
    """Canonical dialog ids found in one evidence string, and whether it needed normalising.

    Every ``D<session>:<turn>`` in ``raw`` counts, with white space allowed around the colon,
    any case, and leading zeros dropped: ``"D1: 3"`` -> ``["D1:3"]``, ``"D30:05"`` ->
    ``["D30:5"]``, ``"D10:1; D1:2"`` -> ``["D10:1", "D1:2"]``, ``"D"`` -> ``[]``. The flag is true
    when ``raw`` was not exactly one canonical id. Whether the ids name real turns is the caller's
    check (:func:`load_locomo` does it).
    """
    ids = [f"D{int(s)}:{int(t)}" for s, t in _DIA_ID_RE.findall(raw)]
    return ids, not (len(ids) == 1 and ids[0] == raw)


@dataclass(frozen=True, slots=True)
class TurnFormat:
    """What text of a dialog turn becomes the entry's content (and so what BM25 and the embedder
    read).

    Attributes:
        speaker: prefix the speaker's name, ``"Gina: Hey Jon! ..."`` (the LoCoMo paper's own
            format of a turn, ``speaker + ': ' + text``).
        date: prefix the session's date and time, ``"[4:04 pm on 20 January, 2023] "``.
        caption: append the caption of a shared image, ``" [shares a photo of a dog]"`` (the
            paper's ``'[shares %s]' % blip_caption``).

    All three are on by default: each helped every method on the development conversations
    (``benchmarks/README.md``, "Notes moved from docstrings", ``agentmemory.eval.locomo``). A
    memory entry that says who said what and when is also what an agent would store.
    """

    speaker: bool = True
    date: bool = True
    caption: bool = True

    def render(self, turn: LocomoTurn) -> str:
        """The content of ``turn`` under this format (non-empty UTF-8 text)."""
        text = turn.text.strip()
        if self.caption and turn.caption:
            text = f"{text} [shares {turn.caption.strip()}]".strip()
        if self.speaker and turn.speaker:
            text = f"{turn.speaker}: {text}"
        if self.date and turn.date_time:
            text = f"[{turn.date_time}] {text}"
        return text or f"({turn.dia_id})"

    def key(self) -> str:
        """A short stable string of the options, for cache keys: ``"speaker=1,date=1,caption=1"``."""
        return f"speaker={int(self.speaker)},date={int(self.date)},caption={int(self.caption)}"


@dataclass(frozen=True, slots=True)
class LocomoTurn:
    """One dialog turn.

    Attributes:
        dia_id: the dialog id as in the file, ``"D1:3"``.
        name: the entry name, ``"d1-3"``.
        session: session number (1-based, chronological).
        speaker: who said it.
        text: what was said.
        date_time: the session's timestamp as written in the file (``"4:04 pm on 20 January,
            2023"``), ``""`` when absent.
        caption: the BLIP caption of an image shared in the turn, ``""`` when none.
    """

    dia_id: str
    name: str
    session: int
    speaker: str
    text: str
    date_time: str = ""
    caption: str = ""


@dataclass(frozen=True, slots=True)
class LocomoQuestion:
    """One question with its evidence.

    Attributes:
        id: ``"<sample_id>/q<index>"``, index from 0 in file order (skipped questions keep theirs).
        question: the text, used as the query.
        answer: the gold answer, as text; for category 5 the ``adversarial_answer``, which is the
            planted wrong answer to a question whose premise is false, not a gold answer.
        category: 1 to 5 (see :data:`CATEGORY_NAMES`).
        evidence: canonical dialog ids of the evidence turns, deduplicated, in file order.
        relevant: the entry names of those turns (same order).
    """

    id: str
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]
    relevant: tuple[str, ...]

    @property
    def category_name(self) -> str:
        """The category's name (``"single-hop"``...), or ``"category-<n>"`` when unknown."""
        return CATEGORY_NAMES.get(self.category, f"category-{self.category}")


@dataclass(frozen=True, slots=True)
class LocomoConversation:
    """One conversation: its turns (session order) and its kept questions.

    Attributes:
        sample_id: as in the file (``"conv-30"``).
        scope: the kebab-case scope its entries live in (``"conv-30"``).
        speakers: ``(speaker_a, speaker_b)``.
        turns: every turn, sessions in order, turns in file order.
        questions: the questions kept after evidence normalisation.
    """

    sample_id: str
    scope: str
    speakers: tuple[str, str]
    turns: tuple[LocomoTurn, ...]
    questions: tuple[LocomoQuestion, ...]


@dataclass(slots=True)
class LoadReport:
    """What loading changed or left out, with examples (``"<question id>: <raw id>"``).

    Attributes:
        questions_read: questions in the file (of the loaded conversations).
        questions_kept: questions with at least one valid evidence turn (and a wanted category).
        skipped_no_evidence: ids of questions left with no valid evidence turn.
        skipped_category: number of questions left out by the ``categories`` filter.
        normalised_ids: evidence strings rewritten (spaces, leading zeros, several ids in one).
        dropped_ids: evidence ids naming no turn of their conversation.
    """

    questions_read: int = 0
    questions_kept: int = 0
    skipped_no_evidence: list[str] = field(default_factory=list)
    skipped_category: int = 0
    normalised_ids: list[str] = field(default_factory=list)
    dropped_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the counts plus the lists of examples."""
        return {
            "questions_read": self.questions_read,
            "questions_kept": self.questions_kept,
            "skipped_no_evidence": len(self.skipped_no_evidence),
            "skipped_category": self.skipped_category,
            "normalised_ids": len(self.normalised_ids),
            "dropped_ids": len(self.dropped_ids),
            "details": {
                "skipped_no_evidence": list(self.skipped_no_evidence),
                "normalised_ids": list(self.normalised_ids),
                "dropped_ids": list(self.dropped_ids),
            },
        }


@dataclass(frozen=True, slots=True)
class LocomoDataset:
    """The loaded file.

    Attributes:
        path: the file read.
        sha256: lowercase hex SHA-256 of its bytes (keys the store cache).
        conversations: in file order.
        report: what loading normalised and skipped.
    """

    path: Path
    sha256: str
    conversations: tuple[LocomoConversation, ...]
    report: LoadReport

    @property
    def questions(self) -> list[LocomoQuestion]:
        """Every kept question of every conversation, in order."""
        return [q for conv in self.conversations for q in conv.questions]


def _turns(sample_id: str, conversation: Mapping[str, Any]) -> list[LocomoTurn]:
    sessions = sorted(
        (int(m.group(1)), key)
        for key in conversation
        if (m := _SESSION_RE.fullmatch(key)) and isinstance(conversation[key], list)
    )
    turns: list[LocomoTurn] = []
    seen: dict[str, str] = {}
    for number, key in sessions:
        date_time = str(conversation.get(f"{key}_date_time") or "").strip()
        for position, raw in enumerate(conversation[key]):
            if not isinstance(raw, dict) or not str(raw.get("dia_id") or "").strip():
                raise DataFormatError(
                    f"LoCoMo {sample_id}: turn {position} of {key} has no dia_id; the file is "
                    "not in the locomo10.json schema (each turn needs dia_id, speaker and text)"
                )
            dia_id = str(raw["dia_id"]).strip()
            name = dia_id_name(dia_id)
            if name in seen:
                raise DataFormatError(
                    f"LoCoMo {sample_id}: dialog ids {seen[name]!r} and {dia_id!r} give the same "
                    f"entry name {name!r}; the file is not in the locomo10.json schema"
                )
            seen[name] = dia_id
            turns.append(
                LocomoTurn(
                    dia_id=dia_id,
                    name=name,
                    session=number,
                    speaker=str(raw.get("speaker") or "").strip(),
                    text=str(raw.get("text") or ""),
                    date_time=date_time,
                    caption=str(raw.get("blip_caption") or ""),
                )
            )
    return turns


def load_locomo(
    path: str | Path,
    *,
    conversations: int | None = None,
    categories: Iterable[int] | None = None,
) -> LocomoDataset:
    """Read a LoCoMo file in the public ``locomo10.json`` schema.

    ``conversations`` keeps only the first that many (a slice for quick runs); ``categories``
    keeps only questions of those categories (default: all, adversarial included; see the module
    docstring). Evidence ids are normalised with :func:`normalise_evidence` and checked against the
    conversation's turns; questions left without evidence are skipped and counted in the report.

    Raises ``OSError`` when the file cannot be read, :class:`~agentmemory.errors.DataFormatError` (a
    ``ValueError``) when it is not JSON in that schema (a list of samples with ``sample_id``,
    ``conversation`` and ``qa``), naming the file.
    """
    path = Path(path)
    raw_bytes = path.read_bytes()
    try:
        data = json.loads(raw_bytes)
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"LoCoMo file {path} is not JSON: {exc}", path=str(path)) from None
    if data == []:
        raise DataFormatError(f"LoCoMo file {path} holds no conversations", path=str(path))
    if not isinstance(data, list) or not all(
        isinstance(s, dict) and {"sample_id", "conversation", "qa"} <= s.keys() for s in data
    ):
        raise DataFormatError(
            f"LoCoMo file {path} is not in the locomo10.json schema: expected a list of "
            "samples with sample_id, conversation and qa",
            path=str(path),
        )
    wanted = None if categories is None else set(categories)
    report = LoadReport()
    convs: list[LocomoConversation] = []
    samples: Sequence[dict[str, Any]] = data if conversations is None else data[:conversations]
    for sample in samples:
        sample_id = str(sample["sample_id"])
        conv = sample["conversation"]
        try:
            turns = _turns(sample_id, conv)
        except DataFormatError as exc:
            raise DataFormatError(f"LoCoMo file {path}: {exc}", path=str(path)) from None
        by_id = {t.dia_id: t for t in turns}
        # The file's own ids may carry leading zeros too; index them under the canonical form.
        for t in turns:
            canon, _ = normalise_evidence(t.dia_id)
            if len(canon) == 1:
                by_id.setdefault(canon[0], t)
        questions: list[LocomoQuestion] = []
        for index, qa in enumerate(sample["qa"]):
            report.questions_read += 1
            qid = f"{sample_id}/q{index}"
            category = int(qa.get("category", 0))
            if wanted is not None and category not in wanted:
                report.skipped_category += 1
                continue
            evidence: list[str] = []
            relevant: list[str] = []
            for raw in qa.get("evidence") or []:
                raw_text = str(raw)
                ids, rewritten = normalise_evidence(raw_text)
                if rewritten and ids:
                    report.normalised_ids.append(f"{qid}: {raw_text!r} -> {', '.join(ids)}")
                if not ids:
                    report.dropped_ids.append(f"{qid}: {raw_text!r}")
                for dia_id in ids:
                    turn = by_id.get(dia_id)
                    if turn is None:
                        report.dropped_ids.append(f"{qid}: {dia_id!r} names no turn")
                    elif turn.name not in relevant:
                        evidence.append(dia_id)
                        relevant.append(turn.name)
            if not relevant:
                report.skipped_no_evidence.append(qid)
                continue
            answer = qa.get("answer", qa.get("adversarial_answer", ""))
            questions.append(
                LocomoQuestion(
                    id=qid,
                    question=str(qa["question"]),
                    answer=str(answer),
                    category=category,
                    evidence=tuple(evidence),
                    relevant=tuple(relevant),
                )
            )
        report.questions_kept += len(questions)
        convs.append(
            LocomoConversation(
                sample_id=sample_id,
                scope=dia_id_name(sample_id),
                speakers=(str(conv.get("speaker_a", "")), str(conv.get("speaker_b", ""))),
                turns=tuple(turns),
                questions=tuple(questions),
            )
        )
    return LocomoDataset(
        path=path,
        sha256=hashlib.sha256(raw_bytes).hexdigest(),
        conversations=tuple(convs),
        report=report,
    )


def turn_entries(
    conversation: LocomoConversation, *, fmt: TurnFormat | None = None, scope: str | None = None
) -> list[Entry]:
    """One :class:`~agentmemory.Entry` per turn of ``conversation``, in order.

    Name: the turn's ``name`` (``"d1-3"``); scope: ``scope`` or the conversation's; content:
    ``fmt.render(turn)`` (default :class:`TurnFormat`); meta: ``None``. Contents are a few hundred
    bytes at most (454 in the public file), well within the default 4096-byte entry bound.
    """
    fmt = fmt or TurnFormat()
    where = scope or conversation.scope
    return [Entry(scope=where, name=t.name, content=fmt.render(t)) for t in conversation.turns]
