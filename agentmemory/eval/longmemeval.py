"""Load LongMemEval questions (the public ``longmemeval_s`` / ``longmemeval_m`` JSON) for retrieval
evaluation.

LongMemEval (Wu et al., "LongMemEval: Benchmarking Chat Assistants on Long-Term Interactive
Memory", ICLR 2025; github.com/xiaowu0162/LongMemEval) gives every question its own chat history,
the haystack: sessions of user and assistant turns, the turns holding the evidence marked
``"has_answer": true``, and the evidence sessions listed in ``answer_session_ids``. The file is a
JSON list of question objects with the fields ``question_id``, ``question_type``, ``question``,
``answer``, ``question_date``, ``haystack_session_ids``, ``haystack_dates``, ``haystack_sessions``
(a list of sessions, each a list of ``{"role": "user"|"assistant", "content": str}`` turns) and
``answer_session_ids``.

The retrieval-only protocol here: each question is one store with one scope (the question id made
kebab-case), each turn of its haystack one entry, named after its session and its position from 1
(session ``answer_4be1b6b4_2``, third turn: ``"answer-4be1b6b4-2-3"``, as the paper's own turn ids
``<session id>_<turn>``), the question the query. Relevant at turn level: the turns marked
``has_answer``; at session level: the sessions of ``answer_session_ids``
(:func:`haystack_session_of` gives a turn's session from its name).

Questions whose id ends in ``_abs`` are abstention questions: the history does not hold the answer,
so there is nothing to retrieve; they are skipped and counted, as the paper's retrieval script
skips them. A question with no ``has_answer`` turn is skipped and counted too. Unlike that script,
which indexes user turns only (and so also skips questions whose evidence an assistant turn holds),
both roles' turns are entries here, as an agent's memory would hold them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..entries import Entry
from ..errors import DataFormatError
from ..rules import valid_name
from .beir import doc_id_names

__all__ = [
    "ABSTENTION_SUFFIX",
    "LONGMEMEVAL_MAX_ENTRY_BYTES",
    "QUESTION_TYPES",
    "LongMemEvalDataset",
    "LongMemEvalFormat",
    "LongMemEvalQuestion",
    "LongMemEvalReport",
    "LongMemEvalTurn",
    "cut_count",
    "haystack_session_of",
    "load_longmemeval",
    "longmemeval_entries",
]

QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "temporal-reasoning",
    "knowledge-update",
    "multi-session",
)
"""LongMemEval's question types in the order its README lists them (the categories of a run)."""

ABSTENTION_SUFFIX = "_abs"
"""The end of an abstention question's ``question_id``."""

LONGMEMEVAL_MAX_ENTRY_BYTES = 16 * 1024
"""Entry bound (UTF-8 bytes) of a LongMemEval evaluation store. A turn whose rendered text is
longer is cut to the bound at a character boundary (:func:`longmemeval_entries`); the model reads
far less of it than that anyway, and the run counts such turns (``params["cut_turns"]``)."""

_ROLES = ("user", "assistant")


def haystack_session_of(name: str) -> str:
    """The session of a turn's entry name: ``"answer-4be1b6b4-2-3"`` -> ``"answer-4be1b6b4-2"``
    (everything before the last hyphen, the turn's position being the last part)."""
    return name.rsplit("-", 1)[0]


@dataclass(frozen=True, slots=True)
class LongMemEvalFormat:
    """What text of a turn becomes the entry's content.

    Attributes:
        role: prefix the role, ``"user: I adopted a cat..."``.
        date: prefix the session's timestamp as the file writes it,
            ``"[2023/05/20 (Sat) 02:21] "`` (temporal questions ask "when").
    """

    role: bool = True
    date: bool = True

    def render(self, turn: LongMemEvalTurn) -> str:
        """The content of ``turn`` under this format (non-empty text)."""
        text = turn.content.strip()
        if self.role:
            text = f"{turn.role}: {text}"
        if self.date and turn.date:
            text = f"[{turn.date}] {text}"
        return text or f"({turn.name})"

    def key(self) -> str:
        """A short stable string of the options, for cache keys: ``"role=1,date=1"``."""
        return f"role={int(self.role)},date={int(self.date)}"


@dataclass(frozen=True, slots=True)
class LongMemEvalTurn:
    """One turn of a haystack session.

    Attributes:
        session_id: the session's id as in the file (``"answer_4be1b6b4_2"``).
        position: the turn's place in its session, from 1.
        name: the entry name, ``"<session name>-<position>"``.
        role: ``"user"`` or ``"assistant"``.
        content: what was said.
        date: the session's timestamp as written in ``haystack_dates``.
        has_answer: the turn holds evidence for the question.
    """

    session_id: str
    position: int
    name: str
    role: str
    content: str
    date: str
    has_answer: bool


