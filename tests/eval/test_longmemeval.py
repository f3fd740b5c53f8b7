"""LongMemEval: the loader on a small file in the public format (tests/data/longmemeval_fixture.json),
its errors on malformed files, the session-level figure, and `agentmemory eval longmemeval` end to
end (ChromaStores on tmp_path, the hashing embedder)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agentmemory.cli import main
from agentmemory.errors import DataFormatError
from agentmemory.eval import (
    EvalResult,
    LongMemEvalFormat,
    QueryRun,
    find_data,
    haystack_session_of,
    load_longmemeval,
    longmemeval_entries,
)

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "longmemeval_fixture.json"


def _questions() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


def _write(tmp_path: Path, data: object, name: str = "lme.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_fixture_loads_with_turn_names_evidence_and_sessions() -> None:
    ds = load_longmemeval(FIXTURE)
    assert [q.id for q in ds.questions] == ["e47becba", "gpt4_2655b836", "8b9d4367"]
    assert ds.report.questions_read == 4
    assert ds.report.skipped_abstention == ["e47becba_abs"]
    assert ds.report.skipped_no_evidence == []
    first, multi, assistant = ds.questions
    assert first.scope == "e47becba" and first.question_type == "single-session-user"
    assert len(first.turns) == 12  # three sessions of four turns
    # a session id in mixed case and underscores is a kebab-case prefix; turns count from 1
    assert first.turns[0].name == "sharegpt-yywfjrx-0-1"
    assert first.relevant == ("answer-280352e9-1",)
    assert first.answer_sessions == ("answer_280352e9",)
    assert first.relevant_sessions == ("answer-280352e9",)
    assert multi.scope == "gpt4-2655b836"
    assert multi.answer == "5"  # the file writes this answer as a number
    assert multi.relevant == ("answer-5d8a99a2-1-1", "answer-5d8a99a2-2-1")
    assert multi.relevant_sessions == ("answer-5d8a99a2-1", "answer-5d8a99a2-2")
    # evidence in an assistant turn is kept and scored (the paper's script indexes user turns only)
    assert assistant.relevant == ("answer-sharegpt-qk3z1a-0-2",)
    assert assistant.turns[5].role == "assistant" and assistant.turns[5].has_answer
    for q in ds.questions:
        assert {haystack_session_of(n) for n in q.relevant} <= set(q.relevant_sessions)
    assert load_longmemeval(FIXTURE, questions=1).report.questions_read == 1


def test_entries_carry_date_and_role_and_are_cut_to_the_bound() -> None:
    q = load_longmemeval(FIXTURE).questions[0]
    entries = longmemeval_entries(q)
    assert [e.name for e in entries] == [t.name for t in q.turns]
    assert {e.scope for e in entries} == {"e47becba"}
    assert entries[4].content.startswith(
        "[2023/05/22 (Mon) 10:05] user: I graduated with a degree in Business Administration"
    )
    bare = longmemeval_entries(q, fmt=LongMemEvalFormat(role=False, date=False))
    assert bare[4].content.startswith("I graduated")
    cut = longmemeval_entries(q, max_entry_bytes=40)
    assert max(len(e.content.encode("utf-8")) for e in cut) == 40


def test_report_counts_sessions_answer_ids_do_not_match(tmp_path: Path) -> None:
    data = _questions()
    q = data[1]
    q["answer_session_ids"] = ["answer_5d8a99a2_1", "answer_gone"]  # drops _2, names a stranger
    ds = load_longmemeval(_write(tmp_path, data, "odd.json"))
    multi = ds.questions[1]
    assert multi.relevant_sessions == ("answer-5d8a99a2-1",)
    assert ds.report.unknown_answer_sessions == ["gpt4_2655b836: answer_gone"]
    assert ds.report.evidence_outside_answer_sessions == ["gpt4_2655b836: answer_5d8a99a2_2"]
    no_marks = _questions()
    for session in no_marks[0]["haystack_sessions"]:
        for turn in session:
            turn.pop("has_answer", None)
    report = load_longmemeval(_write(tmp_path, no_marks, "no-marks.json")).report
    assert report.skipped_no_evidence == ["e47becba"]
    assert report.to_dict()["skipped_abstention"] == 1


def _broken(change: Any) -> list[dict[str, Any]]:
    data = _questions()
    change(data)
    return data


def _drop(field: str, index: int = 1) -> Any:
    return lambda d: d[index].pop(field)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (_drop("haystack_dates"), ["question 1 ('gpt4_2655b836')", "'haystack_dates'", "list"]),
        (_drop("question_id", 2), ["question 2:", "'question_id' is missing", "a string"]),
        (
            lambda d: d[0].update(question=["not", "text"]),
            ["question 0 ('e47becba')", "field 'question' is list", "expected a string"],
        ),
        (
            lambda d: d[2]["haystack_sessions"][1][1].update(role="system"),
            ["question 2", "haystack_sessions[1][1] field 'role' is 'system'", '"user" or'],
        ),
        (
            lambda d: d[0]["haystack_sessions"][0][0].pop("content"),
            ["haystack_sessions[0][0] field 'content' is missing"],
        ),
        (
            lambda d: d[0]["haystack_sessions"][1][0].update(has_answer="yes"),
            ["field 'has_answer' is 'yes'"],
        ),
        (
            lambda d: d[1]["haystack_session_ids"].pop(),
            ["haystack_session_ids has 2 items, haystack_dates 3, haystack_sessions 3"],
        ),
        (
            lambda d: d[1].update(haystack_sessions="many"),
            ["field 'haystack_sessions' is str", "a list of sessions"],
        ),
        (
            lambda d: d[1]["answer_session_ids"].append(7),
            ["field 'answer_session_ids' item 2 is int 7", "a list of strings"],
        ),
        (
            lambda d: d[2].update(question_id="e47becba"),
            ["question 2 ('e47becba')", "repeats question 0"],
        ),
        (lambda d: d.__setitem__(1, "q"), ["question 1:", "the item is str", "a question object"]),
    ],
)
def test_malformed_files_name_the_question_and_the_field(
    tmp_path: Path, change: Any, words: list[str]
) -> None:
    path = _write(tmp_path, _broken(change))
    with pytest.raises(DataFormatError) as info:
        load_longmemeval(path)
    message = str(info.value)
    assert message.startswith(f"LongMemEval file {path}: ")
    for w in words:
        assert w in message, message
    assert info.value.path == str(path)


def test_files_that_are_not_question_lists(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad\.json is not JSON"):
        load_longmemeval(bad)
    with pytest.raises(DataFormatError, match="holds a JSON dict; expected a list of question"):
        load_longmemeval(_write(tmp_path, {"question_id": "x"}))
    with pytest.raises(DataFormatError, match="holds no questions"):
        load_longmemeval(_write(tmp_path, []))


def test_find_data_takes_the_file_or_a_folder_holding_the_s_file(tmp_path: Path) -> None:
    folder = tmp_path / "longmemeval"
    folder.mkdir()
    m = folder / "longmemeval_m_cleaned.json"
    m.write_text("[]")
    assert find_data("longmemeval", tmp_path) == m
    s = folder / "longmemeval_s_cleaned.json"
    s.write_text("[]")
    assert find_data("longmemeval", tmp_path) == s  # S before M
    assert find_data("longmemeval", FIXTURE) == FIXTURE


def test_session_any_counts_the_answer_sessions_not_the_evidence_turns_sessions() -> None:
    # the evidence turn is in session a, but answer_session_ids names b: a ranking holding a
    # turn of b (and not the evidence turn) is a session-level hit and a turn-level miss
    run = QueryRun(
        query_id="q",
        text="q",
        group="multi-session",
        scope="q",
        relevant=("a-2",),
        rankings={"bm25": ("b-1", "c-1")},
        scores={"bm25": {}},
        sessions=("b",),
    )
    result = EvalResult("longmemeval", "", "", "e", ("bm25",), (5,), 10, queries=[run])
    figures = result.comparable()["bm25"]
    assert figures["session_any@5"] == 1.0
    assert figures["recall@5"] == 0.0 and figures["recall_all@5"] == 0.0
    # the field survives the JSON round trip, so the figure is the same read back
    back = EvalResult.from_dict(json.loads(result.to_json()))
    assert back.queries[0].sessions == ("b",)
    assert back.comparable() == result.comparable()
    locomo_style = dataclasses.replace(run, sessions=())
    assert "sessions" not in locomo_style.to_dict()  # LoCoMo's JSON is as before


@pytest.mark.slow
def test_cli_eval_longmemeval_on_the_fixture(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    r = CliRunner().invoke(
        main,
        [
            "eval",
            "longmemeval",
            "--data",
            str(FIXTURE),
            "--embedder",
            "hashing",
            "--json-out",
            str(out),
            "--no-progress",
        ],
        env={"AGENTMEMORY_CACHE_DIR": str(tmp_path / "cache")},
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("longmemeval: 3 queries, 3 store(s), embedder hashing")
    assert lines[1].startswith("skipped: 1 abstention question(s)")
    assert "as other work reports it" in r.stdout
    header = next(line for line in lines if line.startswith("method") and "session_any@5" in line)
    assert header.split() == [
        "method",
        *(f"{m}@{k}" for k in (5, 10) for m in ("recall", "session_any", "recall_all")),
    ]
    assert "single-session-assistant (1)" in r.stdout and "multi-session (1)" in r.stdout
    saved = json.loads(out.read_text())
    assert saved["dataset"] == "longmemeval"
    assert saved["load_report"]["skipped_abstention"] == 1
    assert [s["entries"] for s in saved["stores"]] == [12, 12, 8]  # every turn of each haystack
    assert saved["group_sizes"] == {
        "single-session-user": 1,
        "single-session-assistant": 1,
        "multi-session": 1,
    }
    queries = {q["query_id"]: q for q in saved["queries"]}
    assert "e47becba_abs" not in queries
    # BM25 puts the one turn sharing "degree" and "graduate(d)" with the question first
    assert queries["e47becba"]["rankings"]["bm25"][0] == "answer-280352e9-1"
    # the comparable figures, recomputed by hand from the written rankings and answer sessions
    for method in ("bm25", "vector", "hybrid"):
        for k in (5, 10):
            any_k = all_k = 0.0
            for q in queries.values():
                top = q["rankings"][method][:k]
                any_k += any(t.rsplit("-", 1)[0] in q["sessions"] for t in top)
                all_k += set(q["relevant"]) <= set(top)
            figures = saved["comparable"][method]
            assert figures[f"session_any@{k}"] == pytest.approx(any_k / 3)
            assert figures[f"recall_all@{k}"] == pytest.approx(all_k / 3)
    # a second run reads the cached stores
    again = CliRunner().invoke(
        main,
        ["eval", "longmemeval", "--data", str(FIXTURE), "--embedder", "hashing", "--no-progress"],
        env={"AGENTMEMORY_CACHE_DIR": str(tmp_path / "cache")},
        catch_exceptions=False,
    )
    assert again.exit_code == 0 and "(cached)" in again.stdout


def test_cli_malformed_longmemeval_is_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, _broken(_drop("answer_session_ids", 0)))
    r = CliRunner().invoke(
        main,
        ["eval", "longmemeval", "--data", str(path), "--no-progress", "--embedder", "hashing"],
        env={"AGENTMEMORY_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("agentmemory: LongMemEval file ")
    assert "question 0 ('e47becba')" in lines[0] and "'answer_session_ids' is missing" in lines[0]
