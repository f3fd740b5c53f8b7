"""What each page shows, read from the store: plain data for the templates, no HTML here.

Every string in these values is memory (untrusted text); the templates escape all of it
(docs/inspector.md#memory-is-untrusted-text).
"""

from __future__ import annotations

import builtins
import difflib
import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..entries import REDACTED, SOURCE_PURGED, Change, Entry
from ..kinds import KindRegistry
from ..lost_updates import lost_updates
from ..manifest import Manifest
from ..render import DEFAULT_MAX_TOTAL_BYTES, render

__all__ = [
    "PAGE_ENTRIES",
    "BlockView",
    "EntryView",
    "Health",
    "ScopeRow",
    "SearchView",
    "Version",
    "block_view",
    "entry_view",
    "health",
    "scope_rows",
    "search_view",
]

META_SUPERSEDES = "supersedes"
META_TYPE = "type"
VERIFY_TIMEOUT_S = 120.0
"""How long the health page waits for ``agentmemory verify --json``, in seconds."""


PAGE_ENTRIES = 100
"""How many entries of a scope the scopes page lists at once; the rest are a page away."""


@dataclass(frozen=True)
class ScopeRow:
    """One scope: its live entries, their bytes, and what the block holds of it.

    Attributes:
        entries: the entries of the page shown, by name (:data:`PAGE_ENTRIES` at most).
        count: how many live entries the scope holds.
        page, pages: the page shown (from 1) and how many there are (at least 1).
    """

    scope: str
    entries: builtins.list[Entry]
    count: int
    bytes: int
    kinds: dict[str, int]
    shown_bytes: int
    shown: int
    omitted: int
    page: int = 1
    pages: int = 1

    @property
    def first(self) -> int:
        """The position (from 1) of the first entry listed."""
        return (self.page - 1) * PAGE_ENTRIES + 1 if self.entries else 0


def scope_rows(
    journal: Any,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    *,
    pages: dict[str, int] | None = None,
) -> list[ScopeRow]:
    """Every scope of ``journal`` with its entries (by name) and the bytes of its entries the
    block of all scopes holds (``render`` with the default budget), in scope order. Each scope
    lists the page ``pages[scope]`` of its entries (default 1; one past the last shows the
    last), :data:`PAGE_ENTRIES` to a page; the figures count every entry."""
    scopes = journal.scopes()
    manifest = render(journal, scopes, max_total_bytes=max_total_bytes)[1] if scopes else Manifest()
    rows = []
    for scope in scopes:
        entries = sorted(journal.list(scope), key=lambda e: e.name)
        kinds: dict[str, int] = {}
        for e in entries:
            kind = (e.meta or {}).get(META_TYPE, "")
            kinds[kind] = kinds.get(kind, 0) + 1
        shown = [m for m in manifest.entries if m.scope == scope]
        last = max(1, -(-len(entries) // PAGE_ENTRIES))
        page = min(max(1, (pages or {}).get(scope, 1)), last)
        rows.append(
            ScopeRow(
                scope=scope,
                entries=entries[(page - 1) * PAGE_ENTRIES : page * PAGE_ENTRIES],
                count=len(entries),
                page=page,
                pages=last,
                bytes=sum(e.size for e in entries),
                kinds=kinds,
                shown_bytes=sum(m.bytes for m in shown),
                shown=len(shown),
                omitted=sum(1 for m in manifest.omitted if m.scope == scope),
            )
        )
    return rows


@dataclass(frozen=True)
class Version:
    """One journal record of an entry, with the diff from the version before it."""

    change: Change
    what: str  # create, replace, forget, purge
    lost: bool  # a lost update: not built on the state it replaced
    redacted: bool
    diff: builtins.list[tuple[str, str]]  # (kind, line): kind is "add", "del", "hunk" or ""


@dataclass(frozen=True)
class EntryView:
    """An entry's page: its live state (``None`` when tombstoned or never written), every
    version in journal order, and its supersede links."""

    scope: str
    name: str
    entry: Entry | None
    versions: builtins.list[Version]
    supersedes: str
    superseded_by: builtins.list[str]
    purges: builtins.list[Change] = field(default_factory=list)


def _what(c: Change) -> str:
    if c.source == SOURCE_PURGED:
        return "purge"
    if c.entry.deleted:
        return "forget"
    return "replace" if c.replaced else "create"


def _diff(before: str, after: str) -> list[tuple[str, str]]:
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), "before", "after", lineterm="", n=2
    )
    out = []
    for line in list(lines)[2:]:  # the ---/+++ header
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "")
        out.append((kind, line))
    return out


