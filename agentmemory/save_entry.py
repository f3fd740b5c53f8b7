"""Saving one entry whole, as a writer told only the new content does: what meta it keeps, and
where it lands when the vector index cannot take it.

A save replaces the entry whole (a put never merges meta, docs/contract.md#meta). Both writers
that take content alone, the ``memory_save`` tool (docs/contract.md#memory_save) and
``agentmemory save``, keep the stored entry's meta when they are given none:
:func:`meta_for_save` is that rule. :func:`save_entry` is ``agentmemory save``: the checks of the
entry before any store is opened or created, the retire check of ``supersedes``
(docs/kinds.md#out-of-date-on-purpose-only), the put, and, when the store's vector index is
damaged, the write to the journal alone (docs/storage.md#a-damaged-vector-index).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .duplicates import (
    DEFAULT_DUPLICATE_POLICY,
    DUPLICATE_FLOOR,
    Cures,
    NearDuplicate,
    NearDuplicateError,
    check_duplicate_floor,
    check_duplicate_policy,
    cure_words,
    near_duplicates,
)
from .entries import Change, Entry
from .errors import (
    AgentMemoryError,
    EntryTooLargeError,
    IndexWriteError,
    InvalidEntryError,
    NotFoundError,
)
from .rules import DEFAULT_MAX_ENTRY_BYTES

if TYPE_CHECKING:
    from embedders import Embedder

__all__ = ["CLI_CURES", "Saved", "meta_for_save", "save_entry"]

CLI_CURES = Cures(
    patch="'agentmemory save {key}'",
    supersedes="--supersedes {name}",
    forget="'agentmemory forget {key}'",
    others_writable=True,
)
"""The cures for near-duplicates in ``agentmemory save``'s terms: the command line may write
every scope (:func:`agentmemory.duplicates.cure_words`)."""


def meta_for_save(
    stored: Entry | None,
    given: Mapping[str, str] | None,
    added: Mapping[str, str] | None = None,
) -> dict[str, str] | None:
    """The meta a save of new content writes (docs/contract.md#memory_save): ``given`` when it is
    not ``None`` (``{}`` clears the meta), else the ``stored`` entry's, kept (none when there is
    no stored entry or it has none); then the keys of ``added`` set on top (the kind, the
    ``supersedes`` a writer was given). ``None`` when that is empty: a store keeps no empty meta.

    Checks nothing: the put checks the meta it is given (:func:`agentmemory.check_entry`).
    """
    if given is not None:
        meta = dict(given)
    else:
        meta = dict(stored.meta) if stored is not None and stored.meta else {}
    meta.update(added or {})
    return meta or None


@dataclass(frozen=True, slots=True)
class Saved:
    """What :func:`save_entry` did.

    Attributes:
        change: the journal record of the write.
        retired: the live entry the write retired (``supersedes``), as it was read before the
            write; ``None`` without ``supersedes``.
        index_error: the write is journaled but its vector update failed (the index catches up
            at the next write or open of the store, or on a repair); ``None`` when it did not.
        duplicates: the near-duplicates of the new content found before the write (policy
            ``"report"``), nearest first; ``()`` when none or the policy is ``"off"``.
    """

    change: Change
    retired: Entry | None = None
    index_error: IndexWriteError | None = None
    duplicates: tuple[NearDuplicate, ...] = ()


def save_entry(
    path: str | os.PathLike[str] | None,
    scope: str,
    name: str,
    content: str,
    *,
    meta: Mapping[str, str] | None = None,
    kind: str | None = None,
    supersedes: str | None = None,
    if_hash: str | None = None,
    session: str | None = None,
    embedder: Embedder | str | None = None,
    max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    duplicates: str = DEFAULT_DUPLICATE_POLICY,
    duplicate_floor: float = DUPLICATE_FLOOR,
    **open_options: Any,
) -> Saved:
    """Create or replace the entry ``scope/name`` of the store at ``path`` with ``content``: what
    ``agentmemory save`` does.

    1. The entry as asked (``meta`` and the added keys, without any kept meta) is checked
       (:func:`agentmemory.check_entry` against ``max_entry_bytes``,
       :func:`agentmemory.validity.check_validity_meta`, ``supersedes`` kebab-case and not the
       entry itself) before any store is opened, so a refused save creates no store.
    2. The store is opened (:func:`agentmemory.open_store` with ``embedder``, ``max_entry_bytes``
       and ``open_options``: ``format``, ``dsn``, ``chroma_url``, ``shared``...); a new one is
       created unless ``supersedes`` is given (the entry to retire is in a store that exists).
    3. The meta: :func:`meta_for_save` of the stored entry, ``meta`` (``None`` keeps the stored
       meta, ``{}`` clears it) and the added keys (``type`` = ``kind``, ``supersedes``). The
       stored entry is read only when ``meta`` is ``None``; a write that keeps its meta is
       ``based_on`` its hash (it read that entry); any other claims the stored hash as every put
       does (docs/contract.md#based_on).
    4. With ``supersedes``, the entry it retires must be live
       (:func:`agentmemory.validity.superseded_entry`).
    5. Unless ``duplicates`` is ``"off"``, the near-duplicates of the new content among the live
       entries of every scope of the store, but the entry itself and the one it supersedes
       (:func:`agentmemory.duplicates.near_duplicates` from ``duplicate_floor``;
       docs/contract.md#near-duplicates-at-save-time): ``"report"`` returns them in
       :attr:`Saved.duplicates`; ``"refuse"`` refuses a save that would add a copy (a new
       entry without ``supersedes``) when there are any, and reports them for any other.
    6. The put (``if_hash``, ``session``). A vector update that fails after the journal commit is
       a success: :attr:`Saved.index_error`. A store whose vector index cannot be opened (held
       by another process, damaged, read-only) opens its journal alone (:func:`agentmemory.open_store`)
       and the write lands there, its :attr:`Change.note` saying why and what to do
       (docs/storage.md#a-damaged-vector-index).

    Args:
        kind: the kind of memory (one of ``KindRegistry().kinds()``: user, feedback, project,
            reference), stored as meta ``type`` on top of the meta kept or given.
        supersedes: the name of an entry of the same scope this one makes out of date.

    Raises:
        InvalidEntryError: the entry breaks a rule (step 1), ``kind`` is not a known kind, or
            ``supersedes`` names no live entry (step 4); nothing is written.
        EntryTooLargeError: ``content`` over ``max_entry_bytes``; nothing is written.
        ConflictError: ``if_hash`` does not hold; nothing is written.
        NearDuplicateError: ``duplicates="refuse"``, a new entry without ``supersedes``, and
            near-duplicates were found (step 5); nothing is written.
        ToolConfigError: ``duplicates`` is not a policy or ``duplicate_floor`` not in (0, 1].
        NoStoreError: ``path`` holds no store and ``supersedes`` was given (or ``path`` is a
            file).

    Also what :func:`agentmemory.open_store` raises.
    """
    from .kinds import KIND_META, KindRegistry
    from .opening import open_store
    from .rules import check_entry
    from .validity import (
        META_SUPERSEDES,
        check_supersedes,
        check_validity_meta,
        superseded_entry,
    )

    policy = check_duplicate_policy(duplicates, where="save_entry")
    floor = check_duplicate_floor(duplicate_floor, where="save_entry")
    added: dict[str, str] = {}
    if kind is not None:
        known = KindRegistry().kinds()
        if kind not in known:
            raise InvalidEntryError(
                f"{scope}/{name}: type {kind!r} is not a kind; use one of {', '.join(known)}",
                field="meta",
            )
        added[KIND_META] = kind
    if supersedes is not None:
        added[META_SUPERSEDES] = check_supersedes(scope, name, supersedes)
    asked = Entry(scope=scope, name=name, content=content, meta={**(meta or {}), **added} or None)
    try:
        check_entry(asked, max_entry_bytes)
    except EntryTooLargeError as exc:  # say what the stored entry holds, as a put does
        raise _with_stored_size(exc, path, open_options) from None
    check_validity_meta(asked)

    def write(store: Any) -> Saved:
        stored: Entry | None = None
        if meta is None:  # the stored entry is read only for the meta it keeps
            with contextlib.suppress(NotFoundError):
                stored = store.get(scope, name)
        keeps = stored is not None and bool(stored.meta)
        retired = (
            superseded_entry(store, scope, name, supersedes) if supersedes is not None else None
        )
        entry = Entry(
            scope=scope, name=name, content=content, meta=meta_for_save(stored, meta, added)
        )
        based_on = stored.hash if keeps and stored is not None else None
        near: tuple[NearDuplicate, ...] = ()
        if policy != "off":
            try:
                stored_before = stored if meta is None else store.get(scope, name)
            except NotFoundError:
                stored_before = None
            every = store.scopes() if callable(getattr(store, "scopes", None)) else [scope]
            near = tuple(
                near_duplicates(
                    store,
                    entry,
                    [*dict.fromkeys([scope, *every])],
                    floor=floor,
                    exclude=() if supersedes is None else (supersedes,),
                )
            )
            if near and policy == "refuse" and stored_before is None and supersedes is None:
                cure = cure_words(near, entry.key, CLI_CURES, landed=False)
                raise NearDuplicateError(entry.key, near, cure)
        try:
            change = store.put(entry, if_hash=if_hash, based_on=based_on, session=session)
        except IndexWriteError as exc:
            return Saved(exc.changes[0], retired, index_error=exc, duplicates=near)
        return Saved(change, retired, duplicates=near)

    with open_store(
        path,
        embedder=embedder,
        create=supersedes is None,
        max_entry_bytes=max_entry_bytes,
        **open_options,
    ) as store:
        return write(store)


def _with_stored_size(
    exc: EntryTooLargeError, path: str | os.PathLike[str] | None, options: Mapping[str, Any]
) -> EntryTooLargeError:
    """``exc`` naming the size of the entry the store holds now, read from its journal alone
    (no index, no lock); ``exc`` itself when there is no store or no such entry."""
    from .opening import open_journal

    try:
        with open_journal(path, format=options.get("format"), dsn=options.get("dsn")) as journal:
            stored = journal.get(exc.scope, exc.name).size
    except (AgentMemoryError, OSError, ValueError):
        return exc
    return EntryTooLargeError(exc.scope, exc.name, exc.size, exc.limit, stored)
