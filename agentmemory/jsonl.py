"""Entries as JSON Lines: read and check a file, import it into a store, export a store.

One line is one entry, ``{"scope", "name", "content", "meta"?}``; ``hash`` and ``updated`` (what
:func:`export_entries` and ``agentmemory list --json`` add) are accepted and ignored, since the store
sets them. :func:`export_entries` writes the Go module's compact JSON of each live entry
(:func:`agentmemory.wire.encode_entry`), so its output is a file :func:`read_entries` takes back
exactly: the same scopes, names, contents and meta, whatever the content holds.

Lines are split on ``"\\n"`` only (a ``"\\r"`` before it is JSON white space), never on the other
Unicode line breaks (U+0085, U+2028, U+2029, ...), which JSON allows raw inside a string. The text
is UTF-8; a leading byte order mark (U+FEFF) is skipped. Blank lines are skipped.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from .entries import Change, Entry
from .errors import (
    AgentMemoryError,
    ImportIncompleteError,
    ImportLineError,
    IndexWriteError,
    NotFoundError,
)
from .rules import DEFAULT_MAX_ENTRY_BYTES, check_entry
from .wire import encode_entry

__all__ = [
    "IMPORT_BATCH",
    "ImportReport",
    "Line",
    "export_entries",
    "export_file",
    "import_entries",
    "read_entries",
]

IMPORT_BATCH = 256
"""Entries per ``put_many`` call of :func:`import_entries`: one journal transaction and one
embedding batch each."""

ENTRY_MEMBERS = ("scope", "name", "content", "meta")
IGNORED_MEMBERS = ("hash", "updated")  # what export adds; the store sets them


@dataclass(frozen=True, slots=True)
class Line:
    """One entry read from a JSON Lines file.

    Attributes:
        number: the line number in the file, from 1 (blank lines count).
        entry: the entry, checked by :func:`agentmemory.check_entry`.
    """

    number: int
    entry: Entry


def _text_lines(data: bytes, source: str) -> list[str]:
    """``data`` decoded as UTF-8 (a leading BOM skipped) and split on ``"\\n"`` only."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportLineError(source, line, f"not UTF-8 ({exc.reason})") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    return lines


