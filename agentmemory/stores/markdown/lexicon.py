"""FileStore's lexical index: a :class:`recallers.BM25Index` in memory, built from the entry files
on first use, following this handle's writes and the records other handles append to the journal
(the lexical leg of recall, docs/recall.md).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from agentmemory.entries import Change, Entry
from agentmemory.rules import check_scope
from recallers import BM25Index

from .files import FolderFiles
from .journal_file import scan_journal

__all__ = ["FolderLexicon"]


class FolderLexicon(FolderFiles):
    """The in-memory BM25 index and ``search_text`` (a part of ``FileStore``)."""

    def _follow(self, changes: builtins.list[Change], start: int, off: int) -> None:
        """Apply this handle's own records, appended at byte ``start``, to the BM25 index when
        it is built and has followed the journal that far; otherwise the next search reads them
        from the journal."""
        with self._lexicon_lock:
            if self._lexicon_off is None or self._lexicon_off != start:
                return
            for c in changes:
                if c.entry.deleted:
                    self._lexicon.remove(c.entry.scope, c.entry.name)
                else:
                    self._lexicon.put(c.entry)
            self._lexicon_off = off

    def _current_lexicon(self) -> BM25Index[Entry]:
        """The BM25 index, built from the entry files on first use and brought up to date with
        records other handles appended since (read from the journal, not the files)."""
        if self._lexicon_off is None:
            self._lexicon.clear()
            try:
                off = self.journal_path.stat().st_size
            except FileNotFoundError:
                off = 0
            for scope in self._scopes():
                for e in self._read_scope(scope):
                    self._lexicon.put(e)
            self._lexicon_off = off
            return self._lexicon
        try:
            size = self.journal_path.stat().st_size
        except FileNotFoundError:
            size = 0
        if size > self._lexicon_off:
            for _, end, item in scan_journal(self.journal_path, self._lexicon_off):
                if isinstance(item, Change):
                    if item.entry.deleted:
                        self._lexicon.remove(item.entry.scope, item.entry.name)
                    else:
                        self._lexicon.put(item.entry)
                self._lexicon_off = end
        return self._lexicon

    def search_text(
        self, query: str, *, scopes: Sequence[str], limit: int
    ) -> builtins.list[tuple[Entry, float]]:
        """The lexical leg: at most ``limit`` ``(entry, BM25 score)`` pairs of ``scopes``, best
        first, every score above 0.

        The index (:class:`recallers.BM25Index`, in memory) is built from the entry files on
        first use, follows this handle's writes and reconciles, and reads the records other
        handles or processes appended from the journal before each search. A person's edit is
        seen after the next write (to any entry) or :meth:`reconcile`.

        Raises :class:`~agentmemory.InvalidEntryError` for a scope that is not kebab-case.
        """
        for s in scopes:
            check_scope(s)
        self._check_open()
        with self._lexicon_lock:
            found = self._current_lexicon().search_text(query, scopes=scopes, limit=limit)
            return [(e.copy(), score) for e, score in found]
