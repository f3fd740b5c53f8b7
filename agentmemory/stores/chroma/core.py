"""ChromaCore: the state of one ChromaStore handle, its guards, and the step after each journal
commit; the base the parts of :class:`~agentmemory.ChromaStore` share.

The attributes are set when the store opens (:class:`~agentmemory.ChromaStore`'s constructor):
the folder (``None`` for a ``journal=`` store) and its name for messages, the embedder, the
journal (the truth), the index's state keys, the :class:`~agentmemory.stores.chroma.index.ChromaIndex`
and its :class:`~agentmemory.stores.chroma.follow.IndexFollower` (none for a journal-only handle,
whose ``_unavailable`` says why). The guards refuse, with an
:class:`~agentmemory.AgentMemoryError` naming the store and the way out, a closed handle, a
forked child's use of an embedded folder, and an index operation on a journal-only handle.

The write path (:meth:`ChromaCore._after_commit`): after the journal commits, bring the index in
line with the journal's live state of the keys written, then mark their records applied
(docs/storage.md#a-failed-index-update); a failed index update raises
:class:`~agentmemory.IndexWriteError` (the write is in the journal).
"""

from __future__ import annotations

import builtins
import logging
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from agentmemory.entries import Change
from agentmemory.errors import AgentMemoryError, ChromaServerError, IndexWriteError
from embedders import Embedder

from .clients import SharedIndex
from .cursor import IndexCursor, IndexStateKeys
from .follow import IndexFollower
from .index import ChromaIndex
from .journal_source import JournalStore

__all__ = ["ChromaCore"]

logger = logging.getLogger("agentmemory.stores.chroma.store")


class ChromaCore:
    """The state and guards of a ChromaStore handle, and its write path (a part of
    ``ChromaStore``; see the module docstring)."""

    _dir: Path | None
    _where: str
    _embedder: Embedder
    _pid: int
    _closed: bool
    _shared: SharedIndex | None
    _embedded: bool
    _server: str | None
    _unavailable: str | None
    _held_elsewhere: bool  # _unavailable because another process holds the folder
    _write_note: str
    _journal: JournalStore
    _keys: IndexStateKeys
    _index: ChromaIndex
    _batch: int
    _follower: IndexFollower

    def _folder(self) -> Path:
        if self._dir is None:
            raise AgentMemoryError(
                f"agentmemory: store {self._where} has no folder: it indexes the journal it was "
                "given (journal=) on a Chroma server"
            )
        return self._dir

    def _need_index(self) -> None:
        """Refuse an index operation on a journal-only handle, saying why."""
        if self._unavailable is not None and not self._held_elsewhere:
            raise AgentMemoryError(  # damaged, read-only, or a full disk: the reason has the cure
                f"agentmemory: store {self._where}: {self._unavailable}; this process opened the "
                "journal alone, so it cannot search, check or rebuild the vectors"
            )
        if self._unavailable is not None:
            raise AgentMemoryError(
                f"agentmemory: store {self._where}: {self._unavailable}; this process opened the "
                "journal alone, so it cannot search, check or rebuild the vectors: do it in the "
                "holder, or after it closes, or run 'agentmemory server start' so that every "
                "process shares one Chroma server"
            )

    def _shared_index(self) -> SharedIndex:
        self._need_index()
        shared = self._shared
        if shared is None:
            raise AgentMemoryError(
                f"agentmemory: store {self._where} is closed; open a new ChromaStore to use it"
            )
        return shared

    def _cursor(self) -> IndexCursor:
        return self._following().cursor

    def _following(self) -> IndexFollower:
        """The follower of this handle's index (errors for a journal-only or closed one)."""
        self._shared_index()
        return self._follower

    def _check_open(self) -> None:
        if self._closed:
            raise AgentMemoryError(
                f"agentmemory: store {self._where} is closed; open a new ChromaStore to use it"
            )
        if self._embedded and os.getpid() != self._pid:
            raise AgentMemoryError(
                f"agentmemory: store {self._where} was opened by process {self._pid}, and this "
                f"process ({os.getpid()}) was forked from it; an embedded Chroma folder is not "
                "safe across processes: open the store here after the parent closes it, or use "
                "a Chroma server (client=chromadb.HttpClient(...))"
            )

    def _after_commit(self, changes: Sequence[Change]) -> builtins.list[Change]:
        """Bring the index in line with the journal for the keys just written, then mark their
        records applied, then index what other processes wrote
        (:meth:`IndexFollower.absorb`); on failure, keep them for the next catch-up and raise
        IndexWriteError. Journal-only, return the records with a ``note`` that the holder
        indexes them."""
        if self._unavailable is not None:
            return [replace(c, note=self._write_note) for c in changes]
        follower = self._following()
        # The journal state just committed, last record per key: the index is written from it
        # without reading the rows back, and checked against the journal once after writing.
        known = {(c.entry.scope, c.entry.name): c.entry for c in changes}
        try:
            follower.write(known)
        except Exception as err:
            follower.mark_failed(c.seq for c in changes)
            cause: BaseException = err
            if self._server is not None:
                cause = ChromaServerError(self._server, self._server_down(err))
            raise IndexWriteError(self._where, changes, cause) from cause
        follower.mark_applied(c.seq for c in changes)
        try:
            follower.catch_up()
            follower.absorb()
        except Exception as err:  # the caller's own write succeeded; say so, and go on
            logger.warning(
                "agentmemory: store %s: index catch-up failed (%s: %s); retried later",
                self._where,
                type(err).__name__,
                err,
            )
        return builtins.list(changes)

    def _server_down(self, err: BaseException) -> str:
        """What to do when the server failed a request with ``err``."""
        how = (
            f"restart it with 'agentmemory server start --path {self._dir}'"
            if self._server is not None and self._server.endswith(")")
            else "restart it"
        )
        return (
            f"the request failed ({type(err).__name__}: {err}); {how}; the journal keeps every "
            "write and the index catches up from it once the server answers"
        )
