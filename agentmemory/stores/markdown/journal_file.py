"""``journal.jsonl`` and its cursor ``.state.json`` (docs/filestore-format.md#the-journal).

The journal is one compact JSON record per line (the encoding of
:func:`agentmemory.lost_updates.encode_change`, the same text the sqlite store keeps in its ``line``
column), each ending in ``\\n``. This module reads it (complete lines only, damaged lines reported
and skipped), appends to it (mending a torn tail first), and keeps the cursor: how far the journal
has been read and the state it left each live entry in, so a writer need not read the whole
journal to know the chain.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from agentmemory.entries import Change
from agentmemory.rules import valid_name
from agentmemory.wire import decode_change, encode_change, go_json

from .entry_file import meta_hash

__all__ = [
    "HEAD_BYTES",
    "JOURNAL_NAME",
    "STATE_NAME",
    "Cursor",
    "DamagedLine",
    "append_records",
    "find_last_record",
    "head_of",
    "journal_head",
    "parse_record",
    "scan_journal",
]

JOURNAL_NAME = "journal.jsonl"
"""The journal's file name at the folder's root."""

STATE_NAME = ".state.json"
"""The cursor's file name at the folder's root."""

HEAD_BYTES = 65_536
"""At most this many bytes of the journal's first line go into the cursor's ``head`` hash."""

_READ_BLOCK = 1 << 20
_HASH = re.compile(r"sha256:[0-9a-f]{64}")
_BACK_BLOCK = 64 * 1024


@dataclass(frozen=True, slots=True)
class DamagedLine:
    """A complete journal line that is not a record.

    Attributes:
        offset: where the line starts, in bytes from the start of the journal.
        line: its 1-based line number, or ``0`` when the journal was read from a cursor (the
            number of the lines before it is not known then).
        reason: why it is not a record (``"not JSON"``, ``"no positive seq"``, ...).
        text: the line's first 80 characters (bytes that are not UTF-8 replaced).
    """

    offset: int
    line: int
    reason: str
    text: str

    def describe(self) -> str:
        """``"line 2 (byte 245): no positive seq: {...}"``, for a report."""
        where = f"line {self.line} (byte {self.offset})" if self.line else f"byte {self.offset}"
        return f"{where}: {self.reason}: {self.text}"


def parse_record(line: bytes) -> Change:
    """One journal line (without its ``\\n``) as a :class:`Change`.

    Raises ``ValueError`` naming why the line is damaged: not UTF-8 JSON, not an object, no
    positive integer ``seq``, no ``entry`` object, an entry scope or name that is not kebab-case,
    no ``entry.hash``, or a time that is not RFC 3339. Members may come in any order, unknown
    members are ignored.
    """
    try:
        d = json.loads(line)
    except ValueError as err:
        raise ValueError("not JSON") from err
    if not isinstance(d, dict):
        raise ValueError("not a JSON object")
    seq = d.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise ValueError("no positive seq")
    e = d.get("entry")
    if not isinstance(e, dict):
        raise ValueError("no entry")
    if not valid_name(e.get("scope")) or not valid_name(e.get("name")):
        raise ValueError("no entry with a kebab-case scope and name")
    if not isinstance(e.get("hash"), str) or not e["hash"]:
        raise ValueError("no entry hash")
    try:
        return decode_change(line.decode("utf-8"))
    except (ValueError, TypeError, AttributeError) as err:
        raise ValueError(f"not a record ({err})") from err


def _excerpt(line: bytes) -> str:
    text = line.decode("utf-8", "replace")
    return text if len(text) <= 80 else text[:77] + "..."


def scan_journal(path: Path, start: int = 0) -> Iterator[tuple[int, int, Change | DamagedLine]]:
    """Read ``path`` from byte ``start``: yield ``(offset, end, record or damage)`` for every
    complete line (one ending in ``\\n``), in file order; ``end`` is the offset after its ``\\n``.

    A last line without ``\\n`` is not read (it is a torn tail, or a record being appended right
    now). Empty and white-space lines are skipped silently. A missing file yields nothing.
    Line numbers are counted only when ``start`` is 0.
    """
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed in the finally below
    except FileNotFoundError:
        return
    try:
        f.seek(start)
        offset = start
        number = 1 if start == 0 else 0
        rest = b""
        while True:
            block = f.read(_READ_BLOCK)
            if not block:
                return
            data = rest + block
            pos = 0
            while True:
                nl = data.find(b"\n", pos)
                if nl < 0:
                    break
                line = data[pos:nl]
                begin = offset
                offset += nl + 1 - pos
                pos = nl + 1
                if line.strip():
                    try:
                        item: Change | DamagedLine = parse_record(line)
                    except ValueError as err:
                        item = DamagedLine(begin, number, str(err), _excerpt(line))
                    yield begin, offset, item
                if number:
                    number += 1
            rest = data[pos:]
    finally:
        f.close()


def find_last_record(
    path: Path, *, before: int | None = None, key: str | None = None
) -> Change | None:
    """The last whole record of the journal (of entry ``key`` = ``"scope/name"`` when given) that
    ends at or before byte ``before`` (the whole file when ``None``), read backwards in 64 KiB
    blocks; damaged lines and a torn tail are skipped. ``None`` when there is none."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed in the finally below
    except FileNotFoundError:
        return None
    try:
        size = os.fstat(f.fileno()).st_size
        pos = size if before is None else min(before, size)
        pending = b""  # the start of a line the earlier block ends, with its "\n"
        trimmed = False  # whether the torn tail after the last "\n" was cut off
        while pos > 0:
            step = min(_BACK_BLOCK, pos)
            pos -= step
            f.seek(pos)
            data = f.read(step) + pending
            if not trimmed:
                cut = data.rfind(b"\n")
                if cut < 0:
                    pending = b""  # all of it belongs to the torn tail
                    continue
                data = data[: cut + 1]
                trimmed = True
            lines = data.split(b"\n")[:-1]
            if pos > 0:
                pending = lines[0] + b"\n"
                lines = lines[1:]
            for line in reversed(lines):
                if not line.strip():
                    continue
                try:
                    c = parse_record(line)
                except ValueError:
                    continue
                if key is None or c.entry.key == key:
                    return c
        return None
    finally:
        f.close()