@dataclass(frozen=True, slots=True)
class LongMemEvalQuestion:
    """One scored question and its haystack.

    Attributes:
        id: ``question_id`` as in the file.
        question_type: ``"single-session-user"``... (see :data:`QUESTION_TYPES`).
        question: the text, used as the query.
        answer: the gold answer as text (the file writes a few as numbers).
        date: ``question_date`` as written.
        scope: the kebab-case scope of its store (the id made kebab-case, unique in the file).
        turns: every haystack turn, sessions in file order, turns in session order.
        relevant: entry names of the ``has_answer`` turns, in that order.
        answer_sessions: ``answer_session_ids`` that name a haystack session, in file order.
        relevant_sessions: the session names (entry-name prefixes) of ``answer_sessions``.
    """

    id: str
    question_type: str
    question: str
    answer: str
    date: str
    scope: str
    turns: tuple[LongMemEvalTurn, ...]
    relevant: tuple[str, ...]
    answer_sessions: tuple[str, ...]
    relevant_sessions: tuple[str, ...]


@dataclass(slots=True)
class LongMemEvalReport:
    """What loading left out or found odd, with examples.

    Attributes:
        questions_read: questions in the file (of the ``questions`` slice).
        questions_kept: questions scored.
        skipped_abstention: ids of abstention questions (``_abs``), not scored.
        skipped_no_evidence: ids of other questions without a ``has_answer`` turn, not scored.
        unknown_answer_sessions: ``"<question id>: <session id>"`` for an ``answer_session_ids``
            id that names no session of the haystack (dropped).
        evidence_outside_answer_sessions: ``"<question id>: <session id>"`` for a session with
            ``has_answer`` turns that ``answer_session_ids`` does not list (its turns still count
            at turn level).
    """

    questions_read: int = 0
    questions_kept: int = 0
    skipped_abstention: list[str] = field(default_factory=list)
    skipped_no_evidence: list[str] = field(default_factory=list)
    unknown_answer_sessions: list[str] = field(default_factory=list)
    evidence_outside_answer_sessions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the counts plus the lists of examples."""
        return {
            "questions_read": self.questions_read,
            "questions_kept": self.questions_kept,
            "skipped_abstention": len(self.skipped_abstention),
            "skipped_no_evidence": len(self.skipped_no_evidence),
            "unknown_answer_sessions": len(self.unknown_answer_sessions),
            "evidence_outside_answer_sessions": len(self.evidence_outside_answer_sessions),
            "details": {
                "skipped_abstention": list(self.skipped_abstention),
                "skipped_no_evidence": list(self.skipped_no_evidence),
                "unknown_answer_sessions": list(self.unknown_answer_sessions),
                "evidence_outside_answer_sessions": list(self.evidence_outside_answer_sessions),
            },
        }


@dataclass(frozen=True, slots=True)
class LongMemEvalDataset:
    """The loaded file.

    Attributes:
        path: the file read.
        sha256: lowercase hex SHA-256 of its bytes (keys the store cache).
        questions: the scored questions, in file order.
        report: what loading skipped or found odd.
    """

    path: Path
    sha256: str
    questions: tuple[LongMemEvalQuestion, ...]
    report: LongMemEvalReport


class _Where:
    """Builds the error messages of one file: file, question index and id, field, expectation."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def error(self, index: int, qid: str | None, what: str, expected: str) -> DataFormatError:
        at = f"question {index}" + (f" ({qid!r})" if qid is not None else "")
        return DataFormatError(
            f"LongMemEval file {self.path}: {at}: {what}; expected {expected}",
            path=str(self.path),
        )


def _str_field(
    where: _Where, index: int, qid: str | None, raw: Mapping[str, Any], name: str
) -> str:
    if name not in raw:
        raise where.error(index, qid, f"field {name!r} is missing", "a string")
    value = raw[name]
    if name == "answer" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)  # the public file writes a few answers as numbers
    if not isinstance(value, str):
        raise where.error(
            index, qid, f"field {name!r} is {type(value).__name__} {value!r:.40}", "a string"
        )
    return value


