"""The command line on a Markdown folder: --format markdown (or found by journal.jsonl), a person's
edit found by search after reconcile, export --format markdown DIR and import DIR, exact."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from agentmemory.cli import main


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


HASHING = ("--embedder", "hashing")


def ok(*args: str) -> Result:
    result = run(*args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def listed(path: Path) -> list[dict[str, object]]:
    out = ok("list", "--json", "--path", str(path)).stdout
    return [
        {k: v for k, v in json.loads(line).items() if k in ("scope", "name", "content", "meta")}
        for line in out.splitlines()
    ]


def one_error_line(result: Result, words: Sequence[str]) -> None:
    assert result.exit_code == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentmemory: "), result.stderr
    for w in words:
        assert w in lines[0], lines[0]


@pytest.mark.slow
def test_a_markdown_folder_through_the_command_line(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    ok("save", "user/editor", "Uses Neovim.\n", "--description", "Editor", "--format",
       "markdown", "--path", str(folder), *HASHING)  # fmt: skip
    assert (folder / "journal.jsonl").is_file()
    assert (folder / "user" / "editor.md").read_text().endswith("---\nUses Neovim.\n")
    # Found by its journal.jsonl from now on: no --format needed.
    ok("save", "project/build", "Run make check.", "--path", str(folder), *HASHING)
    assert not (folder / "journal.sqlite3").exists()
    assert ok("get", "user/editor", "--path", str(folder)).stdout.count("Uses Neovim.") == 1
    assert [e["name"] for e in listed(folder)] == ["build", "editor"]
    # A person edits the file in an editor; reconcile journals it; search finds it.
    f = folder / "user" / "editor.md"
    f.write_text(f.read_text().replace("Uses Neovim.", "Switched to Helix last week."))
    out = ok("reconcile", "--path", str(folder)).stdout
    assert "user/editor" in out and "reconciled" in out and "reconciled 1 change" in out
    journal = [
        json.loads(x)
        for x in ok("journal", "--json", "--path", str(folder)).stdout.split("\n")
        if x
    ]
    assert journal[-1]["source"] == "reconciled" and "session" not in journal[-1]
    found = json.loads(ok("search", "helix", "--json", "--path", str(folder), *HASHING).stdout)
    assert found["mode"] == "hybrid"
    assert (found["hits"][0]["scope"], found["hits"][0]["name"]) == ("user", "editor")
    assert set(found["hits"][0]["legs"]) == {"bm25", "vector"}
    assert (folder / ".vectors" / "cursor.json").is_file()
    assert ok("reconcile", "--path", str(folder)).stdout.strip() == "reconciled 0 changes"
    ok("forget", "project/build", "--path", str(folder), *HASHING)
    assert not (folder / "project" / "build.md").exists()


@pytest.mark.slow
def test_export_markdown_and_import_it_back_exactly(tmp_path: Path) -> None:
    src = tmp_path / "src"
    tricky = "  ---\nname: not-meta\n---\nsüß ✓ 日本"
    ok("save", "user/odd", tricky, "--path", str(src), "--embedder", "hashing")
    ok("save", "user/style", "Short answers.\n", "--meta", "type=feedback", "--description",
       "How to answer", "--path", str(src), "--embedder", "hashing")  # fmt: skip
    ok("save", "project/build", "make check", "--path", str(src), "--embedder", "hashing")
    result = ok("export", "--format", "markdown", str(tmp_path / "folder"), "--path", str(src))
    assert "exported 3 entries" in result.stderr
    assert (tmp_path / "folder" / "user" / "odd.md").is_file()
    assert listed(tmp_path / "folder") == listed(src)
    dst = tmp_path / "dst"
    out = ok("import", str(tmp_path / "folder"), "--path", str(dst), "--embedder", "hashing")
    assert "imported 3 entries" in out.stdout
    assert listed(dst) == listed(src)
    again = ok("export", "--format", "markdown", str(tmp_path / "two"), "user", "--path", str(src))
    assert "exported 2 entries" in again.stderr
    one_error_line(
        run("export", "--format", "markdown", str(tmp_path / "folder"), "--path", str(src)),
        ["not an empty folder"],
    )


@pytest.mark.slow
def test_commands_that_need_the_other_kind_of_store_say_so(tmp_path: Path) -> None:
    sqlite = tmp_path / "sqlite"
    ok("save", "user/a", "x", "--path", str(sqlite), "--embedder", "hashing")
    one_error_line(run("reconcile", "--path", str(sqlite)), ["not a Markdown folder"])
    one_error_line(run("get", "user/a", "--path", str(tmp_path / "none")), ["no store"])


def indexed_with(folder: Path) -> str:
    """The embedder fingerprint a Markdown folder's vector index records."""
    cursor = json.loads((folder / ".vectors" / "cursor.json").read_text())
    return str(cursor["embedder"]).split(";", 1)[0]


