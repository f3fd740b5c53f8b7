"""The bodies of the four memory tools: what a call does to the store, and the line it returns.

One :class:`Handlers` serves the tools of one :func:`agentmemory.tools` call: the store, the
writable and read-only scopes, the rendered block's manifest and the search bounds. Each body
takes arguments the pipeline (:mod:`agentmemory.tools.tool`) has already validated against the
tool's schema, and returns a :class:`~agentmemory.tools.ToolResult`; a call it refuses raises
nothing: it is an error result, and nothing was written (docs/contract.md#the-tools).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..duplicates import (
    Cures,
    NearDuplicate,
    NearDuplicateError,
    cure_words,
    duplicate_words,
    near_duplicates,
)
from ..entries import Change, Entry, content_hash, utf8_len
from ..errors import (
    AgentMemoryError,
    ConflictError,
    EmptyQueryError,
    IndexWriteError,
    InvalidEntryError,
    NotFoundError,
)
from ..kinds import KIND_META
from ..manifest import Manifest
from ..rules import check_scope
from ..save_entry import meta_for_save
from ..session import provenance
from ..store import Store
from ..validity import META_SUPERSEDES, superseded_entry
from ..wire import go_quote
from .schemas import MAX_SEARCH_LIMIT, writer_scopes_sentence
from .texts import based_words, echo, for_model, hide_paths, meta_words, one_leg_words
from .tool import ToolResult, error

__all__ = ["PATCH_ATTEMPTS", "Handlers"]


TOOL_CURES = Cures(patch="memory_patch", supersedes='supersedes "{name}"', forget="memory_forget")
"""The cures for near-duplicates in the tools' terms (:func:`agentmemory.duplicates.cure_words`)."""


log = logging.getLogger("agentmemory.tools")

PATCH_ATTEMPTS = 4
"""How many times ``memory_patch`` re-reads and retries when another writer changed the entry
between its read and its write (Go ``patchAttempts``)."""


class _Refused(Exception):
    """A call the tool refuses with a message for the model; nothing was written."""


