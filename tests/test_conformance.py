"""The conformance suite (agentmemory.testing) against every store, at two entry bounds."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from agentmemory import ChromaStore, FileStore, MemStore, SqliteStore, Store
from agentmemory.testing import CASES, Harness
from embedders import HashingEmbedder

BOUNDS = [4096, 256]


def mem_harness(tmp_path: Path, bound: int) -> Harness:
    return Harness(new=lambda: MemStore(max_entry_bytes=bound))


def sqlite_harness(tmp_path: Path, bound: int) -> Harness:
    made = itertools.count()

    def new() -> Store:
        return SqliteStore(tmp_path / f"store-{next(made)}.sqlite3", max_entry_bytes=bound)

    def reopen(st: Store) -> Store:
        assert isinstance(st, SqliteStore)
        return SqliteStore(st.path, max_entry_bytes=st.max_entry_bytes)

    return Harness(new=new, reopen=reopen)


def chroma_harness(tmp_path: Path, bound: int) -> Harness:
    made = itertools.count()

    def new() -> Store:
        return ChromaStore.open(
            tmp_path / f"chroma-{next(made)}", embedder=HashingEmbedder(64), max_entry_bytes=bound
        )

    def reopen(st: Store) -> Store:
        assert isinstance(st, ChromaStore)
        return ChromaStore.open(st.path, embedder=st.embedder, max_entry_bytes=st.max_entry_bytes)

    return Harness(new=new, reopen=reopen)


def file_harness(tmp_path: Path, bound: int) -> Harness:
    made = itertools.count()

    def new() -> Store:
        return FileStore(tmp_path / f"folder-{next(made)}", max_entry_bytes=bound)

    def reopen(st: Store) -> Store:
        assert isinstance(st, FileStore)
        return FileStore(st.path, max_entry_bytes=st.max_entry_bytes)

    return Harness(new=new, reopen=reopen)


def file_vectors_harness(tmp_path: Path, bound: int) -> Harness:
    made = itertools.count()

    def new() -> Store:
        return FileStore(
            tmp_path / f"folder-{next(made)}", max_entry_bytes=bound, embedder=HashingEmbedder(64)
        )

    def reopen(st: Store) -> Store:
        assert isinstance(st, FileStore) and st.embedder is not None
        return FileStore(st.path, max_entry_bytes=st.max_entry_bytes, embedder=st.embedder)

    return Harness(new=new, reopen=reopen)


HARNESSES: dict[str, Callable[[Path, int], Harness]] = {
    "chroma": chroma_harness,
    "file": file_harness,
    "file-vectors": file_vectors_harness,
    "mem": mem_harness,
    "sqlite": sqlite_harness,
}


QUICK_KINDS = {"mem", "sqlite"}
"""The stores whose conformance runs stay in ``make test-fast``; the others (a Chroma index, a
Markdown folder) take seconds a case and run in ``make test``."""


@pytest.mark.parametrize("bound", BOUNDS, ids=lambda b: f"bound{b}")
@pytest.mark.parametrize(
    "store_kind",
    [k if k in QUICK_KINDS else pytest.param(k, marks=pytest.mark.slow) for k in sorted(HARNESSES)],
)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.removeprefix("case_"))
def test_conformance(
    case: Callable[[Harness], None], store_kind: str, bound: int, tmp_path: Path
) -> None:
    case(HARNESSES[store_kind](tmp_path, bound))


def test_harness_stores_satisfy_the_protocol(tmp_path: Path) -> None:
    for kind, make in HARNESSES.items():
        with make(tmp_path / kind, 4096).store() as st:
            assert isinstance(st, Store), kind


def test_every_store_here_runs_the_purge_case(tmp_path: Path) -> None:
    """case_purge passes a store without purge (or whose can_purge is false) without checking
    anything; every store this project has must purge, so the case really runs on each."""
    for kind, make in HARNESSES.items():
        with make(tmp_path / kind, 4096).store() as st:
            assert callable(getattr(st, "purge", None)), kind
            assert getattr(st, "can_purge", True) is True, kind
            assert callable(getattr(st, "verify_erased", None)), kind
