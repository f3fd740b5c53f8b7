"""Entries, journal records and the rules every store enforces.

An :class:`Entry` is one remembered thing: a kebab-case ``name`` unique within a ``scope``, Markdown
``content`` bounded by the store's ``max_entry_bytes``, and optional ``meta``. A :class:`Change` is
one journal record. :func:`check_entry` is the one validation every write path calls, in the order of
docs/contract.md#the-order-of-checks-in-put (first failure wins). :func:`content_hash` is the one hash the
journal, the manifest and the vector index share.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from .errors import EntryTooLargeError, InvalidEntryError

__all__ = [
    "DEFAULT_MAX_ENTRY_BYTES",
    "MAX_META_BYTES",
    "MAX_NAME_BYTES",
    "META_DESCRIPTION",
    "RESERVED_META_KEYS",
    "SOURCE_RECONCILED",
    "Change",
    "Entry",
    "check_entry",
    "check_scope",
    "content_hash",
    "format_time",
    "go_quote",
    "matches",
    "parse_time",
    "suggest_name",
    "utf8_len",
    "valid_name",
]

DEFAULT_MAX_ENTRY_BYTES = 4 * 1024
"""The per-entry content bound every store starts with, in UTF-8 bytes (Go ``DefaultMaxEntryBytes``)."""

MAX_NAME_BYTES = 64
"""The longest scope, name or meta key, in bytes."""

MAX_META_BYTES = 1024
"""The bound on one entry's meta, keys plus values, in UTF-8 bytes."""

META_DESCRIPTION = "description"
"""The meta key the rendered block and search results show beside an entry."""

RESERVED_META_KEYS = frozenset({"name", "updated"})
"""Meta keys an entry may not use (they are frontmatter fields of the Go file store)."""

SOURCE_RECONCILED = "reconciled"
"""``Change.source`` of a state the store found rather than wrote."""

_NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_KEBAB_RULE = "lowercase letters, digits and single hyphens, up to 64 bytes"


def utf8_len(text: str) -> int:
    """Return the size of ``text`` in UTF-8 bytes, the unit every bound in this library uses.

    Lone surrogates (text that is not valid Unicode) count as the 3 bytes ``surrogatepass`` gives.
    """
    return len(text.encode("utf-8", "surrogatepass"))


def valid_name(s: object) -> bool:
    """Report whether ``s`` is kebab-case: ``[a-z0-9]+`` groups joined by single ``-``, 1 to 64 bytes.

    Scopes, entry names and meta keys all follow this grammar, so a name is a file name, a folder
    name and a key without escaping. ``"a"``, ``"a-b-c"`` and ``"0"`` are valid; ``""``, ``"A"``,
    ``"a--b"``, ``"-a"``, ``"a_b"`` and 65 ``a``'s are not.
    """
    return isinstance(s, str) and len(s) <= MAX_NAME_BYTES and _NAME_RE.fullmatch(s) is not None


def content_hash(content: str) -> str:
    """Return ``"sha256:"`` + the lowercase hex SHA-256 of ``content``'s UTF-8 bytes (71 characters).

    ``content_hash("")`` is ``sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855``.
    """
    return "sha256:" + hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


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


