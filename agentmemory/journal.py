"""The journal record's wire form, and lost-update detection.

A :class:`~agentmemory.entries.Change` is stored as the compact JSON line the Go module writes
(docs/contract.md#the-wire-line-encoding): members in Go's order, times in RFC 3339 with nanosecond precision
trimmed, ``<``, ``>``, ``&``, U+2028 and U+2029 escaped, other non-ASCII raw, empty optional members
omitted. So a journal can be dumped to a ``journal.jsonl`` the Go file store reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from .entries import Change, Entry, format_time, parse_time

__all__ = [
    "LostUpdate",
    "decode_change",
    "encode_change",
    "encode_entry",
    "go_json",
    "lost_updates",
]


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
    """Return ``c`` as one compact JSON line without the trailing newline, in Go's member order."""
    d: dict[str, Any] = {"seq": c.seq, "entry": _entry_dict(c.entry)}
    for k in ("prev", "replaced", "session", "source"):
        v = getattr(c, k)
        if v:
            d[k] = v
    d["at"] = format_time(c.at) if c.at else "0001-01-01T00:00:00Z"
    return go_json(d)


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
    )


@dataclass(frozen=True, slots=True)
class LostUpdate:
    """A journal record not built on the state it replaced.

    Attributes:
        change: the record whose ``prev`` is not the state the journal left for its entry.
        over: the hash the journal left for that entry just before it, ``""`` when none existed.
    """

    change: Change
    over: str


class _HasJournal(Protocol):
    def journal(self, after: int = 0) -> Iterable[Change]: ...


def lost_updates(store: _HasJournal, after: int = 0) -> list[LostUpdate]:
    """Return, in journal order, the records of ``store`` with ``seq > after`` whose ``prev`` is not
    the state the journal left for that entry (docs/contract.md#lost-updates).

    With ``after > 0`` the first record seen for an entry has no predecessor in the window and is
    never reported. A store whose writers all anchor their writes (``if_hash`` or ``based_on``)
    reports nothing. Errors from the journal propagate.
    """
    last: dict[str, str] = {}
    seen: set[str] = set()
    out: list[LostUpdate] = []
    for c in store.journal(after):
        k = c.entry.key
        if (k in seen or after == 0) and c.prev != last.get(k, ""):
            out.append(LostUpdate(c, last.get(k, "")))
        seen.add(k)
        last[k] = "" if c.entry.deleted else c.entry.hash
    return out
