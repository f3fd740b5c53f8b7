"""The rules every store enforces on an entry, and the reference search predicate.

:func:`check_entry` is the one validation every write path calls, in the order of
docs/contract.md#the-order-of-checks-in-put (first failure wins); :func:`valid_name` is the kebab-case
grammar of scopes, names and meta keys; :func:`matches` is the reference search predicate.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .entries import Entry, utf8_len
from .errors import EntryTooLargeError, InvalidEntryError
from .wire import go_quote

__all__ = [
    "DEFAULT_MAX_ENTRY_BYTES",
    "MAX_META_BYTES",
    "MAX_NAME_BYTES",
    "RESERVED_META_KEYS",
    "check_entry",
    "check_scope",
    "check_size",
    "matches",
    "suggest_name",
    "valid_name",
]

DEFAULT_MAX_ENTRY_BYTES = 4 * 1024
"""The per-entry content bound every store starts with, in UTF-8 bytes (Go ``DefaultMaxEntryBytes``)."""

MAX_NAME_BYTES = 64
"""The longest scope, name or meta key, in bytes."""

MAX_META_BYTES = 1024
"""The bound on one entry's meta, keys plus values, in UTF-8 bytes."""

RESERVED_META_KEYS = frozenset({"name", "updated"})
"""Meta keys an entry may not use (they are frontmatter fields of the Go file store)."""

_NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_KEBAB_RULE = "lowercase letters, digits and single hyphens, up to 64 bytes"


def valid_name(s: object) -> bool:
    """Report whether ``s`` is kebab-case: ``[a-z0-9]+`` groups joined by single ``-``, 1 to 64 bytes.

    Scopes, entry names and meta keys all follow this grammar, so a name is a file name, a folder
    name and a key without escaping. ``"a"``, ``"a-b-c"`` and ``"0"`` are valid; ``""``, ``"A"``,
    ``"a--b"``, ``"-a"``, ``"a_b"`` and 65 ``a``'s are not.
    """
    return isinstance(s, str) and len(s) <= MAX_NAME_BYTES and _NAME_RE.fullmatch(s) is not None


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
            f"{what} {_shown(value)} is not kebab-case ({_KEBAB_RULE}); "
            f"use e.g. {go_quote(suggest_name(value))}"
        )
    return f"{what} {_shown(repr(value))} is a {type(value).__name__}, not kebab-case text"


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
    check_size(entry, limit, stored)


def check_size(entry: Entry, limit: int, stored: Entry | None = None) -> None:
    """Rule 11 of :func:`check_entry` alone, for an entry that passed rules 1 to 10: when
    ``limit > 0`` and the content is over ``limit`` UTF-8 bytes, raise
    :class:`~agentmemory.EntryTooLargeError` (with ``stored``'s size when a live entry exists)."""
    if limit > 0:
        size = utf8_len(entry.content)
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