def entry_view(journal: Any, scope: str, name: str) -> EntryView:
    """The page of ``scope/name`` from ``journal`` (one pass over the journal)."""
    key = f"{scope}/{name}"
    records = [c for c in journal.journal() if c.entry.key == key]
    # lost updates are judged per entry, so the entry's own records give the same answer as the
    # whole journal, without reading it again
    lost = {u.change.seq for u in lost_updates(_Records(records))}
    versions = []
    before = ""
    for c in records:
        redacted = c.entry.content == REDACTED or c.entry.hash.startswith("redacted:")
        what = _what(c)
        diff = [] if what in ("forget", "purge") or redacted else _diff(before, c.entry.content)
        versions.append(Version(c, what, c.seq in lost, redacted, diff))
        if what not in ("forget", "purge"):
            before = c.entry.content
    try:
        live: Entry | None = journal.get(scope, name)
    except Exception:  # NotFoundError, or a name the rules refuse: nothing live to show
        live = None
    supersedes = str(((live.meta or {}) if live else {}).get(META_SUPERSEDES, ""))
    try:
        siblings = journal.list(scope)
    except Exception:
        siblings = []
    by = sorted(e.name for e in siblings if (e.meta or {}).get(META_SUPERSEDES) == name)
    purges = [c for c in records if c.source == SOURCE_PURGED]
    return EntryView(scope, name, live, versions, supersedes, by, purges)


@dataclass(frozen=True)
class _Records:
    """Records already read, as the journal :func:`~agentmemory.lost_updates` reads."""

    records: builtins.list[Change]

    def journal(self, after: int = 0) -> builtins.list[Change]:
        return [c for c in self.records if c.seq > after]


@dataclass(frozen=True)
class BlockView:
    """The block as the model reads it and its manifest; with a hint, the per-turn part."""

    scopes: builtins.list[str]
    block: str
    bytes: int
    limit: int
    manifest: Manifest
    policy: str
    hint: str = ""
    part: str | None = None
    part_manifest: Any = None


def block_view(
    journal: Any,
    scopes: Sequence[str],
    *,
    policy: str = "none",
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
) -> BlockView:
    """``render(journal, scopes)`` exactly (with ``policy`` ``"default"``: the default
    :class:`~agentmemory.KindRegistry`)."""
    registry = KindRegistry() if policy == "default" else None
    block, manifest = render(journal, scopes, max_total_bytes=max_total_bytes, policy=registry)
    return BlockView(
        list(scopes), block, len(block.encode("utf-8")), max_total_bytes, manifest, policy
    )


def with_part(view: BlockView, index: Any, hint: str) -> BlockView:
    """``view`` with the per-turn part :func:`agentmemory.recall_part` makes for ``hint``
    under the default kind policy."""
    from ..recalled import recall_part

    part, manifest = recall_part(index, view.scopes, hint, policy=KindRegistry())
    return BlockView(
        view.scopes,
        view.block,
        view.bytes,
        view.limit,
        view.manifest,
        view.policy,
        hint,
        part.text if part is not None else None,
        manifest,
    )


@dataclass(frozen=True)
class SearchView:
    """A search's hits with each leg's rank and raw score, and the legs that did not run."""

    query: str
    mode: str
    scopes: builtins.list[str]
    hits: builtins.list[Any]
    unavailable: dict[str, str]
    depth: int


def search_view(
    index: Any, query: str, scopes: Sequence[str], *, mode: str = "auto", limit: int = 10
) -> SearchView:
    """``index.recall(query, scopes, limit=limit, mode=mode)``; the legs that could not run,
    from the hits or, when the store opened without its vectors, from the store."""
    hits = index.recall(query, scopes=list(scopes), limit=limit, mode=mode) if scopes else []
    unavailable: dict[str, str] = dict(hits[0].unavailable) if hits else {}
    missing = getattr(index, "vector_unavailable", None)
    if missing:
        unavailable.setdefault("vector", str(missing))
    method = hits[0].method if hits else mode
    return SearchView(query, method, list(scopes), hits, unavailable, limit)


@dataclass(frozen=True)
class Health:
    """``agentmemory verify --json``'s findings, and the command that cures each."""

    ok: bool
    findings: dict[str, Any]
    cure: str
    error: str = ""


def health(argv: Sequence[str], repair: str) -> Health:
    """Run ``argv`` (``agentmemory verify --json ...``, never ``--repair``) as a second process
    does and read its findings; ``repair`` is the command a person runs to cure what it found
    (shown when it is not ok)."""
    if not argv:
        return Health(False, {}, "", "no verify command for this store")
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=VERIFY_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Health(False, {}, "", f"verify did not finish: {exc}")
    try:
        found = json.loads(done.stdout)
    except json.JSONDecodeError:
        return Health(False, {}, "", (done.stderr or done.stdout).strip()[:2000])
    ok = bool(found.get("ok"))
    return Health(ok, found, "" if ok else repair)
