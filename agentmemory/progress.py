"""Say, before a long wait, what is being waited for: one line on the ``agentmemory.progress``
logger (level INFO) when an open or a catch-up is about to embed many entries.

The library never prints: the line is a log record, so an application sees it only when it
shows INFO records of :data:`PROGRESS_LOGGER` (``logging.basicConfig(level=logging.INFO)`` does).
The command line shows them on stderr (stdout stays the result, ``--json`` included). What is
announced, and from how many entries, is written down in docs/storage.md#progress-while-indexing.
"""

from __future__ import annotations

import logging

from .wording import counted

__all__ = ["ANNOUNCE_FROM", "PROGRESS_LOGGER", "announce_indexing"]

PROGRESS_LOGGER = "agentmemory.progress"
"""The logger the lines go to."""

ANNOUNCE_FROM = 200
"""Entries to embed from which the wait is announced: about 2 s with the default ONNX model on
two cores (benchmarks/README.md); fewer are not worth a line."""

_log = logging.getLogger(PROGRESS_LOGGER)


def announce_indexing(where: str, count: int, why: str) -> None:
    """Log ``agentmemory: store WHERE: indexing N entries (WHY)`` at INFO when ``count`` is
    :data:`ANNOUNCE_FROM` or more. ``why`` says what the entries are (e.g. ``"journal records
    its vector index lacks"``). A writer's own batches are not announced: it shows its own
    progress (an import's bar)."""
    if count >= ANNOUNCE_FROM:
        _log.info("agentmemory: store %s: indexing %s (%s)", where, counted(count, "entry"), why)