@pytest.mark.slow
def test_reindex_rebuilds_a_markdown_folders_vectors(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    ok("save", "user/editor", "Uses Neovim.", "--format", "markdown", "--path", str(folder),
       "--embedder", "hashing:64")  # fmt: skip
    ok(
        "save",
        "project/build",
        "Run make check.",
        "--path",
        str(folder),
        "--embedder",
        "hashing:64",
    )
    # The mismatch message points at reindex; reindex does it and says so (it used to switch
    # the index and then exit 1 saying a Markdown folder has no index).
    one_error_line(
        run("search", "neovim", "--path", str(folder), "--embedder", "hashing:32"),
        ["agentmemory reindex --embedder hashing:32"],
    )
    out = ok("reindex", "--path", str(folder), "--embedder", "hashing:32").stdout
    assert out.startswith("reindexed 2 entries with hashing:32 in ")
    assert indexed_with(folder) == "hashing:32"
    found = json.loads(
        ok("search", "neovim", "--json", "--path", str(folder), "--embedder", "hashing:32").stdout
    )
    assert (found["hits"][0]["scope"], found["hits"][0]["name"]) == ("user", "editor")
    # Without --embedder the folder keeps its own embedder (not the default model).
    again = ok("reindex", "--json", "--path", str(folder))
    assert "reindexing 2 live entries of " in again.stderr, again.stderr
    done = json.loads(again.stdout)
    assert (done["indexed"], done["embedder"]) == (2, "hashing:32")
    assert indexed_with(folder) == "hashing:32"


def test_verify_on_a_sound_markdown_folder_checks_its_index_and_files(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    ok("save", "user/a", "x", "--format", "markdown", "--path", str(folder), *HASHING)
    found = ok("verify", "--path", str(folder), *HASHING)
    assert found.stdout.splitlines() == [
        "vector index ok: 1 entry",
        "every entry file is journaled or journalable",
    ]


@pytest.mark.slow
def test_importing_the_same_markdown_folder_twice_journals_nothing_new(tmp_path: Path) -> None:
    src = tmp_path / "src"
    ok("save", "user/editor", "Uses Neovim.", "--description", "Editor", "--path", str(src),
       *HASHING)  # fmt: skip
    ok("save", "project/build", "make check", "--path", str(src), *HASHING)
    ok("export", "--format", "markdown", str(tmp_path / "folder"), "--path", str(src))
    dst = tmp_path / "dst"
    assert "imported 2 entries" in ok("import", str(tmp_path / "folder"), "--path", str(dst),
                                      *HASHING).stdout  # fmt: skip
    again = ok("import", str(tmp_path / "folder"), "--path", str(dst), *HASHING)
    assert "imported 0 entries" in again.stdout
    journal = ok("journal", "--json", "--path", str(dst)).stdout.splitlines()
    assert len(journal) == 2
    # A changed file is imported again, and only it.
    edited = tmp_path / "folder" / "project" / "build.md"
    edited.write_text(edited.read_text().replace("make check", "make test"))
    third = ok("import", str(tmp_path / "folder"), "--path", str(dst), *HASHING)
    assert "imported 1 entry" in third.stdout
    assert ok("get", "project/build", "--path", str(dst)).stdout.rstrip().endswith("make test")


def test_a_markdown_folder_is_not_made_inside_a_sqlite_store(tmp_path: Path) -> None:
    from agentmemory import AgentMemoryError, FileStore

    sqlite = tmp_path / "memory"
    ok("save", "user/a", "kept in sqlite", "--path", str(sqlite), *HASHING)
    before = sorted(p.name for p in sqlite.iterdir())
    # Before, this made journal.jsonl beside journal.sqlite3, and every later command took the
    # folder for a Markdown folder, hiding the sqlite store's entries.
    with pytest.raises(AgentMemoryError, match="holds a sqlite store"):
        FileStore(sqlite)
    one_error_line(
        run("save", "user/b", "y", "--format", "markdown", "--path", str(sqlite), *HASHING),
        ["holds a sqlite store", "give a new folder"],
    )
    assert sorted(p.name for p in sqlite.iterdir()) == before
    assert [e["content"] for e in listed(sqlite)] == ["kept in sqlite"]


@pytest.mark.slow
def test_a_hand_edit_is_found_by_search_after_a_save_to_another_entry(tmp_path: Path) -> None:
    """A person edits one entry in an editor; 'agentmemory save' of a different entry journals
    the edit first, so 'agentmemory search' (hybrid) finds the new text in both legs."""
    folder = tmp_path / "memory"
    ok("save", "user/editor", "Uses Neovim with a dark theme.", "--format", "markdown",
       "--path", str(folder), *HASHING)  # fmt: skip
    ok("save", "user/language", "Prefers Go over Python for tools.", "--path", str(folder),
       *HASHING)  # fmt: skip
    f = folder / "user" / "editor.md"
    f.write_text(f.read_text().replace("Uses Neovim with a dark theme.", "Switched to Helix."))
    ok("save", "project/other", "Deploys on Fridays.", "--path", str(folder), *HASHING)
    journal = [
        json.loads(x) for x in ok("journal", "--json", "--path", str(folder)).stdout.splitlines()
    ]
    assert [(r["entry"]["name"], r.get("source", "")) for r in journal[-2:]] == [
        ("editor", "reconciled"),
        ("other", ""),
    ]
    found = json.loads(
        ok("search", "switched helix", "--json", "--path", str(folder), *HASHING).stdout
    )
    assert found["mode"] == "hybrid"
    top = found["hits"][0]
    assert (top["scope"], top["name"]) == ("user", "editor")
    assert set(top["legs"]) == {"bm25", "vector"}, top
    args = ["search", "switched helix", "--mode", "vector", "--json", "--path", str(folder)]
    vector = json.loads(ok(*args, *HASHING).stdout)
    assert vector["hits"][0]["name"] == "editor"


@pytest.mark.slow  # opens Chroma
def test_a_damaged_vectors_index_takes_saves_and_searches_and_verify_repair_cures_it(
    tmp_path: Path,
) -> None:
    # issue 22 case 5: half of .vectors/chroma/chroma.sqlite3 cut off
    folder = tmp_path / "notes"
    ok("save", "--path", str(folder), "--format", "markdown", *HASHING, "user/a", "Prefers Vim.")
    db = folder / ".vectors" / "chroma" / "chroma.sqlite3"
    with db.open("r+b") as f:
        f.truncate(db.stat().st_size // 2)
    saved = run("save", "--path", str(folder), *HASHING, "user/b", "Works in tmux sessions.")
    assert saved.exit_code == 0, saved.stderr
    assert [e["name"] for e in listed(folder)] == ["a", "b"]  # journaled
    found = run("search", "--path", str(folder), *HASHING, "tmux sessions")
    assert found.exit_code == 0, found.stderr
    assert "user/b" in found.stdout
    assert "vector leg was unavailable" in found.stderr
    assert f"agentmemory verify --repair --path {folder}'" in found.stderr
    assert (
        ".vectors'" not in found.stderr and "--path " + str(folder / ".vectors") not in found.stderr
    )
    checked = run("verify", "--path", str(folder), *HASHING)
    assert checked.exit_code == 1
    assert "vector index unavailable: the vector index is damaged" in checked.stdout
    cured = run("verify", "--repair", "--path", str(folder), *HASHING)
    assert cured.exit_code == 0, cured.stdout + cured.stderr
    assert "moved it to" in cured.stderr
    assert "vector index ok: 2 entries" in cured.stdout
    meaning = ok("search", "--path", str(folder), *HASHING, "--mode", "vector", "tmux sessions")
    assert meaning.stdout.splitlines()[1].split()[1] == "user/b"
    assert "unavailable" not in meaning.stderr


@pytest.mark.slow  # opens Chroma
def test_verify_on_a_markdown_folder_reports_links_and_hand_edits_and_repair_journals_them(
    tmp_path: Path,
) -> None:
    # issue 22 case 2: a link is reported by verify as not journaled, with the reason
    folder = tmp_path / "notes"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("zebra secret from outside\n")
    ok("save", "--path", str(folder), "--format", "markdown", *HASHING, "user/a", "Prefers Vim.")
    (folder / "user" / "leak.md").symlink_to(outside / "x.md")
    (folder / "team").symlink_to(outside)
    (folder / "user" / "b.md").write_text("Works in tmux sessions.\n")  # a person's edit
    checked = run("verify", "--path", str(folder), *HASHING, "--json")
    assert checked.exit_code == 1
    report = json.loads(checked.stdout)
    assert report["pending"] == ["user/b"]
    assert [(u["key"], u["path"]) for u in report["unjournaled"]] == [
        ("team/", str(folder / "team")),
        ("user/leak", str(folder / "user" / "leak.md")),
    ]
    assert all("symbolic link" in u["reason"] for u in report["unjournaled"])
    assert report["missing"] == [] and report["vector_unavailable"] is None
    repaired = run("verify", "--repair", "--path", str(folder), *HASHING)
    assert repaired.exit_code == 1  # the links are still there: a person must act
    assert "journaled 1 file changed by hand" in repaired.stdout
    assert f"not journaled: {folder / 'team'}: a symbolic link" in repaired.stdout
    records = [json.loads(line) for line in (folder / "journal.jsonl").read_text().splitlines()]
    assert [r["entry"]["name"] for r in records] == ["a", "b"]
    assert "zebra" not in (folder / "journal.jsonl").read_text()
    (folder / "user" / "leak.md").unlink()
    (folder / "team").unlink()
    clean = run("verify", "--path", str(folder), *HASHING)
    assert clean.exit_code == 0, clean.stdout
    assert "vector index ok: 2 entries" in clean.stdout
