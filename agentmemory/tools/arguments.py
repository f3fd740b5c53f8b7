"""A model's arguments that break a tool's JSON Schema, told back in words.

Each violation names the property (as a path: ``meta.owner``, ``scopes[1]``), the value (as JSON,
cut to 80 characters) and what is allowed (docs/contract.md#arguments-and-refusals).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..rules import valid_name

if TYPE_CHECKING:  # jsonschema is imported when the first Tool is built, not by import agentmemory
    import jsonschema

__all__ = ["INVALID_ARGS", "error_order", "explain", "json_type", "show"]

INVALID_ARGS = "invalid arguments: "
"""The start of every error that is about the arguments' shape rather than the store."""

_SHOW_CHARS = 80  # longest rendering of an offending value in an error line, in characters

_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "object": "an object",
    "array": "an array",
    "boolean": "a boolean",
}
_RULE_ORDER = {"type": 0, "required": 1, "additionalProperties": 2, "enum": 3}


def json_type(value: object) -> str:
    """The JSON type of ``value`` with its article: ``"an integer"``, ``"null"``."""
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


def show(value: object) -> str:
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
            out += f"[{show(p)}]"
    return out


def error_order(e: jsonschema.ValidationError) -> tuple[int, list[str], int]:
    """Sort key of violations: shallow properties first, then by path, then type before
    required before extra properties before enum."""
    return (len(e.path), [str(p) for p in e.path], _RULE_ORDER.get(str(e.validator), 9))


def explain(e: jsonschema.ValidationError) -> str:
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
        names = ", ".join(show(k) for k in extra)
        noun = "property" if len(extra) == 1 else "properties"
        return f"{at}unexpected {noun} {names}; the properties are {', '.join(known)}"
    if rule == "enum":
        options = ", ".join(show(v) for v in allowed)
        return f"{at}expected one of [{options}], got {show(value)}"
    if rule == "type":
        want = _TYPE_WORDS.get(str(allowed), str(allowed))
        return f"{at}expected {want}, got {show(value)} ({json_type(value)})"
    return f"{at}{e.message}"
