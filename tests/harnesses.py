"""Every store kind the tests run on, in one registry: how to open one, and the conformance
harness (:class:`agentmemory.testing.Harness`) of each.

The kinds:

* ``mem``: :class:`~agentmemory.MemStore`.
* ``sqlite``: :class:`~agentmemory.SqliteStore`, ``<tmp>/s.sqlite3``.
* ``file``: :class:`~agentmemory.FileStore`, a Markdown folder ``<tmp>/f``; ``file-vectors``: the
  same with its ``.vectors`` index (a 64-wide hashing embedder).
* ``chroma``: :class:`~agentmemory.ChromaStore`, embedded, ``<tmp>/c`` (hashing, 64).
* ``chroma-server``: a ChromaStore whose index is on the session's `chroma run` server
  (``chroma_client``, tests/conftest.py), one collection prefix per folder.
* ``postgres``: :class:`~agentmemory.stores.postgres.PostgresStore` on a new database of the
  session's cluster (``pg_cluster``); ``postgres-chroma``: a ChromaStore over that journal and the
  Chroma server.

:func:`open_kind` opens a local kind (everything but the servers' kinds) at its usual path under a
test's folder; :data:`KINDS` holds each kind's conformance harness and whether it is quick enough
for ``make test-fast``. A harness that needs a server asks the test's request for its fixture.
"""

from __future__ import annotations

import hashlib
import itertools
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agentmemory import ChromaStore, FileStore, MemStore, SqliteStore, Store
from agentmemory.stores.base import utc_now
from agentmemory.testing import Harness
from embedders import HashingEmbedder, packaged_model_path

LOCAL_KINDS = ("chroma", "file", "file-vectors", "mem", "sqlite")
"""The kinds :func:`open_kind` opens: no server needed."""

EMBED_DIM = 64
"""The width of the hashing embedder the vector kinds use."""


def open_kind(
    kind: str,
    tmp_path: Path,
    *,
    clock: Callable[[], datetime] = utc_now,
    max_entry_bytes: int = 4096,
) -> Store:
    """A fresh store of the local ``kind`` under ``tmp_path`` (see the module's list for paths).

    Raises:
        ValueError: ``kind`` is not one of :data:`LOCAL_KINDS`.
    """
    if kind == "mem":
        return MemStore(clock=clock, max_entry_bytes=max_entry_bytes)
    if kind == "sqlite":
        return SqliteStore(tmp_path / "s.sqlite3", clock=clock, max_entry_bytes=max_entry_bytes)
    if kind in ("file", "file-vectors"):
        embedder = HashingEmbedder(EMBED_DIM) if kind == "file-vectors" else None
        return FileStore(
            tmp_path / "f", clock=clock, embedder=embedder, max_entry_bytes=max_entry_bytes
        )
    if kind == "chroma":
        return ChromaStore.open(
            tmp_path / "c",
            embedder=HashingEmbedder(EMBED_DIM),
            clock=clock,
            max_entry_bytes=max_entry_bytes,
        )
    raise ValueError(f"open_kind: kind {kind!r} is not one of {', '.join(LOCAL_KINDS)}")


def reopen_kind(st: Store) -> Store:
    """A second handle on the storage of ``st``, a store :func:`open_kind` made (or one of the
    same class at another path), with its bound and embedder."""
    if isinstance(st, SqliteStore):
        return SqliteStore(st.path, max_entry_bytes=st.max_entry_bytes)
    if isinstance(st, FileStore):
        return FileStore(st.path, max_entry_bytes=st.max_entry_bytes, embedder=st.embedder)
    if isinstance(st, ChromaStore):
        return ChromaStore.open(st.path, embedder=st.embedder, max_entry_bytes=st.max_entry_bytes)
    raise TypeError(f"reopen_kind: a {type(st).__name__} does not persist")


@dataclass(frozen=True)
class Resources:
    """What a harness may use: the test's folder, and its request to reach session servers."""

    tmp_path: Path
    request: pytest.FixtureRequest

    def fixture(self, name: str) -> Any:
        return self.request.getfixturevalue(name)


