"""A BM25 lexical index in PostgreSQL, written in the caller's own transaction and scored in SQL
(``docs/storage.md#bm25-in-sql``).

Three tables, created by :func:`create_pg_tables` (``PostgresStore`` runs it as a numbered
migration):

* ``memory_lexical_docs(scope, name, length)``: one row per indexed document; ``length`` is the
  number of its terms (:func:`recallers.document_terms`, repeats counted).
* ``memory_lexical_postings(scope, name, term, tf, dl)``: one row per distinct term of a document:
  its frequency ``tf`` and the document's length ``dl`` (kept here so a search reads no other
  table per posting); indexed by ``(term, scope)``.
* ``memory_lexical_scopes(scope, docs, total)``: per scope, the number of documents and the sum of
  their lengths, so ``N`` and ``avgdl`` cost one row per requested scope.

How it stays current: the store calls :meth:`PgBM25Index.write_many` inside the transaction that
appends the journal records, so the index commits or rolls back with the write. A write costs one
tokenization per entry and four set-based statements whatever the number of entries (the old
documents' rows are deleted and the scope statistics moved by the difference in one statement,
then the postings replaced); none depends on a result, so they go to the server in one pipelined
round trip with the rest of the write.

Scoring: Okapi BM25 with ``k1 = 1.2``, ``b = 0.75`` and the idf floor of :mod:`recallers.bm25`
(``ln((N - n + 0.5) / (n + 0.5))``, 1e-6 when that is 0 or less), computed in one SQL statement.
Unlike SQLite FTS5, the corpus statistics (``N``, ``avgdl``, document frequencies) are those of the
requested scopes together, as :class:`recallers.BM25Index` and rank-bm25 over those documents
compute them. The query is capped and each distinct term counted once with its weight
(:func:`recallers.query_terms`, ``docs/recall.md#the-lexical-query``), as in the other indexes: a
1 MB query costs what its first 4,096 bytes and 64 terms cost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentmemory.stores.lexicon_state import TokenizedIndex
from recallers.bm25 import DEFAULT_B, DEFAULT_K1, IDF_FLOOR, document_terms
from recallers.lexical_query import query_terms
from recallers.protocol import Document
from recallers.tokenizer import DEFAULT_TOKENIZER, Tokenizer

__all__ = ["PG_LEXICAL_TABLES", "TOP_KEYS_SQL", "PgBM25Index", "create_pg_tables"]

PG_LEXICAL_TABLES: Mapping[str, tuple[str, ...]] = {
    "memory_lexical_docs": ("scope", "name", "length"),
    "memory_lexical_postings": ("scope", "name", "term", "tf", "dl"),
    "memory_lexical_scopes": ("scope", "docs", "total"),
}
"""The tables :func:`create_pg_tables` makes, with their columns (for a store's migration check)."""

TOP_KEYS_SQL = f"""
q AS (
    SELECT term, rep::float8 AS rep
    FROM unnest(%(terms)s::text[], %(weights)s::integer[]) AS u(term, rep)
), st AS (
    SELECT sum(docs)::float8 AS n, sum(total)::float8 / NULLIF(sum(docs), 0) AS avgdl
    FROM memory_lexical_scopes WHERE scope = ANY(%(scopes)s)
), p AS (
    SELECT p.scope, p.name, p.term, p.tf, p.dl
    FROM memory_lexical_postings AS p JOIN q USING (term)
    WHERE p.scope = ANY(%(scopes)s)
), w AS (
    SELECT p.term, q.rep,
        ln((st.n - count(*) + 0.5) / (count(*) + 0.5)) AS raw_idf
    FROM p JOIN q USING (term) CROSS JOIN st GROUP BY p.term, q.rep, st.n
), scored AS (
    SELECT p.scope, p.name,
        sum(w.rep * CASE WHEN w.raw_idf > 0 THEN w.raw_idf ELSE {IDF_FLOOR!r}::float8 END
            * (p.tf * ({DEFAULT_K1!r}::float8 + 1.0))
            / (p.tf + {DEFAULT_K1!r}::float8
                * (1.0 - {DEFAULT_B!r}::float8 + {DEFAULT_B!r}::float8 * p.dl / st.avgdl)))
            AS score
    FROM p JOIN w USING (term) CROSS JOIN st GROUP BY p.scope, p.name
), top AS (
    SELECT scope, name, score FROM scored WHERE score > 0
    ORDER BY score DESC, array_position(%(scopes)s, scope), name COLLATE "C"
    LIMIT %(limit)s
)"""
"""The common table expressions ending in ``top(scope, name, score)``: at most ``%(limit)s``
documents of ``%(scopes)s`` (a ``text[]``) holding any of ``%(terms)s`` (a ``text[]`` of distinct
terms, each weighted by the integer at the same place of ``%(weights)s``: a term's contribution is
multiplied by its weight, as :func:`recallers.query_terms` counts it), scored by BM25 (score above
0), best first; ties by the order of ``scopes``, then name (byte order). A
caller writes ``WITH`` + this + its own ``SELECT ... FROM top`` (for example joined to the entries,
so the documents come back in the same statement and snapshot)."""


def create_pg_tables(conn: Any) -> None:
    """Create the three tables of the index on the psycopg connection ``conn`` (inside the
    caller's transaction), in the connection's current schema. Does nothing for a table that
    exists."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_lexical_docs ("
        " scope text NOT NULL, name text NOT NULL, length integer NOT NULL,"
        " PRIMARY KEY (scope, name))"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_lexical_postings ("
        " scope text NOT NULL, name text NOT NULL, term text NOT NULL,"
        " tf integer NOT NULL, dl integer NOT NULL, PRIMARY KEY (scope, name, term))"
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memory_lexical_postings_term"
        " ON memory_lexical_postings (term, scope) INCLUDE (name, tf, dl)"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_lexical_scopes ("
        " scope text PRIMARY KEY, docs bigint NOT NULL, total bigint NOT NULL)"
    )


REBUILD_BATCH = 1000
"""Documents per :meth:`PgBM25Index.write_many` call while the index is rebuilt."""


class PgBM25Index(TokenizedIndex):
    """Writes the PostgreSQL lexical index of one database and scores a query against it.

    It holds no connection: every method takes the caller's psycopg connection (a write's
    connection inside its transaction, possibly in pipeline mode; nothing here reads a result
    back during a write).

    Args:
        tokenizer: terms for documents and queries (default :data:`DEFAULT_TOKENIZER`).
    """

    k1 = DEFAULT_K1
    """BM25 term-frequency saturation (rank-bm25's and FTS5's default)."""

    b = DEFAULT_B
    """BM25 length normalisation (rank-bm25's and FTS5's default)."""

    def __init__(self, *, tokenizer: Tokenizer = DEFAULT_TOKENIZER) -> None:
        self._tokenizer = tokenizer

    def write(self, conn: Any, scope: str, name: str, doc: Document | None) -> None:
        """Make the index hold ``doc`` under ``(scope, name)``, or nothing when ``doc`` is
        ``None`` (a forget); :meth:`write_many` of one key."""
        self.write_many(conn, [(scope, name, doc)])

    def write_many(self, conn: Any, writes: Sequence[tuple[str, str, Document | None]]) -> None:
        """Make the index hold each ``doc`` under its ``(scope, name)`` (nothing for ``None``,
        a forget); for a key given twice the last one counts. Queues four statements on
        ``conn`` inside the write's transaction, whatever the number of keys, and reads
        nothing back, so it adds no round trip in pipeline mode. Costs one tokenization per
        document."""
        last: dict[tuple[str, str], Document | None] = {}
        for scope, name, doc in writes:
            last.pop((scope, name), None)
            last[(scope, name)] = doc
        if not last:
            return
        keys = list(last)
        kept = [(k, d) for k, d in last.items() if d is not None]
        terms = {k: document_terms(d, self._tokenizer) for k, d in kept}
        p_scope: list[str] = []
        p_name: list[str] = []
        p_term: list[str] = []
        p_tf: list[int] = []
        p_dl: list[int] = []
        for (scope, name), ts in terms.items():
            for term, tf in Counter(ts).items():
                p_scope.append(scope)
                p_name.append(name)
                p_term.append(term)
                p_tf.append(tf)
                p_dl.append(len(ts))
        conn.execute(
            "WITH old AS (DELETE FROM memory_lexical_docs AS d"
            " USING unnest(%(ks)s::text[], %(kn)s::text[]) AS k(scope, name)"
            " WHERE d.scope = k.scope AND d.name = k.name RETURNING d.scope, d.length),"
            " moves AS (SELECT scope, -1 AS docs, -length AS total FROM old"
            " UNION ALL SELECT scope, 1, length"
            " FROM unnest(%(ns)s::text[], %(nl)s::integer[]) AS n(scope, length))"
            " INSERT INTO memory_lexical_scopes AS m (scope, docs, total)"
            " SELECT scope, sum(docs), sum(total) FROM moves GROUP BY scope"
            " ON CONFLICT (scope) DO UPDATE"
            " SET docs = m.docs + excluded.docs, total = m.total + excluded.total",
            {
                "ks": [k[0] for k in keys],
                "kn": [k[1] for k in keys],
                "ns": [k[0] for k, _ in kept],
                "nl": [len(terms[k]) for k, _ in kept],
            },
        )
        conn.execute(
            "DELETE FROM memory_lexical_postings AS p"
            " USING unnest(%s::text[], %s::text[]) AS k(scope, name)"
            " WHERE p.scope = k.scope AND p.name = k.name",
            ([k[0] for k in keys], [k[1] for k in keys]),
        )
        if not kept:
            return
        conn.execute(
            "INSERT INTO memory_lexical_docs (scope, name, length)"
            " SELECT * FROM unnest(%s::text[], %s::text[], %s::integer[])",
            ([k[0] for k, _ in kept], [k[1] for k, _ in kept], [len(terms[k]) for k, _ in kept]),
        )
        if p_term:
            conn.execute(
                "INSERT INTO memory_lexical_postings (scope, name, term, tf, dl) SELECT * FROM"
                " unnest(%s::text[], %s::text[], %s::text[], %s::integer[], %s::integer[])",
                (p_scope, p_name, p_term, p_tf, p_dl),
            )

    def rebuild(self, conn: Any, docs: Iterable[Document]) -> int:
        """Empty the index and index every document of ``docs``, inside the caller's transaction
        on ``conn``; return how many were indexed. The caller records the new tokenizer version
        in the same transaction."""
        conn.execute("DELETE FROM memory_lexical_postings")
        conn.execute("DELETE FROM memory_lexical_docs")
        conn.execute("DELETE FROM memory_lexical_scopes")
        batch: list[tuple[str, str, Document | None]] = []
        n = 0
        for doc in docs:
            batch.append((doc.scope, doc.name, doc))
            n += 1
            if len(batch) >= REBUILD_BATCH:
                self.write_many(conn, batch)
                batch = []
        self.write_many(conn, batch)
        return n

    def query_terms(self, query: str) -> Counter[str]:
        """The query's distinct terms with their weights, capped at ``MAX_QUERY_BYTES`` and
        ``MAX_QUERY_TERMS`` (:func:`recallers.query_terms`; a repeated term counts as often as it
        occurs among the kept terms, as in rank-bm25, but is sent and scored once)."""
        return query_terms(query, self._tokenizer)

    @staticmethod
    def query_params(terms: Sequence[str] | Mapping[str, int]) -> dict[str, list[Any]]:
        """``{"terms": [...], "weights": [...]}`` for :data:`TOP_KEYS_SQL` from ``terms``: a list
        (a repeated term counts as often as it occurs) or a mapping of each distinct term to its
        weight (:meth:`query_terms`)."""
        weights = Counter(terms)
        return {"terms": list(weights), "weights": list(weights.values())}

    def search_keys(
        self,
        conn: Any,
        terms: Sequence[str] | Mapping[str, int],
        *,
        scopes: Sequence[str],
        limit: int,
    ) -> list[tuple[str, str, float]]:
        """At most ``limit`` ``(scope, name, BM25 score)`` of ``scopes`` holding any of
        ``terms`` (a list, repeats counted, or a mapping of term to weight), best first (see
        :data:`TOP_KEYS_SQL`); one statement."""
        wanted = list(dict.fromkeys(scopes))
        if limit < 1 or not terms or not wanted:
            return []
        rows = conn.execute(
            "WITH " + TOP_KEYS_SQL + " SELECT scope, name, score FROM top"
            ' ORDER BY score DESC, array_position(%(scopes)s, scope), name COLLATE "C"',
            {**self.query_params(terms), "scopes": wanted, "limit": limit},
        ).fetchall()
        return [(str(s), str(n), float(score)) for s, n, score in rows]
