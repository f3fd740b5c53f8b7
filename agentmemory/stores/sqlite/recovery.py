"""SqliteStore's damage detection and recovery: a cut file, a read-only file, a damaged
lexical index, and the checks and the rebuild of ``verify --repair``.

docs/storage.md#a-cut-journal-file, docs/storage.md#a-read-only-store and
docs/storage.md#a-damaged-lexical-index say what each case does.
"""

from __future__ import annotations

import builtins
import logging
import os
import sqlite3
import time
import warnings
from collections.abc import Sequence
from contextlib import suppress

from agentmemory.errors import (
    AgentMemoryError,
    IndexDamagedError,
    IndexDamagedWarning,
    StoreIOError,
)
from agentmemory.stores.space import out_of_space

from .core import row_entry
from .faults import (
    JOURNAL_CUT_KEY,
    LEXICAL_DAMAGE_KEY,
    is_busy,
    is_damage,
    missing_pages,
)
from .lexicon import (
    DOC_FREQ_TABLES,
    FTS5_TABLES,
    TOKENIZER_STATE_KEY,
    create_doc_freq_table,
    create_tables,
    doc_freq_problems,
)
from .migrations import SchemaSteps

__all__ = ["JOURNAL_TABLES", "Recovery"]

logger = logging.getLogger("agentmemory.stores.sqlite.store")

JOURNAL_TABLES = ("store_schema", "memory_entries", "memory_journal", "store_state")
"""The tables that hold the journal's own data; the rest of the file (the lexical tables and every
index) is derived from them and rebuilt by :meth:`SqliteStore.rebuild_lexical`."""


