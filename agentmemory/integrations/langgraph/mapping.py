"""The reversible mapping between LangGraph's items and our entries (docs/integrations.md#the-mapping).

LangGraph addresses an item by a namespace (a tuple of strings) and a key (a string) and holds a
JSON value (a ``dict``); we address an entry by a kebab-case scope and name and hold Markdown
content with one-line meta. This module holds the rule both ways and imports nothing of
LangGraph, so it is tested alone:

- scope: the namespace's labels joined by ``-`` when every label is ``[a-z0-9]+`` and the join
  fits 64 bytes (``("memories", "u42")`` is ``memories-u42``); otherwise a readable slug of the
  labels, ``-``, and the first 8 hex digits of the SHA-256 of the namespace's JSON
  (``("users", "user_1")`` is ``users-user-1-<8 hex>``).
- name: the key when it is kebab-case (UUIDs are), else a slug, ``-`` and 8 hex digits likewise.
- meta: the exact namespace and key (JSON, one line), when the item was created (ISO 8601), and
  where the value is; every read checks them, so an item is never answered for another address.
- content: the text the store indexes (the value's ``index`` fields, as LangGraph chooses them),
  then, unless that text is empty or the value's JSON itself, the value as a fenced JSON block.

A namespace, key or value this cannot hold (not JSON, over the store's entry bound, a namespace
and key over the meta bound) raises :class:`MappingError` naming it; nothing is changed silently.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...entries import Entry, utf8_len
from ...rules import MAX_META_BYTES, MAX_NAME_BYTES, suggest_name, valid_name

__all__ = [
    "META_CREATED",
    "META_KEY",
    "META_NAMESPACE",
    "META_VALUE",
    "Mapped",
    "MappingError",
    "entry_for",
    "item_of",
    "key_name",
    "namespace_scope",
    "value_json",
]

META_NAMESPACE = "langgraph-namespace"
"""Meta key holding the item's namespace as a one-line JSON array of strings."""
META_KEY = "langgraph-key"
"""Meta key holding the item's key as a JSON string."""
META_CREATED = "langgraph-created"
"""Meta key holding when the item was first put (ISO 8601, UTC), kept across updates."""
META_VALUE = "langgraph-value"
"""Meta key saying where the value is: ``"content"`` (the content is the value's JSON) or
``"fenced"`` (the content is the indexed text, then the value in a fenced JSON block)."""

_PLAIN_LABEL = re.compile(r"[a-z0-9]+")
_HASH_HEX = 8
_FENCE_OPEN = "\n\n```json langgraph-value\n"
_FENCE_CLOSE = "\n```"


class MappingError(ValueError):
    """A namespace, key or value that has no entry form; the message names it and the limit."""


def _digest(obj: object) -> str:
    text = json.dumps(obj, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_HEX]


def _hashed(text: str, obj: object) -> str:
    slug = suggest_name(text)[: MAX_NAME_BYTES - _HASH_HEX - 1].strip("-")
    return f"{slug}-{_digest(obj)}"


def namespace_scope(namespace: Sequence[str]) -> str:
    """The scope holding ``namespace``'s items (the rule in the module docstring).

    Raises :class:`MappingError` for an empty namespace or a label that is not a non-empty
    ``str``."""
    labels = tuple(namespace)
    if not labels:
        raise MappingError("namespace is empty; give at least one label")
    for label in labels:
        if not isinstance(label, str) or not label:
            raise MappingError(
                f"namespace {labels!r} has the label {label!r}; labels are non-empty strings"
            )
    joined = "-".join(labels)
    if all(_PLAIN_LABEL.fullmatch(label) for label in labels) and len(joined) <= MAX_NAME_BYTES:
        return joined
    return _hashed(joined, list(labels))


def key_name(key: str) -> str:
    """The entry name holding ``key``: the key itself when kebab-case, else a slug and 8 hex
    digits of its SHA-256. Raises :class:`MappingError` for a key that is not a non-empty ``str``."""
    if not isinstance(key, str) or not key:
        raise MappingError(f"key {key!r} is not a non-empty string")
    return key if valid_name(key) else _hashed(key, key)