def journal_head(path: Path) -> str:
    """``sha256:`` + hex SHA-256 of the journal's first line with its ``\\n`` (at most
    :data:`HEAD_BYTES`); ``""`` when the journal has no complete first line."""
    try:
        with open(path, "rb") as f:
            data = f.read(HEAD_BYTES)
    except FileNotFoundError:
        return ""
    return head_of(data)


def head_of(data: bytes) -> str:
    """:func:`journal_head` of a journal whose bytes (or first :data:`HEAD_BYTES` bytes) are
    ``data``."""
    data = data[:HEAD_BYTES]
    nl = data.find(b"\n")
    if nl < 0:
        if len(data) < HEAD_BYTES:
            return ""
        first = data
    else:
        first = data[: nl + 1]
    return "sha256:" + hashlib.sha256(first).hexdigest()


def append_records(path: Path, changes: list[Change]) -> int:
    """Append ``changes`` to the journal at ``path`` (created when missing) in one ``write`` and
    fsync it; return the journal's size after the write, in bytes.

    A journal whose last byte is not ``\\n`` ends in a torn line (a writer died mid-append): a
    ``\\n`` is written first, so that line stays one damaged line and the new records start
    lines of their own.

    Raises:
        OSError: the journal cannot be written (a full disk: ``ENOSPC``); a partial write is cut
            off again, so the journal is as it was (when even that fails, it leaves a torn
            tail, which the next append mends as above).
    """
    data = "".join(encode_change(c) + "\n" for c in changes).encode("utf-8", "surrogateescape")
    created = not path.exists()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        except BaseException:
            with contextlib.suppress(OSError):  # nothing of a failed append stays
                os.ftruncate(fd, size)
            raise
        end = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if created:
        from .atomic_write import fsync_dir

        fsync_dir(path.parent)
    return end


@dataclass
class Cursor:
    """How far the journal has been read and the state it left each live entry in.

    Derived, never authoritative: rebuilt from the journal when missing, damaged, or not for this
    journal (docs/filestore-format.md#the-cursor-statejson).

    Attributes:
        seq: the highest ``seq`` read (0 for none).
        off: the offset after the last complete line read, in bytes.
        head: the journal's :func:`journal_head` when the cursor was made.
        entries: ``"scope/name"`` -> ``(content hash, meta hash or "")`` of every entry the
            journal leaves live; tombstoned names are absent.
        last_at: the ``at`` of the last record read (not saved; ``None`` when unknown).
    """

    seq: int = 0
    off: int = 0
    head: str = ""
    entries: dict[str, tuple[str, str]] = field(default_factory=dict)
    last_at: datetime | None = None

    def apply(self, change: Change, end: int) -> None:
        """Advance over one record that ends at byte ``end``."""
        e = change.entry
        if e.deleted:
            self.entries.pop(e.key, None)
        else:
            self.entries[e.key] = (e.hash, meta_hash(e.meta))
        self.seq = max(self.seq, change.seq)
        self.off = end
        if change.at is not None:
            self.last_at = change.at

    def encode(self) -> bytes:
        """The ``.state.json`` bytes: compact JSON ``{"seq","off","head","entries"}``, entries
        by key in byte order, each ``{"hash","meta"?}``, and a final ``\\n``.

        Keys are kebab-case names joined by ``/`` and hashes are ``sha256:<hex>``, so no member
        needs escaping and the text is formatted directly (a cursor of 5,000 entries is written
        on every write)."""
        parts = []
        for key in sorted(self.entries):  # ASCII keys: text order is byte order
            h, m = self.entries[key]
            if m:
                parts.append(f'"{key}":{{"hash":"{h}","meta":"{m}"}}')
            else:
                parts.append(f'"{key}":{{"hash":"{h}"}}')
        head = go_json({"seq": self.seq, "off": self.off, "head": self.head})[:-1]
        return f'{head},"entries":{{{",".join(parts)}}}}}\n'.encode()

    @classmethod
    def decode(cls, data: bytes) -> Cursor:
        """Parse ``.state.json`` bytes; ``ValueError`` when they are not a cursor."""
        d = json.loads(data)
        if not isinstance(d, dict):
            raise ValueError("not a JSON object")
        seq, off, head, entries = d.get("seq"), d.get("off"), d.get("head"), d.get("entries", {})
        if not isinstance(seq, int) or not isinstance(off, int) or seq < 0 or off < 0:
            raise ValueError("seq and off must be integers >= 0")
        if not isinstance(head, str) or not isinstance(entries, dict):
            raise ValueError("head must be text and entries an object")
        out: dict[str, tuple[str, str]] = {}
        for key, v in entries.items():
            scope, _, name = key.partition("/")
            if not valid_name(scope) or not valid_name(name):
                raise ValueError(f"entry key {key!r} is not <scope>/<name>")
            if not isinstance(v, dict) or not _HASH.fullmatch(str(v.get("hash"))):
                raise ValueError(f"entry {key!r} has no sha256 hash")
            m = v.get("meta", "")
            if not isinstance(m, str) or (m and not _HASH.fullmatch(m)):
                raise ValueError(f"entry {key!r} has a meta that is not text")
            out[key] = (v["hash"], m)
        return cls(seq=seq, off=off, head=head, entries=out)
