"""The Markdown entry file and the scope's INDEX.md (docs/filestore-format.md#the-entry-file).

An entry is the file ``<scope>/<name>.md``: a frontmatter block naming the entry, the time it was
written and its meta (keys in byte order), then the content byte for byte::

    ---
    name: style
    updated: 2026-09-20T10:00:03Z
    description: How to answer
    ---
    Short answers.

Reading is lenient (a person may have written the file): a file without the opening ``---`` line is
all content, unknown or invalid keys are ignored, and a missing or unreadable ``updated`` falls back
to the file's modification time. Reading never validates: whether the store can journal what it
read is :func:`agentmemory.check_entry`'s question, asked by the store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta

from agentmemory.entries import Entry
from agentmemory.rules import valid_name
from agentmemory.wire import format_time, parse_time

__all__ = [
    "ENTRY_SUFFIX",
    "INDEX_NAME",
    "meta_hash",
    "mtime_time",
    "parse_entry_file",
    "render_entry_file",
    "render_index",
]

ENTRY_SUFFIX = ".md"
"""The suffix of an entry file; the stem is the entry's name."""

INDEX_NAME = "INDEX.md"
"""The per-scope index file; upper case, so it can never be an entry (names are lower case)."""

_OPEN = b"---\n"
_CLOSE = b"\n---\n"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def mtime_time(mtime_ns: int) -> datetime:
    """A file modification time (integer nanoseconds since the epoch) as an aware UTC
    ``datetime``, cut to microseconds (the precision of every time this library stores)."""
    return _EPOCH + timedelta(microseconds=mtime_ns // 1000)


def render_entry_file(entry: Entry) -> bytes:
    """The bytes of ``entry``'s file: ``---``, ``name: <name>``, ``updated: <RFC 3339 UTC>``, one
    ``<key>: <value>`` line per meta key in byte order (``<key>:`` for an empty value), ``---``,
    then the content's UTF-8 bytes with nothing added.

    ``entry.updated`` must be set (the store stamps it); every frontmatter line ends in ``\\n``.
    """
    if entry.updated is None:
        raise ValueError(f"entry {entry.key} has no updated time; the store sets it before writing")
    lines = [f"---\nname: {entry.name}\nupdated: {format_time(entry.updated)}\n"]
    for key, value in sorted((entry.meta or {}).items(), key=lambda kv: kv[0].encode()):
        lines.append(f"{key}: {value}\n" if value else f"{key}:\n")
    lines.append("---\n")
    head = "".join(lines).encode("utf-8", "surrogateescape")
    return head + entry.content.encode("utf-8", "surrogateescape")


def _split(data: bytes) -> tuple[bytes | None, bytes]:
    """``(frontmatter block or None, content)`` of a file's bytes."""
    if not data.startswith(_OPEN):
        return None, data
    end = data.find(_CLOSE, len(_OPEN) - 1)
    if end < 0:
        return None, data
    return data[len(_OPEN) : end + 1], data[end + len(_CLOSE) :]


def parse_entry_file(scope: str, name: str, data: bytes, mtime_ns: int) -> Entry:
    """Read an entry file's bytes as the entry ``scope/name`` (the file name wins over any
    ``name:`` line).

    * No leading ``---`` line, or no closing ``---`` line: the whole file is content, no meta.
    * Otherwise each frontmatter line is split at its first ``:``, key and value trimmed; lines
      without ``:``, keys that are not kebab-case and ``name`` are ignored; ``updated`` is parsed
      as RFC 3339, else the modification time ``mtime_ns`` (nanoseconds since the epoch) is used.
      A later line with the same key wins.
    * ``hash`` is the SHA-256 of the content's bytes as they are in the file. Bytes that are not
      UTF-8 are kept as lone surrogates (``surrogateescape``), so such a file still reads, and
      :func:`agentmemory.check_entry` refuses to journal it.
    """
    block, body = _split(data)
    meta: dict[str, str] = {}
    updated: datetime | None = None
    if block is not None:
        for raw in block.decode("utf-8", "surrogateescape").split("\n"):
            key, sep, value = raw.partition(":")
            if not sep:
                continue
            key, value = key.strip(), value.strip()
            if key == "updated":
                try:
                    updated = parse_time(value)
                except ValueError:
                    updated = None
                continue
            if key == "name" or not valid_name(key):
                continue
            meta[key] = value
    return Entry(
        scope=scope,
        name=name,
        content=body.decode("utf-8", "surrogateescape"),
        meta=meta or None,
        hash="sha256:" + hashlib.sha256(body).hexdigest(),
        updated=updated if updated is not None else mtime_time(mtime_ns),
    )


def meta_hash(meta: Mapping[str, str] | None) -> str:
    """The cursor's fingerprint of an entry's meta: ``sha256:`` + hex SHA-256 of
    ``"<key>=<value>\\n"`` for each key in byte order; ``""`` when there is no meta
    (docs/filestore-format.md#the-cursor-statejson)."""
    if not meta:
        return ""
    text = "".join(f"{k}={meta[k]}\n" for k in sorted(meta, key=lambda k: k.encode()))
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def render_index(scope: str, entries: Iterable[tuple[str, str]]) -> bytes:
    """The bytes of ``<scope>/INDEX.md`` for ``(name, description)`` pairs: ``# <scope>``, a blank
    line, then one ``- [<name>](<name>.md)`` line per entry in name order, with
    `` — <description>`` when the description is not empty; ``No entries.`` when there are none.
    Every line ends in ``\n``."""
    lines = [f"# {scope}\n\n"]
    ordered = sorted(entries)  # names are ASCII, so text order is byte order
    for name, description in ordered:
        line = f"- [{name}]({name}{ENTRY_SUFFIX})"
        if description:
            line += f" \u2014 {description}"
        lines.append(line + "\n")
    if not ordered:
        lines.append("No entries.\n")
    return "".join(lines).encode("utf-8", "surrogateescape")