@dataclass(frozen=True, slots=True)
class Entry:
    """One remembered thing.

    Build one as ``Entry(scope="user", name="style", content="Short answers.", meta={...})``; the
    store sets ``hash``, ``updated`` and ``deleted`` and ignores what the caller passes for them.

    Attributes:
        scope: kebab-case; whose memory this is (``user``, ``project``, ...).
        name: kebab-case, unique within the scope, 1 to 64 bytes.
        content: non-empty UTF-8 Markdown, at most the store's ``max_entry_bytes`` (UTF-8 bytes).
        meta: ``dict[str, str]`` beside the content (kebab-case keys, one-line values, at most
            1024 bytes of keys plus values), or ``None``; a store returns ``None``, never ``{}``.
            Stores copy it on the way in and out, so mutating it never reaches a store.
        hash: ``content_hash(content)``, set by the store.
        updated: when the store last wrote the entry (aware UTC ``datetime``), set by the store.
        deleted: ``True`` only on the tombstone record of a forget, in the journal.
    """

    scope: str
    name: str
    content: str
    meta: dict[str, str] | None = None
    hash: str = ""
    updated: datetime | None = None
    deleted: bool = False

    @property
    def description(self) -> str:
        """The ``description`` meta value, or ``""``."""
        return (self.meta or {}).get(META_DESCRIPTION, "")

    @property
    def size(self) -> int:
        """The content's size in UTF-8 bytes, the number the entry bound applies to."""
        return utf8_len(self.content)

    @property
    def key(self) -> str:
        """``"scope/name"``, the entry's identity across scopes."""
        return f"{self.scope}/{self.name}"

    def copy(self, **changes: object) -> Entry:
        """Return a copy with its own meta dict and ``changes`` applied (field name to new value)."""
        fields: dict[str, object] = {
            "scope": self.scope,
            "name": self.name,
            "content": self.content,
            "meta": dict(self.meta) if self.meta else None,
            "hash": self.hash,
            "updated": self.updated,
            "deleted": self.deleted,
        }
        fields.update(changes)
        if isinstance(fields["meta"], Mapping):
            fields["meta"] = dict(fields["meta"]) or None
        return Entry(**fields)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Change:
    """One journal record: the entry after a change, what it was built on and what it replaced.

    Attributes:
        seq: position in the store's journal, contiguous from 1; the cursor ``journal(after)`` takes.
        entry: the entry after the change; a tombstone carries the last content with ``deleted``.
        prev: the hash the write was built on (``if_hash``, else ``based_on``, else the stored
            hash, else ``""``): the writer's claim, which makes a lost update visible.
        replaced: the hash the store held when the change landed, ``""`` for a create; records of
            one entry chain through it.
        session: the session that wrote it (``agentmemory.session``), ``""`` when unattributed.
        source: ``""`` for a write through the store, ``"reconciled"`` for a state found.
        at: when the change was made (aware UTC); for display only, ``seq`` orders records.
    """

    seq: int
    entry: Entry
    prev: str = ""
    replaced: str = ""
    session: str = ""
    source: str = ""
    at: datetime | None = field(default=None)

    def copy(self) -> Change:
        """Return a copy that shares no mutable state (its entry's meta is a new dict)."""
        return Change(
            seq=self.seq,
            entry=self.entry.copy(),
            prev=self.prev,
            replaced=self.replaced,
            session=self.session,
            source=self.source,
            at=self.at,
        )


def _invalid(detail: str, field: str) -> InvalidEntryError:
    return InvalidEntryError(detail, field=field)


def suggest_name(s: str) -> str:
    """Return a kebab-case name close to ``s`` (lowercased, other characters runs turned into single
    hyphens, cut to 64 bytes), or ``"note"`` when nothing usable is left. For error messages."""
    out = re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")[:MAX_NAME_BYTES].strip("-")
    return out or "note"


def _not_kebab(what: str, value: object) -> str:
    if isinstance(value, str):
        return (
            f"{what} {go_quote(value)} is not kebab-case ({_KEBAB_RULE}); "
            f"use e.g. {go_quote(suggest_name(value))}"
        )
    return f"{what} {value!r} is a {type(value).__name__}, not kebab-case text"


def check_scope(scope: object, *, what: str = "scope") -> str:
    """Return ``scope`` if it is kebab-case, else raise :class:`InvalidEntryError` naming it.

    ``what`` names the value in the message (``"scope"``, ``"read scope"``).
    """
    if not valid_name(scope):
        raise _invalid(_not_kebab(what, scope), "scope")
    assert isinstance(scope, str)
    return scope


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_SHOWN_END_CHARS = 20
"""A refused value longer than twice this is quoted in a message as its first and last 20
characters around "…" (both ends, so stray white space at either end stays visible)."""


def _shown(value: str) -> str:
    """``value`` Go-quoted for a message, its middle cut when over 40 characters."""
    if len(value) > 2 * _SHOWN_END_CHARS:
        value = value[:_SHOWN_END_CHARS] + "…" + value[-_SHOWN_END_CHARS:]
    return go_quote(value)


def _bad_char_at(text: str) -> int:
    """Index of the first character of ``text`` that UTF-8 cannot encode (a lone surrogate)."""
    return next(i for i, ch in enumerate(text) if 0xD800 <= ord(ch) <= 0xDFFF)


