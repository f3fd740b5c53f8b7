"""The Go module's wire forms: the journal line, Go's JSON, ``%q`` quoting and RFC 3339 times.

A :class:`~agentmemory.entries.Change` is stored as the compact JSON line the Go module writes
(docs/contract.md#the-wire-line-encoding): members in Go's order, times in RFC 3339 with nanosecond precision
trimmed, ``<``, ``>``, ``&``, U+2028 and U+2029 escaped, other non-ASCII raw, empty optional members
omitted. So a journal can be dumped to a ``journal.jsonl`` the Go file store reads. Messages that
must match the Go module's quote values as its ``%q`` does (:func:`go_quote`).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from .entries import Change, Entry

__all__ = [
    "decode_change",
    "encode_change",
    "encode_entry",
    "format_time",
    "go_json",
    "go_quote",
    "parse_time",
]


def go_quote(s: str) -> str:
    """Quote ``s`` as Go's ``%q`` (``strconv.Quote``) does, for messages that must match the reference.

    Double quotes and backslashes are escaped, ``\\a \\b \\f \\n \\r \\t \\v`` use their short forms,
    other non-printable characters become ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``, and printable
    Unicode stays as it is. A lone surrogate (invalid UTF-8 in Go) is written ``\\ufffd``-free as
    ``\\xNN`` of the byte it stands for where it came from ``surrogateescape``.
    """
    out = ['"']
    short = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t"}
    short["\v"] = r"\v"
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch in short:
            out.append(short[ch])
        elif 0xDC80 <= code <= 0xDCFF:  # a byte smuggled in by surrogateescape
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def format_time(t: datetime) -> str:
    """Format ``t`` as Go's ``time.RFC3339Nano`` in UTC: ``2026-09-20T10:00:03.5Z``.

    The fraction has its trailing zeros trimmed (and is absent when zero); the offset is ``Z``.
    A naive ``t`` is taken to be UTC.
    """
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    t = t.astimezone(UTC)
    text = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.microsecond:
        text += "." + f"{t.microsecond:06d}".rstrip("0")
    return text + "Z"


_TIME_RE = re.compile(
    r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})", re.IGNORECASE
)


def parse_time(text: str) -> datetime:
    """Parse an RFC 3339 time with any fraction (nanoseconds are cut to microseconds) and any offset.

    Returns an aware ``datetime`` in UTC. Raises ``ValueError`` when ``text`` is not RFC 3339.
    """
    m = _TIME_RE.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    base, frac, offset = m.groups()
    micro = int((frac or "0")[:6].ljust(6, "0"))
    tz = "+00:00" if offset.upper() == "Z" else offset
    t = datetime.fromisoformat(f"{base}{tz}").replace(microsecond=micro)
    return t.astimezone(UTC)


def go_json(value: object, *, indent: int | None = None) -> str:
    """Encode ``value`` as Go's ``encoding/json`` does: ``json.Marshal`` (compact) or, with
    ``indent``, ``json.MarshalIndent(v, "", " " * indent)``.

    Non-ASCII text stays raw; ``<``, ``>``, ``&``, U+2028 and U+2029 are escaped as ``\\u003c``,
    ``\\u003e``, ``\\u0026``, ``\\u2028``, ``\\u2029`` (Go's HTML-safe default). Members keep
    the order of the dict. No trailing newline.
    """
    if indent is None:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    else:
        text = json.dumps(value, ensure_ascii=False, indent=indent, separators=(",", ": "))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _entry_dict(e: Entry) -> dict[str, Any]:
    d: dict[str, Any] = {"scope": e.scope, "name": e.name, "content": e.content}
    if e.meta:
        d["meta"] = dict(sorted(e.meta.items()))
    d["hash"] = e.hash
    d["updated"] = format_time(e.updated) if e.updated else "0001-01-01T00:00:00Z"
    if e.deleted:
        d["deleted"] = True
    return d


def encode_entry(e: Entry) -> str:
    """Return ``e`` as Go's compact JSON (``scope, name, content, meta?, hash, updated, deleted?``)."""
    return go_json(_entry_dict(e))


def encode_change(c: Change) -> str:
    """Return ``c`` as one compact JSON line without the trailing newline, in Go's member order.

    The provenance members ``message``, ``tool`` and ``reason`` follow ``at`` and are left out
    when empty, so a record without provenance is the Go module's line byte for byte, and the Go
    reader, which ignores unknown members, reads one with it (docs/kinds.md#provenance)."""
    d: dict[str, Any] = {"seq": c.seq, "entry": _entry_dict(c.entry)}
    for k in ("prev", "replaced", "session", "source"):
        v = getattr(c, k)
        if v:
            d[k] = v
    d["at"] = format_time(c.at) if c.at else "0001-01-01T00:00:00Z"
    for k in ("message", "tool", "reason"):  # provenance: after Go's members, when set
        v = getattr(c, k)
        if v:
            d[k] = v
    return go_json(d)


def _text(v: object) -> str:
    return v if isinstance(v, str) else ""


def decode_change(line: str, *, seq: int | None = None) -> Change:
    """Parse one journal line; ``seq``, when given, overrides the line's own (the sqlite column wins).

    Members may come in any order and unknown members are ignored. Raises ``ValueError`` when the
    line is not JSON or lacks an entry with scope, name and hash.
    """
    d = json.loads(line)
    if not isinstance(d, dict) or not isinstance(d.get("entry"), dict):
        raise ValueError(f"journal record has no entry: {line[:80]!r}")
    e = d["entry"]
    for k in ("scope", "name", "hash"):
        if not isinstance(e.get(k), str) or not e[k]:
            raise ValueError(f"journal record entry has no {k}: {line[:80]!r}")
    meta = e.get("meta") or None
    entry = Entry(
        scope=e["scope"],
        name=e["name"],
        content=e.get("content", ""),
        meta=dict(meta) if meta else None,
        hash=e["hash"],
        updated=parse_time(e["updated"]) if e.get("updated") else None,
        deleted=bool(e.get("deleted", False)),
    )
    return Change(
        seq=int(seq if seq is not None else d.get("seq", 0)),
        entry=entry,
        prev=d.get("prev", "") or "",
        replaced=d.get("replaced", "") or "",
        session=d.get("session", "") or "",
        source=d.get("source", "") or "",
        at=parse_time(d["at"]) if d.get("at") else None,
        message=_text(d.get("message")),
        tool=_text(d.get("tool")),
        reason=_text(d.get("reason")),
    )