def _str_list(where: _Where, index: int, qid: str, raw: Mapping[str, Any], name: str) -> list[str]:
    value = raw.get(name)
    if name not in raw or not isinstance(value, list):
        got = "missing" if name not in raw else f"{type(value).__name__}"
        raise where.error(index, qid, f"field {name!r} is {got}", "a list of strings")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise where.error(
                index,
                qid,
                f"field {name!r} item {i} is {type(item).__name__} {item!r:.40}",
                "a list of strings",
            )
    return list(value)


def _sessions(where: _Where, index: int, qid: str, raw: Mapping[str, Any]) -> list[Any]:
    value = raw.get("haystack_sessions")
    expected = "a list of sessions, each a list of {role, content} turns"
    if "haystack_sessions" not in raw or not isinstance(value, list):
        got = "missing" if "haystack_sessions" not in raw else type(value).__name__
        raise where.error(index, qid, f"field 'haystack_sessions' is {got}", expected)
    for s, session in enumerate(value):
        if not isinstance(session, list):
            raise where.error(
                index, qid, f"haystack_sessions[{s}] is {type(session).__name__}", expected
            )
    return value


def _turn(where: _Where, index: int, qid: str, at: str, raw: Any) -> tuple[str, str, bool]:
    """``(role, content, has_answer)`` of one turn, checked."""
    expected = 'a turn {"role": "user" or "assistant", "content": str, "has_answer": bool}'
    if not isinstance(raw, dict):
        raise where.error(index, qid, f"{at} is {type(raw).__name__}", expected)
    role = raw.get("role")
    if role not in _ROLES:
        raise where.error(index, qid, f"{at} field 'role' is {role!r}", expected)
    content = raw.get("content")
    if not isinstance(content, str):
        got = "missing" if "content" not in raw else type(content).__name__
        raise where.error(index, qid, f"{at} field 'content' is {got}", expected)
    has_answer = raw.get("has_answer", False)
    if not isinstance(has_answer, bool):
        raise where.error(index, qid, f"{at} field 'has_answer' is {has_answer!r}", expected)
    return str(role), content, has_answer


def _question(
    where: _Where, index: int, raw: Any, scope: str, report: LongMemEvalReport
) -> LongMemEvalQuestion | None:
    """One question object checked and built; ``None`` (counted in ``report``) when skipped."""
    if not isinstance(raw, dict):
        raise where.error(index, None, f"the item is {type(raw).__name__}", "a question object")
    qid = _str_field(where, index, None, raw, "question_id")
    fields = {n: _str_field(where, index, qid, raw, n) for n in ("question_type", "question")}
    answer = _str_field(where, index, qid, raw, "answer")
    date = _str_field(where, index, qid, raw, "question_date")
    session_ids = _str_list(where, index, qid, raw, "haystack_session_ids")
    dates = _str_list(where, index, qid, raw, "haystack_dates")
    sessions = _sessions(where, index, qid, raw)
    answer_ids = _str_list(where, index, qid, raw, "answer_session_ids")
    if not len(session_ids) == len(dates) == len(sessions):
        raise where.error(
            index,
            qid,
            f"haystack_session_ids has {len(session_ids)} items, haystack_dates "
            f"{len(dates)}, haystack_sessions {len(sessions)}",
            "one id and one date per session",
        )
    seen: set[str] = set()
    for sid in session_ids:
        if sid in seen:
            raise where.error(
                index, qid, f"haystack_session_ids names {sid!r} twice", "distinct session ids"
            )
        seen.add(sid)
    names = doc_id_names(session_ids)
    turns: list[LongMemEvalTurn] = []
    for s, (sid, when, session) in enumerate(zip(session_ids, dates, sessions, strict=True)):
        for t, raw_turn in enumerate(session):
            role, content, has_answer = _turn(
                where, index, qid, f"haystack_sessions[{s}][{t}]", raw_turn
            )
            name = f"{names[sid]}-{t + 1}"
            if not valid_name(name):
                raise where.error(
                    index,
                    qid,
                    f"session {sid!r} turn {t + 1} gives the entry name {name!r}, over 64 bytes",
                    "session ids short enough for a 64-byte entry name",
                )
            turns.append(LongMemEvalTurn(sid, t + 1, name, role, content, when, has_answer))
    report.questions_read += 1
    if qid.endswith(ABSTENTION_SUFFIX):
        report.skipped_abstention.append(qid)
        return None
    relevant = tuple(turn.name for turn in turns if turn.has_answer)
    if not relevant:
        report.skipped_no_evidence.append(qid)
        return None
    known = [a for a in dict.fromkeys(answer_ids) if a in seen]
    report.unknown_answer_sessions += [f"{qid}: {a}" for a in answer_ids if a not in seen]
    evidence_sessions = dict.fromkeys(turn.session_id for turn in turns if turn.has_answer)
    report.evidence_outside_answer_sessions += [
        f"{qid}: {sid}" for sid in evidence_sessions if sid not in known
    ]
    report.questions_kept += 1
    return LongMemEvalQuestion(
        id=qid,
        question_type=fields["question_type"],
        question=fields["question"],
        answer=answer,
        date=date,
        scope=scope,
        turns=tuple(turns),
        relevant=relevant,
        answer_sessions=tuple(known),
        relevant_sessions=tuple(names[a] for a in known),
    )


