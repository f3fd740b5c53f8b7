"""Building the four memory tools over a store: :func:`tools` and its scope check."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..duplicates import (
    DEFAULT_DUPLICATE_POLICY,
    DUPLICATE_FLOOR,
    check_duplicate_floor,
    check_duplicate_policy,
)
from ..errors import InvalidEntryError, ToolConfigError
from ..kinds import KindRegistry
from ..manifest import Manifest
from ..rules import check_scope
from ..store import Store
from ..wire import go_quote
from .handlers import Handlers
from .schemas import (
    DEFAULT_SEARCH_BYTES,
    DEFAULT_SEARCH_LIMIT,
    forget_spec,
    patch_spec,
    save_spec,
    search_spec,
)
from .tool import Tool

__all__ = ["check_tool_scopes", "tools"]


def tools(
    store: Store,
    scopes: Sequence[str],
    *,
    read_scopes: Sequence[str] = (),
    rendered: Callable[[], Manifest | None] | None = None,
    search_limit: int = DEFAULT_SEARCH_LIMIT,
    search_bytes: int = DEFAULT_SEARCH_BYTES,
    kinds: KindRegistry | None = None,
    duplicates: str = DEFAULT_DUPLICATE_POLICY,
    duplicate_floor: float = DUPLICATE_FLOOR,
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
        duplicates: what ``memory_save`` does when the new content is a near-duplicate of live
            entries in ``scopes`` or ``read_scopes`` (docs/contract.md#near-duplicates-at-save-time):
            ``"report"`` (default: the save lands and its result names up to 3 of them, with
            the cosine and the shared terms, and the hint to patch or supersede), ``"refuse"``
            (the save is refused, naming them and the cure; nothing is written) or ``"off"``.
            A store without a vector leg finds none.
        duplicate_floor: the cosine similarity from which an entry is a near-duplicate
            (default :data:`agentmemory.duplicates.DUPLICATE_FLOOR`, measured for the default
            embedder: docs/recall.md#the-duplicate-floor).

    Returns:
        The four tools, in that order.

    Raises:
        ToolConfigError: (a ``ValueError``) no scopes; ``scopes`` given as one string; a scope or
            read scope that is not kebab-case or is given twice; a scope both writable and
            read-only; ``search_limit`` or ``search_bytes`` under 1; ``duplicates`` not a
            policy; ``duplicate_floor`` not in (0, 1].
    """
    writable, readable = check_tool_scopes(scopes, read_scopes)
    policy = check_duplicate_policy(duplicates)
    floor = check_duplicate_floor(duplicate_floor)
    for what, value in (("search_limit", search_limit), ("search_bytes", search_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ToolConfigError(f"agentmemory.tools: {what} is {value!r}; it must be at least 1")
    if kinds is not None and not isinstance(kinds, KindRegistry):
        raise ToolConfigError(
            f"agentmemory.tools: kinds is a {type(kinds).__name__}, not a KindRegistry"
        )
    kit = Handlers(store, writable, readable, rendered, search_limit, search_bytes, policy, floor)
    kind_names = (kinds if kinds is not None else KindRegistry()).kinds()
    writers = [
        (save_spec(writable, readable, kit.limit, kind_names), kit.save),
        (patch_spec(writable, readable), kit.patch),
        (forget_spec(writable, readable), kit.forget),
    ]
    out = [
        Tool(
            spec.name,
            spec.description,
            spec.schema,
            spec.annotations,
            kit.writer(spec.name, body),
            read_only_scopes=readable,
        )
        for spec, body in writers
    ]
    # a store ranks by meaning too when it keeps an embedding index (``search_vector``)
    by_meaning = callable(getattr(store, "search_vector", None))
    search = search_spec(writable, readable, search_limit, search_bytes, by_meaning=by_meaning)
    out.append(Tool(search.name, search.description, search.schema, search.annotations, kit.search))
    return out


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
    readable = _check_scopes(read_scopes, "read scope")
    if not writable:
        raise ToolConfigError("agentmemory.tools: no scopes; give at least one writable scope")
    for r in readable:
        if r in writable:
            raise ToolConfigError(
                f"agentmemory.tools: scope {go_quote(r)} is both writable and read-only; "
                "name it in scopes or in read_scopes, not both"
            )
    return writable, readable


def _check_scopes(scopes: Sequence[str], what: str) -> tuple[str, ...]:
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
