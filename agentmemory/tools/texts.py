"""The words of the tools' result lines and of the store errors they return to the model.

What the model is told names no host path and gives no host-side advice it cannot act on
(docs/contract.md#what-the-model-is-told): the store's folder becomes "<memory store>", a damaged
or read-only index is said to need the user, a locked store is worth one retry, and a long error
is cut.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from ..entries import Entry
from ..errors import AgentMemoryError, IndexDamagedError, IndexReadOnlyError, StoreLockedError
from ..wire import go_quote

__all__ = [
    "ECHO_CHARS",
    "MAX_ERROR_CHARS",
    "based_words",
    "echo",
    "for_model",
    "hide_paths",
    "meta_words",
    "one_leg_words",
    "printable",
]

ECHO_CHARS = 200
"""A query a result line repeats back to the model is cut to this many characters (then "…" and
how many more there were); docs/contract.md#what-the-model-is-told."""

MAX_ERROR_CHARS = 1000
"""A store error a tool returns to the model is cut to this many characters."""


def printable(text: str) -> str:
    """``text`` made encodable as UTF-8: a lone surrogate (an undecodable byte a Markdown entry
    file kept, or a JSON ``\\ud800`` escape) becomes its escape as text (``\\udcff``), so every
    transport can send it; other text is returned as it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def echo(text: str) -> str:
    """``text`` Go-quoted, cut to :data:`ECHO_CHARS` characters."""
    if len(text) <= ECHO_CHARS:
        return go_quote(text)
    return go_quote(text[:ECHO_CHARS]) + f"… ({len(text) - ECHO_CHARS} more characters)"


def hide_paths(text: str, store: object) -> str:
    """``text`` with ``store``'s folder (and its parent) replaced by "<memory store>"."""
    try:
        where = getattr(store, "path", None)
    except AgentMemoryError:  # a store without a folder (its journal on a server)
        where = None
    if where is not None:
        for p in sorted({str(where), str(Path(where).parent)}, key=len, reverse=True):
            # a one-word relative name ("memory") tells nothing about the host and is also a
            # word of the text ("memory_patch", "agentmemory:"): only paths with a separator
            if len(p) > 1 and ("/" in p or "\\" in p):
                text = re.sub(rf"(?<![\w.-]){re.escape(p)}(?![\w-])", "<memory store>", text)
    return text


def for_model(exc: AgentMemoryError, store: object) -> str:
    """The text a model sees for a store error ``exc`` raised by ``store``: a damaged index is
    permanent until the user repairs it, a locked store is worth one retry, other errors keep
    their message with the store's location hidden, cut to :data:`MAX_ERROR_CHARS`."""
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
    text = hide_paths(str(exc), store)
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 1] + "…"
    return text


LEG_REASON_CHARS = 200
"""A failed leg's reason in a search result is cut to this many characters."""


def one_leg_words(unavailable: Mapping[str, str], store: object) -> str:
    """The one short line (a leading space, or ``""``) a search result adds when a leg could not
    run (``unavailable``: leg name to why, as :attr:`recallers.Hit.unavailable` gives it): the
    model is told the ranking used the other leg alone, with the reason cut to
    :data:`LEG_REASON_CHARS` and no host path (docs/contract.md#memory_search)."""
    if not unavailable:
        return ""
    leg = "vector" if "vector" in unavailable else next(iter(unavailable))
    why = hide_paths(str(unavailable[leg]), store).replace("\n", " ")
    if len(why) > LEG_REASON_CHARS:
        why = why[: LEG_REASON_CHARS - 1] + "…"
    if leg == "vector":
        return f" Search by meaning was unavailable ({why}); these are keyword (BM25) matches only."
    return f" Keyword search was unavailable ({why}); these are matches by meaning only."


def meta_words(
    given: Mapping[str, str] | None, meta: Mapping[str, str] | None, stored: Entry | None
) -> str:
    """What a save did to the entry's meta: given (or ``None``: left out), as saved, and the
    entry it replaced (``None``: it created one)."""
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


def based_words(shown: str | None, stored: Entry | None) -> str:
    """What the save was built on, when the tools know the rendered block: ``shown`` is the hash
    the block showed for the entry (``None``: it did not show it), ``stored`` the entry as
    stored before the save."""
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