def check_entry(entry: Entry, limit: int = 0, stored: Entry | None = None) -> None:
    """Raise if a store must refuse ``entry``; return ``None`` if it may be written.

    The rules, in this order (the first failure wins; docs/contract.md#the-order-of-checks-in-put):

    1. ``scope`` kebab-case, 2. ``name`` kebab-case, 3. ``content`` non-empty, 4. ``content``
       valid Unicode (no lone surrogates), 5. each meta key kebab-case, 6. no reserved key
       (``name``, ``updated``), 7. no value spanning lines, 8. no value with leading or trailing
       white space, 9. each value valid Unicode, 10. keys plus values at most 1024 UTF-8 bytes:
       each raises :class:`InvalidEntryError`;
    11. ``limit > 0`` and content over ``limit`` UTF-8 bytes raises :class:`EntryTooLargeError`,
        with ``stored``'s size when a live entry exists.

    Meta keys are checked in sorted order, so which bad key is reported is deterministic.
    Wrong types (a non-``str`` content, a meta that is not a mapping of ``str`` to ``str``) are
    refused as invalid too, naming the type.
    """
    if not valid_name(entry.scope):
        raise _invalid(
            _not_kebab("scope", entry.scope) + f" (the entry named {_shown(str(entry.name))})",
            "scope",
        )
    if not valid_name(entry.name):
        raise _invalid(
            _not_kebab("name", entry.name) + f" (an entry in scope {entry.scope})", "name"
        )
    key = f"{entry.scope}/{entry.name}"
    content = entry.content
    if not isinstance(content, str):
        raise _invalid(f"{key} content is a {type(content).__name__}, not text", "content")
    if content == "":
        raise _invalid(f"{key} has no content; use forget to remove an entry", "content")
    if not _valid_unicode(content):
        raise _invalid(
            f"{key} content is not valid UTF-8 (a lone surrogate at character "
            f"{_bad_char_at(content)}); send text",
            "content",
        )
    meta = entry.meta
    if meta is not None:
        if not isinstance(meta, Mapping):
            raise _invalid(f"{key} meta is a {type(meta).__name__}, not a mapping", "meta")
        total = 0
        for k in sorted(meta, key=str):
            v = meta[k]
            if not valid_name(k):
                raise _invalid(f"{key} " + _not_kebab("meta key", k), "meta")
            if k in RESERVED_META_KEYS:
                raise _invalid(f"{key} meta key {go_quote(k)} is reserved; use another key", "meta")
            if not isinstance(v, str):
                raise _invalid(
                    f"{key} meta {go_quote(k)} is a {type(v).__name__}, not text", "meta"
                )
            if "\r" in v or "\n" in v:
                raise _invalid(
                    f"{key} meta {go_quote(k)} spans lines; a value is one line, not {_shown(v)}",
                    "meta",
                )
            if v != v.strip():
                raise _invalid(
                    f"{key} meta {go_quote(k)} has leading or trailing space ({_shown(v)}); "
                    f"trim it to {_shown(v.strip())}",
                    "meta",
                )
            if not _valid_unicode(v):
                raise _invalid(
                    f"{key} meta {go_quote(k)} is not valid UTF-8 (a lone surrogate at character "
                    f"{_bad_char_at(v)}); send text",
                    "meta",
                )
            total += utf8_len(k) + utf8_len(v)
        if total > MAX_META_BYTES:
            raise _invalid(
                f"{key} meta is {total} bytes, over the {MAX_META_BYTES} byte limit; "
                "shorten the values",
                "meta",
            )
    if limit > 0:
        size = utf8_len(content)
        if size > limit:
            raise EntryTooLargeError(
                entry.scope, entry.name, size, limit, stored.size if stored is not None else None
            )


def matches(entry: Entry, query: str) -> bool:
    """The reference search predicate (docs/contract.md#the-reference-search-predicate).

    True when every white-space separated word of ``query``, lowercased, is a substring of the
    lowercased ``name + "\\n" + meta values joined by "\\n" + "\\n" + content``. Meta keys are not
    searched. An empty query matches every entry.
    """
    words = query.lower().split()
    if not words:
        return True
    values = "\n".join((entry.meta or {}).values())
    hay = f"{entry.name}\n{values}\n{entry.content}".lower()
    return all(w in hay for w in words)
