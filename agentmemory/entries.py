"""Entries and journal records: the values every store reads and writes.

An :class:`Entry` is one remembered thing: a kebab-case ``name`` unique within a ``scope``, Markdown
``content`` and optional ``meta``. A :class:`Change` is one journal record. :func:`content_hash` is
the one hash the journal, the manifest and the vector index share.

This module imports nothing else of agentmemory: the rules an entry must meet are in
:mod:`agentmemory.rules`, the journal line's wire form in :mod:`agentmemory.wire`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

__all__ = [
    "META_DESCRIPTION",
    "REDACTED",
    "SOURCE_PURGED",
    "SOURCE_RECONCILED",
    "Change",
    "Entry",
    "content_hash",
    "utf8_len",
]

META_DESCRIPTION = "description"
"""The meta key the rendered block and search results show beside an entry."""

SOURCE_RECONCILED = "reconciled"
"""``Change.source`` of a state the store found rather than wrote."""

SOURCE_PURGED = "purged"
"""``Change.source`` of the record a purge appends: its entry's content is the reason given
(docs/contract.md#purge-erasing-an-entry-for-good)."""

REDACTED = "[redacted]"
"""The content a purge leaves in each journal record of the entry it erased; those records'
hashes become ``redacted:<n>`` (docs/contract.md#purge-erasing-an-entry-for-good)."""


def utf8_len(text: str) -> int:
    """Return the size of ``text`` in UTF-8 bytes, the unit every bound in this library uses.

    Lone surrogates (text that is not valid Unicode) count as the 3 bytes ``surrogatepass`` gives.
    """
    return len(text.encode("utf-8", "surrogatepass"))


def content_hash(content: str) -> str:
    """Return ``"sha256:"`` + the lowercase hex SHA-256 of ``content``'s UTF-8 bytes (71 characters).

    ``content_hash("")`` is ``sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855``.
    """
    return "sha256:" + hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


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
        message: the id of the conversation message the write came from, ``""`` when unknown.
        tool: the tool that made the write (``memory_save``, ...), ``""`` for a direct call.
        reason: why the write was made, in the writer's words, ``""`` when not given.
            The three are the write's provenance, set with :func:`agentmemory.provenance`
            (docs/kinds.md#provenance).
        note: what the writer should know about a write that landed, ``""`` for none: a
            :class:`~agentmemory.ChromaStore` opened journal-only says the vector index is
            brought up to date by the process that holds it (docs/storage.md#several-processes).
            Not part of the journal: records read back carry ``""``.
    """

    seq: int
    entry: Entry
    prev: str = ""
    replaced: str = ""
    session: str = ""
    source: str = ""
    at: datetime | None = field(default=None)
    message: str = ""
    tool: str = ""
    reason: str = ""
    note: str = field(default="", compare=False)

    @property
    def redacted(self) -> bool:
        """Whether a purge replaced this record's content (its hash starts ``redacted:``)."""
        return self.entry.hash.startswith("redacted:")

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
            message=self.message,
            tool=self.tool,
            reason=self.reason,
            note=self.note,
        )
