"""The ``agentmemory`` command line: every subcommand through click's CliRunner on a real store
(ChromaStore on tmp_path, the hashing embedder), the console script as a real subprocess, and
one run with the real default embedder (the packaged model through onnxruntime)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest
from chroma_store_cases import Fault
from click.testing import CliRunner, Result
from conftest import need_shared_data

from agentmemory import ChromaStore, Entry, SqliteStore
from agentmemory.cli import main
from agentmemory.eval import evaluate_locomo
from agentmemory.wire import decode_change
from embedders import HashingEmbedder

SCRIPT = Path(sys.executable).with_name("agentmemory")


def locomo_file() -> Path:
    """../shared/data/locomo/locomo-dev.json, or a skip (a failure under CI=true)."""
    return need_shared_data("locomo/locomo-dev.json")


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


def run(
    args: Sequence[str], *, input: str | None = None, env: dict[str, str] | None = None
) -> Result:
    """Invoke the CLI in-process; stdout and stderr are kept apart."""
    return CliRunner().invoke(main, list(args), input=input, env=env, catch_exceptions=False)


def cli(store: Path, *args: str, input: str | None = None, hashing: bool = True) -> Result:
    """Run a subcommand on ``store`` (``--path``; ``--embedder hashing`` where it takes one)."""
    extra = ["--path", str(store)]
    if hashing and args[0] in {"save", "forget", "search", "import", "verify", "reindex"}:
        extra += ["--embedder", "hashing"]
    return run([*args, *extra], input=input)


def one_error_line(result: Result, *words: str) -> str:
    """The run failed with exit status 1 and printed one ``agentmemory:`` line naming ``words``."""
    assert result.exit_code == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("agentmemory: ")
    assert not lines[0].startswith("agentmemory: agentmemory")
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def journal_seqs(store: Path) -> list[int]:
    with SqliteStore(store / "journal.sqlite3") as journal:
        return [c.seq for c in journal.journal()]


# --- save, get, list, forget ----------------------------------------------------------------


@pytest.mark.slow
def test_save_get_list_round_trip(store_dir: Path) -> None:
    r = cli(store_dir, "save", "user/editor-prefs", "Uses vim.", "--description", "editor")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("created user/editor-prefs: 9 bytes, sha256:")
    r = cli(store_dir, "save", "project/build", "-", input="make test\n")
    assert r.exit_code == 0, r.stderr

    got = cli(store_dir, "get", "user/editor-prefs")
    assert got.exit_code == 0
    assert got.stdout.splitlines()[1:] == ["description: editor", "", "Uses vim."]
    as_json = json.loads(cli(store_dir, "get", "project/build", "--json").stdout)
    assert as_json["content"] == "make test\n"
    assert as_json["hash"].startswith("sha256:")

    listed = cli(store_dir, "list").stdout.splitlines()
    assert [line.split()[0] for line in listed] == ["project/build", "user/editor-prefs"]
    assert "editor" in listed[1]  # the description stands for the content
    only_user = cli(store_dir, "list", "user", "--json").stdout.splitlines()
    assert [json.loads(line)["name"] for line in only_user] == ["editor-prefs"]


def test_save_keeps_meta_unless_told(store_dir: Path) -> None:
    cli(store_dir, "save", "user/a", "one", "--meta", "source=chat", "--description", "first")
    cli(store_dir, "save", "user/a", "two")
    kept = json.loads(cli(store_dir, "get", "user/a", "--json").stdout)
    assert kept["content"] == "two"
    assert kept["meta"] == {"description": "first", "source": "chat"}
    cli(store_dir, "save", "user/a", "three", "--no-meta")
    assert "meta" not in json.loads(cli(store_dir, "get", "user/a", "--json").stdout)


@pytest.mark.slow
def test_save_if_hash_conflict_writes_nothing(store_dir: Path) -> None:
    first = json.loads(cli(store_dir, "save", "user/a", "one", "--json").stdout)
    stale = "sha256:" + "0" * 64
    r = cli(store_dir, "save", "user/a", "two", "--if-hash", stale)
    one_error_line(r, "user/a")
    r = cli(store_dir, "save", "user/a", "two", "--if-hash", "")  # '' means: must not exist
    one_error_line(r, "user/a")
    assert journal_seqs(store_dir) == [first["seq"]]
    ok = cli(store_dir, "save", "user/a", "two", "--if-hash", first["entry"]["hash"])
    assert ok.exit_code == 0
    assert cli(store_dir, "get", "user/a", "--json").stdout.count('"two"') == 1


def test_refused_entries_are_one_line_errors(store_dir: Path) -> None:
    cli(store_dir, "save", "user/a", "one")
    one_error_line(cli(store_dir, "save", "user/Bad_Name", "x"), "Bad_Name", "kebab-case")
    line = one_error_line(cli(store_dir, "save", "user/big", "x" * 5000), "5000", "4096")
    assert "holds" not in line  # no such entry yet
    # over an entry the store holds: its size, as the library's put says it
    one_error_line(cli(store_dir, "save", "user/a", "x" * 5000), "4096", "it holds 3 bytes now")
    one_error_line(cli(store_dir, "get", "user/nope"), "user/nope")
    assert journal_seqs(store_dir) == [1]


def test_key_must_be_scope_slash_name(store_dir: Path) -> None:
    r = cli(store_dir, "save", "no-slash", "x")
    assert r.exit_code == 2
    assert "SCOPE/NAME" in r.stderr
    assert not store_dir.exists()


def test_usage_errors_are_one_line_with_exit_status_2(store_dir: Path) -> None:
    cases = [
        (["get", "no-slash"], "'no-slash' is not SCOPE/NAME", "get --help')"),
        (["search"], "Missing argument 'QUERY...'", "search --help')"),
        (["render", "--scope", "user"], "No such option '--scope'", "render --help')"),
        (
            ["eval", "nope"],
            "'nope' is not one of 'locomo', 'longmemeval', 'scifact'",
            "eval --help')",
        ),
        (["--bogus"], "No such option '--bogus'", " --help')"),
    ]
    for args, *words in cases:  # CliRunner names the program "main", not "agentmemory"
        r = run(args)
        assert r.exit_code == 2, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        assert lines[0].startswith("agentmemory: ") and "Usage:" not in lines[0]
        for w in words:
            assert w in lines[0], lines[0]
    bare = run([])  # no command: click's help, as before
    assert "Usage:" in bare.output and "Commands:" in bare.output
    assert not store_dir.exists()


def test_reads_refuse_a_folder_without_a_store(store_dir: Path) -> None:
    for args in (["list"], ["get", "user/a"], ["journal"], ["render", "user"], ["verify"]):
        one_error_line(cli(store_dir, *args), "no store at", str(store_dir))
    assert not store_dir.exists()  # nothing was created by a read


@pytest.mark.slow
def test_forget(store_dir: Path) -> None:
    cli(store_dir, "save", "user/a", "apples")
    cli(store_dir, "save", "user/b", "bananas")
    r = cli(store_dir, "forget", "user/a")
    assert r.stdout.strip() == "forgot user/a (journal seq 3)"
    assert [line.split()[0] for line in cli(store_dir, "list").stdout.splitlines()] == ["user/b"]
    one_error_line(cli(store_dir, "forget", "user/a"), "user/a")
    hits = json.loads(cli(store_dir, "search", "apples", "--json").stdout)["hits"]
    assert all(h["name"] != "a" for h in hits)


def test_path_from_environment(tmp_path: Path) -> None:
    env = {"AGENTMEMORY_PATH": str(tmp_path / "env-store")}
    assert run(["save", "user/a", "x", "--embedder", "hashing"], env=env).exit_code == 0
    assert (tmp_path / "env-store" / "journal.sqlite3").is_file()
    assert run(["list"], env=env).stdout.startswith("user/a")


# --- search and render ----------------------------------------------------------------------


def fill(store_dir: Path) -> None:
    with ChromaStore.open(store_dir, embedder=HashingEmbedder()) as store:
        store.put_many(
            [
                Entry(scope="user", name="cats", content="The cat sleeps on the warm mat."),
                Entry(scope="user", name="dogs", content="Dogs bark at the mail carrier."),
                Entry(scope="project", name="build", content="Run make test before a commit."),
            ]
        )


def test_search_shows_a_tiny_score_as_tiny_not_zero(store_dir: Path) -> None:
    """In a two-entry scope a word in one entry has BM25 idf log(1.5 / 1.5) = 0, floored to 1e-6
    (recallers.IDF_FLOOR): the score is small but not zero. The line shows "<0.001", not a
    figure like 1.814e-06 that reads as a fault, nor 0.000, and one note says why; --json keeps
    the raw score. A store where the word is rarer shows its score as a plain figure."""
    with ChromaStore.open(store_dir, embedder=HashingEmbedder()) as store:
        store.put(Entry(scope="user", name="tz", content="Europe/London"))
        store.put(Entry(scope="user", name="editor", content="Neovim, dark theme"))
    out = cli(store_dir, "search", "london", "--mode", "bm25").stdout.splitlines()
    assert out[1] == " 1. user/tz  score <0.001  (bm25 #1 <0.001, vector -)"
    assert out[-1].startswith("note: BM25 <0.001: every matching word is in about half the entries")
    raw = json.loads(cli(store_dir, "search", "london", "--mode", "bm25", "--json").stdout)
    assert 0 < raw["hits"][0]["score"] < 1e-5
    # a hybrid search shows the BM25 leg as small too, but the fused score orders the hits and
    # is a plain figure: no note to explain what did not decide the order
    hybrid = cli(store_dir, "search", "london").stdout.splitlines()
    assert "bm25 #1 <0.001" in hybrid[1] and " score <0.001 " not in hybrid[1], hybrid[1]
    assert not any(line.startswith("note:") for line in hybrid), hybrid
    with ChromaStore.open(store_dir, embedder=HashingEmbedder()) as store:
        store.put(Entry(scope="user", name="shell", content="zsh with vi keys"))
    out = cli(store_dir, "search", "london", "--mode", "bm25").stdout.splitlines()
    assert re.fullmatch(r" 1\. user/tz  score (0\.\d{4})  \(bm25 #1 \1, vector -\)", out[1]), out[1]
    assert not any(line.startswith("note:") for line in out)


def test_search_shows_rank_score_and_legs(store_dir: Path) -> None:
    fill(store_dir)
    out = cli(store_dir, "search", "cat", "mat").stdout.splitlines()
    assert out[0] == "3 hits in project, user for 'cat mat' (hybrid)"
    assert out[1].startswith(" 1. user/cats  score ")
    assert "bm25 #1 " in out[1] and "vector #1 " in out[1]
    assert out[2].strip() == "The cat sleeps on the warm mat."

    found = json.loads(cli(store_dir, "search", "cat", "mat", "--json").stdout)
    assert found["mode"] == "hybrid" and found["scopes"] == ["project", "user"]
    top = found["hits"][0]
    assert (top["rank"], top["scope"], top["name"]) == (1, "user", "cats")
    assert top["legs"]["bm25"]["rank"] == 1 and top["legs"]["vector"]["rank"] == 1
    # the default fusion's score (docs/recall.md#fusion-methods), and the method that made it
    assert top["method"] == "z-score" and top["score"] > found["hits"][1]["score"] >= 0


@pytest.mark.slow
def test_search_modes_scopes_and_limit(store_dir: Path) -> None:
    fill(store_dir)
    bm25 = json.loads(cli(store_dir, "search", "make", "--mode", "bm25", "--json").stdout)
    assert [(h["name"], list(h["legs"])) for h in bm25["hits"]] == [("build", ["bm25"])]
    vector = json.loads(
        cli(store_dir, "search", "dogs", "--mode", "vector", "--scope", "user", "--json").stdout
    )
    assert {h["scope"] for h in vector["hits"]} == {"user"}
    assert all(list(h["legs"]) == ["vector"] for h in vector["hits"])
    limited = json.loads(cli(store_dir, "search", "the", "--limit", "1", "--json").stdout)
    assert len(limited["hits"]) == 1
    none = cli(store_dir, "search", "zebra", "--mode", "bm25")
    assert none.exit_code == 0 and none.stdout.startswith("no entries in project, user match")


def test_search_refuses_an_empty_query(store_dir: Path) -> None:
    fill(store_dir)
    one_error_line(cli(store_dir, "search", "   "), "empty")


def test_render_prints_the_block(store_dir: Path) -> None:
    fill(store_dir)
    block = cli(store_dir, "render", "user").stdout
    assert block.startswith("# Memory\n\n## user\n\n### cats (31 of 4096 bytes)\n")
    assert "Dogs bark at the mail carrier." in block
    assert "Run make test" not in block
    data = json.loads(cli(store_dir, "render", "user", "project", "--json").stdout)
    assert data["bytes"] == len(data["block"].encode())
    assert [e["name"] for e in data["manifest"]["entries"]] == ["cats", "dogs", "build"]
    tiny = json.loads(cli(store_dir, "render", "user", "--max-total-bytes", "200", "--json").stdout)
    assert tiny["bytes"] <= 200
    assert tiny["manifest"].get("omitted")


# --- journal and lost updates ---------------------------------------------------------------


@pytest.mark.slow
def test_journal_lists_every_write(store_dir: Path) -> None:
    cli(store_dir, "save", "user/a", "one", "--session", "s1")
    cli(store_dir, "save", "user/a", "two")
    cli(store_dir, "forget", "user/a")
    lines = cli(store_dir, "journal").stdout.splitlines()
    assert [line.split()[3] for line in lines] == ["create", "replace", "forget"]
    assert "session s1" in lines[0]
    records = [decode_change(x) for x in cli(store_dir, "journal", "--json").stdout.splitlines()]
    assert [(c.seq, c.entry.content, c.entry.deleted) for c in records] == [
        (1, "one", False),
        (2, "two", False),
        (3, "two", True),
    ]
    assert records[0].session == "s1"
    after = cli(store_dir, "journal", "--after", "1", "--limit", "1", "--json").stdout
    assert [decode_change(x).seq for x in after.splitlines()] == [2]


def test_lost_updates(store_dir: Path) -> None:
    cli(store_dir, "save", "user/a", "one")
    assert cli(store_dir, "lost-updates").stdout.strip() == "no lost updates after seq 0"
    with SqliteStore(store_dir / "journal.sqlite3") as journal:
        seen = journal.get("user", "a").hash  # a writer reads "one"...
        journal.put(Entry(scope="user", name="a", content="two"))  # ...another writes...
        journal.put(Entry(scope="user", name="a", content="three"), based_on=seen, session="w")
    r = cli(store_dir, "lost-updates")
    assert r.stdout.startswith("seq 3: user/a was written by session w on ")
    found = [json.loads(x) for x in cli(store_dir, "lost-updates", "--json").stdout.splitlines()]
    assert [(f["seq"], f["key"], f["prev"]) for f in found] == [(3, "user/a", seen)]


# --- verify and reindex ---------------------------------------------------------------------


@pytest.mark.slow
def test_verify_repair_and_exit_status(store_dir: Path) -> None:
    fill(store_dir)
    ok = cli(store_dir, "verify")
    assert (ok.exit_code, ok.stdout.strip().splitlines()) == (
        0,
        [
            "index ok: 3 entries indexed (3 vectors) for 3 live entries; self-search found 3 of 3 "
            "sampled",
            "lexical index ok",
        ],
    )
    with ChromaStore.open(store_dir, embedder=HashingEmbedder()) as store:
        store.client.get_collection(store.collection_name("user")).delete(ids=["user/dogs"])
    bad = cli(store_dir, "verify")
    assert bad.exit_code == 1
    assert "1 missing (user/dogs)" in bad.stdout
    assert "agentmemory verify --repair" in bad.stdout
    assert json.loads(cli(store_dir, "verify", "--json").stdout)["missing"] == ["user/dogs"]
    fixed = cli(store_dir, "verify", "--repair")
    assert fixed.exit_code == 0, fixed.stdout
    assert cli(store_dir, "verify").exit_code == 0


@pytest.mark.slow
def test_embedder_default_is_the_stores_own_and_reindex_switches(store_dir: Path) -> None:
    fill(store_dir)  # indexed with hashing (256 dimensions)
    own = run(["search", "cat", "--path", str(store_dir), "--json"])  # no --embedder
    assert own.exit_code == 0, own.stderr
    assert json.loads(own.stdout)["hits"][0]["name"] == "cats"
    other = run(["search", "cat", "--path", str(store_dir), "--embedder", "hashing:64"])
    line = one_error_line(other, "hashing:256", "hashing:64")
    assert "agentmemory reindex --embedder hashing:64" in line
    r = run(["reindex", "--path", str(store_dir), "--embedder", "hashing:64"])
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("reindexed 3 entries with hashing:64 in ")
    # the wait is counted before it starts, on stderr (stdout is the result alone)
    assert f"agentmemory: reindexing 3 live entries of {store_dir} (each embedded again)" in (
        r.stderr
    ), r.stderr
    after = run(["verify", "--path", str(store_dir), "--json"])
    assert json.loads(after.stdout)["ok"] is True
    one_error_line(run(["search", "cat", "--path", str(store_dir), "--embedder", "hashing"]))


@pytest.mark.slow
def test_reindex_without_embedder_keeps_the_stores_own(store_dir: Path, tmp_path: Path) -> None:
    fill(store_dir)  # indexed with hashing (256 dimensions)
    env = {"AGENTMEMORY_CACHE_DIR": str(tmp_path / "cache")}
    r = run(["reindex", "--path", str(store_dir)], env=env)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("reindexed 3 entries with hashing:256 in ")
    with ChromaStore.open(store_dir, embedder=HashingEmbedder()) as store:  # not switched
        assert store.verify().ok


def test_unknown_embedder_is_a_usage_error(store_dir: Path) -> None:
    r = run(["save", "user/a", "x", "--path", str(store_dir), "--embedder", "nope"])
    assert r.exit_code == 2
    assert "no embedder is registered as 'nope'" in r.stderr
    assert not store_dir.exists()


# --- import ---------------------------------------------------------------------------------


def write_lines(path: Path, rows: Sequence[object]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
        encoding="utf-8",
    )
    return path


@pytest.mark.slow
def test_import_then_import_again(tmp_path: Path, store_dir: Path) -> None:
    rows = [{"scope": "notes", "name": f"n{i}", "content": f"note number {i}"} for i in range(600)]
    rows[5]["meta"] = {"source": "file"}
    src = write_lines(tmp_path / "in.jsonl", [*rows[:300], "", *rows[300:]])
    r = cli(store_dir, "import", str(src), "--batch", "256")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("imported 600 entries (notes 600) in ")
    assert journal_seqs(store_dir) == list(range(1, 601))
    assert json.loads(cli(store_dir, "get", "notes/n5", "--json").stdout)["meta"] == {
        "source": "file"
    }
    again = json.loads(cli(store_dir, "import", str(src), "--json").stdout)
    assert (again["imported"], again["unchanged"]) == (0, 600)
    assert len(journal_seqs(store_dir)) == 600
    # 600 near-identical hashing vectors: HNSW misses some self-queries (reported, not an error)
    first = cli(store_dir, "verify").stdout.strip().splitlines()[0]
    assert first.startswith("index ok: 600 entries indexed (600 vectors) for 600 live entries; ")


@pytest.mark.slow
def test_import_reads_what_list_json_prints(tmp_path: Path, store_dir: Path) -> None:
    fill(store_dir)
    cli(store_dir, "save", "user/cats", "The cat sleeps.", "--meta", "source=test")
    exported = cli(store_dir, "list", "--json").stdout
    src = write_lines(tmp_path / "out.jsonl", exported.splitlines())
    copy = tmp_path / "copy"
    assert cli(copy, "import", str(src)).exit_code == 0

    def fields(text: str) -> list[tuple[str, str, str, object]]:
        rows = [json.loads(line) for line in text.splitlines()]
        return [(r["scope"], r["name"], r["content"], r.get("meta")) for r in rows]

    assert fields(cli(copy, "list", "--json").stdout) == fields(exported)
    assert len(fields(exported)) == 3


def test_import_from_stdin_with_default_scope(store_dir: Path) -> None:
    lines = '{"name": "a", "content": "one"}\n{"scope": "other", "name": "b", "content": "two"}\n'
    r = cli(store_dir, "import", "-", "--scope", "mine", input=lines)
    assert r.exit_code == 0, r.stderr
    assert [x.split()[0] for x in cli(store_dir, "list").stdout.splitlines()] == [
        "mine/a",
        "other/b",
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ("not json", ["line 3", "not JSON"]),
        ('["a", "list"]', ["line 3", "object"]),
        ('{"scope": "s", "name": "Bad", "content": "x"}', ["line 3", "kebab-case"]),
        ('{"scope": "s", "name": "c", "content": ""}', ["line 3", "no content"]),
        ('{"scope": "s", "name": "c", "content": 5}', ["line 3", "content"]),
        ('{"scope": "s", "name": "c", "contents": "x"}', ["line 3", "'contents'"]),
        ('{"name": "c", "content": "x"}', ["line 3", "--scope"]),
        ('{"scope": "s", "name": "a", "content": "again"}', ["line 3", "s/a", "line 1"]),
        (json.dumps({"scope": "s", "name": "c", "content": "x" * 5000}), ["line 3", "4096"]),
        ('{"scope": "s", "name": "c", "content": "x", "meta": {"k": 1}}', ["line 3", "meta"]),
    ],
)
def test_import_a_bad_line_imports_nothing(
    tmp_path: Path, store_dir: Path, bad: str, words: list[str]
) -> None:
    cli(store_dir, "save", "s/existing", "kept")
    good = [
        {"scope": "s", "name": "a", "content": "one"},
        {"scope": "s", "name": "b", "content": "two"},
    ]
    src = write_lines(
        tmp_path / "in.jsonl", [*good, bad, {"scope": "s", "name": "d", "content": "x"}]
    )
    line = one_error_line(cli(store_dir, "import", str(src)), *words)
    assert str(src) in line and line.endswith("nothing was imported")
    assert journal_seqs(store_dir) == [1]


def test_import_counts_further_bad_lines(tmp_path: Path, store_dir: Path) -> None:
    src = write_lines(tmp_path / "in.jsonl", ["{", "{", "{"])
    one_error_line(cli(store_dir, "import", str(src)), "line 1", "(2 more bad lines)")
    assert not store_dir.exists()


@pytest.mark.slow
def test_import_into_a_store_another_process_holds(tmp_path: Path, store_dir: Path) -> None:
    fill(store_dir)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from agentmemory import ChromaStore
                from embedders import HashingEmbedder
                with ChromaStore.open({str(store_dir)!r}, embedder=HashingEmbedder()):
                    print("held", flush=True)
                    sys.stdin.read()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        src = write_lines(tmp_path / "in.jsonl", [{"scope": "s", "name": "a", "content": "x"}])
        # the import lands in the journal (journal-only beside the holder) and says so
        r = cli(store_dir, "import", str(src))
        assert r.exit_code == 0, r.stderr
        assert "imported 1 entry" in r.stdout
        note = r.stderr.strip().splitlines()
        assert len(note) == 1 and note[0].startswith("agentmemory: note: "), r.stderr
        assert f"pid {holder.pid}" in note[0] and "holding it" in note[0]
        assert journal_seqs(store_dir) == [1, 2, 3, 4]
        # reads need only the journal, so they work beside the process that holds the index
        assert cli(store_dir, "list").exit_code == 0
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)


# --- a write whose vector update fails ------------------------------------------------------


def faulty_cli(store: Path, *args: str, input: str | None = None) -> Result:
    """Run a write subcommand on ``store`` (hashing embedder) with a ChromaStore whose index
    update fails after every journal commit: for the call, every ChromaStore the command opens
    writes Chroma through an index whose upserts and deletes raise (``ChromaStore.index_type``,
    the seam for a test's own index)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ChromaStore, "index_type", Fault(armed=True).store_type.index_type)
        return CliRunner().invoke(
            main,
            [*args, "--path", str(store), "--embedder", "hashing"],
            input=input,
            catch_exceptions=False,
        )


def index_warning(result: Result, where: str) -> None:
    """Exit 0 with one ``agentmemory: warning:`` line on stderr saying the write is journaled
    at ``where`` and how the index is repaired."""
    assert result.exit_code == 0, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("agentmemory: warning: the write is done and journaled"), line
    for words in (f"({where})", "RuntimeError: injected", "agentmemory verify --repair"):
        assert words in line, line


@pytest.mark.slow
def test_save_and_forget_whose_vector_update_fails_succeed_with_a_warning(
    store_dir: Path,
) -> None:
    saved = faulty_cli(store_dir, "save", "user/tz", "Europe/London", "--json")
    index_warning(saved, "seq 1")
    change = decode_change(saved.stdout.strip())
    assert (change.seq, change.entry.key, change.entry.content) == (1, "user/tz", "Europe/London")
    assert json.loads(cli(store_dir, "get", "user/tz", "--json").stdout)["content"] == (
        "Europe/London"
    )
    # the next open repairs the index, as the warning says
    hits = json.loads(
        cli(store_dir, "search", "Europe London", "--mode", "vector", "--json").stdout
    )
    assert [h["name"] for h in hits["hits"]] == ["tz"]
    forgot = faulty_cli(store_dir, "forget", "user/tz")
    index_warning(forgot, "seq 2")
    assert forgot.stdout.strip() == "forgot user/tz (journal seq 2)"
    assert journal_seqs(store_dir) == [1, 2]
    verified = cli(store_dir, "verify")
    assert (verified.exit_code, verified.stdout.strip().splitlines()) == (
        0,
        [
            "index ok: 0 entries indexed (0 vectors) for 0 live entries; self-search found 0 of 0 "
            "sampled",
            "lexical index ok",
        ],
    )


@pytest.mark.slow
def test_import_whose_vector_update_fails_imports_everything_with_a_warning(
    tmp_path: Path, store_dir: Path
) -> None:
    src = write_lines(
        tmp_path / "in.jsonl",
        [{"scope": "s", "name": f"e{i}", "content": f"entry {i}"} for i in range(5)],
    )
    r = faulty_cli(store_dir, "import", str(src), "--batch", "2", "--no-progress", "--json")
    index_warning(r, "seq 1 to 5")
    out = json.loads(r.stdout)
    assert (out["imported"], out["first_seq"], out["last_seq"]) == (5, 1, 5)
    assert out["index_pending"] == 5
    assert journal_seqs(store_dir) == [1, 2, 3, 4, 5]
    fixed = cli(store_dir, "verify")
    assert (fixed.exit_code, fixed.stdout.strip().splitlines()[0]) == (
        0,
        "index ok: 5 entries indexed (5 vectors) for 5 live entries; self-search found 5 of 5 "
        "sampled",
    )


# --- the console script as a subprocess -----------------------------------------------------


def script(
    *args: str, env: dict[str, str], input: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        env={**os.environ, **env},
        input=input,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_console_script_default_store_folder(tmp_path: Path) -> None:
    """Without --path or AGENTMEMORY_PATH the store is the user data folder's agentmemory/store
    (platformdirs honours XDG_DATA_HOME on Linux)."""
    assert SCRIPT.is_file(), f"no console script at {SCRIPT}; pip install -e . first"
    if sys.platform != "linux":
        pytest.skip("XDG_DATA_HOME places the user data folder on Linux only")
    env = {k: v for k, v in os.environ.items() if k != "AGENTMEMORY_PATH"}
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    saved = subprocess.run(
        [str(SCRIPT), "save", "user/a", "hello there", "--embedder", "hashing"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert saved.returncode == 0, saved.stderr
    assert (tmp_path / "data" / "agentmemory" / "store" / "journal.sqlite3").is_file()
    missing = subprocess.run(
        [str(SCRIPT), "get", "user/zzz"], env=env, capture_output=True, text=True, timeout=300
    )
    assert missing.returncode == 1
    assert missing.stderr.strip() == "agentmemory: no such entry: user/zzz"


@pytest.mark.slow
def test_console_script_with_the_default_embedder(tmp_path: Path) -> None:
    """The real default: the packaged all-MiniLM-L6-v2 through onnxruntime finds by meaning."""
    env = {"AGENTMEMORY_PATH": str(tmp_path / "store")}
    rows = [
        {"scope": "user", "name": "pet", "content": "My dog Rex is a golden retriever."},
        {"scope": "user", "name": "food", "content": "I am allergic to peanuts."},
        {"scope": "user", "name": "work", "content": "I write compilers in Rust at my job."},
    ]
    done = script(
        "import", "-", "--json", env=env, input="".join(json.dumps(r) + "\n" for r in rows)
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["imported"] == 3
    found = script(
        "search", "which", "puppy", "do", "I", "own", "--mode", "vector", "--json", env=env
    )
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert hits[0]["name"] == "pet"
    assert hits[0]["legs"]["vector"]["score"] > hits[1]["legs"]["vector"]["score"]
    verified = script("verify", "--json", env=env)
    assert json.loads(verified.stdout)["ok"] is True
    with SqliteStore(tmp_path / "store" / "journal.sqlite3") as journal:
        assert len(list(journal.journal())) == 3


# Runs the CLI in this interpreter, then says on stderr whether torch was ever imported.
CLI_THEN_TORCH = """
import json, sys
from agentmemory.cli import main
try:
    main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
print(json.dumps({"exit": code, "torch": "torch" in sys.modules}), file=sys.stderr)
"""


def torch_status(stderr: str) -> object:
    return json.loads(stderr.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_sentence_transformers_store_opens_with_onnx_in_search_and_mcp(tmp_path: Path) -> None:
    """A store indexed with sentence-transformers is served by the default, the same model
    through onnxruntime, without importing torch (once the export is cached): ``search`` and
    ``agentmemory mcp`` alike. Naming the ONNX embedder works too; a model-free one is refused."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from embedders import OnnxEmbedder, SentenceTransformerEmbedder

    store_dir, cache = tmp_path / "store", tmp_path / "cache"
    with ChromaStore.open(store_dir, embedder=SentenceTransformerEmbedder()) as store:
        store.put_many(
            [
                Entry("user", "pet", "My dog Rex is a golden retriever."),
                Entry("user", "food", "I am allergic to peanuts."),
                Entry("user", "work", "I write compilers in Rust at my job."),
            ]
        )
    OnnxEmbedder(cache_dir=cache).embed(["export once"])  # what a first run leaves in the cache
    env = {**os.environ, "AGENTMEMORY_CACHE_DIR": str(cache)}

    query = ["search", "which puppy do I own", "--mode", "vector", "--json"]
    found = subprocess.run(
        [sys.executable, "-c", CLI_THEN_TORCH, *query, "--path", str(store_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert torch_status(found.stderr) == {"exit": 0, "torch": False}, found.stderr
    assert json.loads(found.stdout)["hits"][0]["name"] == "pet"

    errlog = tmp_path / "server.log"
    texts: list[str] = []
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", CLI_THEN_TORCH, "mcp", "--path", str(store_dir), "--scope", "user"],
        env=env,
    )

    async def session() -> None:
        with errlog.open("w") as err:
            async with Client(stdio_client(params, errlog=err)) as client:  # type: ignore[arg-type]
                with anyio.fail_after(120):
                    result = await client.call_tool(
                        "memory_search", {"query": "which puppy do I own"}
                    )
                    texts.append(str(result.content[0].text))  # type: ignore[union-attr]

    anyio.run(session)
    assert texts[0].splitlines()[2].startswith("user/pet ("), texts[0]  # the best hit first
    assert torch_status(errlog.read_text()) == {"exit": 0, "torch": False}, errlog.read_text()

    named = run([*query, "--path", str(store_dir), "--embedder", "onnx:all-MiniLM-L6-v2"], env=env)
    assert named.exit_code == 0, named.stderr
    assert json.loads(named.stdout)["hits"][0]["name"] == "pet"
    line = one_error_line(
        run([*query, "--path", str(store_dir), "--embedder", "hashing"], env=env),
        "sentence-transformers:all-MiniLM-L6-v2",
        "hashing:256",
    )
    assert "agentmemory reindex --embedder hashing" in line


# --- eval and demo --------------------------------------------------------------------------


@pytest.mark.slow
def test_eval_locomo_slice(tmp_path: Path) -> None:
    data = locomo_file()
    out = tmp_path / "result.json"
    env = {"AGENTMEMORY_CACHE_DIR": str(tmp_path / "cache")}
    r = run(
        [
            "eval",
            "locomo",
            "--data",
            str(data),
            "--limit",
            "1",
            "--embedder",
            "hashing",
            "--json-out",
            str(out),
            "--no-progress",
        ],
        env=env,
    )
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("locomo: ")
    rows = ["bm25", "vector", "hybrid", "bm25@5", "vector@5", "hybrid@5"]
    assert [line.split()[0] for line in lines[4:10]] == rows  # at depth 10 and at limit 5
    assert "by category:" in r.stdout and "time: load" in r.stdout
    saved = json.loads(out.read_text())
    assert set(saved["summary"]) == set(rows)
    assert len({q["scope"] for q in saved["queries"]}) == 1
    # the figures other work reports, beside ours: session-level recall_any and recall_all
    assert "as other work reports it" in r.stdout and "session_any@5" in r.stdout
    comparable = saved["comparable"]["hybrid"]
    assert set(comparable) == {
        f"{m}@{k}" for m in ("recall", "session_any", "recall_all") for k in (5, 10)
    }
    queries = saved["queries"]

    def by_hand(q: dict[str, object], k: int) -> tuple[float, float]:
        top = list(q["rankings"]["hybrid"])[:k]  # type: ignore[index]
        relevant = set(q["relevant"])  # type: ignore[arg-type]
        sessions = {e.split("-")[0] for e in relevant}
        return float(any(t.split("-")[0] in sessions for t in top)), float(relevant <= set(top))

    for k in (5, 10):
        any_k = sum(by_hand(q, k)[0] for q in queries) / len(queries)
        all_k = sum(by_hand(q, k)[1] for q in queries) / len(queries)
        assert comparable[f"session_any@{k}"] == pytest.approx(any_k)
        assert comparable[f"recall_all@{k}"] == pytest.approx(all_k)
    assert comparable["recall_all@5"] <= comparable["recall@5"] <= comparable["session_any@5"]


@pytest.mark.slow
def test_eval_plot_draws_the_recall_curve_and_the_categories(tmp_path: Path) -> None:
    """--plot writes a PNG (ranked 20 deep, so the curve runs to k = 20) and says where."""
    figure = tmp_path / "figs" / "locomo.png"
    r = run(
        [
            "eval",
            "locomo",
            "--data",
            str(locomo_file()),
            "--limit",
            "1",
            "--embedder",
            "hashing",
            "--no-progress",
            "--json-out",
            str(tmp_path / "r.json"),
            "--plot",
            str(figure),
        ],
        env={"AGENTMEMORY_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert r.exit_code == 0, r.stderr
    assert f"figure written to {figure}" in r.stderr
    assert r.stdout.splitlines()[0].endswith("ranking depth 20")
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    with Image.open(figure) as image:
        assert image.size == (1280, 420)  # two panels: the curve and the categories


def test_eval_without_data_says_where_to_get_it(tmp_path: Path) -> None:
    r = run(["eval", "scifact", "--data", str(tmp_path / "nowhere")])
    one_error_line(r, "scifact", "--download", "https://")


def test_malformed_eval_data_is_one_line(tmp_path: Path) -> None:
    """A data file not in its public schema is one line naming the file, not a traceback."""
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    for command in (["eval", "locomo", "--no-progress"], ["demo"]):
        r = run([*command, "--data", str(bad), "--embedder", "hashing"])
        one_error_line(r, "bad.json", "is not JSON")
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    r = run(["eval", "locomo", "--no-progress", "--data", str(empty), "--embedder", "hashing"])
    one_error_line(r, "empty.json", "no conversations")
    no_id = tmp_path / "no-id.json"
    turn = {"speaker": "A", "text": "hello"}
    sample = {"sample_id": "c1", "conversation": {"session_1": [turn]}, "qa": []}
    no_id.write_text(json.dumps([sample]))
    r = run(["eval", "locomo", "--no-progress", "--data", str(no_id), "--embedder", "hashing"])
    one_error_line(r, "no-id.json", "turn 0 of session_1 has no dia_id")
    beir = tmp_path / "sf"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "title": "t", "text": "x"}\n')
    (beir / "queries.jsonl").write_text('{"_id": "q1", "text": "x"}\n')
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\n")
    r = run(["eval", "scifact", "--data", str(beir), "--no-progress", "--embedder", "hashing"])
    one_error_line(r, "test.tsv", "line 2")


@pytest.mark.slow
def test_demo_walks_through_memory_search(tmp_path: Path) -> None:
    data = locomo_file()
    keep = tmp_path / "demo-store"
    r = run(
        [
            "demo",
            "--data",
            str(data),
            "--questions",
            "3",
            "--embedder",
            "hashing",
            "--keep",
            str(keep),
        ]
    )
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert out.count("memory_search {") == 3
    blocks = out.split("\n[")[1:]
    recalls = []
    for block in blocks:
        # what the tool returned, as the model reads it, and the evidence line after it
        shown = [
            line.split("│ ", 1)[1].split(" (")[0].split("/")[1]
            for line in block.splitlines()
            if line.startswith("  │ conv-") and line.endswith(" bytes)")
        ]
        evidence = next(x for x in block.splitlines() if x.startswith("  evidence: "))
        names = [
            part.split()[0] for part in evidence[len("  evidence: ") :].split("  ->")[0].split(", ")
        ]
        got = sum(1 for n in names if n in shown[:5])
        assert f"Recall@5 = {got}/{len(names)} " in evidence
        recalls.append(got / len(names))
    # The summary is over every question of the conversation, not the three shown: BM25 alone
    # is what the evaluation runner scores for BM25 at limit 5 on the same conversation.
    evaluated = evaluate_locomo(
        data=data,
        conversations=1,
        methods=["bm25"],
        embedder="hashing",
        store_cache=tmp_path / "eval",
        progress=False,
    )
    assert f"over all {len(evaluated.queries)} questions of conv-30" in out
    assert len(evaluated.queries) > 3
    bm25 = next(x for x in out.splitlines() if x.startswith("  BM25 alone"))
    assert float(bm25.split()[-1]) == pytest.approx(
        evaluated.summary["bm25@5"]["recall@5"], abs=1e-3
    )
    overall = next(x for x in out.splitlines() if x.startswith("  memory_search (hybrid"))
    assert 0 < float(overall.split()[-1]) <= 1
    assert recalls and all(0 <= x <= 1 for x in recalls)
    assert (keep / "journal.sqlite3").is_file()
    listed = run(["list", "--path", str(keep)]).stdout.splitlines()
    assert len(listed) == 369 and listed[0].startswith("conv-30/d1-1 ")


def test_demo_errors(tmp_path: Path) -> None:
    one_error_line(run(["demo", "--data", str(tmp_path / "nowhere")]), "locomo", "--download")
    # --download fetches into a folder: a --data naming a file says so, fetching nothing
    named = tmp_path / "locomo.json"
    one_error_line(run(["demo", "--data", str(named), "--download"]), "names a file", str(named))
    assert not named.exists()
    data = locomo_file()
    line = one_error_line(
        run(["demo", "--data", str(data), "--conversation", "conv-999", "--embedder", "hashing"]),
        "conv-999",
    )
    assert "conv-30" in line


def test_demo_on_a_conversation_without_turns_says_so(tmp_path: Path) -> None:
    """A LoCoMo file whose conversation has no dialog turns (or that has no conversation) is a
    one-line error naming it, and leaves no store behind."""
    empty = tmp_path / "empty.json"
    sample = {"sample_id": "conv-empty", "conversation": {"speaker_a": "Ann", "speaker_b": "Bob"}}
    empty.write_text(json.dumps([{**sample, "qa": []}]))
    keep = tmp_path / "store"
    line = one_error_line(
        run(["demo", "--data", str(empty), "--embedder", "hashing", "--keep", str(keep)]),
        "conv-empty",
        "no dialog turns",
    )
    assert str(empty) in line
    assert not keep.exists()
    none = tmp_path / "none.json"
    none.write_text("[]")
    one_error_line(run(["demo", "--data", str(none), "--embedder", "hashing"]), "no conversations")


_NO_SERVERS = {"AGENTMEMORY_CHROMA_URL": None, "AGENTMEMORY_CHROMA": None, "AGENTMEMORY_DSN": None}


@pytest.mark.parametrize(
    ("args", "env", "shown"),
    [
        (["--chroma-url", "db:abc"], {}, "'db:abc': its port is not a number from 1 to 65535"),
        (["--chroma", "db"], {}, "'db': it has no port"),  # the older name of the option
        ([], {"AGENTMEMORY_CHROMA_URL": "ftp://db:1"}, "'ftp://db:1': its scheme is 'ftp'"),
        ([], {"AGENTMEMORY_CHROMA": "db:0"}, "'db:0': its port is not a number"),
    ],
)
def test_a_bad_chroma_server_address_is_one_usage_line_naming_it(
    store_dir: Path, args: list[str], env: dict[str, str], shown: str
) -> None:
    result = run(["list", "--path", str(store_dir), *args], env={**_NO_SERVERS, **env})
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("agentmemory: Invalid value for '--chroma-url' / '--chroma'")
    assert shown in lines[0] and lines[0].endswith("list --help')")
    assert not store_dir.exists()


def test_a_dsn_without_a_chroma_server_says_which_option_to_give(store_dir: Path) -> None:
    dsn = "host=127.0.0.1 port=1 dbname=memory user=agent connect_timeout=1"
    result = run(["search", "vim", "--dsn", dsn, "--path", str(store_dir)], env=_NO_SERVERS)
    one_error_line(result, "--chroma-url HOST:PORT", "$AGENTMEMORY_CHROMA_URL", "--mode bm25")
    assert not store_dir.exists()


@pytest.mark.slow
def test_the_first_onnx_export_says_what_and_why_once(tmp_path: Path) -> None:
    """A first run with an empty cache exports the packaged model (seconds of silence
    otherwise): one line on stderr says so, stdout stays the command's (--json parses); the next
    run loads the cached export and says nothing."""
    env = {**os.environ, "AGENTMEMORY_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    script = Path(sys.executable).with_name("agentmemory")
    store = str(tmp_path / "store")

    def agentmemory(*args: str) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(
            [str(script), *args, "--path", store],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        assert r.returncode == 0, r.stderr
        return r

    first = agentmemory("save", "user/pet", "My dog Rex is a golden retriever.", "--json")
    said = [line for line in first.stderr.splitlines() if "ONNX" in line]
    assert len(said) == 1 and said[0].startswith("agentmemory: exporting all-MiniLM-L6-v2 to ONNX")
    assert "once per model" in said[0], said
    assert json.loads(first.stdout)["entry"]["name"] == "pet"
    again = agentmemory("search", "which puppy do I own", "--json")
    assert "ONNX" not in again.stderr, again.stderr
    assert json.loads(again.stdout)["hits"][0]["name"] == "pet"