class Handlers:
    """The state the four tools share, and their bodies.

    Args:
        store: where entries live; writes go through ``put``/``forget``.
        scopes: the writable scopes, in the order the model is told them.
        read_scopes: scopes ``memory_search`` reads and the writers refuse.
        rendered: returns the manifest of the block the model reads now, or ``None``.
        search_limit: entries a search returns when the call gives no ``limit``.
        search_bytes: bytes of content one search result shows at most.
        duplicates: what ``memory_save`` does with near-duplicates of new content
            (:data:`agentmemory.duplicates.DUPLICATE_POLICIES`).
        duplicate_floor: the cosine from which an entry is a near-duplicate.
    """

    def __init__(
        self,
        store: Store,
        scopes: tuple[str, ...],
        read_scopes: tuple[str, ...],
        rendered: Callable[[], Manifest | None] | None,
        search_limit: int,
        search_bytes: int,
        duplicates: str,
        duplicate_floor: float,
    ) -> None:
        self.store = store
        self.duplicates = duplicates
        self.duplicate_floor = duplicate_floor
        self.scopes = scopes
        self.read_scopes = read_scopes
        self.rendered = rendered
        self.search_limit = search_limit
        self.search_bytes = search_bytes
        self.limit = store.max_entry_bytes

    def writer(
        self, name: str, body: Callable[[Mapping[str, Any]], ToolResult]
    ) -> Callable[[dict[str, Any]], ToolResult]:
        """``body`` as the run of the writer tool ``name``: its journal records name the tool
        (:func:`agentmemory.provenance`), and a refusal or a store error is an error result."""

        def run(args: dict[str, Any]) -> ToolResult:
            try:
                with provenance(tool=name):  # the journal record names the tool that wrote it
                    return body(args)
            except _Refused as exc:
                return error(str(exc))
            except NearDuplicateError as exc:  # the host gets what the text names
                return ToolResult(
                    for_model(exc, self.store), is_error=True, duplicates=exc.duplicates
                )
            except AgentMemoryError as exc:
                return error(for_model(exc, self.store))

        run.__name__ = name
        return run

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
                + writer_scopes_sentence(self.scopes, self.read_scopes)
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
        and the line says that search by meaning may miss it for a while
        (docs/contract.md#a-write-the-index-missed)."""
        try:
            change: Change = write(*args, **kwargs)
        except IndexWriteError as exc:
            log.warning("%s", exc)
            note = (
                "; the vector index was not updated yet, so memory_search may miss this change "
                "until the store catches up; do not repeat the call"
            )
            return exc.changes[-1], note
        return change, (f"; {hide_paths(change.note, self.store)}" if change.note else "")

    # ---- memory_save (docs/contract.md#memory_save)

    def save(self, args: Mapping[str, Any]) -> ToolResult:
        """Create or replace one entry whole; with ``supersedes``, retire another."""
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
        entry = Entry(scope=scope, name=name, content=content, meta=meta)
        near = self._near_duplicates(entry, retired, new=stored is None)
        change, note = self._landed(self.store.put, entry, based_on=based_on)
        saved = "created" if stored is None else f"replaced {stored.size} bytes"
        line = (
            f"Saved {scope}/{name} ({utf8_len(content)} of {self.limit} bytes, "
            f"{content_hash(content)}): {saved}; {meta_words(given, meta, stored)}"
        )
        if manifest is not None:
            line += based_words(shown, stored)
        if retired is not None:
            line += (
                f"; retired {retired.key} ({retired.size} bytes), which leaves the memory block "
                "and search and stays in the journal"
            )
        if near:
            words = cure_words(near, entry.key, TOOL_CURES, landed=True)
            line += f"; near-duplicates: {duplicate_words(near)}. {words[0].upper()}{words[1:]}"
        return ToolResult(line + note, record=change, duplicates=tuple(near))

    def _near_duplicates(
        self, entry: Entry, retired: Entry | None, *, new: bool
    ) -> list[NearDuplicate]:
        """The near-duplicates of ``entry`` in every scope the tools read
        (docs/contract.md#near-duplicates-at-save-time), but the entry it retires; ``[]`` when
        the policy is ``off``. Under ``refuse``, any found refuses a save that would add a copy
        (a ``new`` entry that retires none): nothing is written. A replace or a save that
        supersedes adds none, so it lands and names them as under ``report``.
        """
        if self.duplicates == "off":
            return []
        near = near_duplicates(
            self.store,
            entry,
            (*self.scopes, *self.read_scopes),
            floor=self.duplicate_floor,
            exclude=() if retired is None else (retired.name,),
        )
        if near and self.duplicates == "refuse" and new and retired is None:
            words = cure_words(near, entry.key, TOOL_CURES, landed=False)
            raise NearDuplicateError(entry.key, near, words)
        return near

    # ---- memory_patch (docs/contract.md#memory_patch)

    def patch(self, args: Mapping[str, Any]) -> ToolResult:
        """Replace the one occurrence of ``old_text``, retrying on a concurrent change."""
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

    # ---- memory_forget (docs/contract.md#memory_forget)

    def forget(self, args: Mapping[str, Any]) -> ToolResult:
        """Tombstone one entry; the journal keeps its last content."""
        scope = self._scope(args)
        name = self._name(args)
        change, note = self._landed(self.store.forget, scope, name)
        return ToolResult(
            f"Forgot {scope}/{name} ({change.entry.size} bytes); the journal keeps its last "
            f"content{note}",
            record=change,
        )

    # ---- memory_search (docs/contract.md#memory_search)

    def search(self, args: dict[str, Any]) -> ToolResult:
        """Rank with ``store.recall`` and show the best entries within the byte bound."""
        try:
            return self._search(args)
        except _Refused as exc:
            return error(str(exc))
        except AgentMemoryError as exc:
            return error(for_model(exc, self.store))

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
        found, missing = self._recall(query, scopes, limit)
        where = ", ".join(scopes)
        caveat = one_leg_words(missing, self.store)
        if not found:
            return ToolResult(f"No entries in {where} match {echo(query)}.{caveat}")
        # Ranked retrieval returns the nearest entries, which need not all be relevant: say
        # "best first" rather than "matches".
        noun = "entry" if len(found) == 1 else "entries"
        parts = [f"{len(found)} {noun} in {where} for {echo(query)}, best first.{caveat}\n"]
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

    def _recall(
        self, query: str, scopes: Sequence[str], limit: int
    ) -> tuple[list[Entry], dict[str, str]]:
        """Rank with ``store.recall``, best first; keep only live entries of ``scopes``. Also
        each leg that could not run, with why: from the hits, and the store's own
        ``vector_unavailable`` (a handle opened journal-only), which holds with no hits too."""
        hits = self.store.recall(query, scopes=list(scopes), limit=limit)
        missing: dict[str, str] = {}
        for h in hits:
            missing.update(h.unavailable)
        journal_only = getattr(self.store, "vector_unavailable", None)
        if journal_only:
            missing.setdefault("vector", str(journal_only))
        allowed = set(scopes)
        return [h.entry for h in hits if h.entry.scope in allowed][:limit], missing
