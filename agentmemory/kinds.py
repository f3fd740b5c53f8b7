"""Kinds of memory and the policy that decides, per kind, what reaches the model.

An entry's kind is its ``type`` meta (:data:`KIND_META`): ``user`` (facts about the user),
``feedback`` (how the user wants the work done), ``project`` (notes on the work),
``reference`` (pointers to outside material), or any other kebab-case name; an entry may have none.
A :class:`KindPolicy` says whether a kind is always shown in the rendered block or recalled only
when a turn touches it, and how many entries of it are shown or recalled at most. A
:class:`KindRegistry` maps kinds to policies, starting from :data:`DEFAULT_KIND_POLICIES`; a
product changes it with :meth:`KindRegistry.set`. The rules are in ``docs/kinds.md#kinds-and-their-policy``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .entries import Entry
from .errors import KindPolicyError
from .rules import valid_name
from .wire import go_quote

__all__ = [
    "DEFAULT_KIND_POLICIES",
    "FALLBACK_KIND_POLICY",
    "KIND_META",
    "KNOWN_KINDS",
    "KindPolicy",
    "KindRegistry",
    "kind_of",
]

KIND_META = "type"
"""The meta key whose value is an entry's kind."""

KNOWN_KINDS = ("user", "feedback", "project", "reference")
"""The four kinds every registry starts with, in the order tools list them."""


@dataclass(frozen=True, slots=True)
class KindPolicy:
    """What reaches the model of one kind of entry.

    Attributes:
        always: ``True``: the kind is shown in the rendered block every turn; ``False``: it is
            left out of the block (listed by name) and recalled only for a turn that touches it
            (:func:`agentmemory.recall_part`) or found with ``memory_search``.
        max_entries: at most this many entries of the kind are shown in the block (the most
            recently written first) or recalled for one turn (the best ranked first); >= 1.

    Raises:
        KindPolicyError: (a ``ValueError``) ``max_entries`` under 1, or not an ``int``.
    """

    always: bool
    max_entries: int

    def __post_init__(self) -> None:
        n = self.max_entries
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise KindPolicyError(
                f"KindPolicy max_entries is {n!r}; it must be an integer of 1 or more"
            )


DEFAULT_KIND_POLICIES: Mapping[str, KindPolicy] = MappingProxyType(
    {
        "user": KindPolicy(always=True, max_entries=8),
        "feedback": KindPolicy(always=True, max_entries=8),
        "project": KindPolicy(always=False, max_entries=6),
        "reference": KindPolicy(always=False, max_entries=4),
    }
)
"""The policies a new :class:`KindRegistry` holds: facts about the user and their feedback are
always shown, 8 of each at most; project notes are recalled, 6 at most; references are
recalled, 4 at most (the defaults of the Go memory package's ``DefaultKindPolicies``)."""

FALLBACK_KIND_POLICY = KindPolicy(always=False, max_entries=4)
"""The policy of a kind the registry does not name, and of entries with no kind: recalled only,
4 at most (Go ``FallbackKindPolicy``)."""


def kind_of(entry: Entry) -> str:
    """The entry's kind: its ``type`` meta value, or ``""`` when it has none."""
    return (entry.meta or {}).get(KIND_META, "")


class KindRegistry:
    """The policy of each kind; kinds it does not name get its fallback.

    ``KindRegistry()`` holds a copy of :data:`DEFAULT_KIND_POLICIES` and
    :data:`FALLBACK_KIND_POLICY`; ``KindRegistry({...}, fallback=...)`` holds exactly the policies
    given. Changing one registry never changes another or the defaults.

    Raises:
        KindPolicyError: (a ``ValueError``) a kind that is not kebab-case.
        TypeError: a policy that is not a :class:`KindPolicy`.
    """

    def __init__(
        self,
        policies: Mapping[str, KindPolicy] | None = None,
        *,
        fallback: KindPolicy = FALLBACK_KIND_POLICY,
    ) -> None:
        self._policies: dict[str, KindPolicy] = {}
        self._fallback = _check_policy("fallback", fallback)
        for kind, policy in (DEFAULT_KIND_POLICIES if policies is None else policies).items():
            self.set(kind, policy)

    def set(self, kind: str, policy: KindPolicy) -> None:
        """Install or replace the policy of ``kind`` (kebab-case, e.g. ``"incident"``).

        Raises :class:`~agentmemory.errors.KindPolicyError` for a kind that is not kebab-case and
        ``TypeError`` for a policy that is not a :class:`KindPolicy`.
        """
        if not valid_name(kind):
            raise KindPolicyError(
                f"kind {go_quote(str(kind))} is not kebab-case (lowercase letters, digits and "
                "single hyphens, up to 64 bytes); name kinds like 'incident'"
            )
        self._policies[kind] = _check_policy(kind, policy)

    def policy_for(self, kind: str) -> KindPolicy:
        """The policy of ``kind``, or the fallback when the registry does not name it (``""``,
        the kind of an entry without a ``type``, included)."""
        return self._policies.get(kind, self._fallback)

    def policy_of(self, entry: Entry) -> KindPolicy:
        """The policy of ``entry``'s kind (:func:`kind_of`)."""
        return self.policy_for(kind_of(entry))

    @property
    def fallback(self) -> KindPolicy:
        """The policy of kinds the registry does not name."""
        return self._fallback

    def kinds(self) -> list[str]:
        """The kinds the registry names, in the order they were set (the defaults first)."""
        return list(self._policies)

    def always_kinds(self) -> list[str]:
        """The kinds shown in the block every turn, in :meth:`kinds` order."""
        return [k for k, p in self._policies.items() if p.always]

    def __iter__(self) -> Iterator[str]:
        return iter(self._policies)

    def __len__(self) -> int:
        return len(self._policies)

    def __repr__(self) -> str:
        return f"KindRegistry({self._policies!r}, fallback={self._fallback!r})"


def _check_policy(kind: str, policy: object) -> KindPolicy:
    if not isinstance(policy, KindPolicy):
        raise TypeError(
            f"the policy of kind {kind!r} is a {type(policy).__name__}, not a KindPolicy; "
            "give KindPolicy(always=..., max_entries=...)"
        )
    return policy
