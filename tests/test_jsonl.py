"""JSON Lines import and export (agentmemory.jsonl and `agentmemory import`/`export`/`list --json`),
on real sqlite stores: what export writes, import takes back exactly, whatever the content holds."""

from __future__ import annotations

import io
import json
import sqlite3
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmemory import AgentMemoryError, Entry, SqliteStore, StoreIOError
from agentmemory.cli import main
from agentmemory.errors import ImportIncompleteError, ImportLineError
from agentmemory.jsonl import export_entries, export_file, import_entries, read_entries

# Every character Python's str.splitlines() breaks on besides "\n": what a reader that splits on
# them would cut a JSON string at.
LINE_BREAKS = ["\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
assert all(len(("a" + b + "b").splitlines()) == 2 for b in LINE_BREAKS)

_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(blacklist_categories=("Cs",)),  # any Unicode scalar value
        st.sampled_from([*LINE_BREAKS, "\n", "\ufeff", '"', "\\", "<", "&"]),  # and "\r\n"
    ),
    min_size=1,
    max_size=60,
)
_META_VALUE = _TEXT.map(lambda v: v.replace("\r", " ").replace("\n", " ").strip()).filter(bool)
_ENTRY = st.builds(
    lambda scope, name, content, meta: Entry(scope=scope, name=name, content=content, meta=meta),
    st.sampled_from(["user", "project", "a-1"]),
    st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,2}", fullmatch=True),
    _TEXT,
    st.one_of(st.none(), st.dictionaries(st.sampled_from(["source", "description"]), _META_VALUE)),
)


def fields(entries: list[Entry]) -> list[tuple[str, str, str, dict[str, str] | None]]:
    return [(e.scope, e.name, e.content, e.meta) for e in entries]


