"""LoCoMo and BEIR loaders: on the real files in ../shared/data and on small hand-made ones."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agentmemory import Entry, check_entry
from agentmemory.errors import DataNotFoundError
from agentmemory.eval import (
    BEIR_MAX_ENTRY_BYTES,
    TurnFormat,
    dia_id_name,
    doc_entries,
    doc_id_names,
    find_data,
    load_beir,
    load_locomo,
    normalise_evidence,
    turn_entries,
)


@pytest.fixture
def data_dir(shared_data: Callable[[str], Path]) -> Path:
    """../shared/data, or a skip (a failure under CI=true) when it is absent."""
    return shared_data("")


# --- small hand-made files -------------------------------------------------------------------


def _locomo_sample() -> list[dict[str, object]]:
    return [
        {
            "sample_id": "conv-1",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bob",
                "session_1_date_time": "1:00 pm on 1 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
                    {
                        "speaker": "Bob",
                        "dia_id": "D1:2",
                        "text": "Look at this!",
                        "blip_caption": "a photo of a red bike",
                    },
                    {"speaker": "Ann", "dia_id": "D1:3", "text": "Nice bike."},
                ],
                "session_2_date_time": "9:00 am on 3 May, 2023",
                "session_2": [
                    {"speaker": "Bob", "dia_id": "D2:1", "text": "I ran a marathon."},
                    {"speaker": "Ann", "dia_id": "D2:5", "text": "Wow."},
                ],
            },
            "qa": [
                {"question": "q0", "answer": "cat", "evidence": ["D1:1"], "category": 4},
                {"question": "q1", "answer": 2023, "evidence": ["D1:3 "], "category": 2},
                {"question": "q2", "answer": "x", "evidence": ["D1: 2", "(D2:1)"], "category": 1},
                {"question": "q3", "answer": "x", "evidence": ["D2:1; D1:1"], "category": 3},
                {"question": "q4", "answer": "x", "evidence": ["D2:05"], "category": 4},
                {"question": "q5", "answer": "x", "evidence": ["D", "D9:9"], "category": 1},
                {"question": "q6", "answer": "x", "evidence": [], "category": 3},
                {
                    "question": "q7",
                    "adversarial_answer": "a dog",
                    "evidence": ["D1:1", "D1:1"],
                    "category": 5,
                },
            ],
        }
    ]


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(_locomo_sample()), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("raw", "ids", "rewritten"),
    [
        ("D1:3", ["D1:3"], False),
        ("D1:3 ", ["D1:3"], True),
        ("D1: 3", ["D1:3"], True),
        ("(D1:3)", ["D1:3"], True),
        ("d1:3", ["D1:3"], True),
        ("D30:05", ["D30:5"], True),
        ("D10:1; D1:2", ["D10:1", "D1:2"], True),
        ("D9:1 D4:4 D4:6", ["D9:1", "D4:4", "D4:6"], True),
        ("D", [], True),
        ("", [], True),
    ],
)
def test_normalise_evidence(raw: str, ids: list[str], rewritten: bool) -> None:
    assert normalise_evidence(raw) == (ids, rewritten)


def test_dia_id_names_are_kebab_case() -> None:
    assert dia_id_name("D1:3") == "d1-3"
    assert dia_id_name("D12:104") == "d12-104"
    with pytest.raises(ValueError):
        dia_id_name(":")


def test_locomo_turns_questions_and_report(locomo_file: Path) -> None:
    ds = load_locomo(locomo_file)
    (conv,) = ds.conversations
    assert conv.scope == "conv-1"
    assert conv.speakers == ("Ann", "Bob")
    assert [t.name for t in conv.turns] == ["d1-1", "d1-2", "d1-3", "d2-1", "d2-5"]
    assert [t.session for t in conv.turns] == [1, 1, 1, 2, 2]
    by_q = {q.question: q for q in conv.questions}
    # q5 (only invalid ids) and q6 (no evidence) are skipped; the rest are kept.
    assert sorted(by_q) == ["q0", "q1", "q2", "q3", "q4", "q7"]
    assert by_q["q1"].relevant == ("d1-3",)
    assert by_q["q1"].answer == "2023"
    assert by_q["q2"].relevant == ("d1-2", "d2-1")
    assert by_q["q3"].evidence == ("D2:1", "D1:1")
    assert by_q["q4"].relevant == ("d2-5",)
    assert by_q["q7"].relevant == ("d1-1",)  # the repeat counts once
    assert by_q["q7"].answer == "a dog"
    assert by_q["q7"].category_name == "adversarial"
    assert by_q["q0"].id == "conv-1/q0"
    rep = ds.report
    assert rep.questions_read == 8
    assert rep.questions_kept == 6
    assert rep.skipped_no_evidence == ["conv-1/q5", "conv-1/q6"]
    # "D1:3 ", "D1: 2", "(D2:1)", "D2:1; D1:1", "D2:05"
    assert len(rep.normalised_ids) == 5
    assert rep.dropped_ids == ["conv-1/q5: 'D'", "conv-1/q5: 'D9:9' names no turn"]
    assert len(ds.sha256) == 64


def test_locomo_category_filter(locomo_file: Path) -> None:
    ds = load_locomo(locomo_file, categories=[1, 2, 3, 4])
    assert [q.question for q in ds.questions] == ["q0", "q1", "q2", "q3", "q4"]
    assert ds.report.skipped_category == 1


def test_turn_formats(locomo_file: Path) -> None:
    conv = load_locomo(locomo_file).conversations[0]
    bike = conv.turns[1]
    assert TurnFormat().render(bike) == (
        "[1:00 pm on 1 May, 2023] Bob: Look at this! [shares a photo of a red bike]"
    )
    plain = TurnFormat(speaker=False, date=False, caption=False)
    assert plain.render(bike) == "Look at this!"
    dated = TurnFormat(caption=False)
    assert dated.render(conv.turns[3]) == "[9:00 am on 3 May, 2023] Bob: I ran a marathon."
    entries = turn_entries(conv, fmt=plain)
    assert entries[0] == Entry(scope="conv-1", name="d1-1", content="I adopted a cat.")
    assert TurnFormat().key() != plain.key()


def test_locomo_rejects_other_json(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"not": "a list"}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"locomo10\.json schema"):
        load_locomo(bad)
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match="not JSON"):
        load_locomo(bad)


def _write_beir(folder: Path, corpus: list[dict[str, str]], qrels: str) -> None:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps(d) + "\n" for d in corpus), encoding="utf-8"
    )
    queries = [
        {"_id": "q1", "text": "cats"},
        {"_id": "q2", "text": "dogs"},
        {"_id": "q3", "text": "x"},
    ]
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8"
    )
    (folder / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")


def test_beir_loader_on_a_small_set(tmp_path: Path) -> None:
    corpus = [
        {"_id": "Doc_1", "title": "Cats", "text": "Cats purr."},
        {"_id": "doc-1", "title": "", "text": "A second doc whose id clashes."},
        {"_id": "7", "title": "Dogs", "text": "Dogs bark."},
    ]
    qrels = "query-id\tcorpus-id\tscore\nq1\tDoc_1\t1\nq1\tdoc-1\t1\nq2\t7\t0\nq3\tmissing\t1\n"
    _write_beir(tmp_path / "tiny", corpus, qrels)
    ds = load_beir(tmp_path / "tiny")
    assert ds.name == "tiny"
    assert [d.name for d in ds.documents] == ["doc-1-2", "doc-1", "7"]
    assert ds.documents[0].content == "Cats\n\nCats purr."
    assert ds.documents[1].content == "A second doc whose id clashes."
    # q2's only judgement is 0 (not relevant); q3's names a document the corpus lacks.
    assert [(q.query_id, q.relevant) for q in ds.queries] == [("q1", ("doc-1", "doc-1-2"))]
    assert ds.report.judgements_not_relevant == 1
    assert ds.report.judgements_unknown_doc == 1
    assert ds.report.renamed == ["Doc_1 -> doc-1-2"]  # the valid id doc-1 keeps its name
    entries = doc_entries(ds)
    assert entries[2] == Entry(scope="corpus", name="7", content="Dogs\n\nDogs bark.")


def test_doc_id_names_are_unique_and_short() -> None:
    names = doc_id_names(["A B", "a-b", "a_b", "", "x" * 100])
    assert names == {"A B": "a-b-2", "a-b": "a-b", "a_b": "a-b-3", "": "doc", "x" * 100: "x" * 56}


def test_doc_id_names_keep_valid_ids_and_skip_taken_suffixes() -> None:
    """Ids that are already valid, distinct entry names keep their spelling even when another
    id's kebab form (or its generated suffix) would take it first; an id given twice gets one
    name."""
    assert doc_id_names(["A", "a", "a-2"]) == {"A": "a-3", "a": "a", "a-2": "a-2"}
    assert doc_id_names(["a", "a", "a-2"]) == {"a": "a", "a-2": "a-2"}
    assert doc_id_names(["A_1", "a-1"]) == {"A_1": "a-1-2", "a-1": "a-1"}
    sixty = "b" * 60  # valid (under 64 bytes), longer than the 56 bytes a converted id keeps
    assert doc_id_names([sixty.upper(), sixty]) == {sixty.upper(): "b" * 56, sixty: sixty}


def test_beir_missing_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "corpus.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match=r"queries\.jsonl"):
        load_beir(tmp_path)


def test_find_data_names_the_places_and_the_way_out(tmp_path: Path) -> None:
    with pytest.raises(DataNotFoundError) as err:
        find_data("locomo", tmp_path / "nowhere")
    text = str(err.value)
    assert "--download" in text and "--data" in text
    assert "locomo10.json" in text  # the public URL
    assert str(tmp_path / "nowhere") in text
    with pytest.raises(DataNotFoundError, match=r"scifact\.zip"):
        find_data("scifact", tmp_path)
    with pytest.raises(ValueError, match="unknown data set"):
        find_data("msmarco", tmp_path)


def test_find_data_accepts_the_file_the_folder_or_its_parent(tmp_path: Path) -> None:
    (tmp_path / "locomo").mkdir()
    (tmp_path / "locomo" / "locomo10.json").write_text("[]", encoding="utf-8")
    want = tmp_path / "locomo" / "locomo10.json"
    assert find_data("locomo", tmp_path) == want
    assert find_data("locomo", tmp_path / "locomo") == want
    assert find_data("locomo", want) == want
    _write_beir(tmp_path / "scifact", [{"_id": "1", "title": "t", "text": "x"}], "")
    assert find_data("scifact", tmp_path) == tmp_path / "scifact"
    assert find_data("scifact", tmp_path / "scifact") == tmp_path / "scifact"


def test_find_data_without_a_path_uses_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTMEMORY_CACHE_DIR", str(tmp_path))
    # The package re-exports the function download(), which hides the module of that name.
    module = importlib.import_module("agentmemory.eval.download")
    monkeypatch.setattr(module, "repo_data_dir", lambda: None)
    with pytest.raises(DataNotFoundError, match=str(tmp_path / "data")):
        find_data("locomo")
    (tmp_path / "data" / "locomo").mkdir(parents=True)
    (tmp_path / "data" / "locomo" / "locomo10.json").write_text("[]", encoding="utf-8")
    assert find_data("locomo") == tmp_path / "data" / "locomo" / "locomo10.json"


# --- the real files ----------------------------------------------------------------------------


def test_locomo_dev_file(data_dir: Path) -> None:
    path = find_data("locomo", data_dir)
    assert path.name == "locomo-dev.json"
    ds = load_locomo(path)
    assert [c.sample_id for c in ds.conversations] == [
        "conv-30",
        "conv-41",
        "conv-42",
        "conv-44",
        "conv-48",
        "conv-49",
        "conv-50",
    ]
    assert sum(len(c.turns) for c in ds.conversations) == 4094
    rep = ds.report
    # 1,355 questions; two have no evidence at all (conv-50), none lose all of theirs.
    assert rep.questions_read == 1355
    assert rep.skipped_no_evidence == ["conv-50/q39", "conv-50/q42"]
    assert rep.questions_kept == 1353
    # Space-separated lists in conv-49 and a zero-padded turn in conv-50.
    assert len(rep.normalised_ids) == 4
    assert any("'D30:05' -> D30:5" in s for s in rep.normalised_ids)
    # "D" and a turn past the end of session 10 (it has 16 turns) in conv-42.
    assert rep.dropped_ids == ["conv-42/q58: 'D10:19' names no turn", "conv-42/q88: 'D'"]
    counts: dict[str, int] = {}
    for q in ds.questions:
        counts[q.category_name] = counts.get(q.category_name, 0) + 1
    assert counts == {
        "single-hop": 581,
        "multi-hop": 199,
        "temporal": 224,
        "open-domain": 54,
        "adversarial": 295,
    }
    for conv in ds.conversations:
        names = {t.name for t in conv.turns}
        assert all(set(q.relevant) <= names for q in conv.questions)
        for entry in turn_entries(conv):
            check_entry(entry, 4096)


def test_scifact(data_dir: Path) -> None:
    ds = load_beir(find_data("scifact", data_dir))
    assert len(ds.documents) == 5183
    assert len(ds.queries) == 300
    assert sum(len(q.relevant) for q in ds.queries) == 339
    assert ds.report.renamed == []  # SciFact's ids are digits: already kebab-case
    sizes = [len(d.content.encode()) for d in ds.documents]
    assert 4096 < max(sizes) <= BEIR_MAX_ENTRY_BYTES
    first = ds.documents[0]
    assert first.doc_id == "4983" and first.content.startswith("Microstructural development")
    for entry in doc_entries(ds)[:50]:
        check_entry(entry, BEIR_MAX_ENTRY_BYTES)
