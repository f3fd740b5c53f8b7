"""What an sqlite failure means, and what a file's header says (for SqliteStore).

Pure helpers on ``sqlite3`` errors and on the 100-byte database header; no connection is kept.
The ``store_state`` keys of recorded damage live here so the schema steps, the write path and
the repairs name them the same (docs/storage.md#a-damaged-lexical-index,
docs/storage.md#a-cut-journal-file).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = [
    "JOURNAL_CUT_KEY",
    "LEXICAL_DAMAGE_KEY",
    "SQLITE_MAGIC",
    "header_pages",
    "is_busy",
    "is_damage",
    "missing_pages",
]

LEXICAL_DAMAGE_KEY = "lexical.damaged"
"""The ``store_state`` key a write sets (to the database's message) when it found the lexical
index damaged, and an open sets when it found the file cut; :meth:`SqliteStore.rebuild_lexical`
clears it (``docs/storage.md#a-damaged-lexical-index``)."""


JOURNAL_CUT_KEY = "journal.cut"
"""The ``store_state`` key an open sets (to what it found) when the file was shorter than its
header says; :meth:`SqliteStore.rebuild_lexical` clears it once the file is rewritten and sound
(``docs/storage.md#a-cut-journal-file``)."""


SQLITE_MAGIC = b"SQLite format 3\x00"
"""The first 16 bytes of every sqlite database file (https://sqlite.org/fileformat2.html,
section 1.3, "The Database Header")."""


def is_busy(err: sqlite3.Error) -> bool:
    code = getattr(err, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    text = str(err).lower()
    return "locked" in text or "busy" in text


def is_damage(err: sqlite3.Error) -> bool:
    """Whether ``err`` says the file's pages are damaged (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``,
    or a virtual table whose pages cannot be read), not busy, full or read-only."""
    code = getattr(err, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return True
    text = str(err).lower()
    return "malformed" in text or "vtable constructor failed" in text


class _LexiconDamaged(Exception):
    """Raised inside a write transaction when the lexical index's pages are damaged; the write
    is rolled back, the damage recorded, and the write made again without the index."""

    def __init__(self, err: sqlite3.Error) -> None:
        super().__init__(str(err))
        self.err = err


def header_pages(path: Path) -> tuple[int, int] | None:
    """The page size (bytes) and page count the database header of ``path`` records, or ``None``
    when the file is not an sqlite database or its header's count is not valid.

    Read from the 100-byte header (https://sqlite.org/fileformat2.html, section 1.3): the page
    size at offset 16 (2 bytes, big-endian; 1 means 65536), the change counter at 24, the
    "in-header database size" at 28 and the "version-valid-for number" at 92 (4 bytes each).
    The count is valid only when nonzero and the two numbers agree; sqlite otherwise sizes the
    database by the file. Nothing past the header is read.
    """
    try:
        with path.open("rb") as f:
            head = f.read(100)
    except OSError:
        return None
    if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
        return None
    size = int.from_bytes(head[16:18], "big")
    size = 65536 if size == 1 else size
    changed, pages, valid_for = (int.from_bytes(head[i : i + 4], "big") for i in (24, 28, 92))
    if size < 512 or size & (size - 1) or pages == 0 or changed != valid_for:
        return None
    return size, pages


def missing_pages(path: Path) -> tuple[int, int, int]:
    """``(missing, page_size, header_pages)``: how many whole or partial pages the file lacks
    against the page count its header records (0 when none, or when the header has no valid
    count). sqlite refuses to open such a file ("database disk image is malformed") unless the
    schema is writable (docs/storage.md#a-cut-journal-file)."""
    found = header_pages(path)
    if found is None:
        return 0, 0, 0
    size, pages = found
    try:
        length = path.stat().st_size
    except OSError:
        return 0, 0, 0
    held = -(-length // size)  # a partial last page is read (short reads give zeros)
    return max(pages - held, 0), size, pages
