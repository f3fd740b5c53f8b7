"""The manifest of a rendered block: what the model was shown and what it was not.

:func:`agentmemory.render` returns a :class:`Manifest` beside the block: the entries the block holds,
in block order, and the ones it left out, each by scope, name, content hash, size in bytes and, for
an omission, the reason. A product records it in its session under :data:`MANIFEST_NS`, as a whole
record (:meth:`Manifest.record`) or as a delta on the manifest recorded before
(:meth:`Manifest.record_since`); a reader folds the records with :func:`apply_manifest_record` or,
where several agents record into one session, with a :class:`ManifestFold`.

Everything here follows docs/contract.md#manifests byte for byte: the hash text, the JSON
(Go's ``encoding/json``: members in struct order, compact, ``<>&`` escaped) and the delta's keep runs,
so a session recorded by the Go module reads here and the other way round.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .entries import content_hash
from .errors import ManifestBaseError, ManifestRecordError
from .wire import go_json

__all__ = [
    "MANIFEST_FOLD_DEPTH",
    "MANIFEST_NS",
    "OMIT_BLOCK",
    "OMIT_BUDGET",
    "OMIT_KIND_LIMIT",
    "OMIT_RECALL_ONLY",
    "Manifest",
    "ManifestEntry",
    "ManifestFold",
    "apply_manifest_record",
]

MANIFEST_NS = "agentmemory:render"
"""The namespace a manifest record is recorded under (Go ``ManifestNS``)."""

OMIT_BUDGET = "budget"
"""Reason of an entry whose rendered form did not fit in what was left of the block's bound or of
its scope's cap (Go ``OmitBudget``). Without a kind policy, :func:`agentmemory.render` writes only
this reason."""

OMIT_BLOCK = "block"
"""Reason of an entry left out because the product left the whole block out (Go ``OmitBlock``).