def load_longmemeval(path: str | Path, *, questions: int | None = None) -> LongMemEvalDataset:
    """Read a LongMemEval file (``longmemeval_s_cleaned.json``, ``longmemeval_m_cleaned.json``, or
    the older ``longmemeval_s.json`` / ``longmemeval_m.json``; the module docstring gives the
    format).

    ``questions`` reads only the first that many question objects (a slice for quick runs;
    abstention questions among them are counted and skipped). Returns the scored questions and a
    :class:`LongMemEvalReport`.

    Raises ``OSError`` when the file cannot be read, and
    :class:`~agentmemory.errors.DataFormatError` (a ``ValueError``) when it is not JSON in that
    format, naming the file, the question (index from 0, and id when it has one), the field and
    what was expected.
    """
    path = Path(path)
    raw_bytes = path.read_bytes()
    try:
        data = json.loads(raw_bytes)
    except json.JSONDecodeError as exc:
        raise DataFormatError(
            f"LongMemEval file {path} is not JSON: {exc}", path=str(path)
        ) from None
    if not isinstance(data, list):
        raise DataFormatError(
            f"LongMemEval file {path} holds a JSON {type(data).__name__}; expected a list of "
            "question objects (question_id, question_type, question, answer, question_date, "
            "haystack_session_ids, haystack_dates, haystack_sessions, answer_session_ids)",
            path=str(path),
        )
    if not data:
        raise DataFormatError(f"LongMemEval file {path} holds no questions", path=str(path))
    items: Sequence[Any] = data if questions is None else data[:questions]
    ids = [
        str(item.get("question_id")) if isinstance(item, dict) else f"item-{i}"
        for i, item in enumerate(items)
    ]
    scopes = doc_id_names(ids)
    where = _Where(path)
    report = LongMemEvalReport()
    kept: list[LongMemEvalQuestion] = []
    taken: dict[str, int] = {}
    for index, (raw, qid) in enumerate(zip(items, ids, strict=True)):
        if qid in taken and isinstance(raw, dict) and "question_id" in raw:
            raise where.error(
                index, qid, f"question_id repeats question {taken[qid]}", "distinct question ids"
            )
        taken.setdefault(qid, index)
        question = _question(where, index, raw, scopes[qid], report)
        if question is not None:
            kept.append(question)
    return LongMemEvalDataset(
        path=path,
        sha256=hashlib.sha256(raw_bytes).hexdigest(),
        questions=tuple(kept),
        report=report,
    )


def longmemeval_entries(
    question: LongMemEvalQuestion,
    *,
    fmt: LongMemEvalFormat | None = None,
    max_entry_bytes: int = LONGMEMEVAL_MAX_ENTRY_BYTES,
) -> list[Entry]:
    """One :class:`~agentmemory.Entry` per haystack turn of ``question``, in order.

    Name: the turn's ``name``; scope: the question's; content: ``fmt.render(turn)`` (default
    :class:`LongMemEvalFormat`), cut to ``max_entry_bytes`` UTF-8 bytes at a character boundary
    when longer (:func:`cut_count` counts those); meta: ``None``.
    """
    fmt = fmt or LongMemEvalFormat()
    return [
        Entry(scope=question.scope, name=t.name, content=_cut(fmt.render(t), max_entry_bytes))
        for t in question.turns
    ]


def cut_count(
    question: LongMemEvalQuestion,
    *,
    fmt: LongMemEvalFormat | None = None,
    max_entry_bytes: int = LONGMEMEVAL_MAX_ENTRY_BYTES,
) -> int:
    """How many of ``question``'s turns :func:`longmemeval_entries` cuts to ``max_entry_bytes``."""
    fmt = fmt or LongMemEvalFormat()
    return sum(1 for t in question.turns if len(fmt.render(t).encode("utf-8")) > max_entry_bytes)


def _cut(text: str, max_bytes: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", errors="ignore")
