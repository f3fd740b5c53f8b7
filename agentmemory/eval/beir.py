"""Load a BEIR-format retrieval set (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).

BEIR (Thakur et al., NeurIPS 2021 Datasets and Benchmarks) ships each set as a corpus of
documents (``{"_id", "title", "text"}`` per line), queries (``{"_id", "text"}``) and relevance
judgements (a TSV with a header, ``query-id  corpus-id  score``). Here each document becomes one
entry whose content is its title and text (the text BEIR's and MTEB's dense models read: title, a
separator, text) and whose name is its id made kebab-case and unique. Judgements with score > 0 are
relevant (binary); queries without one are left out, as pytrec_eval leaves them out.

SciFact's abstracts run to about 10 KB, past the default 4096-byte entry bound: an evaluation
store opens with a larger ``max_entry_bytes`` (:data:`BEIR_MAX_ENTRY_BYTES`), and the model reads
the first 256 word pieces of each (MTEB's setting for all-MiniLM-L6-v2), so nothing is cut here.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..entries import Entry
from ..errors import DataFormatError
from ..rules import MAX_NAME_BYTES, valid_name

__all__ = [
    "BEIR_MAX_ENTRY_BYTES",
    "BeirDataset",
    "BeirDocument",
    "BeirQuery",
    "BeirReport",
    "doc_entries",
    "doc_id_names",
    "load_beir",
]

BEIR_MAX_ENTRY_BYTES = 16 * 1024
"""Entry bound (UTF-8 bytes) of an evaluation store over a BEIR corpus: SciFact's longest title
plus abstract is 10,128 bytes."""


@dataclass(frozen=True, slots=True)
class BeirDocument:
    """One corpus document.

    Attributes:
        doc_id: the id in the corpus (``"4983"``).
        name: its kebab-case entry name, unique in the corpus (``"4983"``).
        title: may be ``""``.
        text: the body.
    """

    doc_id: str
    name: str
    title: str
    text: str

    @property
    def content(self) -> str:
        """Title and text, separated by a blank line (only the text when the title is empty)."""
        title, text = self.title.strip(), self.text.strip()
        return f"{title}\n\n{text}" if title and text else (title or text or f"({self.doc_id})")


@dataclass(frozen=True, slots=True)
class BeirQuery:
    """One judged query.

    Attributes:
        query_id: the id in ``queries.jsonl``.
        text: the query text.
        relevant: entry names of the documents judged relevant (score > 0), sorted.
    """

    query_id: str
    text: str
    relevant: tuple[str, ...]


@dataclass(slots=True)
class BeirReport:
    """What loading left out.

    Attributes:
        documents: documents read.
        queries_judged: queries with at least one relevant judgement in the split.
        queries_missing_text: judged query ids with no line in ``queries.jsonl``.
        judgements_unknown_doc: judgements naming a document the corpus lacks.
        judgements_not_relevant: judgements with score <= 0.
        renamed: ``"<doc id> -> <name>"`` for ids whose kebab form was taken or changed them.
    """

    documents: int = 0
    queries_judged: int = 0
    queries_missing_text: list[str] = field(default_factory=list)
    judgements_unknown_doc: int = 0
    judgements_not_relevant: int = 0
    renamed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the counts (and the first 20 renames as examples)."""
        return {
            "documents": self.documents,
            "queries_judged": self.queries_judged,
            "queries_missing_text": len(self.queries_missing_text),
            "judgements_unknown_doc": self.judgements_unknown_doc,
            "judgements_not_relevant": self.judgements_not_relevant,
            "renamed": len(self.renamed),
            "details": {"renamed": self.renamed[:20]},
        }


@dataclass(frozen=True, slots=True)
class BeirDataset:
    """A loaded BEIR set.

    Attributes:
        name: the folder's name (``"scifact"``).
        path: the folder read.
        sha256: hex SHA-256 over the three files' digests (keys the store cache).
        split: the qrels split (``"test"``).
        documents: in corpus order.
        queries: judged queries in ``queries.jsonl`` order.
        report: what loading left out.
    """

    name: str
    path: Path
    sha256: str
    split: str
    documents: tuple[BeirDocument, ...]
    queries: tuple[BeirQuery, ...]
    report: BeirReport