A product writes it, never :func:`agentmemory.render`: on a turn where it had no room for memory
(its share of an instruction budget reached zero, or render raised
:class:`~agentmemory.BudgetError`) it records a manifest with every entry under ``omitted`` with this
reason and none under ``entries``, so a reader tells a block dropped whole from a block that held
nothing because the store held nothing. The string is ``"block"``, as the Go module's documentation
gives it (docs/contract.md#omission-reasons); it differs from
:data:`OMIT_BUDGET` and from ``""``, so such a manifest hashes apart from both.
"""

OMIT_RECALL_ONLY = "recall-only"
"""Reason of an entry a kind policy keeps out of the block: its kind is recalled only for a turn
that touches it (``docs/kinds.md#the-block-under-a-policy``). :func:`agentmemory.render` writes it
only when given a ``policy``."""

OMIT_KIND_LIMIT = "kind-limit"
"""Reason of an entry of an always-shown kind left out because the block already shows its
kind's ``max_entries`` more recently written entries (``docs/kinds.md#the-block-under-a-policy``).
:func:`agentmemory.render` writes it only when given a ``policy``."""

MANIFEST_FOLD_DEPTH = 8
"""How many distinct manifests a :class:`ManifestFold` resolves a delta's base against: the one in
force and those in force before it, most recent first (Go ``ManifestFoldDepth``)."""

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One entry of a manifest, by scope and name, with what the block held or left out.

    Attributes:
        scope: the entry's scope.
        name: the entry's name.
        hash: the content hash (``"sha256:" + hex``) of the content the block held or left out.
        bytes: the content's size in UTF-8 bytes.
        reason: why it was left out (:data:`OMIT_BUDGET`, :data:`OMIT_BLOCK`,
            :data:`OMIT_RECALL_ONLY`, :data:`OMIT_KIND_LIMIT`), ``""`` for an entry the block
            holds.
    """

    scope: str
    name: str
    hash: str
    bytes: int
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The entry as Go marshals it: ``scope, name, hash, bytes`` and ``reason`` when not empty."""
        d: dict[str, Any] = {
            "scope": self.scope,
            "name": self.name,
            "hash": self.hash,
            "bytes": self.bytes,
        }
        if self.reason:
            d["reason"] = self.reason
        return d


@dataclass(frozen=True, slots=True)
class Manifest:
    """What a rendered block held and what it left out, in block order.

    ``Manifest()`` is the empty manifest, the one in force before anything was recorded. Lists
    given to the constructor are stored as tuples, so a manifest never changes once built.

    Attributes:
        entries: the entries the block holds, in block order (``reason`` empty).
        omitted: the entries it left out, in the order they would have appeared, each with its
            reason.
        neutralised: ``"scope/name"`` of the shown entries whose headings of level 1 to 3 the
            render neutralised (``render(..., neutralise=True)``, docs/kinds.md#memory-is-data),
            in block order; empty otherwise. Not part of :meth:`hash`; in the JSON only when
            not empty, so a manifest without it is the Go module's byte for byte.
    """

    entries: tuple[ManifestEntry, ...] = ()
    omitted: tuple[ManifestEntry, ...] = ()
    neutralised: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "entries", tuple(self.entries))
        object.__setattr__(self, "omitted", tuple(self.omitted))
        object.__setattr__(self, "neutralised", tuple(self.neutralised))

    def hash(self) -> str:
        """The manifest's identity: ``content_hash`` of one line per entry, in order.

        The text is ``"+ <scope>/<name> <hash> <bytes>\\n"`` for each shown entry, then
        ``"- <scope>/<name> <hash> <bytes> <reason>\\n"`` for each omitted one (Go
        ``Manifest.Hash``), so order, reasons and omissions all move it, and the empty manifest
        hashes as ``content_hash("")``. A product records a manifest only when this differs from the
        last one it recorded.
        """
        return content_hash(_hash_text(self))

    def to_dict(self) -> dict[str, Any]:
        """The manifest as Go marshals it: ``{"entries": [...], "omitted": [...]}``.

        ``"entries"`` is always present, ``[]`` when empty (Go writes ``null`` for a zero
        ``Manifest`` and ``[]`` for the one its render returns; readers on either side take both,
        and the two hash the same). ``"omitted"`` is absent when empty.
        """
        d: dict[str, Any] = {"entries": [e.to_dict() for e in self.entries]}
        if self.omitted:
            d["omitted"] = [e.to_dict() for e in self.omitted]
        if self.neutralised:
            d["neutralised"] = list(self.neutralised)
        return d

    def to_json(self, *, indent: int | None = None) -> str:
        """The manifest's JSON as Go writes it: compact (``json.Marshal``) by default, or
        ``json.MarshalIndent(m, "", " " * indent)`` with ``indent``. No trailing newline."""
        return go_json(self.to_dict(), indent=indent)

    def record(self) -> tuple[str, bytes]:
        """Return ``(MANIFEST_NS, compact JSON as UTF-8 bytes)``: the whole record of this manifest.

        Example: ``{"entries":[{"scope":"user","name":"a","hash":"sha256:…","bytes":2}],``
        ``"omitted":[{…,"reason":"budget"}]}``. Encoding cannot fail.
        """
        return MANIFEST_NS, self.to_json().encode("utf-8")

    def record_since(self, prev: Manifest) -> tuple[str, bytes]:
        """Return ``(MANIFEST_NS, data)``: this manifest as a delta on ``prev``, or whole.

        The delta is ``{"base": prev.hash(), "hash": self.hash(), "entries": [ops],
        "omitted": [ops]}`` (an empty list of ops is left out), where each op is ``{"keep": n}``
        for a run of ``n`` entries that stand unchanged at the cursor in ``prev``, or an entry
        written whole, which moves the cursor past its place in ``prev`` if it has one. An entry
        ``prev`` holds that this manifest lacks is neither kept nor written.

        The whole record (as :meth:`record`) is returned instead when the delta is not smaller
        than it (always so for a first manifest, ``prev == Manifest()``), and when either manifest
        names one ``(scope, name)`` twice in a list, since a keep could not say which it means.
        """
        whole = self.record()[1]
        return MANIFEST_NS, _record_since(self, prev, whole)


def _hash_text(m: Manifest) -> str:
    lines = [f"+ {e.scope}/{e.name} {e.hash} {e.bytes}\n" for e in m.entries]
    lines += [f"- {e.scope}/{e.name} {e.hash} {e.bytes} {e.reason}\n" for e in m.omitted]
    return "".join(lines)


def _index(entries: Iterable[ManifestEntry]) -> dict[tuple[str, str], int] | None:
    """Map each (scope, name) to its position; ``None`` when one is named twice."""
    at: dict[tuple[str, str], int] = {}
    for i, e in enumerate(entries):
        k = (e.scope, e.name)
        if k in at:
            return None
        at[k] = i
    return at


def _diff(
    prev: tuple[ManifestEntry, ...], nxt: tuple[ManifestEntry, ...]
) -> list[dict[str, Any]] | None:
    """``nxt`` as ops on ``prev`` (docs/contract.md#whole-records-and-deltas); ``None`` on a
    repeat."""
    at = _index(prev)
    if at is None or _index(nxt) is None:
        return None
    out: list[dict[str, Any]] = []
    cursor = run = 0
    for e in nxt:
        j = at.get((e.scope, e.name))
        if j is not None and j == cursor + run and prev[j] == e:
            run += 1
            continue
        if run:
            out.append({"keep": run})
            cursor += run
            run = 0
        out.append(e.to_dict())
        if j is not None:
            cursor = j + 1
    if run:
        out.append({"keep": run})
    return out


def _record_since(m: Manifest, prev: Manifest, whole: bytes) -> bytes:
    entries = _diff(prev.entries, m.entries)
    omitted = _diff(prev.omitted, m.omitted)
    if entries is None or omitted is None:
        return whole
    d: dict[str, Any] = {"base": prev.hash(), "hash": m.hash()}
    if entries:
        d["entries"] = entries
    if omitted:
        d["omitted"] = omitted
    if m.neutralised:  # whole, not as a delta: it is a short list of names
        d["neutralised"] = list(m.neutralised)
    delta = go_json(d).encode("utf-8")
    return whole if len(delta) >= len(whole) else delta


# Reading records. Go's encoding/json matches member names case-insensitively, lets the last
# occurrence of a member win, ignores unknown members, treats null as "leave the zero value", and
# refuses a value of the wrong type; the readers below do the same.


class _Obj:
    """A JSON object as its members, keys case-folded, the last occurrence of a key winning."""

    __slots__ = ("members",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        self.members: dict[str, Any] = {}
        for k, v in pairs:
            self.members[k.casefold()] = v


class _Malformed(Exception):
    """A record whose JSON does not have the shape of a manifest record."""


def _kind(v: Any) -> str:
    if isinstance(v, _Obj):
        return "an object"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, str):
        return "a string"
    return "a number"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(data: bytes | str) -> Any:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes | bytearray) else data
    try:
        return json.loads(text, object_pairs_hook=_Obj, parse_constant=_no_constant)
    except ValueError as err:
        raise _Malformed(str(err)) from None


def _str(o: _Obj, key: str, where: str) -> str:
    v = o.members.get(key)
    if v is None:
        return ""
    if not isinstance(v, str):
        raise _Malformed(f"{where}{key} is {_kind(v)}, not a string")
    return v


def _int(o: _Obj, key: str, where: str) -> int:
    v = o.members.get(key)
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Malformed(f"{where}{key} is {_kind(v)}, not an integer")
    if not _INT64_MIN <= v <= _INT64_MAX:
        raise _Malformed(f"{where}{key} is {v}, out of the range of a 64-bit integer")
    return v


def _entry(v: Any, where: str) -> ManifestEntry:
    if v is None:
        return ManifestEntry("", "", "", 0)
    if not isinstance(v, _Obj):
        raise _Malformed(f"{where} is {_kind(v)}, not an object")
    w = where + "."
    return ManifestEntry(
        scope=_str(v, "scope", w),
        name=_str(v, "name", w),
        hash=_str(v, "hash", w),
        bytes=_int(v, "bytes", w),
        reason=_str(v, "reason", w),
    )


def _array(o: _Obj, key: str) -> list[Any]:
    v = o.members.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise _Malformed(f"{key} is {_kind(v)}, not an array")
    return v


def _whole(o: Any) -> Manifest:
    if o is None:  # Go leaves the zero Manifest for a JSON null
        return Manifest()
    if not isinstance(o, _Obj):
        raise _Malformed(f"the record is {_kind(o)}, not an object")
    return Manifest(
        tuple(_entry(v, f"entries[{i}]") for i, v in enumerate(_array(o, "entries"))),
        tuple(_entry(v, f"omitted[{i}]") for i, v in enumerate(_array(o, "omitted"))),
        _names(o),
    )


def _names(o: _Obj) -> tuple[str, ...]:
    out = []
    for i, v in enumerate(_array(o, "neutralised")):
        if not isinstance(v, str):
            raise _Malformed(f"neutralised[{i}] is {_kind(v)}, not a string")
        out.append(v)
    return tuple(out)


_ENTRY_KEYS = ("scope", "name", "hash", "bytes", "reason")


@dataclass(frozen=True, slots=True)
class _Op:
    keep: int
    entry: ManifestEntry | None


@dataclass(frozen=True, slots=True)
class _Delta:
    base: str
    hash: str
    entries: tuple[_Op, ...]
    omitted: tuple[_Op, ...]
    neutralised: tuple[str, ...] = ()


def _ops(o: _Obj, key: str) -> tuple[_Op, ...]:
    out = []
    for i, v in enumerate(_array(o, key)):
        where = f"{key}[{i}]"
        if v is None:
            out.append(_Op(0, None))
            continue
        if not isinstance(v, _Obj):
            raise _Malformed(f"{where} is {_kind(v)}, not an object")
        is_entry = any(k in v.members for k in _ENTRY_KEYS)
        out.append(_Op(_int(v, "keep", where + "."), _entry(v, where) if is_entry else None))
    return tuple(out)


def _parse(data: bytes | str) -> tuple[Manifest, _Delta | None]:
    """Decode a record: ``(whole, None)`` or ``(Manifest(), delta)``.

    Raises :class:`ManifestRecordError` for a record that is not JSON of the right shape.
    """
    try:
        o = _loads(data)
        base = o.members.get("base") if isinstance(o, _Obj) else None
        if base is not None and not isinstance(base, str):
            raise _Malformed(f"base is {_kind(base)}, not a string")
        if base is None:
            return _whole(o), None
    except _Malformed as err:
        raise ManifestRecordError(f"agentmemory: manifest record: {err}") from None
    assert isinstance(o, _Obj)
    try:
        delta = _Delta(base, _str(o, "hash", ""), _ops(o, "entries"), _ops(o, "omitted"), _names(o))
    except _Malformed as err:
        raise ManifestRecordError(f"agentmemory: manifest delta: {err}") from None
    return Manifest(), delta


def _apply_ops(
    prev: tuple[ManifestEntry, ...], ops: tuple[_Op, ...], what: str
) -> tuple[ManifestEntry, ...]:
    def refuse(detail: str) -> ManifestRecordError:
        return ManifestRecordError(f"agentmemory: manifest delta {what}: {detail}")

    at = _index(prev)
    if at is None:
        raise refuse("the manifest in force names an entry twice")
    out: list[ManifestEntry] = []
    cursor = 0
    for i, op in enumerate(ops):
        if op.entry is not None and op.keep != 0:
            raise refuse(f"element {i} is both a keep and an entry")
        if op.entry is not None:
            if not op.entry.scope or not op.entry.name:
                raise refuse(f"element {i} names no entry")
            out.append(op.entry)
            j = at.get((op.entry.scope, op.entry.name))
            if j is not None:
                cursor = j + 1
        elif 0 < op.keep <= len(prev) - cursor:
            out.extend(prev[cursor : cursor + op.keep])
            cursor += op.keep
        elif op.keep > 0:
            raise refuse(f"element {i} keeps {op.keep} entries and {len(prev) - cursor} are left")
        else:
            raise refuse(f"element {i} is neither a positive keep nor an entry")
    return tuple(out)


def _apply_delta(m: Manifest, d: _Delta) -> Manifest:
    out = Manifest(
        _apply_ops(m.entries, d.entries, "entries"),
        _apply_ops(m.omitted, d.omitted, "omitted"),
        d.neutralised,
    )
    got = out.hash()
    if got != d.hash:
        raise ManifestRecordError(
            f"agentmemory: manifest delta: the result hashes {got}, the delta says {d.hash}"
        )
    return out


def apply_manifest_record(m: Manifest, data: bytes | str) -> Manifest:
    """Return the manifest in force after the record ``data``, given ``m``, the one in force before.

    ``data`` is the JSON of a record under :data:`MANIFEST_NS` (``bytes`` are read as UTF-8). A
    record is a delta if and only if it has a ``base`` member (even ``""``). A whole record is
    returned as it is, whatever ``m`` is. A delta is folded onto ``m``: its keeps copy runs of
    ``m``'s entries at the cursor, its entries are taken whole, and the result must hash to the
    delta's ``hash``.

    Raises:
        ManifestBaseError: the delta's ``base`` is not ``m.hash()`` (the reader missed a record, or
            the delta is on another manifest; a :class:`ManifestFold` resolves deltas on the last
            :data:`MANIFEST_FOLD_DEPTH` manifests in force).
        ManifestRecordError: ``data`` is not JSON of a record, or the delta does not fit ``m``
            (a keep past the end, an element both a keep and an entry or neither, an entry with
            no scope or name, ``m`` naming an entry twice), or its result hashes otherwise.
    """
    whole, d = _parse(data)
    if d is None:
        return whole
    have = m.hash()
    if d.base != have:
        raise ManifestBaseError(f"the delta is based on {d.base}, the manifest in force is {have}")
    return _apply_delta(m, d)


class ManifestFold:
    """A reader of a session's manifest records that resolves deltas on recent manifests.

    It keeps the distinct manifests in force, most recent first, at most
    :data:`MANIFEST_FOLD_DEPTH` (8) of them, so a delta based on any of them folds, not only one on
    the manifest in force: where two agents with their own memories take turns in one session,
    each records a delta on its own last manifest. A new fold holds the empty manifest. Not safe
    for concurrent use.
    """

    def __init__(self) -> None:
        self._recent: list[Manifest] = []
        self._hashes: list[str] = []

    def __len__(self) -> int:
        """How many distinct manifests the fold holds (0 to 8)."""
        return len(self._recent)

    def apply(self, data: bytes | str) -> None:
        """Fold the record ``data`` (the JSON of a record under :data:`MANIFEST_NS`).

        A whole record becomes the manifest in force. A delta is applied to the held manifest
        whose hash is its ``base`` (on an empty fold, a base of ``content_hash("")`` is the empty
        manifest), and its result becomes the manifest in force. A manifest the fold holds already
        moves to the front; the oldest past the depth is dropped. A refused record leaves the fold
        as it was.

        Raises:
            ManifestBaseError: the delta's base is none of the manifests the fold holds.
            ManifestRecordError: the record is malformed, as :func:`apply_manifest_record` says.
        """
        whole, d = _parse(data)
        if d is None:
            self._push(whole, whole.hash())
            return
        if d.base in self._hashes:
            base = self._recent[self._hashes.index(d.base)]
        elif not self._recent and d.base == Manifest().hash():
            base = Manifest()
        else:
            raise ManifestBaseError(
                f"the delta is based on {d.base}, which is not among the "
                f"{len(self._recent)} manifests last in force"
            )
        self._push(_apply_delta(base, d), d.hash)

    def manifest(self) -> Manifest:
        """The manifest in force: the last one folded, or ``Manifest()`` before any."""
        return self._recent[0] if self._recent else Manifest()

    def record(self, m: Manifest) -> tuple[str, bytes]:
        """Return ``(MANIFEST_NS, data)``: the smallest record of ``m`` that this fold resolves.

        The candidates are the whole record and :meth:`Manifest.record_since` on each manifest the
        fold holds. The shortest ``data`` (in bytes) wins. Ties, a choice the reference leaves to
        the implementation and its tests (Go ``ManifestFold.Record``, v0.0.10), go in this order:
        the delta on the manifest in force first, then deltas on older manifests, most recent
        first; and the whole record over a delta of the same size (as ``record_since`` does). So a
        reader that folds with :func:`apply_manifest_record`, which resolves only the manifest in
        force, reads every tie. An empty fold gives the whole record; so does a fold that shares
        nothing with ``m``, or one where ``m``'s writer's last manifest has aged past the depth.

        The fold is not moved: the caller folds the record it then writes, as every reader does.
        """
        whole = m.record()[1]
        best = whole
        for base in self._recent:
            data = _record_since(m, base, whole)
            if len(data) < len(best):
                best = data
        return MANIFEST_NS, best

    def _push(self, m: Manifest, h: str) -> None:
        if h in self._hashes:
            i = self._hashes.index(h)
            del self._recent[i], self._hashes[i]
        self._recent.insert(0, m)
        self._hashes.insert(0, h)
        del self._recent[MANIFEST_FOLD_DEPTH:], self._hashes[MANIFEST_FOLD_DEPTH:]
