"""The ``filter`` of a LangGraph search: which values it keeps (docs/integrations.md#langgraph).

The rule LangGraph's own stores apply: each filter key names a top-level field of the value; a
plain value must equal the field; a dict without ``$`` keys matches a dict field key by key; a
list matches a list of the same length element by element; a dict of operators applies each of
``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte`` (the four orderings compare as numbers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["OPERATORS", "matches_filter"]

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
"""The comparison operators a filter may use."""


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether ``value`` passes ``filter`` (``None`` or ``{}`` passes everything).

    Raises ``ValueError`` naming an operator outside :data:`OPERATORS`, and when an ordering
    compares a field that is not a number."""
    if not filter:
        return True
    return all(_match(value.get(k), want) for k, want in filter.items())


def _match(have: Any, want: Any) -> bool:
    if isinstance(want, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in want):
            return all(_apply(have, op, arg) for op, arg in want.items())
        if not isinstance(have, Mapping):
            return False
        return all(_match(have.get(k), v) for k, v in want.items())
    if isinstance(want, list | tuple):
        return (
            isinstance(have, list | tuple)
            and len(have) == len(want)
            and all(_match(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool(have == want)


def _number(x: Any, op: str) -> float:
    try:
        return float(x)
    except (TypeError, ValueError) as e:
        raise ValueError(f"filter {op} compares numbers, not {x!r}") from e


def _apply(have: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(have == arg)
    if op == "$ne":
        return bool(have != arg)
    if op not in OPERATORS:
        raise ValueError(f"filter operator {op!r} is not one of {', '.join(OPERATORS)}")
    if have is None:
        return False
    a, b = _number(have, op), _number(arg, op)
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