class Recovery(SchemaSteps):
    """Opening a file that is cut short or may not be written, recording a damaged lexical
    index, and checking and rebuilding it (a part of ``SqliteStore``)."""

    # -- opening a cut or read-only file -----------------------------------------------------

    def _open_read_only(self) -> bool:
        """Open an existing journal that may not be written (a read-only folder or file) for
        reading: both connections ``mode=ro`` (``immutable=1`` when sqlite cannot even share
        the WAL index read-only). Writes then fail with :class:`StoreIOError` ``"read-only"``
        (docs/storage.md#a-read-only-store). A cut file (fewer pages than its header counts),
        which cannot be padded here, is read with ``PRAGMA writable_schema`` on, the one way
        sqlite opens it (docs/storage.md#a-cut-journal-file). ``False`` when the file is
        missing, writable, or not readable as a journal of ours this way. A journal on a full
        disk (no room for its WAL index) is read the same way, and its writes fail with
        :class:`StoreFullError` (docs/storage.md#a-full-disk)."""
        if not self._path.is_file():
            return False
        if self._writable() and not out_of_space(self._path.parent):
            return False
        for flags in ("mode=ro", "mode=ro&immutable=1"):
            uri = f"{self._path.resolve().as_uri()}?{flags}"
            try:
                writer = sqlite3.connect(
                    uri, uri=True, isolation_level=None, check_same_thread=False
                )
                reader = sqlite3.connect(
                    uri, uri=True, isolation_level=None, check_same_thread=False
                )
                missing, _, pages = missing_pages(self._path)
                if missing:  # a cut file it may not pad: read what is left
                    for conn in (writer, reader):
                        conn.execute("PRAGMA writable_schema = ON")
                    self._cut_found = (
                        f"{self._path.name} is {missing} of its header's {pages} pages short "
                        "(a cut file), read as it is"
                    )
                applied = self._applied(reader)
            except sqlite3.Error:
                continue
            if applied is None or self._pending(applied):
                writer.close()
                reader.close()
                return False
            self._writer, self._reader = writer, reader
            self._read_only = True
            return True
        return False

    def _writable(self) -> bool:
        """Whether a file can be made next to the journal (its WAL index needs one)."""
        probe = self._path.with_name(f".{self._path.name}.write-probe-{os.getpid()}")
        try:
            probe.touch()
        except OSError:
            return False
        with suppress(OSError):
            probe.unlink()
        return os.access(self._path, os.W_OK) and self._try_write_open()

    def _try_write_open(self) -> bool:
        try:
            with self._path.open("r+b"):
                return True
        except OSError:
            return False

    def _configure(self) -> None:
        # The busy timeout is set first (in _connect), then WAL, as the Go store does. Changing
        # the journal mode of a fresh file needs a lock another opener may hold: retry until the
        # busy timeout is spent.
        deadline = time.monotonic() + self._timeout_s
        pause = 0.01
        while True:
            try:
                self._writer.execute("PRAGMA journal_mode = WAL").fetchall()
                self._writer.execute("PRAGMA synchronous = NORMAL")
                return
            except sqlite3.DatabaseError as err:
                if isinstance(err, sqlite3.OperationalError) and is_busy(err):
                    if time.monotonic() >= deadline:
                        raise self._locked(err) from err
                    time.sleep(pause)
                    pause = min(pause * 2, 0.25)
                    continue
                if is_damage(err) and self._restore_cut_length():
                    continue  # the writer was reconnected to the file at its header's length
                raise self._unreadable(err) from err

    def _restore_cut_length(self) -> bool:
        """Give back to a file cut short (fewer pages than its header counts) its length, with
        zero bytes, and reconnect the writer; ``True`` when done. ``False`` (nothing changed)
        when the file is not cut or may not be written.

        sqlite refuses such a file at open (SQLITE_CORRUPT), but reads a page lost from a file
        cut mid-page as zeros, a page it then reports damaged when a query reaches it. Padding
        to the header's length gives every lost page that treatment, and nothing already in the
        file is changed; new pages go after the header's count, so none is given two owners
        (docs/storage.md#a-cut-journal-file).
        """
        missing, size, pages = missing_pages(self._path)
        if not missing:
            return False
        try:
            with self._path.open("r+b") as f:
                f.truncate(size * pages)
        except OSError:
            return False
        self._writer.close()
        self._writer = self._connect()
        self._cut = (
            f"{self._path.name} was {missing} page{'s' if missing > 1 else ''} "
            f"({missing * size} bytes) shorter than its header's {pages} pages (a cut file); "
            "opening gave it back its length in zero bytes"
        )
        return True

    # -- the lexical index damaged, the journal's tables checked -----------------------------

    def _mark_lexicon_damaged(self, err: sqlite3.Error) -> None:
        """Record, in a transaction of its own, that the lexical index is damaged, and warn."""
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO store_state (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (LEXICAL_DAMAGE_KEY, str(err)),
            )
        warnings.warn(
            IndexDamagedWarning(
                f"agentmemory: the lexical index of store {self._path.parent} is damaged ({err}); "
                "the write is in the journal, search misses it: run 'agentmemory verify --repair "
                f"--path {self._path.parent}' to rebuild the index"
            ),
            stacklevel=4,
        )

    def check_journal(self) -> builtins.list[str]:
        """What is wrong with the journal's own tables (:data:`JOURNAL_TABLES`), one line each;
        ``[]`` when each reads whole.

        Reads every row and every value of each table by its own b-tree (never an index), so a
        page lost or garbled anywhere in them is met: ``memory_journal`` in ``seq`` order, saying
        how many records were read before the damage (``"memory_journal: database disk image is
        malformed after 260 records (seq 260)"``). The indexes and the lexical tables are
        derived from these and not read here (docs/storage.md#a-cut-journal-file). Changes
        nothing; reads the whole journal.
        """
        problems: builtins.list[str] = []
        with self._rlock:
            self._check_open()
            conn = self._reader
            for table in JOURNAL_TABLES:
                if table == "memory_journal":
                    continue  # read below, in seq order
                try:
                    columns = " + ".join(f"length({c})" for c in self._table_columns(conn, table))
                    conn.execute(f"SELECT total({columns or 0}) FROM {table}").fetchall()
                except sqlite3.DatabaseError as err:
                    problems.append(f"{table}: {err}")
            read, last = 0, 0
            try:
                rows = conn.execute(
                    "SELECT seq, length(scope) + length(name) + length(line) FROM memory_journal"
                    " ORDER BY seq"
                )
                for seq, _ in rows:
                    read, last = read + 1, int(seq)
            except sqlite3.DatabaseError as err:
                problems.append(f"memory_journal: {err} after {read} records (seq {last})")
        return problems

    def _record_cut(self, note: str) -> None:
        """After :meth:`_restore_cut_length`: record the cut under :data:`JOURNAL_CUT_KEY`, mark
        the lexical index damaged (its lost pages cannot be told from the journal's without
        reading them, and it is rebuilt from the journal in any case), and log one line with
        the cure: ``verify --repair`` when the journal's tables read whole, a backup when not."""
        folder = self._path.parent
        problems = self.check_journal()
        found = note
        if problems:
            found += f"; the journal's own tables lost pages too ({'; '.join(problems)})"
        self._cut_found = found
        try:
            with self._transaction() as conn:
                self._put_state(conn, JOURNAL_CUT_KEY, found)
                self._put_state(conn, LEXICAL_DAMAGE_KEY, note)
        except AgentMemoryError as err:
            problems.append(f"recording the cut failed ({err})")
        if problems:
            logger.warning(
                "agentmemory: store %s: %s; the journal's own tables lost pages too (%s): "
                "copy the folder aside, run 'agentmemory verify' on the copy to see what is "
                "left, or restore the folder from a backup",
                folder,
                note,
                "; ".join(problems),
            )
        else:
            logger.warning(
                "agentmemory: store %s: %s; the journal's tables read whole, the lexical index "
                "is rebuilt from them by 'agentmemory verify --repair --path %s'",
                folder,
                note,
                folder,
            )

    @staticmethod
    def _quick_check(conn: sqlite3.Connection, rows: int) -> builtins.list[str]:
        """``PRAGMA quick_check(rows)``'s lines; ``["ok"]`` when the file is sound. sqlite may
        raise instead of (or after) lines (a page it cannot read): the error is then the last
        line."""
        found: builtins.list[str] = []
        try:
            for (line,) in conn.execute(f"PRAGMA quick_check({int(rows)})"):
                found.append(str(line))
        except sqlite3.DatabaseError as err:
            found.append(str(err))
        return found

    def check_lexical(self) -> builtins.list[str]:
        """What is wrong with the lexical index, one line each; ``[]`` when it is sound.

        First reads the journal's own tables (:meth:`check_journal`): the lexical index is
        rebuilt from them, so when they are damaged no verdict on it helps. Then runs sqlite's
        ``PRAGMA quick_check`` on the file and FTS5's ``integrity-check`` command on the index,
        compares the indexed count with the live entries and each term's document frequency
        (``memory_lexical_df``) with FTS5's own count, and reports a damage a write or an open
        recorded (``docs/storage.md#a-damaged-lexical-index``). Reads the whole file. Changes
        nothing.

        Raises:
            StoreIOError: ``kind`` ``"damaged"``: a table of the journal's own cannot be read
                (the message names it and the cure: a backup).
        """
        journal = self.check_journal()
        if journal:
            raise self._journal_damaged(journal)
        problems: builtins.list[str] = []
        cut = self.get_state(JOURNAL_CUT_KEY)
        damaged = self.get_state(LEXICAL_DAMAGE_KEY)
        if cut is not None:
            problems.append(cut)
        if damaged is not None and damaged != cut:
            problems.append(f"a write found the lexical index damaged ({damaged})")
        with self._read() as conn:
            rows = self._quick_check(conn, 5)
            if rows != ["ok"]:
                problems.append("sqlite quick_check: " + "; ".join(rows))
            try:
                conn.execute(
                    "INSERT INTO memory_lexical (memory_lexical, rank) VALUES ('integrity-check', 1)"
                )
            except sqlite3.DatabaseError as err:
                problems.append(f"FTS5 integrity-check: {err}")
            try:
                (docs,) = conn.execute("SELECT count(*) FROM memory_lexical_docs").fetchone()
                (live,) = conn.execute("SELECT count(*) FROM memory_entries").fetchone()
                if docs != live:
                    problems.append(f"the index holds {docs} entries, the store {live}")
            except sqlite3.DatabaseError as err:
                problems.append(f"counting the indexed entries: {err}")
            try:
                problems.extend(doc_freq_problems(conn))
            except sqlite3.DatabaseError as err:
                problems.append(f"comparing the document frequencies with the index: {err}")
        return problems

    def _journal_damaged(self, problems: Sequence[str]) -> StoreIOError:
        """The one-line :class:`StoreIOError` ``"damaged"`` for :meth:`check_journal`'s lines,
        led by the cut an open recorded, if any."""
        cut = None
        with suppress(AgentMemoryError):
            cut = self.get_state(JOURNAL_CUT_KEY)
        detail = "; ".join([*([cut] if cut else []), *problems])
        return StoreIOError(str(self._path.parent), "damaged", detail)

    def rebuild_lexical(self) -> int:
        """Drop the lexical index (derived data) and rebuild it from the live entries; returns
        how many were indexed. Clears a recorded damage.

        When the index's tables cannot be dropped (their pages are damaged), their schema rows
        are removed (``PRAGMA writable_schema``) and the file is rebuilt by ``VACUUM``, which
        copies only the tables still named and builds every index anew from its table, so no
        damaged page survives; so it is too when ``quick_check`` still finds damage after the
        drop (a page of an index, a cut file) (``docs/storage.md#a-damaged-lexical-index``).
        A cut recorded at open is cleared once the file checks sound. Blocks other writers
        meanwhile.

        Raises:
            StoreLockedError: another writer held the file past the busy timeout.
            StoreIOError: ``kind`` ``"damaged"``: a table of the journal's own cannot be read
                (:meth:`check_journal`); nothing is changed, the cure is a backup.
            IndexDamagedError: ``VACUUM`` failed on what is left.
        """
        journal = self.check_journal()
        if journal:
            raise self._journal_damaged(journal)
        tables = (*FTS5_TABLES, *DOC_FREQ_TABLES)
        with self._wlock:
            try:
                with self._transaction() as conn:
                    for t in tables:
                        conn.execute(f"DROP TABLE IF EXISTS {t}")
            except StoreIOError as err:
                if err.kind != "damaged":
                    raise
                self._drop_by_schema()
            else:
                with self._rlock:
                    sound = self._quick_check(self._writer, 1) == ["ok"]
                if not sound:
                    self._vacuum()
            with self._transaction() as conn:
                create_tables(conn)
                create_doc_freq_table(conn)
                rows = conn.execute(
                    "SELECT scope, name, content, meta, hash, updated FROM memory_entries"
                ).fetchall()
                n = self._lexicon.rebuild(conn, (row_entry(*r) for r in rows))
                conn.execute(
                    "INSERT INTO store_state (key, value) VALUES (?, ?)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (TOKENIZER_STATE_KEY, self._lexicon.tokenizer.version),
                )
                conn.execute("DELETE FROM store_state WHERE key = ?", (LEXICAL_DAMAGE_KEY,))
                if self._quick_check(conn, 1) == ["ok"]:
                    conn.execute("DELETE FROM store_state WHERE key = ?", (JOURNAL_CUT_KEY,))
        return n

    def _drop_by_schema(self) -> None:
        """Remove the lexical tables' schema rows and ``VACUUM`` the damaged pages away."""
        conn = self._writer
        names = [
            "memory_lexical",
            *(f"memory_lexical_{s}" for s in ("data", "idx", "content", "docsize", "config")),
            "memory_lexical_docs",
            *DOC_FREQ_TABLES,
        ]
        marks = ", ".join("?" * len(names))
        conn.execute("PRAGMA writable_schema = ON")
        try:
            with self._transaction() as txn:
                txn.execute(
                    f"DELETE FROM sqlite_master WHERE name IN ({marks}) OR tbl_name IN ({marks})",
                    (*names, *names),
                )
        finally:
            conn.execute("PRAGMA writable_schema = OFF")
        self._vacuum()

    def _vacuum(self) -> None:
        """``VACUUM`` the file: every table still named is copied and every index built anew
        from its table, so no damaged page of an index or a dropped table survives."""
        conn = self._writer
        with self._rlock:  # VACUUM needs no other statement open on this file from us
            try:
                conn.execute("VACUUM")
            except sqlite3.DatabaseError as err:
                raise IndexDamagedError(
                    str(self._path.parent), "lexical", f"VACUUM failed: {err}"
                ) from err
