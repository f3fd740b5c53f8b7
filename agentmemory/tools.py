"""The four memory tools a model uses: ``memory_save``, ``memory_patch``, ``memory_forget`` and
``memory_search``.

:func:`tools` builds them over a store for a fixed set of scopes. Each is a :class:`Tool`: a name,
a description and a JSON Schema the model reads, MCP annotations, and a call that takes the
model's arguments (a dict or a JSON string) and returns a :class:`ToolResult`: the text the model
sees, whether it is an error, and for a write the journal record (never shown to the model).

A tool never raises on the model's input. Invalid JSON, a missing, extra or mistyped property, a
scope outside the tool set, a read-only scope, a name that is not kebab-case, content over the
limit, an ``old_text`` that is absent or repeated, an empty query: each is an error result whose
text names the property, the value and what is allowed, and nothing is written.

The schemas, descriptions, annotations, call pipeline and result lines follow the Go module
(docs/contract.md#the-tools), in our words, except that ``memory_search`` ranks with
``store.recall`` (hybrid BM25 and embedding recall when the store keeps vectors, BM25 otherwise;
docs/contract.md#memory_search) instead of filtering by the every-word predicate, and its description says so.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .entries import Change, Entry, content_hash, utf8_len
from .errors import (
    AgentMemoryError,
    ConflictError,
    EmptyQueryError,
    IndexDamagedError,
    IndexReadOnlyError,
    IndexWriteError,
    InvalidEntryError,
    NotFoundError,
    StoreLockedError,
    ToolConfigError,
)
from .kinds import KIND_META, KindRegistry
from .manifest import Manifest
from .rules import check_scope, valid_name
from .save_entry import meta_for_save
from .session import provenance
from .store import Store
from .validity import META_SUPERSEDES, superseded_entry
from .wire import go_quote

if TYPE_CHECKING:  # jsonschema is imported when the first Tool is built, not by import agentmemory
    import jsonschema

__all__ = [
    "DEFAULT_SEARCH_BYTES",
    "DEFAULT_SEARCH_LIMIT",
    "ECHO_CHARS",
    "MAX_ERROR_CHARS",
    "MAX_SEARCH_LIMIT",
    "PATCH_ATTEMPTS",
    "Tool",
    "ToolConfigError",
    "ToolResult",
    "check_tool_scopes",
    "tools",
]

log = logging.getLogger(__name__)

DEFAULT_SEARCH_LIMIT = 5
"""Entries ``memory_search`` returns when the call gives no ``limit`` (Go ``DefaultSearchLimit``)."""

DEFAULT_SEARCH_BYTES = 16 * 1024
"""Bytes of entry content one ``memory_search`` result shows at most (Go ``DefaultSearchBytes``);
the entries past it are listed by name and size."""

MAX_SEARCH_LIMIT = 100
"""The most entries one ``memory_search`` call ranks, whatever ``limit`` the model asks for, so a
call cannot make recall fetch millions of candidates or list millions of names."""

PATCH_ATTEMPTS = 4
"""How many times ``memory_patch`` re-reads and retries when another writer changed the entry
between its read and its write (Go ``patchAttempts``)."""

_INVALID_ARGS = "invalid arguments: "
_SHOW_CHARS = 80  # longest rendering of an offending value in an error line, in characters


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call.

    Attributes:
        text: what the model sees: the result line(s), or the error, which names the property,
            the value and what to do.
        is_error: ``True`` when the call failed; then nothing was written.
        record: the journal record a successful write appended (``memory_save``,
            ``memory_patch``, ``memory_forget``); ``None`` for a search or an error. For the host
            (session logs, audit); never shown to the model.
    """

    text: str
    is_error: bool = False
    record: Change | None = None


