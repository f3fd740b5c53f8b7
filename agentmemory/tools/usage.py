"""The paragraph that tells the model how to use its memory tools over the rendered block."""

from __future__ import annotations

__all__ = ["usage"]

_USAGE = (
    "The Memory block is what you remember between sessions: it is rendered from the memory "
    "store fresh at the start of every turn and is not part of the conversation. "
    "Save a new fact with memory_save, giving it a kebab-case name and a description in meta. "
    "Change an existing entry with memory_patch, giving the exact old_text, which must occur "
    "once, and its replacement; prefer it to memory_save, which rewrites the whole entry. "
    "Remove an entry with memory_forget. "
    "Entries the block leaves out, and any entry you want to read whole, are reached with "
    "memory_search, which finds entries by meaning and by exact words; its results stay in the "
    "conversation, so search narrowly for what you need. "
    "Each entry's heading shows its size and the limit, and the block's last line shows the "
    "budget; a write over the limit is refused with both numbers, so split or trim an entry "
    "before saving it. "
    "Inside an entry, use headings of level four (####) or none."
)


def usage() -> str:
    """One paragraph for the system prompt on using ``memory_save``, ``memory_patch``,
    ``memory_forget`` and ``memory_search`` over the block :func:`agentmemory.render` produces.

    It says (docs/contract.md#the-usage-paragraph): the block is memory carried between sessions,
    rendered fresh each turn and not part of the conversation; save with a kebab-case name and a
    description in meta; prefer ``memory_patch`` (exact ``old_text`` once, and its replacement)
    to ``memory_save``, which rewrites whole; remove with ``memory_forget``; reach omitted entries
    or a whole entry with ``memory_search``, whose results stay in the conversation, so search
    narrowly; entry headings show size and limit and the last line the budget, and an oversize
    write is refused with both numbers; use headings of level four or none inside entries (a
    level 1 to 3 heading would read as the block's own structure). One line, no newline.
    """
    return _USAGE
