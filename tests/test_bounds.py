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


@pytest.mark.slow
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
    from agentmemory.stores.chroma.index import MAX_QUERY_RESULTS
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


# -- the vector query (docs/recall.md#the-vector-query) ----------------------------------------

VECTOR_QUERY_BYTES = 256 * 403  # the documented bound for a 256-piece window: 103,168 bytes


def test_the_vector_leg_reads_a_query_to_its_documented_bound(tmp_path: Path) -> None:
    """The hashing embedder reads a whole text, so without the cap the 10 MB tail of okapis
    would decide the vector; with it, the query is its first 103,168 bytes: zebras."""
    from agentmemory import ChromaStore
    from embedders import HashingEmbedder

    with ChromaStore.open(tmp_path / "s", embedder=HashingEmbedder(64)) as st:
        st.put_many([Entry("user", "zebra", "zebra zebra"), Entry("user", "okapi", "okapi okapi")])
        head = "zebra " * (VECTOR_QUERY_BYTES // 6 + 1)
        huge = head + "okapi " * 1_700_000  # 10.3 MB
        prefix = huge.encode()[:VECTOR_QUERY_BYTES].decode()
        hits = st.recall(huge, scopes=["user"], mode="vector")
        same = st.recall(prefix, scopes=["user"], mode="vector")
        tail = st.recall(huge[len(head) :], scopes=["user"], mode="vector")
    assert [h.entry.name for h in hits] == ["zebra", "okapi"]
    assert [(h.entry.name, h.score) for h in hits] == [(h.entry.name, h.score) for h in same]
    assert tail[0].entry.name == "okapi"  # what the uncut text would have matched


def test_the_vector_query_drops_a_character_cut_in_two() -> None:
    from embedders import HashingEmbedder
    from recallers import vector_query

    assert VECTOR_QUERY_BYTES % 3 == 1
    cut = vector_query("€" * 40_000, HashingEmbedder(8))  # 3 bytes each: 120,000 bytes
    assert cut == "€" * (VECTOR_QUERY_BYTES // 3)
    assert vector_query("short", HashingEmbedder(8)) == "short"


@pytest.mark.slow
def test_the_bound_holds_256_word_pieces_of_the_worst_text() -> None:
    """The derivation of 403 bytes per word piece, checked with the model's own tokenizer: words
    of 100 four-byte letters (each one [UNK]) between 3-byte spaces (U+3000) still fill the
    window within the bound."""
    from tokenizers import Tokenizer

    from embedders import packaged_model_path

    tok = Tokenizer.from_file(str(packaged_model_path() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    for letter, space in (("\U00010330", "\u3000"), ("\U0001f600", " "), ("a", " ")):
        text = space.join([letter * 100] * 1000)
        pieces = tok.encode(text.encode()[:VECTOR_QUERY_BYTES].decode("utf-8", "ignore"))
        assert len(pieces.ids) >= 256, (letter, len(pieces.ids))
    longest = max(len(w.removeprefix("##").encode()) for w in tok.get_vocab())
    assert longest <= 400  # every other piece covers less than an [UNK] word


@pytest.mark.slow
def test_a_10_mb_query_through_the_real_model_gives_the_hits_of_its_capped_prefix(
    tmp_path: Path,
) -> None:
    """Before the cap, the tokenizer split all 10 MB before truncating (28 s with MiniLM on a
    quiet machine); now the vector leg embeds the first 103,168 bytes, and for ordinary text
    that is the same vector as the whole text's (the window fills long before the bound)."""
    import numpy as np

    import embedders
    from agentmemory import ChromaStore

    emb = embedders.get(embedders.DEFAULT_EMBEDDER)
    assert getattr(emb, "max_seq_length", None) == 256
    with ChromaStore.open(tmp_path / "s", embedder=emb) as st:
        st.put_many(
            [Entry("user", f"n-{i}", f"note {i}: zebras crossing near the lake") for i in range(20)]
            + [Entry("user", "tax", "quarterly tax filing deadline"), Entry("user", "cat", "cats")]
        )
        huge = ("where did we see the zebras crossing the road at night " * 190_000)[:10_000_000]
        prefix = huge.encode()[:VECTOR_QUERY_BYTES].decode()
        hits = st.recall(huge, scopes=["user"], mode="vector", limit=8)
        same = st.recall(prefix, scopes=["user"], mode="vector", limit=8)
    assert hits and hits[0].entry.name.startswith("n-")
    assert [(h.entry.name, h.score) for h in hits] == [(h.entry.name, h.score) for h in same]
    longer, capped = emb.embed([huge[: 3 * VECTOR_QUERY_BYTES], prefix])
    assert float(np.dot(longer, capped)) > 0.9999  # the cap cut nothing the model reads