def _local(kind: str) -> Callable[[Resources, int], Harness]:
    def make(res: Resources, bound: int) -> Harness:
        made = itertools.count()
        if kind == "mem":
            return Harness(new=lambda: open_kind(kind, res.tmp_path, max_entry_bytes=bound))

        def new() -> Store:
            return open_kind(kind, res.tmp_path / f"s{next(made)}", max_entry_bytes=bound)

        return Harness(new=new, reopen=reopen_kind)

    return make


def _prefix(tag: str) -> str:
    """A collection prefix of our own on the shared server (kebab-free, at most 13 bytes)."""
    return "t" + hashlib.sha1(tag.encode()).hexdigest()[:12]


def _chroma_server(res: Resources, bound: int) -> Harness:
    client = res.fixture("chroma_client")
    made = itertools.count()

    def open_at(path: Path) -> Store:
        return ChromaStore.open(
            path,
            embedder=HashingEmbedder(EMBED_DIM),
            client=client,
            collection_prefix=_prefix(str(path)),
            max_entry_bytes=bound,
        )

    def reopen(st: Store) -> Store:
        assert isinstance(st, ChromaStore)
        return open_at(st.path)

    return Harness(new=lambda: open_at(res.tmp_path / f"s{next(made)}"), reopen=reopen)


def _postgres(res: Resources, bound: int) -> Harness:
    from agentmemory.stores.postgres import PostgresStore

    cluster = res.fixture("pg_cluster")

    def new() -> Store:
        return PostgresStore(cluster.create_database(), max_entry_bytes=bound)

    def reopen(st: Store) -> Store:
        assert isinstance(st, PostgresStore)
        return PostgresStore(st.dsn, max_entry_bytes=st.max_entry_bytes)

    return Harness(new=new, reopen=reopen)


def _postgres_chroma(res: Resources, bound: int) -> Harness:
    from agentmemory.stores.postgres import PostgresStore

    cluster = res.fixture("pg_cluster")
    client = res.fixture("chroma_client")

    def open_over(dsn: str, prefix: str) -> Store:
        return ChromaStore(
            None,
            journal=PostgresStore(dsn, max_entry_bytes=bound),
            client=client,
            collection_prefix=prefix,
            embedder=HashingEmbedder(EMBED_DIM),
        )

    def new() -> Store:
        dsn = cluster.create_database()
        return open_over(dsn, _prefix(dsn))

    def reopen(st: Store) -> Store:
        assert isinstance(st, ChromaStore)
        journal = st.journal_store
        assert isinstance(journal, PostgresStore)
        return open_over(journal.dsn, st.collection_prefix)

    return Harness(new=new, reopen=reopen)


@dataclass(frozen=True)
class StoreKind:
    """One kind of store: its conformance harness at a bound, and whether its cases are quick
    (a second or less each: they run in ``make test-fast``)."""

    harness: Callable[[Resources, int], Harness]
    quick: bool = False


KINDS: dict[str, StoreKind] = {
    "chroma": StoreKind(_local("chroma")),
    "chroma-server": StoreKind(_chroma_server),
    "file": StoreKind(_local("file")),
    "file-vectors": StoreKind(_local("file-vectors")),
    "mem": StoreKind(_local("mem"), quick=True),
    "postgres": StoreKind(_postgres),
    "postgres-chroma": StoreKind(_postgres_chroma),
    "sqlite": StoreKind(_local("sqlite"), quick=True),
}
"""Every store kind, by name; the conformance suite runs over all of them."""


TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
)


def build_cross_encoder(folder: Path, **config: int) -> Path:
    """A BERT cross-encoder (one score per pair) with random weights (seed 0), saved in ``folder``
    with the packaged all-MiniLM-L6-v2's tokenizer files: what ``CrossEncoder.save_pretrained``
    leaves, built offline."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    BertForSequenceClassification(BertConfig(num_labels=1, **config)).save_pretrained(folder)
    source = packaged_model_path()
    for name in TOKENIZER_FILES:
        shutil.copy(source / name, folder / name)
    return folder


TINY = {
    "hidden_size": 32,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 64,
}
"""The tiny model's shape (about 1M parameters, almost all the 30,522-word embedding table)."""
