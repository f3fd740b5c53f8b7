"""Shared fixtures and options for the test suite."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

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
