"""A BM25 lexical index in an SQLite database (FTS5), written in the caller's own transaction.

Three tables, created by :func:`create_tables` and :func:`create_doc_freq_table` (an sqlite store
runs them as numbered migrations):

* ``memory_lexical_docs(id INTEGER PRIMARY KEY, scope, name, UNIQUE (scope, name))``: one row per
  indexed document; ``id`` is the FTS5 rowid.
* ``memory_lexical``: an FTS5 table with one column ``terms``: the document's terms
  (:func:`recallers.document_terms`) joined by spaces. FTS5's ``ascii`` tokenizer with
  ``tokenchars '_-.'''`` splits that text back into exactly those terms (our terms hold no white
  space, and ASCII letters are already case-folded), so FTS5 counts our terms, not its own.
* ``memory_lexical_df(term TEXT PRIMARY KEY, docs INTEGER) WITHOUT ROWID``: each term's document
  frequency, how many indexed documents hold it (terms no document holds have no row). FTS5 can
  only count it by walking the term's postings (its ``fts5vocab`` table), so a search reads it
  here instead, one b-tree lookup per term (``docs/recall.md#the-lexical-querys-cost``). It
  always equals ``fts5vocab``'s ``row`` counts: it is written in the same transaction as the
  FTS5 row, and rebuilt with it.

How it stays current: the store calls :meth:`Fts5Index.write` inside the transaction that appends
the journal record, so the index commits or rolls back with the write. A write costs one
tokenization of the entry, two indexed lookups (the document's id and the terms it held), one FTS5
delete and insert, and one ``memory_lexical_df`` upsert per distinct term it gains or loses. When
:attr:`recallers.Tokenizer.version` differs from the one recorded (:meth:`Fts5Index.needs_rebuild`),
:meth:`Fts5Index.rebuild` re-tokenizes every entry once.

Scoring: FTS5's ``bm25()`` with ``k1 = 1.2`` and ``b = 0.75`` (fixed by SQLite) and an idf floor of
1e-6, the formula of :mod:`recallers.bm25`. A query is the OR of its quoted distinct terms, a term
repeated as often as its weight (:func:`recallers.query_terms`: the query is capped at
``MAX_QUERY_BYTES`` and ``MAX_QUERY_TERMS``), and FTS5 ranks only the rarest of them up to
:data:`RANKED_POSTINGS` postings, the others' scores added to their candidates, read as deep as a
MaxScore bound needs (``docs/recall.md#the-lexical-querys-cost``). Corpus statistics (``N`` and
``avgdl`` from FTS5's own averages record, document frequencies from ``memory_lexical_df``) are
those of the whole store, every scope together, not only of the requested scopes as
:class:`recallers.BM25Index` computes them: with one scope, or scopes of similar text, the two
agree.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Generic, TypeVar

from agentmemory.stores.lexicon_state import TOKENIZER_STATE_KEY, TokenizedIndex
from recallers.bm25 import DEFAULT_B, DEFAULT_K1, bm25_idf, document_terms
from recallers.lexical_query import query_terms
from recallers.protocol import Document
from recallers.tokenizer import DEFAULT_TOKENIZER, Tokenizer

__all__ = [
    "COMMON_TERM_CANDIDATES",
    "DEEPEST_RANKED_READ",
    "DOC_FREQ_TABLES",
    "FTS5_TABLES",
    "RANKED_POSTINGS",
    "TOKENIZER_STATE_KEY",
    "Fts5Index",
    "create_doc_freq_table",
    "create_tables",
    "doc_freq_problems",
    "fill_doc_freqs",
    "match_expression",
]

FTS5_TABLES: Mapping[str, tuple[str, ...]] = {
    "memory_lexical_docs": ("id", "scope", "name"),
    "memory_lexical": ("terms",),
}
"""The tables :func:`create_tables` makes, with their columns (for a store's migration check)."""

DOC_FREQ_TABLES: Mapping[str, tuple[str, ...]] = {"memory_lexical_df": ("term", "docs")}
"""The table :func:`create_doc_freq_table` makes, with its columns (for a store's migration
check): each term's document frequency."""

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


def create_doc_freq_table(conn: sqlite3.Connection) -> None:
    """Create ``memory_lexical_df(term TEXT PRIMARY KEY, docs INTEGER NOT NULL) WITHOUT ROWID``
    on ``conn`` (inside the caller's transaction), empty; does nothing when it exists. Fill it
    with :func:`fill_doc_freqs` when the FTS5 table already holds documents."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_lexical_df ("
        " term TEXT PRIMARY KEY, docs INTEGER NOT NULL) STRICT, WITHOUT ROWID"
    )


def _vocab(conn: sqlite3.Connection) -> str:
    """The name of an ``fts5vocab`` ``row`` table over ``memory_lexical`` (term, doc, cnt), made
    in the connection's ``temp`` schema on first use. Reading it walks the postings."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_lexical_vocab"
        " USING fts5vocab(main, memory_lexical, row)"
    )
    return "temp.memory_lexical_vocab"


