"""The call pipeline every memory tool runs: :class:`Tool` and its :class:`ToolResult`.

A call parses the model's arguments (a mapping, or a JSON object as text), refuses a write to a
read-only scope, validates against the tool's JSON Schema (draft 2020-12) and runs the tool's
body. Nothing escapes: every failure, including an unexpected exception from the store, becomes an
error result whose text is valid UTF-8 (docs/contract.md#arguments-and-refusals).
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..duplicates import NearDuplicate
from ..entries import Change
from ..errors import IndexDamagedError
from .arguments import INVALID_ARGS, error_order, explain, json_type
from .texts import printable

__all__ = ["Tool", "ToolResult", "error"]

log = logging.getLogger("agentmemory.tools")


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
        duplicates: the near-duplicates a ``memory_save`` named in ``text``
            (docs/contract.md#near-duplicates-at-save-time), nearest first; ``()`` otherwise.
    """

    text: str
    is_error: bool = False
    record: Change | None = None
    duplicates: tuple[NearDuplicate, ...] = ()


def error(text: str) -> ToolResult:
    """An error result with ``text``; nothing was written."""
    return ToolResult(text, is_error=True)


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
        # jsonschema is imported when the first Tool is built, not by import agentmemory
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
            result = error(
                f"{self.name} failed: the memory store's {exc.index} index is damaged; retrying "
                "will not help: tell the user to run 'agentmemory verify --repair' on the store "
                "(the saved memories themselves are intact)"
            )
        except Exception as exc:  # the tool's promise: nothing escapes to the agent loop
            log.exception("%s failed unexpectedly", self.name)
            result = error(
                f"{self.name} failed: {type(exc).__name__}: {exc}; this is a fault of the memory "
                "store, not of the call; try again later"
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
                return error(f"{INVALID_ARGS}not valid JSON: {exc}")
        else:
            args = arguments
        if not isinstance(args, Mapping):
            return error(
                f"{INVALID_ARGS}expected a JSON object of named arguments, got {json_type(args)}"
            )
        args = {k: v for k, v in args.items() if not (v is None and k in self._optional)}
        scope = args.get("scope")
        if isinstance(scope, str) and scope in self._read_only:
            return error(
                f"scope {scope} is read-only; memory_search reads it, but no tool writes it"
            )
        problems = sorted(self._validator.iter_errors(args), key=error_order)
        if problems:
            return error(INVALID_ARGS + "; ".join(explain(p) for p in problems[:5]))
        return self._run(args)


def _printable(result: ToolResult) -> ToolResult:
    """``result`` with its text encodable as UTF-8 (:func:`~agentmemory.tools.texts.printable`)."""
    text = printable(result.text)
    return result if text is result.text else ToolResult(text, result.is_error, result.record)