def value_json(value: Mapping[str, Any], where: str) -> str:
    """``value`` as one line of JSON; raises :class:`MappingError` naming ``where`` when it is
    not a ``dict`` of JSON values (NaN and infinities included)."""
    if not isinstance(value, Mapping):
        raise MappingError(f"the value of {where} is a {type(value).__name__}, not a dict")
    try:
        return json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise MappingError(f"the value of {where} is not JSON ({e}); store JSON values") from e


@dataclass(frozen=True, slots=True)
class Mapped:
    """An item read back from an entry: its exact address, value and times (aware UTC)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime


def entry_for(
    namespace: Sequence[str],
    key: str,
    value: Mapping[str, Any],
    texts: Sequence[str] | None,
    *,
    created: datetime,
    max_entry_bytes: int,
) -> Entry:
    """The entry holding the item. ``texts``: the value's indexed texts (LangGraph's
    ``get_text_at_path`` over the index fields), or ``None`` for the whole value (``"$"``).

    Raises :class:`MappingError` when the namespace and key take more than the meta bound
    (1024 bytes, :data:`~agentmemory.rules.MAX_META_BYTES`) or the content is over
    ``max_entry_bytes`` (UTF-8 bytes), naming the item and the figures."""
    ns = tuple(namespace)
    scope, name = namespace_scope(ns), key_name(key)
    where = f"namespace {ns!r} key {key!r}"
    whole = value_json(value, where)
    text = "\n\n".join(t for t in texts or () if t.strip()) if texts is not None else None
    if not text or text == whole:
        content, placed = whole, "content"
    else:
        content, placed = text + _FENCE_OPEN + whole + _FENCE_CLOSE, "fenced"
    meta = {
        META_NAMESPACE: json.dumps(list(ns), ensure_ascii=False),
        META_KEY: json.dumps(key, ensure_ascii=False),
        META_CREATED: created.isoformat(),
        META_VALUE: placed,
    }
    used = sum(utf8_len(k) + utf8_len(v) for k, v in meta.items())
    if used > MAX_META_BYTES:
        raise MappingError(
            f"{where} takes {used} bytes of the entry's meta, over the {MAX_META_BYTES} byte "
            "limit; use a shorter namespace or key"
        )
    size = utf8_len(content)
    if max_entry_bytes > 0 and size > max_entry_bytes:
        raise MappingError(
            f"{where} is {size} bytes as an entry (indexed text and the value's JSON), over the "
            f"store's {max_entry_bytes} byte limit; open the store with a larger "
            "max_entry_bytes or store a smaller value"
        )
    return Entry(scope=scope, name=name, content=content, meta=meta)


def item_of(entry: Entry) -> Mapped | None:
    """The item ``entry`` holds, or ``None`` when it holds none (an entry not written through
    :func:`entry_for`, or one whose meta does not parse)."""
    meta = entry.meta or {}
    try:
        ns = json.loads(meta[META_NAMESPACE])
        key = json.loads(meta[META_KEY])
        created = datetime.fromisoformat(meta[META_CREATED])
        placed = meta[META_VALUE]
        if placed == "content":
            value = json.loads(entry.content)
        elif placed == "fenced":
            at = entry.content.rindex(_FENCE_OPEN)
            body = entry.content[at + len(_FENCE_OPEN) :]
            if not body.endswith(_FENCE_CLOSE):
                return None
            value = json.loads(body[: -len(_FENCE_CLOSE)])
        else:
            return None
    except (KeyError, ValueError):
        return None
    if not (isinstance(ns, list) and all(isinstance(x, str) for x in ns) and isinstance(key, str)):
        return None
    if not isinstance(value, dict) or entry.updated is None:
        return None
    return Mapped(tuple(ns), key, value, created, entry.updated)
