"""ChromaIndex on a real embedded Chroma client, without a journal: collections per scope, vectors
addressed by entry name, the layout of docs/storage.md#ids-and-metadata, and a collection dropped
by another index on the same client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentmemory import InvalidEntryError
from agentmemory.stores.chroma.index import ChromaIndex, IndexRow, check_prefix, vector_id

DIM = 8


def unit(*hot: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[list(hot)] = 1.0
    return v / np.linalg.norm(v)


def row(name: str, *hot: int) -> IndexRow:
    return IndexRow(name, f"sha256:{name}", f"sha256:text-{name}", unit(*hot))


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Any]:
    import chromadb
    from chromadb.config import Settings

    c = chromadb.PersistentClient(
        path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False)
    )
    yield c
    c.close()


def test_vectors_live_in_one_collection_per_scope_with_the_documented_metadata(
    client: Any,
) -> None:
    index = ChromaIndex(client, "t1")
    index.upsert("user", [row("a", 0), row("b", 1)])
    index.upsert("project-x", [row("a", 2)])
    assert index.scopes() == ["project-x", "user"]
    assert index.collection_name("user") == "t1_user"
    col = client.get_collection("t1_user", embedding_function=None)
    got = col.get(ids=["user/a"], include=["metadatas", "embeddings"])
    assert got["metadatas"][0] == {"name": "a", "text_hash": "sha256:text-a"}
    assert np.allclose(got["embeddings"][0], unit(0))
    assert vector_id("user", "a") == "user/a"
    assert index.count("user") == 2 and index.count("project-x") == 1
    assert index.count("nowhere") == 0
    assert ChromaIndex(client, "t2").scopes() == [], "another prefix sees none of them"


def test_held_query_delete_and_drop_answer_by_entry_name(client: Any) -> None:
    index = ChromaIndex(client)
    index.upsert("user", [row("a", 0), row("b", 0, 1), row("c", 2)])
    index.upsert("user", [row("c", 3)])  # an upsert replaces the vector
    assert index.held("user", ["a", "c", "zz"]) == {"a": "sha256:text-a", "c": "sha256:text-c"}
    near = index.query("user", unit(0), 2)
    assert [n.name for n in near] == ["a", "b"]
    assert near[0].distance == pytest.approx(0.0, abs=1e-5)
    assert near[1].distance == pytest.approx(1 - 1 / np.sqrt(2), abs=1e-5)
    assert near[0].text_hash == "sha256:text-a"
    assert index.query("user", unit(3), 1)[0].name == "c"
    index.delete("user", ["a", "never-there"])
    assert index.held("user", ["a", "b"]) == {"b": "sha256:text-b"}
    pages = list(index.iter_held("user", 1))
    assert pages == [{"b": "sha256:text-b"}, {"c": "sha256:text-c"}] or pages == [
        {"c": "sha256:text-c"},
        {"b": "sha256:text-b"},
    ]
    index.drop("user")
    assert index.scopes() == [] and index.query("user", unit(0), 3) == []
    index.delete("user", ["b"])  # no collection: no error
    index.drop("user")
    assert index.held("nowhere", ["a"]) == {} and list(index.iter_held("nowhere", 5)) == []


def test_a_collection_dropped_by_another_index_is_looked_up_again(client: Any) -> None:
    mine, other = ChromaIndex(client), ChromaIndex(client)
    mine.upsert("user", [row("a", 0)])
    assert mine.count("user") == 1  # the collection is cached in `mine` now
    other.drop("user")
    assert mine.query("user", unit(0), 1) == [], "the dropped collection reads as empty"
    mine.upsert("user", [row("b", 1)])
    assert other.held("user", ["a", "b"]) == {"b": "sha256:text-b"}


@pytest.mark.parametrize("prefix", ["", "_x", "a b", "x" * 201, "é"])
def test_a_bad_prefix_is_refused_by_name(prefix: str) -> None:
    with pytest.raises(ValueError, match="collection_prefix"):
        check_prefix(prefix)
    assert check_prefix("agentmemory-2_b") == "agentmemory-2_b"


def test_a_scope_that_is_not_kebab_case_is_refused(client: Any) -> None:
    with pytest.raises(InvalidEntryError, match="scope"):
        ChromaIndex(client).upsert("Bad_Scope", [row("a", 0)])


@pytest.mark.slow
def test_which_windows_are_held_is_read_in_parts_past_sqlites_variable_limit(
    client: Any,
) -> None:
    """280 entries of 120 windows (33,600 ids, over sqlite's 32,766 bound variables): held()
    reads the windows past window 0 in parts, so it answers instead of raising chromadb's "too
    many SQL variables"."""
    index = ChromaIndex(client, "big")
    rng = np.random.default_rng(7)
    rows = [
        IndexRow(
            f"e-{i}",
            f"sha256:{i}",
            f"sha256:text-{i}",
            rng.standard_normal((120, 8)).astype(np.float32),
        )
        for i in range(280)
    ]
    index.upsert("user", rows)
    held = index.held("user", [r.name for r in rows])
    assert held == {r.name: r.text_hash for r in rows}


def test_a_vector_of_the_older_layout_reads_as_current_with_its_hash_cut(client: Any) -> None:
    """Vectors written before the cut hold scope, hash and the whole 71-character text_hash:
    they read as the 39 characters a vector keeps now, so an older store's vectors stay
    current (nothing re-embeds) and the new layout writes the short form."""
    whole = "sha256:" + "ab" * 32
    col = client.get_or_create_collection(
        "t3_user", metadata={"hnsw:space": "cosine"}, embedding_function=None
    )
    old = {"scope": "user", "name": "a", "hash": "sha256:x", "text_hash": whole}
    col.upsert(ids=["user/a"], embeddings=[unit(0).tolist()], metadatas=[old])
    index = ChromaIndex(client, "t3")
    assert index.held("user", ["a"]) == {"a": whole[:39]}
    assert [n.text_hash for n in index.query("user", unit(0), 1)] == [whole[:39]]
    assert list(index.iter_held("user", 10)) == [{"a": whole[:39]}]
    index.upsert("user", [IndexRow("b", "sha256:b", whole, unit(1))])
    stored = col.get(ids=["user/b"], include=["metadatas"])["metadatas"][0]
    assert stored == {"name": "b", "text_hash": whole[:39]}
    # Chroma's upsert merges metadata: rewriting the older vector drops its older keys
    index.upsert("user", [IndexRow("a", "sha256:y", "sha256:" + "cd" * 32, unit(2))])
    stored = col.get(ids=["user/a"], include=["metadatas"])["metadatas"][0]
    assert stored == {"name": "a", "text_hash": "sha256:" + "cd" * 16}


def test_only_an_entry_of_several_windows_stores_window_keys(client: Any) -> None:
    """docs/storage.md#ids-and-metadata: windows of a longer text carry ``window`` and
    ``windows``; rewritten as one window, the entry loses its surplus windows and window 0 its
    keys (an upsert merges metadata), and reads as whole and current."""
    index = ChromaIndex(client, "t4")
    three = np.stack([unit(0), unit(1), unit(2)])
    index.upsert("user", [IndexRow("a", "sha256:a", "sha256:text-a", three), row("b", 3)])
    col = client.get_collection("t4_user", embedding_function=None)
    got = col.get(include=["metadatas"])
    metas = dict(zip(got["ids"], got["metadatas"], strict=True))
    assert metas["user/a#2"] == {
        "name": "a",
        "text_hash": "sha256:text-a",
        "window": 2,
        "windows": 3,
    }
    assert metas["user/a"]["windows"] == 3 and metas["user/b"] == {
        "name": "b",
        "text_hash": "sha256:text-b",
    }
    assert index.count("user") == 2 and index.vector_count("user") == 4
    index.upsert("user", [IndexRow("a", "sha256:a2", "sha256:text-a2", unit(4))])
    got = col.get(include=["metadatas"])
    assert dict(zip(got["ids"], got["metadatas"], strict=True)) == {
        "user/a": {"name": "a", "text_hash": "sha256:text-a2"},
        "user/b": {"name": "b", "text_hash": "sha256:text-b"},
    }
    assert index.held("user", ["a", "b"]) == {"a": "sha256:text-a2", "b": "sha256:text-b"}
    assert index.count("user") == 2 and index.vector_count("user") == 2