class Tool:
    """One memory tool: what the model is told about it, and the call.

    Call it as ``tool(arguments)``, where ``arguments`` is a mapping or a JSON object as text
    (``str`` or ``bytes``); ``None`` means no arguments. An optional property given as JSON
    ``null`` counts as left out (models in strict modes send ``null`` for what they omit). The
    call never raises on anything the arguments hold: it returns an error :class:`ToolResult`.

    Attributes:
        name: ``memory_save``, ``memory_patch``, ``memory_forget`` or ``memory_search``.
        description: the text that tells the model when and how to call it.
        input_schema: a JSON Schema (draft 2020-12) of the arguments; a fresh copy on each access.
        annotations: MCP tool annotations (``title``, ``readOnlyHint``, ``destructiveHint``,
            ``idempotentHint``, ``openWorldHint``); a fresh copy on each access.
    """

    __slots__ = (
        "_annotations",
        "_optional",
        "_read_only",
        "_run",
        "_schema",
        "_validator",
        "description",
        "name",
    )

    def __init__(
        self,
        name: str,
        description: str,
        input_schema: Mapping[str, Any],
        annotations: Mapping[str, Any],
        run: Callable[[dict[str, Any]], ToolResult],
        *,
        read_only_scopes: Sequence[str] = (),
    ) -> None:
        self.name = name
        self.description = description
        self._schema: dict[str, Any] = copy.deepcopy(dict(input_schema))
        self._annotations: dict[str, Any] = dict(annotations)
        self._run = run
        from jsonschema import Draft202012Validator

        self._validator = Draft202012Validator(self._schema)
        required = set(self._schema.get("required", ()))
        self._optional = frozenset(set(self._schema.get("properties", {})) - required)
        self._read_only = tuple(read_only_scopes)

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments (a deep copy: changing it changes nothing here)."""
        return copy.deepcopy(self._schema)

    @property
    def annotations(self) -> dict[str, Any]:
        """The MCP annotations (a copy)."""
        return dict(self._annotations)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def __call__(self, arguments: Mapping[str, Any] | str | bytes | None = None) -> ToolResult:
        """Run the tool on the model's ``arguments`` and return its :class:`ToolResult`.

        The pipeline: parse JSON text; refuse a write to a read-only scope; validate against
        :attr:`input_schema`; run. Every failure becomes an error result; an unexpected
        exception from the store is logged and returned as an error result too.
        """
        try:
            result = self._call(arguments)
        except IndexDamagedError as exc:  # permanent until repaired: retrying does not help
            log.error("%s", exc)
            result = ToolResult(
                f"{self.name} failed: the memory store's {exc.index} index is damaged; retrying "
                "will not help: tell the user to run 'agentmemory verify --repair' on the store "
                "(the saved memories themselves are intact)",
                is_error=True,
            )
        except Exception as exc:  # the tool's promise: nothing escapes to the agent loop
            log.exception("%s failed unexpectedly", self.name)
            result = ToolResult(
                f"{self.name} failed: {type(exc).__name__}: {exc}; this is a fault of the memory "
                "store, not of the call; try again later",
                is_error=True,
            )
        return _printable(result)

    def _call(self, arguments: Mapping[str, Any] | str | bytes | None) -> ToolResult:
        args: object
        if arguments is None:
            args = {}
        elif isinstance(arguments, str | bytes | bytearray):
            try:
                args = json.loads(arguments)
            except (ValueError, RecursionError) as exc:
                return _error(f"{_INVALID_ARGS}not valid JSON: {exc}")
        else:
            args = arguments
        if not isinstance(args, Mapping):
            return _error(
                f"{_INVALID_ARGS}expected a JSON object of named arguments, got {_json_type(args)}"
            )
        args = {k: v for k, v in args.items() if not (v is None and k in self._optional)}
        scope = args.get("scope")
        if isinstance(scope, str) and scope in self._read_only:
            return _error(
                f"scope {scope} is read-only; memory_search reads it, but no tool writes it"
            )
        problems = sorted(self._validator.iter_errors(args), key=_error_order)
        if problems:
            return _error(_INVALID_ARGS + "; ".join(_explain(p) for p in problems[:5]))
        return self._run(args)


def _printable(result: ToolResult) -> ToolResult:
    """Make ``result.text`` encodable as UTF-8 (lone surrogates from JSON ``\\ud800`` escapes
    become ``\\ud800`` text), so every transport can send it."""
    try:
        result.text.encode("utf-8")
    except UnicodeEncodeError:
        text = result.text.encode("utf-8", "backslashreplace").decode("utf-8")
        return ToolResult(text, result.is_error, result.record)
    return result


def _error(text: str) -> ToolResult:
    return ToolResult(text, is_error=True)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


ECHO_CHARS = 200
"""A query a result line repeats back to the model is cut to this many characters (then "…" and
how many more there were); docs/contract.md#what-the-model-is-told."""

MAX_ERROR_CHARS = 1000
"""A store error a tool returns to the model is cut to this many characters."""