def fill_doc_freqs(conn: sqlite3.Connection) -> int:
    """Make ``memory_lexical_df`` hold the document frequency of every term of the FTS5 table,
    counted by FTS5 itself (``fts5vocab``'s ``row`` table walks every posting once), inside the
    caller's transaction; returns how many terms.
    Raises ``sqlite3.DatabaseError`` when the FTS5 table's pages are damaged."""
    conn.execute("DELETE FROM memory_lexical_df")
    cur = conn.execute(
        f"INSERT INTO memory_lexical_df (term, docs) SELECT term, doc FROM {_vocab(conn)}"
        " WHERE doc > 0"
    )
    return int(cur.rowcount)


def doc_freq_problems(conn: sqlite3.Connection) -> list[str]:
    """How ``memory_lexical_df`` disagrees with the document frequencies FTS5 counts
    (``fts5vocab``), one line; ``[]`` when it holds exactly FTS5's terms with FTS5's counts.
    Walks every posting once. Raises ``sqlite3.DatabaseError`` when a table's pages are
    damaged."""
    vocab = _vocab(conn)
    indexed, same = conn.execute(
        f"SELECT count(*), total(d.docs = v.doc) FROM {vocab} AS v"
        " LEFT JOIN memory_lexical_df AS d ON d.term = v.term WHERE v.doc > 0"
    ).fetchone()
    indexed, same = int(indexed), int(same)
    (kept,) = conn.execute("SELECT count(*) FROM memory_lexical_df").fetchone()
    if same == indexed == kept:
        return []
    example = conn.execute(
        f"SELECT v.term, v.doc, d.docs FROM {vocab} AS v LEFT JOIN memory_lexical_df AS d"
        " ON d.term = v.term WHERE v.doc > 0 AND d.docs IS NOT v.doc LIMIT 1"
    ).fetchone()
    if example is None:
        example = conn.execute(
            f"SELECT d.term, NULL, d.docs FROM memory_lexical_df AS d WHERE NOT EXISTS"
            f" (SELECT 1 FROM {vocab} AS v WHERE v.term = d.term AND v.doc > 0) LIMIT 1"
        ).fetchone()
    term, counted, held = example if example is not None else ("?", None, None)
    return [
        f"the document frequency table (memory_lexical_df) disagrees with the index: it holds "
        f"{kept} terms, {same} of them as FTS5 counts them, of the index's {indexed} (for "
        f"example {term!r}: {held or 0} in the table, {counted or 0} in the index)"
    ]


RANKED_POSTINGS = 20_000
"""How many postings (entries holding a term, times the term's weight) FTS5 ranks for one query,
at most: its ``bm25()`` scores every entry holding any term of the match expression, so its cost
grows with their postings (figures in ``docs/recall.md#the-lexical-querys-cost``). The rarest
terms go into the ranked expression until this budget is spent (``docs/recall.md#the-lexical-querys-cost``)."""

COMMON_TERM_CANDIDATES = 1_000
"""How many entries a query's terms beyond :data:`RANKED_POSTINGS` may add as candidates of their
own (the entries indexed last, by index row id), when the ranked terms cannot fill the limit with
scores above what those terms alone could give (``docs/recall.md#the-lexical-querys-cost``)."""