def _entry_from_line(text: str, default_scope: str | None, limit: int) -> Entry:
    """Parse and check one line; raises ``ValueError`` (or an entry error) saying why not."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ValueError(f"a JSON {type(data).__name__}, not an object with scope, name, content")
    unknown = sorted(set(data) - set(ENTRY_MEMBERS) - set(IGNORED_MEMBERS))
    if unknown:
        raise ValueError(
            f"unknown member {unknown[0]!r}; an entry has {', '.join(ENTRY_MEMBERS)} "
            f"({', '.join(IGNORED_MEMBERS)} are ignored)"
        )
    scope = data.get("scope", default_scope)
    if scope is None:
        raise ValueError("no scope; give one in the line or with --scope")
    for key, value in (
        ("scope", scope),
        ("name", data.get("name")),
        ("content", data.get("content")),
    ):
        if not isinstance(value, str):
            got = "missing" if value is None else f"a JSON {type(value).__name__}"
            raise ValueError(f"{key} is {got}; it must be a string")
    meta = data.get("meta")
    if meta is not None and (
        not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values())
    ):
        raise ValueError("meta must be an object of string values, or null")
    entry = Entry(scope=scope, name=data["name"], content=data["content"], meta=meta or None)
    check_entry(entry, limit)
    return entry


def read_entries(
    source: str | os.PathLike[str] | IO[bytes],
    *,
    scope: str | None = None,
    max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    name: str | None = None,
) -> list[Line]:
    """Read and check every entry of a JSON Lines file, all or nothing.

    Args:
        source: a file path, or a binary stream (``sys.stdin.buffer``) read to its end.
        scope: the scope of lines that name none (``None``: such a line is an error).
        max_entry_bytes: the content bound each entry is checked against, in UTF-8 bytes.
        name: how messages name the source (default: the path, or ``"stdin"`` for a stream).

    Returns the entries in file order with their line numbers.

    Raises:
        ImportLineError: the text is not UTF-8, or a line is not JSON, not an object, has an
            unknown member, lacks a scope, name or content, breaks an entry rule
            (:func:`agentmemory.check_entry`, ``max_entry_bytes`` included) or repeats an entry
            of an earlier line. The message names the first bad line and how many more there are.
        OSError: ``source`` cannot be read (``FileNotFoundError``, ``IsADirectoryError``, ...).
    """
    if isinstance(source, str | os.PathLike):
        label = name or os.fspath(source)
        with open(source, "rb") as f:
            data = f.read()
    else:
        label = name or "stdin"
        data = source.read()
    out: list[Line] = []
    seen: dict[tuple[str, str], int] = {}
    errors: list[tuple[int, str]] = []
    for number, text in enumerate(_text_lines(data, label), start=1):
        if not text.strip():
            continue
        try:
            entry = _entry_from_line(text, scope, max_entry_bytes)
        except (ValueError, AgentMemoryError) as exc:
            errors.append((number, str(exc).removeprefix("agentmemory: ")))
            continue
        first = seen.setdefault((entry.scope, entry.name), number)
        if first != number:
            errors.append((number, f"{entry.key} is already at line {first}; give each entry once"))
            continue
        out.append(Line(number, entry))
    if errors:
        number, detail = errors[0]
        raise ImportLineError(label, number, detail, others=len(errors) - 1)
    return out


class _BulkStore(Protocol):
    def get(self, scope: str, name: str) -> Entry: ...

    def put_many(
        self, entries: Iterable[Entry], *, session: str | None = None
    ) -> builtins.list[Change]: ...


@dataclass(slots=True)
class ImportReport:
    """What :func:`import_entries` did.

    Attributes:
        imported: entries written (one journal record each).
        unchanged: entries skipped because the store held them with the same content and meta.
        scopes: entries written per scope.
        first_seq, last_seq: the journal seq of the first and last record written (0 when none).
        index_pending: the records written whose vector update failed (they count as imported;
            the index catches up at the store's next write or open, or on ``repair()``).
        index_error: the first error of those vector updates, or ``None``.
        note: what the store said of the records written (:attr:`Change.note`: for a store
            opened journal-only beside the process holding its vector index, that the holder
            indexes them), the first batch's; ``""`` when it said nothing.
    """

    imported: int = 0
    unchanged: int = 0
    scopes: dict[str, int] = field(default_factory=dict)
    first_seq: int = 0
    last_seq: int = 0
    index_pending: list[Change] = field(default_factory=list)
    index_error: BaseException | None = None
    note: str = ""


def _unchanged(store: _BulkStore, entry: Entry) -> bool:
    try:
        stored = store.get(entry.scope, entry.name)
    except NotFoundError:
        return False
    return stored.content == entry.content and (stored.meta or None) == (entry.meta or None)


def import_entries(
    store: _BulkStore,
    lines: Sequence[Line],
    *,
    batch: int = IMPORT_BATCH,
    session: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Write ``lines`` (from :func:`read_entries`) into ``store`` in batches of ``batch`` entries,
    each one ``put_many`` (one journal transaction), skipping entries the store already holds with
    the same content and meta.

    So if writing stops midway (the store locked, the disk full), the batches before it stand and
    running the same import again finishes it: what was written is skipped as unchanged.

    ``progress``, when given, is called after each batch with the number of lines it covered.
    A batch that reached the journal but whose vectors could not all be made
    (:class:`~agentmemory.IndexWriteError`) counts as imported and is listed in
    :attr:`ImportReport.index_pending`.

    Raises:
        ImportIncompleteError: a batch could not be written (any store error, an sqlite error
            such as "database or disk is full", an ``OSError``); it says how many entries before
            which line are in the store, and the original error is its ``__cause__``.
        ValueError: ``batch`` is under 1.
    """
    if batch < 1:
        raise ValueError(f"import batch is {batch}; it must be at least 1")
    report = ImportReport()
    for i in range(0, len(lines), batch):
        chunk = lines[i : i + batch]
        try:
            todo = [p.entry for p in chunk if not _unchanged(store, p.entry)]
            changes = store.put_many(todo, session=session) if todo else []
        except IndexWriteError as exc:  # the batch is written; its index catches up later
            changes = exc.changes
            report.index_pending += changes
            report.index_error = report.index_error or exc.__cause__
        except (AgentMemoryError, sqlite3.Error, OSError) as exc:
            raise ImportIncompleteError(
                exc, done=report.imported + report.unchanged, line=chunk[0].number
            ) from exc
        for c in changes:
            report.scopes[c.entry.scope] = report.scopes.get(c.entry.scope, 0) + 1
        if changes:
            report.note = report.note or changes[0].note
            report.first_seq = report.first_seq or changes[0].seq
            report.last_seq = changes[-1].seq
        report.imported += len(changes)
        report.unchanged += len(chunk) - len(todo)
        if progress is not None:
            progress(len(chunk))
    report.scopes = dict(sorted(report.scopes.items()))
    return report


class _Listing(Protocol):
    def list(self, scope: str) -> builtins.list[Entry]: ...

    def scopes(self) -> builtins.list[str]: ...


def export_entries(
    store: _Listing,
    out: IO[str],
    scopes: Sequence[str] = (),
    *,
    progress: Callable[[int], object] | None = None,
) -> int:
    """Write the live entries of ``scopes`` (default: every scope holding one, sorted) to ``out``,
    one line each (``"\\n"``-terminated), by scope then name, in the Go module's compact JSON
    (:func:`agentmemory.wire.encode_entry`); returns how many were written. ``progress``, when
    given, is called after each scope with the number of entries it wrote.

    The output is a file :func:`read_entries` takes back exactly (every member but ``hash`` and
    ``updated`` is read). A scope given twice is written once. Errors from the store propagate
    (an invalid scope: :class:`~agentmemory.InvalidEntryError`).
    """
    written = 0
    for scope in list(dict.fromkeys(scopes)) or store.scopes():
        listed = store.list(scope)
        for entry in listed:
            out.write(encode_entry(entry) + "\n")
        written += len(listed)
        if progress is not None:
            progress(len(listed))
    return written


def export_file(
    store: _Listing,
    path: str | os.PathLike[str],
    scopes: Sequence[str] = (),
    *,
    progress: Callable[[int], object] | None = None,
) -> int:
    """:func:`export_entries` into the file ``path`` (``~`` expanded; ``progress`` as there),
    written whole or not at all: the file is replaced atomically
    (:func:`agentmemory.stores.markdown.atomic_write.write_atomic`) once every line is made, so a
    failed export leaves an existing file as it was. Returns how many entries were written.

    Raises what :func:`export_entries` raises, and ``OSError`` when the file cannot be written.
    """
    from .stores.markdown.atomic_write import write_atomic

    text = io.StringIO(newline="")
    count = export_entries(store, text, scopes, progress=progress)
    write_atomic(Path(path).expanduser().absolute(), text.getvalue().encode("utf-8"))
    return count
