"""What the model is told about each memory tool: its description, JSON Schema and annotations.

The texts, schemas (draft 2020-12, the Go module's key order) and MCP annotations follow the Go
module (docs/contract.md#the-tools), in our words; ``memory_search``'s description says how the
store ranks (by meaning and words, or by words only; docs/contract.md#memory_search).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_SEARCH_BYTES",
    "DEFAULT_SEARCH_LIMIT",
    "MAX_SEARCH_LIMIT",
    "ToolSpec",
    "forget_spec",
    "patch_spec",
    "save_spec",
    "search_spec",
    "writer_scopes_sentence",
]

DEFAULT_SEARCH_LIMIT = 5
"""Entries ``memory_search`` returns when the call gives no ``limit`` (Go ``DefaultSearchLimit``)."""

DEFAULT_SEARCH_BYTES = 16 * 1024
"""Bytes of entry content one ``memory_search`` result shows at most (Go ``DefaultSearchBytes``);
the entries past it are listed by name and size."""

MAX_SEARCH_LIMIT = 100
"""The most entries one ``memory_search`` call ranks, whatever ``limit`` the model asks for, so a
call cannot make recall fetch millions of candidates or list millions of names."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool as the model sees it: ``name``, ``description``, ``schema`` (the JSON Schema of
    its arguments) and ``annotations`` (MCP's hints)."""

    name: str
    description: str
    schema: dict[str, Any]
    annotations: dict[str, Any]


def writer_scopes_sentence(scopes: Sequence[str], read_scopes: Sequence[str]) -> str:
    """The sentence a writer's description ends with: its scopes, and which are read-only."""
    if len(scopes) == 1:
        text = f"Scope: {scopes[0]}, the only one; the argument may be left out."
    else:
        text = f"Scopes: {', '.join(scopes)}; name one on every call."
    for r in read_scopes:
        text += (
            f" Scope {r} is read-only: memory_search reads it, and a write to it is refused with"
            f' "scope {r} is read-only".'
        )
    return text


def _search_scopes_sentence(scopes: Sequence[str], read_scopes: Sequence[str]) -> str:
    every = [*scopes, *read_scopes]
    if len(every) == 1:
        return f"Scope: {every[0]}, the only one; scopes may be left out."
    text = f"Scopes: {', '.join(every)}; all of them when scopes is left out."
    if read_scopes:
        text += f" Read-only, so for reading: {', '.join(read_scopes)}."
    return text


def _scope_property(scopes: Sequence[str]) -> dict[str, Any]:
    what = "Which memory the entry belongs to"
    if len(scopes) > 1:
        what += "; name one of the values"
    return {"type": "string", "description": what, "enum": list(scopes)}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    # key order of the Go module's schemas: type, description, enum, properties, required, items,
    # additionalProperties
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _with_scope(required: list[str], scopes: Sequence[str]) -> list[str]:
    return ["scope", *required] if len(scopes) > 1 else required


def _annotations(
    title: str, *, read_only: bool, destructive: bool, idempotent: bool
) -> dict[str, Any]:
    return {
        "title": title,
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": False,
    }


def save_spec(
    scopes: Sequence[str], read_scopes: Sequence[str], limit: int, kinds: Sequence[str]
) -> ToolSpec:
    """``memory_save`` over ``scopes``, for entries of at most ``limit`` bytes whose ``type``
    is one of ``kinds``."""
    props = {
        "scope": _scope_property(scopes),
        "name": {
            "type": "string",
            "description": "Kebab-case name, unique within the scope: lowercase letters, "
            "digits and single hyphens, at most 64 bytes",
        },
        "content": {
            "type": "string",
            "description": "The whole content of the entry, Markdown",
        },
        "meta": {
            "type": "object",
            "description": "Metadata beside the content: a description is shown in the block "
            "and found by search; keys are kebab-case, values one line. Leave it out to keep "
            "the metadata the entry has; give {} to clear it",
            "additionalProperties": {"type": "string"},
        },
        "type": {
            "type": "string",
            "description": "The kind of memory: user (facts about the user), feedback (how "
            "the user wants the work done), project (notes on the work), reference (where to "
            "find outside material); stored as the type in meta. Leave it out to keep the "
            "entry's kind",
            "enum": list(kinds),
        },
        "supersedes": {
            "type": "string",
            "description": "The name of an entry of the same scope that this one makes out "
            "of date: it leaves the memory block and search, and stays in the journal. Only "
            "when the new entry replaces what the old one says",
        },
    }
    description = (
        "Create a memory entry, or replace one whole. To edit an existing entry prefer "
        "memory_patch, which sends only the change. Content is Markdown of at most "
        f"{limit} bytes; a larger write is refused with both sizes. Give a description "
        "in meta so the entry can be found. meta replaces the entry's metadata when you give "
        "it and keeps what is there when you leave it out, so send an empty object to clear "
        "it. The result says what the write replaced and what became of the metadata. "
        + writer_scopes_sentence(scopes, read_scopes)
    )
    return ToolSpec(
        "memory_save",
        description,
        _object(props, _with_scope(["name", "content"], scopes)),
        _annotations("Save memory entry", read_only=False, destructive=True, idempotent=True),
    )


def patch_spec(scopes: Sequence[str], read_scopes: Sequence[str]) -> ToolSpec:
    """``memory_patch`` over ``scopes``."""
    props = {
        "scope": _scope_property(scopes),
        "name": {"type": "string", "description": "The entry to edit"},
        "old_text": {
            "type": "string",
            "description": "Text that appears exactly once in the entry, copied exactly",
        },
        "new_text": {"type": "string", "description": "What replaces it; empty removes it"},
    }
    description = (
        "Edit a memory entry by replacing old_text with new_text. old_text must appear "
        "exactly once in the entry, copied exactly; the call fails and says so when it is "
        "absent or repeated. Prefer this to memory_save for an edit: the call is the size of "
        "the change, and the edit is anchored in the stored text, so a change another "
        "session made in the meantime is kept. " + writer_scopes_sentence(scopes, read_scopes)
    )
    return ToolSpec(
        "memory_patch",
        description,
        _object(props, _with_scope(["name", "old_text", "new_text"], scopes)),
        _annotations("Edit memory entry", read_only=False, destructive=False, idempotent=False),
    )


def forget_spec(scopes: Sequence[str], read_scopes: Sequence[str]) -> ToolSpec:
    """``memory_forget`` over ``scopes``."""
    props = {
        "scope": _scope_property(scopes),
        "name": {"type": "string", "description": "The entry to remove"},
    }
    description = (
        "Remove a memory entry. The store's journal keeps its last content. "
        + writer_scopes_sentence(scopes, read_scopes)
    )
    return ToolSpec(
        "memory_forget",
        description,
        _object(props, _with_scope(["name"], scopes)),
        _annotations("Forget memory entry", read_only=False, destructive=True, idempotent=True),
    )


def search_spec(
    scopes: Sequence[str],
    read_scopes: Sequence[str],
    search_limit: int,
    search_bytes: int,
    *,
    by_meaning: bool,
) -> ToolSpec:
    """``memory_search`` over ``scopes`` and ``read_scopes``; ``by_meaning`` when the store
    keeps an embedding index (the description then says it matches by meaning too)."""
    every = [*scopes, *read_scopes]
    props = {
        "query": {
            "type": "string",
            "description": "What to look for: a few words, a phrase or a question",
        },
        "scopes": {
            "type": "array",
            "description": "Which memories to search; all of them when left out",
            "items": {"type": "string", "enum": every},
        },
        "limit": {
            "type": "integer",
            "description": f"At most this many entries (up to {MAX_SEARCH_LIMIT}); keep it "
            "low, results stay in the conversation",
        },
    }
    if by_meaning:
        how = (
            "It matches by meaning and by words: entries are ranked by how close their name, "
            "description and content are to the query in meaning and by the words they "
            "share, best first, so an entry can be found without every word of the query, or "
            "with none of them when it means the same."
        )
    else:
        how = (
            "It matches by words: entries are ranked by how many of the query's words their "
            "name, description and content share, and how rare those words are, best first; "
            "an entry need not contain every word."
        )
    description = (
        "Find memory entries: the ones the memory block omits, or one to read whole before "
        f"editing it. {how} Returns up to {search_limit} entries unless limit says "
        f"otherwise, and at most {search_bytes} bytes of content; the rest are listed by "
        "name. Results stay in the conversation, so search for what you need and no more. "
        + _search_scopes_sentence(scopes, read_scopes)
    )
    return ToolSpec(
        "memory_search",
        description,
        _object(props, ["query"]),
        _annotations("Search memory", read_only=True, destructive=False, idempotent=True),
    )
