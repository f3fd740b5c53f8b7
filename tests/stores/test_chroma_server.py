"""ChromaStore through chromadb.HttpClient against a real Chroma server (`chroma run` on
127.0.0.1, a free port, a temporary path; tests/chroma_server.py), started once for the session
and stopped at its end: the shared store cases, stores sharing one server, and several processes
writing one store, which is how the README tells multi-process users to run."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chroma_store_cases import CASES, DIM, Backend, embed, indexed_cosine, keys

from agentmemory import ChromaStore, Entry
from agentmemory.stores.chroma.folder_lock import LOCK_FILE_NAME
from embedders import HashingEmbedder

REPO = Path(__file__).resolve().parents[2]
CHILD_TIMEOUT_S = 180

pytestmark = pytest.mark.slow


def prefix_for(path: Path) -> str:
    """One collection prefix per store folder, so the tests share the server without meeting."""
    return "t" + hashlib.sha1(str(path).encode()).hexdigest()[:12]


@pytest.fixture(scope="module")
def server(chroma_client: Any) -> Backend:
    client = chroma_client

    def open_store(
        path: Path, store_type: type[ChromaStore] = ChromaStore, **kwargs: Any
    ) -> ChromaStore:
        kwargs.setdefault("embedder", HashingEmbedder(DIM))
        return store_type.open(path, client=client, collection_prefix=prefix_for(path), **kwargs)

    def lose_index(path: Path) -> None:
        head = prefix_for(path) + "_"
        for col in client.list_collections():
            if col.name.startswith(head):
                client.delete_collection(col.name)

    return Backend("server", open_store, lose_index, lambda path: client)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.removeprefix("case_"))
def test_server(case: Callable[[Backend, Path], None], server: Backend, tmp_path: Path) -> None:
    case(server, tmp_path / "store")
    assert not (tmp_path / "store" / LOCK_FILE_NAME).exists(), "a server store locked its folder"


def test_stores_with_prefixes_share_one_server(chroma_client: Any, tmp_path: Path) -> None:
    """Prefixes "one" and "one_two": scope "two-a" of the first and scope "a" of the second get
    different collections, and neither store sees the other's entries."""
    client = chroma_client
    with (
        ChromaStore.open(
            tmp_path / "one", embedder=HashingEmbedder(DIM), client=client, collection_prefix="one"
        ) as one,
        ChromaStore.open(
            tmp_path / "two",
            embedder=HashingEmbedder(DIM),
            client=client,
            collection_prefix="one_two",
        ) as two,
    ):
        one.put(Entry("two-a", "x", "alpha beta"))
        two.put(Entry("a", "y", "alpha beta gamma"))
        assert one.collection_name("two-a") != two.collection_name("a")
        assert keys(one.search_vector(embed("alpha beta"), limit=5, scopes=["two-a", "a"])) == [
            "two-a/x"
        ]
        assert keys(two.search_vector(embed("alpha beta"), limit=5, scopes=["two-a", "a"])) == [
            "a/y"
        ]
        assert one.verify().ok and one.verify().indexed == 1
        assert two.verify().ok and two.verify().indexed == 1


def test_folders_sharing_a_server_by_url_never_share_a_collection(
    chroma_port: int, tmp_path: Path
) -> None:
    """Two store folders pointed at one server with chroma_url and no prefix: each names its
    collections after its own store id, so each verifies clean, finds only its own entries, and
    a repair dropping extra vectors in one leaves the other's alone (before, both used the
    collection agentmemory_user: each saw the other's vectors as extra)."""
    url = f"http://127.0.0.1:{chroma_port}"
    with (
        ChromaStore.open(tmp_path / "a", embedder=HashingEmbedder(DIM), chroma_url=url) as a,
        ChromaStore.open(tmp_path / "b", embedder=HashingEmbedder(DIM), chroma_url=url) as b,
    ):
        a.put(Entry("user", "editor", "prefers vim"))
        b.put(Entry("user", "editor", "prefers emacs"))
        b.put(Entry("user", "shell", "uses zsh"))
        assert a.collection_prefix != b.collection_prefix
        assert a.collection_prefix == "am-" + a.journal_store.store_id.replace("-", "")[:16]
        assert (a.verify().ok, a.verify().indexed) == (True, 1)
        assert (b.verify().ok, b.verify().indexed) == (True, 2)
        assert b.repair().ok and a.verify().indexed == 1
        hits = a.search_vector(embed("prefers emacs"), limit=5, scopes=["user"])
        assert [h[0].content for h in hits] == ["prefers vim"]
    with ChromaStore.open(tmp_path / "a", embedder=HashingEmbedder(DIM), chroma_url=url) as a:
        assert a.verify().indexed == 1 and a.index_cursor == 1  # the same collections again


def test_embedded_store_moves_to_a_server(chroma_client: Any, tmp_path: Path) -> None:
    """A folder indexed embedded, then opened over a server client: the first open indexes the
    whole journal on the server (the two indexes keep separate cursors)."""
    client = chroma_client
    store = tmp_path / "store"
    with ChromaStore.open(store, embedder=HashingEmbedder(DIM)) as st:
        st.put_many([Entry("user", f"n{i}", f"note {i} word{i}") for i in range(30)])
    with ChromaStore.open(
        store, embedder=HashingEmbedder(DIM), client=client, collection_prefix=prefix_for(store)
    ) as st:
        report = st.verify()
        assert report.ok and report.indexed == 30, report
        assert st.index_cursor == 30


WRITER_CHILD = """
    import sys
    import chromadb
    from chromadb.config import Settings
    from agentmemory import ChromaStore, Entry
    from embedders import HashingEmbedder

    path, port, prefix, me = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    client = chromadb.HttpClient(
        host="127.0.0.1", port=port, settings=Settings(anonymized_telemetry=False)
    )
    with ChromaStore.open(
        path, embedder=HashingEmbedder(int(sys.argv[5])), client=client, collection_prefix=prefix
    ) as st:
        for i in range(80):
            st.put(Entry("user", f"{me}-n{i}", f"process {me} note {i} word{me}x{i}"))
            st.put(Entry("user", f"shared-{i % 4}", f"process {me} rewrote this {i}"))
"""


def test_several_processes_write_one_store_through_the_server(
    server: Backend, chroma_port: int, tmp_path: Path
) -> None:
    """Two processes write one store (its journal folder, one server) at once; afterwards every
    write is in the journal and the index matches it exactly (the embedded client lost vectors
    in this situation)."""
    store = tmp_path / "store"
    with server.open(store) as st:
        st.put(Entry("user", "seed", "created before the writers start"))
    argv = [sys.executable, "-c", textwrap.dedent(WRITER_CHILD), str(store), str(chroma_port)]
    children = [
        subprocess.Popen(
            [*argv, prefix_for(store), me, str(DIM)],
            cwd=REPO,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for me in ("p", "q")
    ]
    for child in children:
        _, err = child.communicate(timeout=CHILD_TIMEOUT_S)
        assert child.returncode == 0, err
    with server.open(store) as st:
        assert [c.seq for c in st.journal()] == list(range(1, 322))
        report = st.verify()
        assert report.ok, report
        assert report.live == 1 + 2 * 80 + 4
        for me in ("p", "q"):
            for i in (0, 79):
                text = f"process {me} note {i} word{me}x{i}"
                assert indexed_cosine(st, f"user/{me}-n{i}", text) > 0.999