DEEPEST_RANKED_READ = 1_000
"""How deep the candidates of the ranked (rarer) terms are read, at most, when a query also has
terms past :data:`RANKED_POSTINGS`: the read starts at ``2 * limit + 20`` and goes 8 times deeper
while the MaxScore bound cannot yet prove the top ``limit`` exact."""


def match_expression(terms: Iterable[str]) -> str:
    """The FTS5 query ``"t1" OR "t2" ...`` for ``terms`` (each quoted, ``"`` doubled), ``""`` when
    there are none. Repeats are kept: a repeated term counts twice in ``bm25()``, as in rank-bm25
    (pass a term ``weight`` times to weigh it so)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _varints(blob: bytes) -> list[int]:
    """The SQLite varints (big-endian 7-bit groups, a ninth byte of 8 bits) packed in ``blob``."""
    out: list[int] = []
    i = 0
    while i < len(blob):
        value = 0
        for j in range(9):
            byte = blob[i]
            i += 1
            if j == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        out.append(value)
    return out


def _index_state(conn: sqlite3.Connection) -> tuple[int, float]:
    """``(N, avgdl)`` of the index as FTS5's ``bm25()`` reads them: its averages record, row 1 of
    ``memory_lexical_data`` (the row count, then the total tokens of the one column; SQLite's
    ``fts5_index.c``, ``FTS5_AVERAGES_ROWID``); ``(0, 0.0)`` for an empty index."""
    row = conn.execute("SELECT block FROM memory_lexical_data WHERE id = 1").fetchone()
    numbers = _varints(bytes(row[0] or b"") if row is not None else b"")
    if len(numbers) < 2 or numbers[0] == 0:
        return 0, 0.0
    return numbers[0], max(numbers[1], 1) / numbers[0]


def _doc_freqs(conn: sqlite3.Connection, terms: Iterable[str]) -> dict[str, int]:
    """How many documents hold each of ``terms`` (``memory_lexical_df``: one b-tree lookup per
    term); a term no document holds is left out."""
    wanted = list(dict.fromkeys(terms))
    if not wanted:
        return {}
    rows = conn.execute(
        f"SELECT term, docs FROM memory_lexical_df WHERE term IN ({', '.join('?' * len(wanted))})",
        wanted,
    ).fetchall()
    return {str(t): int(d) for t, d in rows if d > 0}


def _count_docs(conn: sqlite3.Connection, gone: set[str], added: set[str]) -> None:
    """Move ``memory_lexical_df`` by one document that held the terms ``gone`` and now holds
    ``added`` (either may be empty): +1 for each term only in ``added``, -1 for each only in
    ``gone`` (its row deleted at 0); terms in both are untouched."""
    up = sorted(added - gone)
    down = sorted(gone - added)
    if up:
        conn.executemany(
            "INSERT INTO memory_lexical_df (term, docs) VALUES (?, 1)"
            " ON CONFLICT (term) DO UPDATE SET docs = docs + 1",
            ((t,) for t in up),
        )
    if down:
        conn.executemany(
            "DELETE FROM memory_lexical_df WHERE term = ? AND docs <= 1", ((t,) for t in down)
        )
        conn.executemany(
            "UPDATE memory_lexical_df SET docs = docs - 1 WHERE term = ?", ((t,) for t in down)
        )


class Fts5Index(TokenizedIndex, Generic[D]):
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

    def write(self, conn: sqlite3.Connection, scope: str, name: str, doc: Document | None) -> None:
        """Make the index hold ``doc`` under ``(scope, name)``, or nothing when ``doc`` is
        ``None`` (a forget), and move ``memory_lexical_df`` by the distinct terms the document
        gains and loses. Run inside the write's transaction on ``conn``; does not commit."""
        row = conn.execute(
            "SELECT id FROM memory_lexical_docs WHERE scope = ? AND name = ?", (scope, name)
        ).fetchone()
        held: set[str] = set()
        if row is not None:
            doc_id = int(row[0])
            text = conn.execute(
                "SELECT terms FROM memory_lexical WHERE rowid = ?", (doc_id,)
            ).fetchone()
            held = set(str(text[0]).split(" ")) - {""} if text is not None and text[0] else set()
            conn.execute("DELETE FROM memory_lexical WHERE rowid = ?", (doc_id,))
            if doc is None:
                conn.execute("DELETE FROM memory_lexical_docs WHERE id = ?", (doc_id,))
                _count_docs(conn, held, set())
                return
        elif doc is None:
            return
        else:
            cur = conn.execute(
                "INSERT INTO memory_lexical_docs (scope, name) VALUES (?, ?)", (scope, name)
            )
            doc_id = int(cur.lastrowid or 0)
        terms = document_terms(doc, self._tokenizer)
        conn.execute(
            "INSERT INTO memory_lexical (rowid, terms) VALUES (?, ?)", (doc_id, " ".join(terms))
        )
        _count_docs(conn, held, set(terms))

    def rebuild(self, conn: sqlite3.Connection, docs: Iterable[Document]) -> int:
        """Empty the index (``memory_lexical_df`` too) and index every document of ``docs``,
        inside the caller's transaction on ``conn``; return how many were indexed. The caller
        records the new tokenizer version (``store_state[TOKENIZER_STATE_KEY] =
        tokenizer.version``) in the same transaction."""
        conn.execute("DELETE FROM memory_lexical")
        conn.execute("DELETE FROM memory_lexical_docs")
        conn.execute("DELETE FROM memory_lexical_df")
        freqs: Counter[str] = Counter()
        n = 0
        for doc in docs:
            cur = conn.execute(
                "INSERT INTO memory_lexical_docs (scope, name) VALUES (?, ?)", (doc.scope, doc.name)
            )
            terms = document_terms(doc, self._tokenizer)
            conn.execute(
                "INSERT INTO memory_lexical (rowid, terms) VALUES (?, ?)",
                (cur.lastrowid, " ".join(terms)),
            )
            freqs.update(set(terms))
            n += 1
        conn.executemany(
            "INSERT INTO memory_lexical_df (term, docs) VALUES (?, ?)", sorted(freqs.items())
        )
        return n

    def search_keys(
        self,
        conn: sqlite3.Connection,
        terms: Sequence[str] | Mapping[str, int],
        *,
        scopes: Sequence[str],
        limit: int,
    ) -> list[tuple[str, str, float]]:
        """At most ``limit`` ``(scope, name, BM25 score)`` of ``scopes`` holding any of
        ``terms``, best first; ties by the order of ``scopes``, then name (byte order).

        ``terms`` is a list (a repeated term counts as often as it occurs) or a mapping of each
        distinct term to its weight (:func:`recallers.query_terms`). Its cost is bounded as
        ``docs/recall.md#the-lexical-querys-cost`` says: FTS5 ranks only the rarest terms, up to
        :data:`RANKED_POSTINGS` postings; a term found in more entries than that (a *common*
        term) adds its score to those candidates, read deeper (up to
        :data:`DEEPEST_RANKED_READ`) until a MaxScore bound proves that no other entry can
        enter the top ``limit``; when none can be proved, the common terms add candidates of
        their own (the :data:`COMMON_TERM_CANDIDATES` entries holding them indexed last).
        Document frequencies are read from ``memory_lexical_df``, one lookup per term."""
        wanted = list(dict.fromkeys(scopes))
        weights = Counter(terms)
        if limit < 1 or not weights or not wanted:
            return []
        n_docs, avgdl = _index_state(conn)
        if n_docs == 0:
            return []
        freqs = self._doc_freqs(conn, weights)
        ranked: list[str] = []
        common: dict[str, float] = {}  # term -> weight * idf, scored here
        budget = RANKED_POSTINGS
        for term in sorted(freqs, key=lambda t: (freqs[t], t)):
            cost = freqs[term] * weights[term]
            if not common and cost <= budget:
                ranked.append(term)
                budget -= cost
            else:
                common[term] = weights[term] * bm25_idf(n_docs, freqs[term])
        # MaxScore (Turtle and Flood 1995): a term adds at most weight * idf * (k1 + 1) to a score
        common_bound = sum(common.values()) * (self.k1 + 1.0)
        marks = ", ".join("?" * len(wanted))
        join = (
            " FROM memory_lexical AS f JOIN memory_lexical_docs AS d ON d.id = f.rowid"
            f" WHERE memory_lexical MATCH ? AND d.scope IN ({marks})"
        )
        rank = {s: i for i, s in enumerate(wanted)}

        def order(k: tuple[str, str, float]) -> tuple[float, int, bytes]:
            return (-k[2], rank[k[0]], k[1].encode("utf-8", "surrogatepass"))

        found: list[tuple[str, str, float]] = []
        exact = not common
        if ranked:
            when = " ".join(f"WHEN ? THEN {i}" for i in range(len(wanted)))
            expr = match_expression(t for t in ranked for _ in range(weights[t]))
            depth = limit if not common else 2 * limit + 20
            while True:
                rows = conn.execute(
                    f"SELECT d.scope, d.name, -f.rank, {'f.terms' if common else 'NULL'}"
                    f"{join} ORDER BY f.rank, CASE d.scope {when} END, CAST(d.name AS BLOB)"
                    " LIMIT ?",
                    (expr, *wanted, *wanted, depth),
                ).fetchall()
                found = [
                    (str(sc), str(nm), float(score) + self._score(text, common, avgdl))
                    for sc, nm, score, text in rows
                ]
                if not common:
                    break
                # an entry not read holds no ranked term (all were read) or ranks below the last
                unread = (float(rows[-1][2]) if len(rows) == depth else 0.0) + common_bound
                found.sort(key=order)
                exact = len(found) >= limit and found[limit - 1][2] > unread
                if exact or len(rows) < depth or depth >= DEEPEST_RANKED_READ:
                    break
                depth = min(8 * depth, DEEPEST_RANKED_READ)
        if not exact and (len(found) < limit or found[limit - 1][2] <= common_bound):
            # entries holding only common terms could enter the top: offer a bounded sample
            rows = conn.execute(
                f"SELECT d.scope, d.name, f.rowid, f.terms{join} ORDER BY f.rowid DESC LIMIT ?",
                (match_expression(common), *wanted, COMMON_TERM_CANDIDATES + len(found)),
            ).fetchall()
            known = {(s, n) for s, n, _ in found}
            for scope, name, _, text in rows:
                if (scope, name) in known:
                    continue
                found.append((str(scope), str(name), self._score(text, common, avgdl)))
        found.sort(key=order)
        return [k for k in found[:limit] if k[2] > 0]

    def _doc_freqs(self, conn: sqlite3.Connection, terms: Iterable[str]) -> dict[str, int]:
        """How many documents hold each of ``terms`` (a term none holds is left out), read from
        ``memory_lexical_df`` in the search's snapshot: one b-tree lookup per term, however many
        documents hold it, and as current right after a write as at any other time."""
        return _doc_freqs(conn, terms)

    def _score(self, text: str | None, weighted_idf: Mapping[str, float], avgdl: float) -> float:
        """The BM25 contribution of the terms of ``weighted_idf`` (term to weight times idf) to
        the document whose indexed terms are ``text`` (space-joined), as FTS5's ``bm25()``
        computes it: ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))``; 0 when
        there is no such term (or no text)."""
        if not weighted_idf or not text:
            return 0.0
        words = text.split(" ")
        norm = self.k1 * (1.0 - self.b + self.b * len(words) / avgdl)
        total = 0.0
        for term, widf in weighted_idf.items():
            tf = words.count(term)
            if tf:
                total += widf * (tf * (self.k1 + 1.0)) / (tf + norm)
        return total

    def search_text(
        self, query: str, *, scopes: Sequence[str], limit: int
    ) -> list[tuple[D, float]]:
        """At most ``limit`` ``(document, BM25 score)`` pairs of ``scopes``, best first, read in
        one snapshot (a document forgotten meanwhile is never returned). ``[]`` when the query
        has no term (only stopwords or punctuation) or ``limit < 1``."""
        terms = query_terms(query, self._tokenizer)
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
