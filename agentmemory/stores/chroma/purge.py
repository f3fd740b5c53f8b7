"""ChromaStore's purge: erase every content an entry ever held from the journal and the index,
finish the index part of a purge a killed process left, and look for copies left
(docs/contract.md#purge-erasing-an-entry-for-good, docs/storage.md#purge-and-the-files).

The journal's part is the journal's own ``purge`` (:meth:`agentmemory.SqliteStore.purge`, or a
``PostgresStore``'s); the index's part is :mod:`agentmemory.stores.chroma.erase`. The scope of
a purge whose index part has not finished is kept under the index's ``purge`` state key
(:class:`~agentmemory.stores.chroma.cursor.IndexStateKeys`).
"""

from __future__ import annotations

import builtins
import logging
from dataclasses import replace

from agentmemory.purge import ErasureCheck, PurgeReceipt, check_purge

from .clients import CHROMA_FOLDER
from .core import ChromaCore
from .erase import index_copies, scrub_index

__all__ = ["Purging"]

logger = logging.getLogger("agentmemory.stores.chroma.store")


class Purging(ChromaCore):
    """``purge``, ``can_purge``, the finish of an interrupted purge, ``recovery`` and
    ``verify_erased`` (a part of ``ChromaStore``)."""

    def purge(
        self, scope: str, name: str, *, reason: str, session: str | None = None
    ) -> PurgeReceipt:
        """Erase every content ``scope/name`` ever held, from the journal and the index.

        The journal purge is :meth:`agentmemory.SqliteStore.purge` (tombstone when live,
        records redacted, lexical row removed, ``purged`` record, file vacuumed and its WAL
        truncated). Then the entry's vector is deleted and the scope's collection rebuilt
        (Chroma keeps deleted vectors in its segment files and write log until the collection
        goes), and, for an embedded folder, ``chroma.sqlite3`` is vacuumed with
        ``secure_delete`` and segment folders of dropped collections are removed
        (docs/storage.md#purge-and-the-files). The scope is recorded as pending in the journal's
        state first, so a process killed midway has the next open finish the index part.

        Raises:
            InvalidEntryError: ``scope`` or ``name`` not kebab-case, ``reason`` blank or over
                1024 bytes; nothing is written.
            NotFoundError: the journal has no record of ``scope/name``.
            StoreLockedError: another writer held the journal past ``busy_timeout_s``.
        """
        self._check_open()
        self._need_index()
        check_purge(scope, name, reason)
        self._journal.set_state(self._keys.purge, scope)
        receipt = self._journal.purge(scope, name, reason=reason, session=session)
        vectors = sum(self._index.named(scope, [name]).values())
        written = [c for c in (receipt.tombstone, receipt.record) if c is not None]
        self._after_commit(written)
        rewritten = self._scrub_index(scope)
        self._journal.set_state(self._keys.purge, "")
        return replace(receipt, vectors=vectors, rewritten=(*receipt.rewritten, *rewritten))

    @property
    def can_purge(self) -> bool:
        """Whether :meth:`purge` works here: the journal has a purge (SqliteStore and
        PostgresStore journals do)."""
        return callable(getattr(self._journal, "purge", None))

    def _scrub_index(self, scope: str) -> builtins.list[str]:
        """:func:`agentmemory.stores.chroma.erase.scrub_index` of ``scope`` for this index."""
        folder = self._folder() / CHROMA_FOLDER if self._embedded else None
        return scrub_index(self._index, scope, lock=self._shared_index().write_lock, folder=folder)

    def _finish_purge(self) -> None:
        """Finish the index part of a purge a killed process left (the journal part finished
        or rolled back when the journal opened)."""
        scope = self._journal.get_state(self._keys.purge)
        if not scope:
            return
        self._scrub_index(scope)
        report = self._following().repair()
        self._journal.set_state(self._keys.purge, "")
        logger.warning(
            "agentmemory: store %s: finished the index part of an interrupted purge in scope "
            "%s (collection rebuilt, %s)",
            self._where,
            scope,
            "index in step" if report.ok else str(report),
        )

    @property
    def recovery(self) -> str | None:
        """What opening the journal did about an interrupted purge (see
        :attr:`agentmemory.SqliteStore.recovery`), or ``None``."""
        found = getattr(self._journal, "recovery", None)
        return found if isinstance(found, str) else None

    def verify_erased(self, scope: str, name: str) -> ErasureCheck:
        """Check that no copy of ``scope/name``'s content remains: the journal's places
        (its ``verify_erased``) and the index's (:func:`agentmemory.stores.chroma.erase.index_copies`:
        the entry's vector, and for an embedded folder ``chroma.sqlite3``'s rows, free pages
        and orphaned segment folders)."""
        self._check_open()
        self._need_index()
        base = self._journal.verify_erased(scope, name)
        folder = self._folder() / CHROMA_FOLDER if self._embedded else None
        looked, found = index_copies(self._index, scope, name, folder=folder)
        return ErasureCheck(scope, name, (*base.looked, *looked), (*base.found, *found))
