"""What is left of a damaged journal database: ``agentmemory verify`` on a journal whose own pages
are damaged (docs/storage.md#errors-that-are-not-ours).

The journal is the truth and nothing rebuilds it, so a damaged ``journal.sqlite3`` is restored
from a backup. Before that, a person wants to know how bad it is: :func:`inspect_damaged_journal`
reads the file for reading only (``mode=ro``: nothing is written, the folder is left as it is)
and reports sqlite's own ``PRAGMA integrity_check`` (its first lines), how many journal records
read whole in ``seq`` order before the first unreadable page, and whether the entries table reads.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MAX_PROBLEMS", "JournalDamage", "inspect_damaged_journal"]

MAX_PROBLEMS = 5
"""How many of ``integrity_check``'s lines a report keeps."""


@dataclass(frozen=True, slots=True)
class JournalDamage:
    """What :func:`inspect_damaged_journal` found.

    Attributes:
        problems: the first :data:`MAX_PROBLEMS` lines of ``PRAGMA integrity_check`` (or the
            error that stopped it); ``()`` when it says ``ok``.
        records: journal records read whole, in ``seq`` order, before the first unreadable one.
        last_seq: the ``seq`` of the last of them (``None`` for none).
        read_to_end: whether the scan of the journal table reached its end.
        entries: rows of the entries table read before the first unreadable one.
        entries_to_end: whether that scan reached the table's end.
    """

    problems: tuple[str, ...]
    records: int
    last_seq: int | None
    read_to_end: bool
    entries: int
    entries_to_end: bool

    def describe(self) -> str:
        """One line: what reads and what does not."""
        journal = (
            f"all {self.records} journal records read"
            if self.read_to_end
            else f"{self.records} journal records read before the damage"
            + (f" (seq 1 to {self.last_seq})" if self.last_seq is not None else "")
        )
        entries = (
            f"all {self.entries} rows of the entries table read"
            if self.entries_to_end
            else f"the entries table does not read past row {self.entries}"
        )
        found = "; ".join(self.problems) if self.problems else "integrity_check found nothing"
        return f"{journal}; {entries}; sqlite says: {found}"


def inspect_damaged_journal(path: Path) -> JournalDamage:
    """Read the journal database ``path`` for reading only and say what is left of it.

    Raises:
        sqlite3.Error: the file cannot be opened at all.
    """
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        try:
            lines = [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchmany(50)]
            problems = tuple(line for line in lines if line != "ok")[:MAX_PROBLEMS]
        except sqlite3.DatabaseError as err:
            problems = (str(err),)
        records, last, to_end = 0, None, False
        try:
            for (seq,) in conn.execute("SELECT seq FROM memory_journal ORDER BY seq"):
                records, last = records + 1, int(seq)
            to_end = True
        except sqlite3.DatabaseError:
            pass
        entries, entries_to_end = 0, False
        try:  # every column, so the table's own pages are read (a count may read an index)
            for _ in conn.execute("SELECT * FROM memory_entries"):
                entries += 1
            entries_to_end = True
        except sqlite3.DatabaseError:
            pass
        return JournalDamage(problems, records, last, to_end, entries, entries_to_end)
    finally:
        conn.close()