def doc_id_names(doc_ids: list[str]) -> dict[str, str]:
    """Map each distinct document id to a kebab-case entry name, unique over ``doc_ids``.

    An id that is already a valid entry name (:func:`~agentmemory.valid_name`) keeps its
    spelling. Any other id is lowercased, runs of characters outside ``[a-z0-9]`` become one
    hyphen, it is cut to 56 bytes (room for a suffix within the 64-byte limit), and empty becomes
    ``"doc"``; when that name is taken (by a valid id anywhere in ``doc_ids``, or by an earlier
    id), ``-2``, ``-3``... is appended, skipping names already taken. So ``["A_1", "a-1"]``
    give ``"a-1-2"`` and ``"a-1"``, and ``["A", "a", "a-2"]`` give ``"a-3"``, ``"a"`` and
    ``"a-2"``. An id given twice maps to one name. Keys are in first-occurrence order.
    """
    unique = list(dict.fromkeys(doc_ids))
    taken = {doc_id for doc_id in unique if valid_name(doc_id)}
    names: dict[str, str] = {}
    for doc_id in unique:
        if valid_name(doc_id):  # in ``taken`` already: no generated name can collide with it
            names[doc_id] = doc_id
            continue
        base = re.sub(r"[^a-z0-9]+", "-", doc_id.lower()).strip("-")
        base = base[: MAX_NAME_BYTES - 8].strip("-") or "doc"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        assert valid_name(name), name
        taken.add(name)
        names[doc_id] = name
    return names


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataFormatError(
                    f"{path} line {number} is not JSON: {exc}", path=str(path)
                ) from None
            if not isinstance(row, dict) or "_id" not in row:
                raise DataFormatError(
                    f"{path} line {number} has no _id; not a BEIR file", path=str(path)
                )
            yield row


def load_beir(folder: str | Path, *, split: str = "test") -> BeirDataset:
    """Read a BEIR set from ``folder`` (``corpus.jsonl``, ``queries.jsonl``,
    ``qrels/<split>.tsv``).

    Returns the documents, the judged queries (score > 0; at least one relevant document the
    corpus holds) and a :class:`BeirReport`. Raises ``FileNotFoundError`` naming a missing file and
    :class:`~agentmemory.errors.DataFormatError` (a ``ValueError``) naming the file and line of a
    malformed row.
    """
    folder = Path(folder)
    corpus_path = folder / "corpus.jsonl"
    queries_path = folder / "queries.jsonl"
    qrels_path = folder / "qrels" / f"{split}.tsv"
    for p in (corpus_path, queries_path, qrels_path):
        if not p.is_file():
            raise FileNotFoundError(f"BEIR set {folder}: {p.name} is missing ({p})")
    report = BeirReport()
    rows = list(_jsonl(corpus_path))
    names = doc_id_names([str(r["_id"]) for r in rows])
    docs: list[BeirDocument] = []
    for r in rows:
        doc_id = str(r["_id"])
        if names[doc_id] != doc_id:
            report.renamed.append(f"{doc_id} -> {names[doc_id]}")
        docs.append(
            BeirDocument(
                doc_id=doc_id,
                name=names[doc_id],
                title=str(r.get("title") or ""),
                text=str(r.get("text") or ""),
            )
        )
    report.documents = len(docs)
    relevant: dict[str, set[str]] = {}
    with open(qrels_path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        for number, row in enumerate(reader, start=1):
            if not row or (number == 1 and not row[-1].strip().lstrip("-").isdigit()):
                continue  # blank line, or the header
            if len(row) < 3:
                raise DataFormatError(
                    f"{qrels_path} line {number}: want query-id, corpus-id, score",
                    path=str(qrels_path),
                )
            qid, doc_id, score = row[0].strip(), row[1].strip(), row[2].strip()
            try:
                value = int(float(score))
            except ValueError:
                raise DataFormatError(
                    f"{qrels_path} line {number}: score {score!r} is no number",
                    path=str(qrels_path),
                ) from None
            if value <= 0:
                report.judgements_not_relevant += 1
                continue
            if doc_id not in names:
                report.judgements_unknown_doc += 1
                continue
            relevant.setdefault(qid, set()).add(names[doc_id])
    texts = {str(r["_id"]): str(r.get("text") or "") for r in _jsonl(queries_path)}
    queries: list[BeirQuery] = []
    for qid in texts:
        if qid in relevant:
            queries.append(BeirQuery(qid, texts[qid], tuple(sorted(relevant[qid]))))
    report.queries_missing_text = sorted(q for q in relevant if q not in texts)
    report.queries_judged = len(queries)
    digest = hashlib.sha256()
    for p in (corpus_path, queries_path, qrels_path):
        digest.update(hashlib.sha256(p.read_bytes()).digest())
    return BeirDataset(
        name=folder.name,
        path=folder,
        sha256=digest.hexdigest(),
        split=split,
        documents=tuple(docs),
        queries=tuple(queries),
        report=report,
    )


def doc_entries(dataset: BeirDataset, *, scope: str = "corpus") -> list[Entry]:
    """One :class:`~agentmemory.Entry` per document, in corpus order: name ``doc.name``, content
    ``doc.content`` (title, blank line, text), meta ``None``, in ``scope``.

    Contents may exceed the default 4096-byte bound: write them to a store opened with
    ``max_entry_bytes=BEIR_MAX_ENTRY_BYTES``.
    """
    return [Entry(scope=scope, name=d.name, content=d.content) for d in dataset.documents]
