"""How a purge rewrites ``journal.jsonl``, and the marker that makes the rewrite all or nothing
(docs/filestore-format.md#a-purge-rewrites-the-journal).

A Markdown folder's journal is otherwise only ever appended to. A purge
(docs/contract.md#purge-erasing-an-entry-for-good) must replace the content and hashes of every
record of one entry, so it writes a new journal beside the old one and renames it over:

* each record of the entry is encoded redacted (:func:`agentmemory.purge.redact_history`) and
  padded with spaces to the byte length its line had, so every byte offset that a cursor keeps
  (``.state.json``, the vector index's ``cursor.json``, another handle's memory) still falls on
  the same line boundary and the journal reads as before, record for record; JSON allows white
  space after a value, so the line stays one record to any reader;
* a damaged line or a torn tail that names the entry or holds one of its contents or hashes is
  replaced by spaces of the same length (a white-space line, which readers skip);
* the tombstone (when the entry was live) and the ``purged`` record are appended, redacted.

Before anything moves, :class:`PurgeMarker` is written to ``.purge.json`` (fsynced): which entry,
which journal file it replaces (device and inode), the temporary file, where the entry file was
moved aside, the journal's head before and after. A process killed at any point leaves the marker,
and the next writer (or the next open) decides from the journal's inode: still the old file, so
the purge is rolled back (temporary removed, entry file moved back); already the new one, so the
purge is finished (entry file removed, INDEX.md, the cursor and the vectors brought in step).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentmemory.entries import Change
from agentmemory.wire import encode_change, go_json

from .journal_file import DamagedLine, head_of

__all__ = [
    "MIN_CONTENT_NEEDLE_BYTES",
    "PURGE_MARKER",
    "JournalRewrite",
    "PurgeMarker",
    "copy_finder",
    "rewrite_journal",
]

PURGE_MARKER = ".purge.json"
"""The marker's file name at the folder's root, present while a purge is unfinished."""

MIN_CONTENT_NEEDLE_BYTES = 8
"""A damaged line is blanked for holding one of the entry's contents only when that content is
at least this many UTF-8 bytes (a shorter one, ``"ok"``, would match unrelated lines; a line that
holds it whole also names the entry, which is checked on its own)."""


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


@dataclass(frozen=True, slots=True)
class PurgeMarker:
    """``.purge.json``: what an unfinished purge was doing.

    Attributes:
        key: the entry purged, ``"scope/name"``.
        pid: the purging process.
        seq: the ``seq`` of the ``purged`` record in the new journal.
        journal: ``(st_dev, st_ino)`` of the journal the purge replaces; ``None`` when there was
            no journal file.
        temp: the new journal's temporary file name in the folder (``.tmp-…``).
        aside: the entry file's temporary name relative to the folder (``<scope>/.tmp-…``), or
            ``""`` when the entry had no file.
        heads: the journal's head hash before and after the rewrite
            (docs/filestore-format.md#the-cursor-statejson).
        padded: whether every rewritten line kept its byte length (offsets stay valid); when
            not, ``.state.json`` and the vector cursor were removed first and are rebuilt.
        phase: ``"journal"`` until the files are in step, then ``"vectors"`` while only the
            vector index is left to scrub.
    """

    key: str
    pid: int
    seq: int
    journal: tuple[int, int] | None
    temp: str
    aside: str
    heads: tuple[str, str]
    padded: bool
    phase: str = "journal"

    @property
    def scope(self) -> str:
        """The scope of :attr:`key`."""
        return self.key.partition("/")[0]

    @property
    def name(self) -> str:
        """The name of :attr:`key`."""
        return self.key.partition("/")[2]

    def replaced(self, journal: Path) -> bool:
        """Whether ``journal`` is already the new file (the rename happened): its device and
        inode are not those recorded (or it exists where there was none)."""
        now = _file_id(journal)
        if self.journal is None:
            return now is not None
        return now is not None and now != self.journal

    def encode(self) -> bytes:
        """The marker's bytes: one compact JSON object and ``\\n``."""
        d = {
            "entry": self.key,
            "pid": self.pid,
            "seq": self.seq,
            "journal": None if self.journal is None else list(self.journal),
            "temp": self.temp,
            "aside": self.aside,
            "heads": list(self.heads),
            "padded": self.padded,
            "phase": self.phase,
        }
        return (go_json(d) + "\n").encode()

    @classmethod
    def decode(cls, data: bytes) -> PurgeMarker:
        """Parse a marker's bytes; ``ValueError`` naming what is wrong otherwise."""
        d = json.loads(data)
        if not isinstance(d, dict):
            raise ValueError("not a JSON object")
        key, temp, aside, heads = d.get("entry"), d.get("temp"), d.get("aside"), d.get("heads")
        journal = d.get("journal")
        if not isinstance(key, str) or key.count("/") != 1:
            raise ValueError(f"entry {key!r} is not scope/name")
        if not isinstance(temp, str) or "/" in temp or not isinstance(aside, str):
            raise ValueError("temp and aside must be file names")
        if not (
            isinstance(heads, list) and len(heads) == 2 and all(isinstance(h, str) for h in heads)
        ):
            raise ValueError("heads must be two strings")
        if journal is not None and not (
            isinstance(journal, list)
            and len(journal) == 2
            and all(isinstance(x, int) for x in journal)
        ):
            raise ValueError("journal must be [device, inode] or null")
        return cls(
            key=key,
            pid=int(d.get("pid", 0)),
            seq=int(d.get("seq", 0)),
            journal=None if journal is None else (journal[0], journal[1]),
            temp=temp,
            aside=aside,
            heads=(heads[0], heads[1]),
            padded=bool(d.get("padded", False)),
            phase=str(d.get("phase", "journal")),
        )

    @staticmethod
    def journal_id(journal: Path) -> tuple[int, int] | None:
        """``(st_dev, st_ino)`` of ``journal``, ``None`` when it does not exist."""
        return _file_id(journal)


def copy_finder(scope: str, name: str, history: Iterable[Change]) -> Callable[[bytes], bool]:
    """A test for raw journal bytes (a damaged line, a torn tail): whether they name the entry
    ``scope/name`` (its ``"scope"`` and ``"name"`` members) or hold one of the hashes of its
    ``history`` (the hex digits) or one of its contents of at least
    :data:`MIN_CONTENT_NEEDLE_BYTES` bytes (as the journal escapes it, or raw)."""
    scope_member = f'"scope":{go_json(scope)}'.encode()
    name_member = f'"name":{go_json(name)}'.encode()
    needles: set[bytes] = set()
    for c in history:
        for h in (c.entry.hash, c.prev, c.replaced):
            if h.startswith("sha256:"):
                needles.add(h.removeprefix("sha256:").encode())
        raw = c.entry.content.encode("utf-8", "surrogateescape")
        if len(raw) >= MIN_CONTENT_NEEDLE_BYTES:
            needles.add(raw)
            needles.add(go_json(c.entry.content)[1:-1].encode("utf-8", "surrogateescape"))

    def holds(data: bytes) -> bool:
        if scope_member in data and name_member in data:
            return True
        return any(n in data for n in needles)

    return holds


@dataclass(frozen=True, slots=True)
class JournalRewrite:
    """The new journal a purge writes.

    Attributes:
        data: its bytes.
        padded: every redacted line was padded to its old length (no offset moved).
        blanked: the offsets of the damaged lines (and torn tail) replaced by spaces.
        appended_at: the offset where the appended records start in ``data``.
        heads: the journal's head hash before and after.
    """

    data: bytes
    padded: bool
    blanked: tuple[int, ...]
    appended_at: int
    heads: tuple[str, str]


def rewrite_journal(
    data: bytes,
    lines: Iterable[tuple[int, int, Change | DamagedLine]],
    replace: Mapping[int, Change],
    holds: Callable[[bytes], bool],
    appended: Sequence[Change],
) -> JournalRewrite:
    """The journal ``data`` (bytes) with each record line at an offset in ``replace`` encoded
    as the record given there, each damaged line and the torn tail that ``holds`` a copy
    replaced by spaces, and ``appended`` added at the end (after a ``\\n`` when the journal ends
    in a torn tail), each line ``\\n``-terminated.

    ``lines`` are ``(offset, end, record or damage)`` of ``data``'s complete lines
    (:func:`agentmemory.stores.markdown.journal_file.scan_journal`). A redacted line is padded with spaces to its
    old length; when one does not fit (a record another writer encoded shorter than its
    redacted form), no line is padded and offsets after it move (``padded`` is false).
    """
    spans: list[tuple[int, int, bytes | None]] = []  # (offset, end without "\n", new or blank)
    fits = True
    for off, end, item in lines:
        stop = end - 1
        if isinstance(item, Change):
            record = replace.get(off)
            if record is not None:
                line = encode_change(record).encode("utf-8", "surrogateescape")
                fits = fits and len(line) <= stop - off
                spans.append((off, stop, line))
        elif holds(data[off:stop]):
            spans.append((off, stop, None))
    tail_at = data.rfind(b"\n") + 1
    if tail_at < len(data) and holds(data[tail_at:]):
        spans.append((tail_at, len(data), None))
    out = bytearray()
    pos = 0
    blanked: list[int] = []
    for off, stop, text in spans:
        out += data[pos:off]
        if text is None:
            out += b" " * (stop - off)
            blanked.append(off)
        else:
            out += text.ljust(stop - off, b" ") if fits else text
        pos = stop
    out += data[pos:]
    if out and not out.endswith(b"\n"):
        out += b"\n"
    at = len(out)
    out += "".join(encode_change(c) + "\n" for c in appended).encode("utf-8", "surrogateescape")
    new_data = bytes(out)
    return JournalRewrite(
        data=new_data,
        padded=fits,
        blanked=tuple(blanked),
        appended_at=at,
        heads=(head_of(data), head_of(new_data)),
    )
