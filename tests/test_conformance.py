"""The conformance suite (agentmemory.testing) against every store kind of tests/harnesses.py, at
two entry bounds: embedded, on a Chroma server, and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from harnesses import KINDS, LOCAL_KINDS, Resources

from agentmemory import Store
from agentmemory.testing import CASES, Harness

BOUNDS = [4096, 256]


@pytest.mark.parametrize("bound", BOUNDS, ids=lambda b: f"bound{b}")
@pytest.mark.parametrize(
    "store_kind",
    [k if KINDS[k].quick else pytest.param(k, marks=pytest.mark.slow) for k in sorted(KINDS)],
)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.removeprefix("case_"))
def test_conformance(
    case: Callable[[Harness], None],
    store_kind: str,
    bound: int,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    case(KINDS[store_kind].harness(Resources(tmp_path, request), bound))


@pytest.mark.slow
@pytest.mark.parametrize("store_kind", sorted(KINDS))
def test_every_kind_satisfies_the_protocol_and_purges(
    store_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """case_purge passes a store without purge (or whose can_purge is false) without checking
    anything; every store this project has must purge, so the case really runs on each."""
    with KINDS[store_kind].harness(Resources(tmp_path, request), 4096).store() as st:
        assert isinstance(st, Store)
        assert callable(getattr(st, "purge", None))
        assert getattr(st, "can_purge", True) is True
        assert callable(getattr(st, "verify_erased", None))


def test_the_registry_names_every_store_class_we_ship() -> None:
    import agentmemory

    shipped = {n for n in agentmemory.__all__ if n.endswith("Store") and n != "Store"}
    assert shipped == {"ChromaStore", "FileStore", "MemStore", "SqliteStore"}
    assert set(LOCAL_KINDS) <= set(KINDS)
    assert {"postgres", "postgres-chroma", "chroma-server"} <= set(KINDS)