def _echo(text: str) -> str:
    """``text`` Go-quoted, cut to :data:`ECHO_CHARS` characters."""
    if len(text) <= ECHO_CHARS:
        return go_quote(text)
    return go_quote(text[:ECHO_CHARS]) + f"… ({len(text) - ECHO_CHARS} more characters)"


def _show(value: object) -> str:
    """``value`` as JSON, cut to about 80 characters, for an error line."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (ValueError, TypeError, RecursionError):
        text = repr(value)
    if len(text) > _SHOW_CHARS:
        text = text[: _SHOW_CHARS - 1] + "…"
    return text


def _path(parts: Sequence[object]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif isinstance(p, str) and valid_name(p.replace("_", "-")):
            out += f".{p}" if out else p
        else:
            out += f"[{_show(p)}]"
    return out


_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "object": "an object",
    "array": "an array",
    "boolean": "a boolean",
}
_RULE_ORDER = {"type": 0, "required": 1, "additionalProperties": 2, "enum": 3}


def _error_order(e: jsonschema.ValidationError) -> tuple[int, list[str], int]:
    return (len(e.path), [str(p) for p in e.path], _RULE_ORDER.get(str(e.validator), 9))


def _explain(e: jsonschema.ValidationError) -> str:
    """One schema violation in words that name the property, the value and what is allowed."""
    where = _path(list(e.path))
    at = f"{where}: " if where else ""
    rule, allowed, value = e.validator, e.validator_value, e.instance
    if rule == "required" and isinstance(value, Mapping):
        missing = [p for p in allowed if p not in value]
        names = ", ".join(f'"{p}"' for p in missing)
        noun = "property" if len(missing) == 1 else "properties"
        return f"{at}missing required {noun} {names}"
    if rule == "additionalProperties" and isinstance(value, Mapping):
        known = list(e.schema.get("properties", {}))
        extra = [k for k in value if k not in known]
        names = ", ".join(_show(k) for k in extra)
        noun = "property" if len(extra) == 1 else "properties"
        return f"{at}unexpected {noun} {names}; the properties are {', '.join(known)}"
    if rule == "enum":
        options = ", ".join(_show(v) for v in allowed)
        return f"{at}expected one of [{options}], got {_show(value)}"
    if rule == "type":
        want = _TYPE_WORDS.get(str(allowed), str(allowed))
        return f"{at}expected {want}, got {_show(value)} ({_json_type(value)})"
    return f"{at}{e.message}"


# --------------------------------------------------------------------------------------------
# Descriptions and schemas


def _writer_scopes_sentence(scopes: Sequence[str], read_scopes: Sequence[str]) -> str:
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


# --------------------------------------------------------------------------------------------
# The tool set


def tools(
    store: Store,
    scopes: Sequence[str],
    *,
    read_scopes: Sequence[str] = (),
    rendered: Callable[[], Manifest | None] | None = None,
    search_limit: int = DEFAULT_SEARCH_LIMIT,
    search_bytes: int = DEFAULT_SEARCH_BYTES,
    kinds: KindRegistry | None = None,
) -> list[Tool]:
    """Build ``[memory_save, memory_patch, memory_forget, memory_search]`` over ``store``.

    Args:
        store: where entries live; writes go through ``put``/``forget``, so they are journaled
            and stamped with the enclosing :func:`agentmemory.session`.
        scopes: the writable scopes, in the order the model is told them; with one, the writers'
            ``scope`` argument may be left out. Nothing outside ``scopes`` and ``read_scopes`` can
            be read or written through these tools, however the arguments are shaped.
        read_scopes: scopes ``memory_search`` reads (and searches by default) that the writers
            refuse with "scope <r> is read-only".
        rendered: called on every ``memory_save``; returns the :class:`~agentmemory.Manifest`
            of the block the model is reading now (the one :func:`~agentmemory.render` returned), or
            ``None`` when it reads none. A save of an entry the block showed is then built on the
            hash the block showed (``Change.prev``), so overwriting a change made after the render
            becomes a lost update the journal can show, and the result line warns the model.
            Without it, a save is built on the stored entry it read.
        search_limit: entries a search returns when the call gives no ``limit`` (default 5).
        search_bytes: bytes of content one search result shows at most (default 16384); the
            entries past it are listed by name and size.
        kinds: the :class:`~agentmemory.KindRegistry` whose kinds ``memory_save``'s ``type``
            may take (its schema lists them as an enum); default ``KindRegistry()``: ``user``,
            ``feedback``, ``project``, ``reference`` (``docs/kinds.md#kinds-and-their-policy``).

    Returns:
        The four tools, in that order.

    Raises:
        ToolConfigError: (a ``ValueError``) no scopes; ``scopes`` given as one string; a scope or
            read scope that is not kebab-case or is given twice; a scope both writable and
            read-only; ``search_limit`` or ``search_bytes`` under 1.
    """
    writable, readable = check_tool_scopes(scopes, read_scopes)
    for what, value in (("search_limit", search_limit), ("search_bytes", search_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ToolConfigError(f"agentmemory.tools: {what} is {value!r}; it must be at least 1")
    if kinds is not None and not isinstance(kinds, KindRegistry):
        raise ToolConfigError(
            f"agentmemory.tools: kinds is a {type(kinds).__name__}, not a KindRegistry"
        )
    kit = _Kit(store, writable, readable, rendered, search_limit, search_bytes)
    kit.kinds = (kinds if kinds is not None else KindRegistry()).kinds()
    return [kit.save_tool(), kit.patch_tool(), kit.forget_tool(), kit.search_tool()]


def check_tool_scopes(
    scopes: Sequence[str], read_scopes: Sequence[str] = ()
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The writable and the read-only scopes of :func:`tools`, checked as it checks them, so a
    caller can refuse a bad configuration before it opens (or creates) a store
    (``agentmemory mcp`` does).

    Raises:
        ToolConfigError: no scopes; ``scopes`` or ``read_scopes`` given as one string; a scope
            that is not kebab-case or is given twice; a scope both writable and read-only.
    """
    writable = _check_scopes(scopes, "scope")
    readable = _check_scopes(read_scopes, "read scope", allow_none=True)
    if not writable:
        raise ToolConfigError("agentmemory.tools: no scopes; give at least one writable scope")
    for r in readable:
        if r in writable:
            raise ToolConfigError(
                f"agentmemory.tools: scope {go_quote(r)} is both writable and read-only; "
                "name it in scopes or in read_scopes, not both"
            )
    return writable, readable


def _check_scopes(scopes: Sequence[str], what: str, *, allow_none: bool = False) -> tuple[str, ...]:
    plural = "read_scopes" if what == "read scope" else "scopes"
    if isinstance(scopes, str | bytes):
        raise ToolConfigError(
            f"agentmemory.tools: {plural} is the string {scopes!r}; pass a list, as [{scopes!r}]"
        )
    seen: list[str] = []
    for s in scopes:
        try:
            check_scope(s, what=what)
        except InvalidEntryError as exc:
            raise ToolConfigError(f"agentmemory.tools: {exc.detail}") from None
        if s in seen:
            raise ToolConfigError(f"agentmemory.tools: {what} {go_quote(s)} is given twice")
        seen.append(s)
    return tuple(seen)


def _has_vectors(store: object) -> bool:
    """Whether ``store`` ranks by meaning too: it keeps an embedding index (``search_vector``)."""
    return callable(getattr(store, "search_vector", None))


class _Kit:
    """The state the four tools share, and their bodies."""

    def __init__(
        self,
        store: Store,
        scopes: tuple[str, ...],
        read_scopes: tuple[str, ...],
        rendered: Callable[[], Manifest | None] | None,
        search_limit: int,
        search_bytes: int,
    ) -> None:
        self.store = store
        self.scopes = scopes
        self.read_scopes = read_scopes
        self.rendered = rendered
        self.search_limit = search_limit
        self.search_bytes = search_bytes
        self.limit = store.max_entry_bytes
        self.kinds: list[str] = []

    # ---- scope and name checks shared by the writers

    def _scope(self, args: Mapping[str, Any]) -> str:
        scope = args.get("scope")
        if scope is None:
            if len(self.scopes) == 1:
                return self.scopes[0]
            raise _Refused(f"scope is required; name one of: {', '.join(self.scopes)}")
        if scope not in self.scopes:  # the schema's enum refuses it first; kept for safety
            raise _Refused(
                f"scope {go_quote(str(scope))} is not available; "
                + _writer_scopes_sentence(self.scopes, self.read_scopes)
            )
        return str(scope)

    @staticmethod
    def _name(args: Mapping[str, Any]) -> str:
        name = args["name"]
        check_scope(name, what="name")  # kebab-case, the rule names and scopes share
        return str(name)

    def _landed(
        self, write: Callable[..., Change], *args: Any, **kwargs: Any
    ) -> tuple[Change, str]:
        """Run one store write, ``write(*args, **kwargs)``; return its record and what the result line must add.

        A store with a vector index may raise :class:`~agentmemory.IndexWriteError` after the
        write reached its journal: the write happened, so the call succeeded (with its record),
        and the line says that search by meaning may miss it for a while."""
        try:
            change: Change = write(*args, **kwargs)
        except IndexWriteError as exc:
            log.warning("%s", exc)
            note = (
                "; the vector index was not updated yet, so memory_search may miss this change "
                "until the store catches up; do not repeat the call"
            )
            return exc.changes[-1], note
        return change, (f"; {self._hide_paths(change.note)}" if change.note else "")

    def _writer(
        self, name: str, body: Callable[[Mapping[str, Any]], ToolResult]
    ) -> Callable[[dict[str, Any]], ToolResult]:
        def run(args: dict[str, Any]) -> ToolResult:
            try:
                with provenance(tool=name):  # the journal record names the tool that wrote it
                    return body(args)
            except _Refused as exc:
                return _error(str(exc))
            except AgentMemoryError as exc:
                return _error(self._for_model(exc))

        run.__name__ = name
        return run

    # ---- memory_save

    def save_tool(self) -> Tool:
        props = {
            "scope": _scope_property(self.scopes),
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
                "enum": list(self.kinds),
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
            f"{self.limit} bytes; a larger write is refused with both sizes. Give a description "
            "in meta so the entry can be found. meta replaces the entry's metadata when you give "
            "it and keeps what is there when you leave it out, so send an empty object to clear "
            "it. The result says what the write replaced and what became of the metadata. "
            + _writer_scopes_sentence(self.scopes, self.read_scopes)
        )
        return Tool(
            "memory_save",
            description,
            _object(props, _with_scope(["name", "content"], self.scopes)),
            {
                "title": "Save memory entry",
                "readOnlyHint": False,
                "destructiveHint": True,
                "idempotentHint": True,
                "openWorldHint": False,
            },
            self._writer("memory_save", self._save),
            read_only_scopes=self.read_scopes,
        )

    def _save(self, args: Mapping[str, Any]) -> ToolResult:
        scope = self._scope(args)
        name = self._name(args)
        content = str(args["content"])
        try:
            stored: Entry | None = self.store.get(scope, name)
        except NotFoundError:
            stored = None
        given = args.get("meta")
        added: dict[str, str] = {}  # set on top of the meta kept or given
        kind = args.get("type")
        if kind is not None:
            added[KIND_META] = str(kind)
        retires = args.get("supersedes")
        retired: Entry | None = None
        if retires is not None:
            try:  # the checks `agentmemory save --supersedes` makes too
                retired = superseded_entry(self.store, scope, name, retires)
            except InvalidEntryError as exc:
                raise _Refused(exc.detail) from None
            added[META_SUPERSEDES] = retired.name
        meta = meta_for_save(stored, given, added)  # the rule `agentmemory save` keeps too
        if added:
            given = meta  # the call set the meta: say so in the result line
        shown: str | None = None
        manifest = self.rendered() if self.rendered is not None else None
        if manifest is not None:
            for m in manifest.entries:
                if m.scope == scope and m.name == name:
                    shown = m.hash
                    break
        if shown is not None:
            based_on: str | None = shown
        elif stored is not None:
            based_on = stored.hash
        else:
            based_on = None
        change, note = self._landed(
            self.store.put,
            Entry(scope=scope, name=name, content=content, meta=meta),
            based_on=based_on,
        )
        saved = "created" if stored is None else f"replaced {stored.size} bytes"
        line = (
            f"Saved {scope}/{name} ({utf8_len(content)} of {self.limit} bytes, "
            f"{content_hash(content)}): {saved}; {_meta_words(given, meta, stored)}"
        )
        if manifest is not None:
            line += _based_words(shown, stored)
        if retired is not None:
            line += (
                f"; retired {retired.key} ({retired.size} bytes), which leaves the memory block "
                "and search and stays in the journal"
            )
        return ToolResult(line + note, record=change)

    # ---- memory_patch

    def patch_tool(self) -> Tool:
        props = {
            "scope": _scope_property(self.scopes),
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
            "session made in the meantime is kept. "
            + _writer_scopes_sentence(self.scopes, self.read_scopes)
        )
        return Tool(
            "memory_patch",
            description,
            _object(props, _with_scope(["name", "old_text", "new_text"], self.scopes)),
            {
                "title": "Edit memory entry",
                "readOnlyHint": False,
                "destructiveHint": False,
                "idempotentHint": False,
                "openWorldHint": False,
            },
            self._writer("memory_patch", self._patch),
            read_only_scopes=self.read_scopes,
        )

    def _patch(self, args: Mapping[str, Any]) -> ToolResult:
        scope = self._scope(args)
        name = self._name(args)
        old, new = str(args["old_text"]), str(args["new_text"])
        if old == "":
            raise _Refused(
                "old_text is empty; give the exact text to replace, or use memory_save to write "
                "the entry whole"
            )
        conflict: ConflictError | None = None
        for _ in range(PATCH_ATTEMPTS):
            try:
                cur = self.store.get(scope, name)
            except NotFoundError as exc:
                raise _Refused(f"{exc}; memory_save creates an entry") from None
            n = cur.content.count(old)
            if n == 0:
                raise _Refused(
                    f"old_text does not appear in {scope}/{name}; read the entry with "
                    "memory_search and copy the text exactly"
                )
            if n > 1:
                raise _Refused(
                    f"old_text appears {n} times in {scope}/{name}; include more of the "
                    "surrounding text so it appears once"
                )
            content = cur.content.replace(old, new, 1)
            try:
                change, note = self._landed(
                    self.store.put, cur.copy(content=content), if_hash=cur.hash
                )
            except ConflictError as exc:
                conflict = exc
                continue
            return ToolResult(
                f"Patched {scope}/{name} ({utf8_len(content)} of {self.limit} bytes, "
                f"{content_hash(content)}){note}",
                record=change,
            )
        raise _Refused(
            f"{conflict} after {PATCH_ATTEMPTS} attempts; another session keeps changing it, "
            "try again"
        )

    # ---- memory_forget

    def forget_tool(self) -> Tool:
        props = {
            "scope": _scope_property(self.scopes),
            "name": {"type": "string", "description": "The entry to remove"},
        }
        description = (
            "Remove a memory entry. The store's journal keeps its last content. "
            + _writer_scopes_sentence(self.scopes, self.read_scopes)
        )
        return Tool(
            "memory_forget",
            description,
            _object(props, _with_scope(["name"], self.scopes)),
            {
                "title": "Forget memory entry",
                "readOnlyHint": False,
                "destructiveHint": True,
                "idempotentHint": True,
                "openWorldHint": False,
            },
            self._writer("memory_forget", self._forget),
            read_only_scopes=self.read_scopes,
        )

    def _forget(self, args: Mapping[str, Any]) -> ToolResult:
        scope = self._scope(args)
        name = self._name(args)
        change, note = self._landed(self.store.forget, scope, name)
        return ToolResult(
            f"Forgot {scope}/{name} ({change.entry.size} bytes); the journal keeps its last "
            f"content{note}",
            record=change,
        )

    # ---- memory_search

    def search_tool(self) -> Tool:
        every = [*self.scopes, *self.read_scopes]
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
        if _has_vectors(self.store):
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
            f"editing it. {how} Returns up to {self.search_limit} entries unless limit says "
            f"otherwise, and at most {self.search_bytes} bytes of content; the rest are listed by "
            "name. Results stay in the conversation, so search for what you need and no more. "
            + _search_scopes_sentence(self.scopes, self.read_scopes)
        )
        return Tool(
            "memory_search",
            description,
            _object(props, ["query"]),
            {
                "title": "Search memory",
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
            self._search_run,
        )

    def _search_run(self, args: dict[str, Any]) -> ToolResult:
        try:
            return self._search(args)
        except _Refused as exc:
            return _error(str(exc))
        except AgentMemoryError as exc:
            return _error(self._for_model(exc))

    def _hide_paths(self, text: str) -> str:
        """``text`` with the store's folder (and its parent) replaced by "<memory store>": what
        the model is told names no host path (docs/contract.md#what-the-model-is-told)."""
        try:
            where = getattr(self.store, "path", None)
        except AgentMemoryError:  # a store without a folder (its journal on a server)
            where = None
        if where is not None:
            for p in sorted({str(where), str(Path(where).parent)}, key=len, reverse=True):
                if len(p) > 1:
                    text = text.replace(p, "<memory store>")
        return text

    def _for_model(self, exc: AgentMemoryError) -> str:
        """The text a model sees for a store error: no host path and no host-side advice
        (``docs/contract.md#what-the-model-is-told``): a damaged index is permanent until the
        user repairs it, a locked store is worth one retry, other errors keep their message with
        the store's location replaced by "the memory store"."""
        if isinstance(exc, IndexReadOnlyError):
            return (
                f"the memory store's {exc.index} index may not be written here; retrying will not "
                "help: tell the user to make the store's folder writable (the saved memories "
                "themselves are intact)"
            )
        if isinstance(exc, IndexDamagedError):
            return (
                f"the memory store's {exc.index} index is damaged; retrying will not help: tell "
                "the user to run 'agentmemory verify --repair' on the store (the saved memories "
                "themselves are intact)"
            )
        if isinstance(exc, StoreLockedError):
            return (
                "the memory store is busy: another program is writing to it; try the call again "
                "in a few seconds"
            )
        text = self._hide_paths(str(exc))
        if len(text) > MAX_ERROR_CHARS:
            text = text[: MAX_ERROR_CHARS - 1] + "…"
        return text

    def _search(self, args: Mapping[str, Any]) -> ToolResult:
        query = str(args["query"])
        if not query.strip():
            raise _Refused(str(EmptyQueryError(query)))
        every = (*self.scopes, *self.read_scopes)
        asked = args.get("scopes") or every
        scopes = [s for s in every if s in asked]  # order of the tool set, no repeats
        limit = args.get("limit")
        if limit is None or limit < 1:
            limit = self.search_limit
        limit = min(int(limit), MAX_SEARCH_LIMIT)
        found = self._recall(query, scopes, limit)
        where = ", ".join(scopes)
        missing = getattr(self.store, "vector_unavailable", None)
        caveat = (
            f" Search by meaning was unavailable ({self._hide_paths(missing)}); these are keyword (BM25) matches "
            "only."
            if missing
            else ""
        )
        if not found:
            return ToolResult(f"No entries in {where} match {_echo(query)}.{caveat}")
        # Ranked retrieval returns the nearest entries, which need not all be relevant: say
        # "best first" rather than "matches".
        noun = "entry" if len(found) == 1 else "entries"
        parts = [f"{len(found)} {noun} in {where} for {_echo(query)}, best first.{caveat}\n"]
        shown = 0
        unshown: list[Entry] = []
        for e in found:
            size = e.size
            if shown + size > self.search_bytes:
                unshown.append(e)
                continue
            shown += size
            head = f"\n{e.scope}/{e.name} ({size} bytes)"
            if e.description:
                head += f": {e.description}"
            body = e.content if e.content.endswith("\n") else e.content + "\n"
            parts.append(f"{head}\n{body}")
        if unshown:
            names = ", ".join(f"{e.scope}/{e.name} ({e.size} bytes)" for e in unshown)
            parts.append(
                f"\nNot shown, over the {self.search_bytes} byte result limit; search for them "
                f"by name: {names}\n"
            )
        return ToolResult("".join(parts))

    def _recall(self, query: str, scopes: Sequence[str], limit: int) -> list[Entry]:
        """Rank with ``store.recall``, best first; keep only live entries of ``scopes``."""
        hits = [h.entry for h in self.store.recall(query, scopes=list(scopes), limit=limit)]
        allowed = set(scopes)
        return [e for e in hits if e.scope in allowed][:limit]


class _Refused(Exception):
    """A call the tool refuses with a message for the model; nothing was written."""


def _meta_words(
    given: Mapping[str, str] | None, meta: Mapping[str, str] | None, stored: Entry | None
) -> str:
    keys = ", ".join(sorted(meta or {}))
    if not meta:
        if given is not None and stored is not None and stored.meta:
            return "meta cleared"
        return "no meta"
    if given is None:
        return f"meta kept ({keys})"
    if stored is None:
        return f"meta set ({keys})"
    return f"meta replaced ({keys})"


def _based_words(shown: str | None, stored: Entry | None) -> str:
    """What the save was built on, when the tools know the rendered block."""
    if shown is None:
        if stored is None:
            return ""
        return "; built on the stored entry, which the block did not show"
    if stored is None:
        return (
            "; built on the block, but the entry was forgotten after the block was rendered and "
            "this write created it again"
        )
    if stored.hash != shown:
        return (
            f"; built on the block's {shown}, but the entry changed to {stored.hash} after the "
            "block was rendered and this write replaced that change; read it with memory_search "
            "if the change mattered"
        )
    return "; built on the block"
