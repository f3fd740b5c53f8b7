"""Checking a store against its journal: the vector index, the lexical index, lost records.

:func:`check_store` is what ``agentmemory verify`` runs: the vector index compared with the
journal (:meth:`ChromaStore.verify`, docs/storage.md#verify-repair-reindex), the vectors no journal
record names (docs/storage.md#a-journal-shorter-than-its-index) and the lexical index
(docs/storage.md#a-damaged-lexical-index), each repaired on request. :func:`check_reindexed` is
what ``agentmemory reindex`` reports after its rebuild. Both return frozen reports the caller
prints. :func:`check_folder` is ``verify`` on a Markdown folder: its vector index against its
journal, and the files the journal does not hold (docs/filestore-format.md#links).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .stores.chroma.store import ChromaStore
    from .stores.chroma.sync import IndexReport
    from .stores.markdown.reconcile import UnjournaledFile
    from .stores.markdown.store import FileStore

__all__ = [
    "FolderCheck",
    "LexicalCheck",
    "ReindexCheck",
    "StoreCheck",
    "check_folder",
    "check_lexical",
    "check_reindexed",
    "check_store",
    "never_journaled",
]


@dataclass(frozen=True, slots=True)
class LexicalCheck:
    """What :func:`check_lexical` found.

    Attributes:
        problems: what is wrong with the lexical index, one line each
            (:meth:`agentmemory.SqliteStore.check_lexical`); after a rebuild, what is still
            wrong; ``()`` when it is sound or the journal has no lexical index of its own.
        rebuilt: how many entries a rebuild indexed, or ``None`` when there was none.
    """

    problems: tuple[str, ...] = ()
    rebuilt: int | None = None


@dataclass(frozen=True, slots=True)
class StoreCheck:
    """What :func:`check_store` found (and repaired).

    Attributes:
        index: the vector index compared with the journal, after the repair when there was one.
        orphans: keys (``"scope/name"``) of vectors that no journal record names: the journal
            lost records (docs/storage.md#a-journal-shorter-than-its-index); kept by a repair
            unless told to drop them.
        lexical: the lexical index's check (and rebuild).
    """

    index: IndexReport
    orphans: tuple[str, ...]
    lexical: LexicalCheck

    @property
    def ok(self) -> bool:
        """The vector index matches the journal and the lexical index is sound."""
        return self.index.ok and not self.lexical.problems


@dataclass(frozen=True, slots=True)
class ReindexCheck:
    """What :func:`check_reindexed` reports of a store just rebuilt.

    Attributes:
        indexed: vectors the index holds (a Markdown folder: its live entries).
        embedder: the registry name of the embedder that made them (``"none"`` for a Markdown
            folder without vectors).
        lexical: the lexical index's check, rebuilt when it was damaged.
    """

    indexed: int
    embedder: str
    lexical: LexicalCheck


@dataclass(frozen=True, slots=True)
class FolderCheck:
    """What :func:`check_folder` found in a Markdown folder (and repaired).

    Attributes:
        live: entries the folder shows (its entry files, links left out).
        vector_unavailable: why the folder's vector index could not be opened
            (:attr:`FileStore.vector_unavailable`), or ``None``.
        missing: keys of live entries the vector index holds no vector of (``()`` when the
            folder keeps no vectors or they could not be opened).
        pending: keys of entry files a person changed since the journal last recorded them
            (journaled by ``reconcile``, or by the repair).
        reconciled: how many records the repair's ``reconcile`` appended, or ``None`` without a
            repair.
        unjournaled: files the journal cannot hold, left alone, with the reason (a symbolic
            link, an empty file, bad meta: docs/filestore-format.md#links).
    """

    live: int
    vector_unavailable: str | None
    missing: tuple[str, ...]
    pending: tuple[str, ...]
    reconciled: int | None
    unjournaled: tuple[UnjournaledFile, ...]

    @property
    def ok(self) -> bool:
        """The vector index holds every live entry and every file is journaled or journalable."""
        return self.vector_unavailable is None and not self.missing and not self.unjournaled


def check_folder(store: FileStore, *, repair: bool = False) -> FolderCheck:
    """Check the Markdown folder ``store``: the files a person changed and those the journal
    cannot hold (:meth:`FileStore.check_files`), and the live entries without a vector
    (:meth:`FileStore.vectors_missing`). With ``repair``, journal the changed files first
    (:meth:`FileStore.reconcile`, which also indexes them); a damaged ``.vectors`` is the caller's
    to move aside and rebuild (:func:`agentmemory.opening.open_store_moving_damage`), and so are
    vectors still missing after the repair (open again with ``reindex=True``).

    Raises what those methods raise (:class:`~agentmemory.StoreLockedError` when ``repair`` waits
    too long for another writer).
    """
    reconciled: int | None = None
    if repair:
        reconciled = len(store.reconcile().changes)
    files = store.check_files()
    live = sum(len(store.list(scope)) for scope in store.scopes())
    missing = () if store.vector_unavailable else tuple(store.vectors_missing())
    return FolderCheck(
        live,
        store.vector_unavailable,
        missing,
        tuple(files.pending),
        reconciled,
        tuple(files.unjournaled),
    )


def never_journaled(journal: object, keys: Sequence[str]) -> tuple[str, ...]:
    """Those of ``keys`` that no journal record names (:meth:`agentmemory.SqliteStore.never_journaled`);
    ``()`` for a journal without that check or no keys."""
    check = getattr(journal, "never_journaled", None)
    return tuple(check(keys)) if callable(check) and keys else ()


def check_lexical(journal: object, *, repair: bool = False) -> LexicalCheck:
    """Check the lexical index of ``journal`` (:meth:`agentmemory.SqliteStore.check_lexical`,
    which reads the whole file); with ``repair`` and problems found, rebuild it
    (:meth:`~agentmemory.SqliteStore.rebuild_lexical`) and check again. A journal that is not an
    :class:`~agentmemory.SqliteStore` has no lexical index of its own: ``LexicalCheck()``.

    Raises what those methods raise (:class:`~agentmemory.StoreIOError` when the journal's own
    tables are damaged).
    """
    from .stores.sqlite.store import SqliteStore

    if not isinstance(journal, SqliteStore):
        return LexicalCheck()
    problems = journal.check_lexical()
    if not (repair and problems):
        return LexicalCheck(tuple(problems))
    rebuilt = journal.rebuild_lexical()
    return LexicalCheck(tuple(journal.check_lexical()), rebuilt)


def check_store(
    store: ChromaStore, *, repair: bool = False, drop_orphans: bool = False
) -> StoreCheck:
    """Compare ``store``'s vector index with its journal, find the vectors no journal record
    names, and check the lexical index; with ``repair``, fix the vector index
    (:meth:`ChromaStore.repair`, keeping the orphans' vectors unless ``drop_orphans``) and
    rebuild a damaged lexical index (:func:`check_lexical`). ``drop_orphans`` without ``repair``
    does nothing.

    The reads: one :meth:`ChromaStore.verify` (two with ``repair``: the repair checks again),
    one journal lookup per extra key, and the lexical check.

    Raises what :meth:`ChromaStore.verify`, :meth:`ChromaStore.repair` and :func:`check_lexical`
    raise.
    """
    journal = store.journal_store
    report = store.verify()
    orphans = never_journaled(journal, report.extra)
    if repair:
        report = store.repair(keep=() if drop_orphans else orphans)
        orphans = never_journaled(journal, report.extra)
    return StoreCheck(report, orphans, check_lexical(journal, repair=repair))


def check_reindexed(store: ChromaStore | FileStore) -> ReindexCheck:
    """What a store just opened with ``reindex=True`` holds: its vectors (a
    :class:`~agentmemory.ChromaStore`'s count from :meth:`ChromaStore.verify`; a Markdown
    folder's, made again as it opened, one per live entry), its embedder's name, and its lexical
    index, rebuilt when damaged (:func:`check_lexical` with ``repair``).

    Raises what :meth:`ChromaStore.verify` and :func:`check_lexical` raise.
    """
    from .stores.chroma.store import ChromaStore

    if isinstance(store, ChromaStore):
        indexed = store.verify().indexed
        return ReindexCheck(
            indexed, store.embedder.name, check_lexical(store.journal_store, repair=True)
        )
    count = sum(len(store.list(scope)) for scope in store.scopes())
    name = store.embedder.name if store.embedder is not None else "none"
    return ReindexCheck(count, name, LexicalCheck())