def every_entry(store: SqliteStore) -> list[Entry]:
    return [e for scope in store.scopes() for e in store.list(scope)]


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ENTRY, min_size=1, max_size=6, unique_by=lambda e: (e.scope, e.name)))
def test_export_then_import_gives_back_every_entry_exactly(entries: list[Entry]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with SqliteStore(Path(tmp) / "a.sqlite3") as source:
            source.put_many(entries)
            want = every_entry(source)
            out = io.StringIO(newline="")
            assert export_entries(source, out) == len(entries)
        exported = out.getvalue().encode("utf-8")
        assert exported.count(b"\n") == len(entries)  # one line per entry
        lines = read_entries(io.BytesIO(exported))
        with SqliteStore(Path(tmp) / "b.sqlite3") as copy:
            report = import_entries(copy, lines)
            assert (report.imported, report.unchanged) == (len(entries), 0)
            assert fields(every_entry(copy)) == fields(want)
            again = io.StringIO(newline="")
            export_entries(copy, again)
    # the copy exports the same lines but for the times the store set
    strip = [
        {k: v for k, v in json.loads(x).items() if k != "updated"}
        for x in exported.split(b"\n")
        if x
    ]
    assert strip == [
        {k: v for k, v in json.loads(x).items() if k != "updated"}
        for x in again.getvalue().split("\n")
        if x
    ]


def test_lines_split_on_newline_only_with_a_byte_order_mark_and_crlf(tmp_path: Path) -> None:
    content = "one" + "".join(f"{b}x" for b in LINE_BREAKS)
    rows = [
        {"scope": "s", "name": "a", "content": content},
        {"scope": "s", "name": "b", "content": "two\u2028lines", "meta": {"k": "v\x85w"}},
    ]
    # ensure_ascii=False writes U+0085, U+2028 and the rest raw, as other programs do
    text = "\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\r\n"
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    lines = read_entries(src)
    assert [(p.number, p.entry.content, p.entry.meta) for p in lines] == [
        (1, content, None),
        (2, "two\u2028lines", {"k": "v\x85w"}),
    ]


def test_a_bad_line_names_the_source_and_the_line_and_reads_nothing(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"scope": "s", "name": "a", "content": "x"}\n\n{"scope": "s"}\n\xff\n')
    with pytest.raises(ImportLineError) as caught:
        read_entries(src)
    assert (caught.value.line, caught.value.source) == (4, str(src))  # not UTF-8 comes first
    src.write_bytes(b'{"scope": "s", "name": "a", "content": "x"}\n\n{"scope": "s"}\n[]\n')
    with pytest.raises(ImportLineError) as caught:
        read_entries(src)
    assert (caught.value.line, caught.value.others) == (3, 1)
    assert str(caught.value) == (
        f"agentmemory: {src} line 3: name is missing; it must be a string "
        "(1 more bad line); nothing was imported"
    )


class CappedStore(SqliteStore):
    """A real SqliteStore whose connections refuse to grow the file past ``MAX_PAGES`` pages
    (``PRAGMA max_page_count``): SQLite then fails a write with SQLITE_FULL, "database or disk is
    full", exactly as on a full disk."""

    MAX_PAGES = 0

    def _connect(self) -> sqlite3.Connection:
        conn = super()._connect()
        conn.execute(f"PRAGMA max_page_count = {self.MAX_PAGES}")
        return conn


def test_a_full_disk_mid_import_is_our_error_and_a_rerun_finishes(tmp_path: Path) -> None:
    rows = [
        {"scope": "s", "name": f"e{i}", "content": f"entry {i} " + "lorem ipsum " * 300}
        for i in range(40)
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    lines = read_entries(src)
    path = tmp_path / "journal.sqlite3"
    SqliteStore(path).close()
    pages = sqlite3.connect(path).execute("PRAGMA page_count").fetchone()[0]
    CappedStore.MAX_PAGES = pages + 40  # room for the first batch of 5, not for all 40
    with CappedStore(path) as capped, pytest.raises(ImportIncompleteError) as caught:
        import_entries(capped, lines, batch=5)
    err = caught.value
    assert isinstance(err, AgentMemoryError)
    assert isinstance(err.__cause__, StoreIOError) and err.__cause__.kind == "full"
    assert isinstance(err.__cause__.__cause__, sqlite3.OperationalError)
    assert "database or disk is full" in str(err) and "run the same import again" in str(err)
    assert err.done > 0 and err.line == err.done + 1
    with SqliteStore(path) as store:
        assert len(every_entry(store)) == err.done  # whole batches, nothing half-written
        report = import_entries(store, lines, batch=5)
        assert (report.imported, report.unchanged) == (40 - err.done, err.done)
        got = {(e.name, e.content) for e in every_entry(store)}
        assert got == {(str(r["name"]), str(r["content"])) for r in rows}


# --- the command line -------------------------------------------------------------------------


def cli(store: Path, *args: str, input: bytes | None = None) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, [*args, "--path", str(store)], input=input)
    return r.exit_code, r.stdout, r.stderr


@pytest.mark.slow
def test_export_and_list_json_output_round_trips_through_import(tmp_path: Path) -> None:
    store = tmp_path / "store"
    tricky = "every break:" + "".join(f"{b}." for b in LINE_BREAKS) + "\ufeff end"
    rows = [
        {"scope": "user", "name": "tricky", "content": tricky, "meta": {"source": "x\u2028y"}},
        {"scope": "user", "name": "plain", "content": "Short answers."},
        {"scope": "project", "name": "tz", "content": "Europe/London <&>"},
    ]
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    code, _, err = cli(store, "import", "-", "--embedder", "hashing", "--no-progress", input=body)
    assert code == 0, err
    code, exported, err = cli(store, "export")
    assert code == 0, err
    code, listed, _ = cli(store, "list", "--json")
    assert listed == exported
    assert len(exported.split("\n")) == 4  # three lines and the final newline

    out = tmp_path / "out.jsonl"
    code, _, err = cli(store, "export", "user", "--output", str(out))
    assert (code, err.strip()) == (0, f"exported 2 entries to {out}")

    copy = tmp_path / "copy"
    code, _, err = cli(copy, "import", "-", "--embedder", "hashing", input=exported.encode())
    assert code == 0, err
    code, again, _ = cli(copy, "export")

    def strip(text: str) -> list[dict[str, object]]:
        return [
            {k: v for k, v in json.loads(x).items() if k != "updated"}
            for x in text.split("\n")
            if x
        ]

    assert strip(again) == strip(exported)
    assert {(r["scope"], r["name"], r["content"]) for r in strip(again)} == {
        (r["scope"], r["name"], r["content"]) for r in rows
    }
    written = out.read_text(encoding="utf-8").split("\n")  # not splitlines(): U+0085 is raw
    assert [json.loads(x)["name"] for x in written if x] == [
        "plain",
        "tricky",
    ]


def test_export_of_a_folder_without_a_store_is_one_line(tmp_path: Path) -> None:
    code, out, err = cli(tmp_path / "none", "export")
    assert code == 1 and out == ""
    assert err.startswith("agentmemory: no store at ") and len(err.strip().splitlines()) == 1


_RUNS = iter(range(10**6))


@pytest.mark.slow
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(_ENTRY, min_size=1, max_size=4, unique_by=lambda e: e.name))
def test_cli_export_and_list_json_round_trip_any_content(
    tmp_path: Path, entries: list[Entry]
) -> None:
    scope = f"run-{next(_RUNS)}"  # a fresh scope per example in the same two stores
    rows = [
        {
            "scope": scope,
            "name": e.name,
            "content": e.content,
            **({"meta": e.meta} if e.meta else {}),
        }
        for e in entries
    ]
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    source, copy = tmp_path / "source", tmp_path / "copy"
    code, _, err = cli(source, "import", "-", "--embedder", "hashing", input=body)
    assert code == 0, err
    _, exported, _ = cli(source, "export", scope)
    _, listed, _ = cli(source, "list", scope, "--json")
    assert listed == exported
    code, _, err = cli(copy, "import", "-", "--embedder", "hashing", input=exported.encode())
    assert code == 0, err
    _, again, _ = cli(copy, "export", scope)

    def fields(text: str) -> list[tuple[object, ...]]:
        rows = [json.loads(x) for x in text.split("\n") if x]
        return [(r["scope"], r["name"], r["content"], r.get("meta")) for r in rows]

    want = sorted((scope, e.name, e.content, e.meta or None) for e in entries)
    assert fields(exported) == fields(again) == want


def test_export_file_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    with SqliteStore(tmp_path / "journal.sqlite3") as store:
        store.put(Entry("user", "a", "first"))
        store.put(Entry("user", "b", "second"))
        out = folder / "out.jsonl"
        out.write_text("an older, longer export\n" * 10)
        with pytest.raises(OSError):  # no such folder: nothing is made
            export_file(store, tmp_path / "missing" / "out.jsonl", ["user"])
        assert not (tmp_path / "missing").exists()
        assert export_file(store, out, ["user"]) == 2  # the older file replaced whole
    assert [json.loads(x)["name"] for x in out.read_text().splitlines()] == ["a", "b"]
    assert [p.name for p in folder.iterdir()] == ["out.jsonl"]  # no temporary file left
