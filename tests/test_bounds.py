"""What the tools send back to the model is bounded and names no host path, whatever the model
sent (docs/contract.md#what-the-model-is-told). Real stores on tmp_path; a real second sqlite
connection holds the write lock for the busy case."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from agentmemory import Entry, SqliteStore, tools
from agentmemory.cli import main
from agentmemory.tools import ECHO_CHARS, MAX_ERROR_CHARS


def test_a_huge_name_is_not_echoed_in_full(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "s" / "journal.sqlite3") as st:
        t = {x.name: x for x in tools(st, ["user"])}
        huge = "a" * 100_000
        for call in (
            t["memory_save"]({"name": huge, "content": "x"}),
            t["memory_forget"]({"name": huge.upper()}),
            t["memory_patch"]({"name": huge, "old_text": "x", "new_text": "y"}),
        ):
            assert call.is_error and "kebab-case" in call.text
            assert len(call.text) < 400, len(call.text)


def test_a_huge_query_is_echoed_cut(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "s" / "journal.sqlite3") as st:
        st.put(Entry("user", "zebra", "a zebra crossing"))
        search = {x.name: x for x in tools(st, ["user"])}["memory_search"]
        found = search({"query": "zebra " * 200_000})  # 1.2 MB
        missed = search({"query": "okapi " * 200_000})
    assert "user/zebra" in found.text and len(found.text) < ECHO_CHARS + 300
    assert (
        missed.text.startswith("No entries in user match") and len(missed.text) < ECHO_CHARS + 100
    )
    assert "(1199800 more characters)" in missed.text


def test_busy_and_closed_store_messages_name_no_host_path(tmp_path: Path) -> None:
    db = tmp_path / "s" / "journal.sqlite3"
    st = SqliteStore(db, busy_timeout_s=0.2)
    t = {x.name: x for x in tools(st, ["user"])}
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another program holds the write lock
    try:
        busy = t["memory_save"]({"name": "note", "content": "x"})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert busy.is_error and "busy" in busy.text and str(tmp_path) not in busy.text
    assert "busy_timeout_s" not in busy.text  # host-side advice stays on the host
    st.close()
    closed = t["memory_search"]({"query": "note"})
    assert closed.is_error and str(tmp_path) not in closed.text, closed.text
    assert len(closed.text) <= MAX_ERROR_CHARS


# -- smaller refusals of the command line -----------------------------------------------------


def run_cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def one_line(result: Result, *words: str) -> None:
    assert result.exit_code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentmemory: "), result.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_an_empty_path_is_refused_not_read_as_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for args in (("save", "user/x", "hello"), ("list",), ("verify",)):
        one_line(run_cli(*args, "--path", ""), "--path", "empty")
    assert list(tmp_path.iterdir()) == []


def test_a_refused_save_creates_no_store(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    one_line(run_cli("save", "user/BAD_NAME", "x", "--path", str(folder)), "BAD_NAME")
    one_line(run_cli("save", "user/ok", "x" * 5000, "--path", str(folder)), "5000")
    assert not folder.exists()


def test_list_refuses_an_invalid_scope(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    assert (
        run_cli("save", "user/ok", "x", "--path", str(folder), "--embedder", "hashing").exit_code
        == 0
    )
    one_line(run_cli("list", "Bad Scope", "--path", str(folder)), '"Bad Scope"', "kebab-case")
    one_line(run_cli("list", "Bad Scope", "--json", "--path", str(folder)), "kebab-case")


@pytest.mark.slow
def test_a_vector_search_deeper_than_sqlite_allows_is_capped_not_a_chromadb_error(
    tmp_path: Path,
) -> None:
    """33,000 entries in one scope and ``limit=40000``: Chroma used to fail with "too many SQL
    variables"; the leg now asks for at most MAX_QUERY_RESULTS entries, nearest first."""
    from agentmemory import ChromaStore
    from agentmemory.chroma_index import MAX_QUERY_RESULTS
    from embedders import HashingEmbedder

    emb = HashingEmbedder(8)
    with ChromaStore.open(tmp_path / "big", embedder=emb) as st:
        words = [f"w{i}" for i in range(50)]
        for start in range(0, 33_000, 5_500):
            st.put_many(
                [
                    Entry("big", f"e-{i}", f"{words[i % 50]} {words[(i * 7) % 50]} {i}")
                    for i in range(start, start + 5_500)
                ]
            )
        found = st.search_vector(emb.embed(["w3 w21"])[0], limit=40_000, scopes=["big"])
        assert 1 <= len(found) <= MAX_QUERY_RESULTS  # vectors scoring 0 or less are left out
        scores = [s for _, s in found]
        assert scores == sorted(scores, reverse=True)
    result = run_cli("search", "w3 w21", "--limit", "40000", "--mode", "vector", "--path",
                     str(tmp_path / "big"), "--json")  # fmt: skip
    assert result.exit_code == 0, result.stderr


def test_a_symlinked_chroma_folder_cannot_escape_the_folder_lock(tmp_path: Path) -> None:
    """Store b's chroma/ links to store a's: opening b would let two locks guard one index."""
    from agentmemory import ChromaStore, StoreFormatError
    from embedders import HashingEmbedder

    emb = HashingEmbedder(8)
    with ChromaStore.open(tmp_path / "a", embedder=emb) as a:
        a.put(Entry("user", "x", "in a"))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "chroma").symlink_to(tmp_path / "a" / "chroma")
    with pytest.raises(StoreFormatError) as err:
        ChromaStore.open(tmp_path / "b", embedder=emb)
    assert "link" in str(err.value) and "\n" not in str(err.value)
    with ChromaStore.open(tmp_path / "a", embedder=emb) as a:  # a's lock was not left held
        assert a.get("user", "x").content == "in a"
