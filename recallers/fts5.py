"""A BM25 lexical index in an SQLite database (FTS5), written in the caller's own transaction.

Two tables, created by :func:`create_tables` (an sqlite store runs it as a numbered migration):

* ``memory_lexical_docs(id INTEGER PRIMARY KEY, scope, name, UNIQUE (scope, name))``: one row per
  indexed document; ``id`` is the FTS5 rowid.
* ``memory_lexical``: an FTS5 table with one column ``terms``: the document's terms
  (:func:`recallers.document_terms`) joined by spaces. FTS5's ``ascii`` tokenizer with
  ``tokenchars '_-.'''`` splits that text back into exactly those terms (our terms hold no white
  space, and ASCII letters are already case-folded), so FTS5 counts our terms, not its own.

How it stays current: the store calls :meth:`Fts5Index.write` inside the transaction that appends
the journal record, so the index commits or rolls back with the write. A write costs one
tokenization of the entry, one indexed lookup, and one FTS5 delete and insert (about 0.1 ms at 100k
entries here). When :attr:`recallers.Tokenizer.version` differs from the one recorded
(:meth:`Fts5Index.needs_rebuild`), :meth:`Fts5Index.rebuild` re-tokenizes every entry once.

Scoring: FTS5's ``bm25()`` with ``k1 = 1.2`` and ``b = 0.75`` (fixed by SQLite) and an idf floor of
1e-6, the formula of :mod:`recallers.bm25`. A query is the OR of its quoted terms. Corpus
statistics (``N``, ``avgdl``, document frequencies) are those of the whole store, every scope
together, not only of the requested scopes as :class:`recallers.BM25Index` computes them: with one
scope, or scopes of similar text, the two agree.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Generic, TypeVar

from .bm25 import DEFAULT_B, DEFAULT_K1, document_terms
from .protocol import Document
from .tokenizer import DEFAULT_TOKENIZER, Tokenizer

__all__ = ["FTS5_TABLES", "TOKENIZER_STATE_KEY", "Fts5Index", "create_tables", "match_expression"]

FTS5_TABLES: Mapping[str, tuple[str, ...]] = {
    "memory_lexical_docs": ("id", "scope", "name"),
    "memory_lexical": ("terms",),
}
"""The tables :func:`create_tables` makes, with their columns (for a store's migration check)."""

TOKENIZER_STATE_KEY = "lexical.tokenizer"
"""The ``store_state`` key holding the :attr:`Tokenizer.version` the index was built with."""

_FTS5_TOKENIZE = "ascii tokenchars '_-.'''"

D = TypeVar("D")


def create_tables(conn: sqlite3.Connection) -> None:
    """Create the two tables of the index on ``conn`` (inside the caller's transaction). Does
    nothing for a table that exists. Raises ``sqlite3.OperationalError`` when SQLite lacks FTS5."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_lexical_docs ("
        " id INTEGER PRIMARY KEY, scope TEXT NOT NULL, name TEXT NOT NULL,"
        " UNIQUE (scope, name)) STRICT"
    )
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS memory_lexical"
        f' USING fts5(terms, tokenize="{_FTS5_TOKENIZE}")'
    )


def match_expression(terms: Iterable[str]) -> str:
    """The FTS5 query ``"t1" OR "t2" ...`` for ``terms`` (each quoted, ``"`` doubled), ``""`` when
    there are none. Repeats are kept: a repeated term counts twice, as in rank-bm25."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class Fts5Index(Generic[D]):
    """Reads and writes the FTS5 lexical index of one sqlite database.

    It holds no connection: writes take the writer's connection inside its transaction, and
    :meth:`search_text` opens a read through ``read``.

    Args:
        read: returns a context manager that yields a connection to read with (for example the
            store's reader, under its lock).
        load: given that connection, a scope and a name, returns the live document, or ``None``.
        tokenizer: terms for documents and queries (default :data:`DEFAULT_TOKENIZER`).
    """

    k1 = DEFAULT_K1
    """FTS5's ``bm25()`` term-frequency saturation (fixed by SQLite)."""

    b = DEFAULT_B
    """FTS5's ``bm25()`` length normalisation (fixed by SQLite)."""

    def __init__(
        self,
        *,
        read: Callable[[], AbstractContextManager[sqlite3.Connection]],
        load: Callable[[sqlite3.Connection, str, str], D | None],
        tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    ) -> None:
        self._read = read
        self._load = load
        self._tokenizer = tokenizer

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer documents and queries go through."""
        return self._tokenizer

    def needs_rebuild(self, recorded: str | None) -> bool:
        """Whether an index recorded as built with tokenizer version ``recorded`` (``None``:
        never built) must be rebuilt for this index's tokenizer."""
        return recorded != self._tokenizer.version

    def write(self, conn: sqlite3.Connection, scope: str, name: str, doc: Document | None) -> None:
        """Make the index hold ``doc`` under ``(scope, name)``, or nothing when ``doc`` is
        ``None`` (a forget). Run inside the write's transaction on ``conn``; does not commit."""
        row = conn.execute(
            "SELECT id FROM memory_lexical_docs WHERE scope = ? AND name = ?", (scope, name)
        ).fetchone()
        if row is not None:
            conn.execute("DELETE FROM memory_lexical WHERE rowid = ?", (row[0],))
            if doc is None:
                conn.execute("DELETE FROM memory_lexical_docs WHERE id = ?", (row[0],))
                return
            doc_id = int(row[0])
        elif doc is None:
            return
        else:
            cur = conn.execute(
                "INSERT INTO memory_lexical_docs (scope, name) VALUES (?, ?)", (scope, name)
            )
            doc_id = int(cur.lastrowid or 0)
        conn.execute(
            "INSERT INTO memory_lexical (rowid, terms) VALUES (?, ?)",
            (doc_id, " ".join(document_terms(doc, self._tokenizer))),
        )

    def rebuild(self, conn: sqlite3.Connection, docs: Iterable[Document]) -> int:
        """Empty the index and index every document of ``docs``, inside the caller's transaction
        on ``conn``; return how many were indexed. The caller records the new tokenizer version
        (``store_state[TOKENIZER_STATE_KEY] = tokenizer.version``) in the same transaction."""
        conn.execute("DELETE FROM memory_lexical")
        conn.execute("DELETE FROM memory_lexical_docs")
        n = 0
        for doc in docs:
            cur = conn.execute(
                "INSERT INTO memory_lexical_docs (scope, name) VALUES (?, ?)", (doc.scope, doc.name)
            )
            conn.execute(
                "INSERT INTO memory_lexical (rowid, terms) VALUES (?, ?)",
                (cur.lastrowid, " ".join(document_terms(doc, self._tokenizer))),
            )
            n += 1
        return n

    def search_keys(
        self, conn: sqlite3.Connection, terms: Sequence[str], *, scopes: Sequence[str], limit: int
    ) -> list[tuple[str, str, float]]:
        """At most ``limit`` ``(scope, name, BM25 score)`` of ``scopes`` holding any of
        ``terms``, best first; ties by the order of ``scopes``, then name (byte order)."""
        wanted = list(dict.fromkeys(scopes))
        if limit < 1 or not terms or not wanted:
            return []
        marks = ", ".join("?" * len(wanted))
        order = " ".join(f"WHEN ? THEN {i}" for i in range(len(wanted)))
        rows = conn.execute(
            "SELECT d.scope, d.name, -f.rank AS score FROM memory_lexical AS f"
            " JOIN memory_lexical_docs AS d ON d.id = f.rowid"
            f" WHERE memory_lexical MATCH ? AND d.scope IN ({marks})"
            f" ORDER BY f.rank, CASE d.scope {order} END, CAST(d.name AS BLOB) LIMIT ?",
            (match_expression(terms), *wanted, *wanted, limit),
        ).fetchall()
        return [(str(s), str(n), float(score)) for s, n, score in rows if score > 0]

    def search_text(
        self, query: str, *, scopes: Sequence[str], limit: int
    ) -> list[tuple[D, float]]:
        """At most ``limit`` ``(document, BM25 score)`` pairs of ``scopes``, best first, read in
        one snapshot (a document forgotten meanwhile is never returned). ``[]`` when the query
        has no term (only stopwords or punctuation) or ``limit < 1``."""
        terms = self._tokenizer(query)
        if limit < 1 or not terms or not scopes:
            return []
        with self._read() as conn:
            conn.execute("BEGIN")
            try:
                keys = self.search_keys(conn, terms, scopes=scopes, limit=limit)
                out: list[tuple[D, float]] = []
                for scope, name, score in keys:
                    doc = self._load(conn, scope, name)
                    if doc is not None:
                        out.append((doc, score))
            finally:
                conn.execute("COMMIT")
        return out
