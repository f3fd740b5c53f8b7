"""Shared fixtures and options for the test suite."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from chroma_server import ChromaServerFailed, http_client, running_chroma_server
from pg_cluster import Cluster, ClusterUnavailable, running_cluster

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite the golden files under tests/golden/ instead of comparing with them",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when the run was asked to rewrite golden files (``pytest --update-golden``)."""
    return bool(request.config.getoption("--update-golden"))


SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
"""The public evaluation data (LoCoMo, SciFact), read in place from ``../shared/data``."""


def need_shared_data(relative: str = "") -> Path:
    """``../shared/data/<relative>``; a skip with the reason when it is absent, and a failure
    under ``CI=true``, where the data must be present."""
    path = SHARED_DATA / relative
    if not path.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the evaluation data is missing at {path}")
        pytest.skip(f"evaluation data not found at {path} (../shared/data beside the repo)")
    return path


@pytest.fixture
def shared_data() -> Callable[[str], Path]:
    """:func:`need_shared_data`, for tests that read the evaluation data."""
    return need_shared_data


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL cluster for the whole session (tests/pg_cluster.py), stopped at
    its end. Missing binaries skip with the reason, and fail under ``CI=true``."""
    try:
        with running_cluster() as cluster:
            yield cluster
    except ClusterUnavailable as err:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but PostgreSQL cannot run here: {err}")
        pytest.skip(str(err))


@pytest.fixture
def pg_dsn(pg_cluster: Cluster) -> str:
    """The DSN of a new, empty database on the session's cluster (one per test)."""
    return pg_cluster.create_database()


@pytest.fixture(scope="session")
def chroma_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The port of one `chroma run` server on 127.0.0.1 for the whole session (tests/chroma_server.py),
    stopped at its end."""
    try:
        with running_chroma_server(tmp_path_factory.mktemp("chroma-server")) as port:
            yield port
    except ChromaServerFailed as err:
        pytest.fail(str(err))


@pytest.fixture(scope="session")
def chroma_client(chroma_port: int) -> Iterator[Any]:
    """A ``chromadb.HttpClient`` to the session's Chroma server."""
    with http_client(chroma_port) as c:
        yield c
