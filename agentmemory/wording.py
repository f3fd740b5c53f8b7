"""Counts in messages a person reads: ``"1 entry"``, ``"2 entries"``, never ``"1 entries"``."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``"1 entry"``, ``"2 entries"``: ``n`` and ``noun`` in its singular or ``plural`` (default
    ``noun + "s"``; a noun ending in ``y`` after a consonant takes ``ies``)."""
    if n == 1:
        return f"1 {noun}"
    if plural is None:
        plural = (
            noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"
        )
    return f"{n} {plural}"
