"""Kinds and their policy: the registry, the block under a policy, memory_save's type
(docs/kinds.md). Each rule on MemStore, SqliteStore and ChromaStore (hashing vectors)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from harnesses import open_kind

from agentmemory import (
    Entry,
    KindPolicy,
    KindRegistry,
    Manifest,
    ManifestEntry,
    Store,
    apply_manifest_record,
    render,
    render_parts,
    tools,
)
from agentmemory.errors import KindPolicyError
from agentmemory.kinds import FALLBACK_KIND_POLICY, kind_of
from agentmemory.manifest import OMIT_BUDGET, OMIT_KIND_LIMIT, OMIT_RECALL_ONLY


class Clock:
    """A clock that moves one second per reading, from 2026-01-01 UTC."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture(params=["chroma", "file", "mem", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    st = open_kind(request.param, tmp_path, clock=Clock())
    yield st
    st.close()


def put(st: Store, scope: str, name: str, content: str, kind: str | None = None) -> None:
    st.put(Entry(scope, name, content, {"type": kind} if kind else None))


# -- the registry -------------------------------------------------------------------------


def test_default_registry_is_the_seed_defaults() -> None:
    reg = KindRegistry()
    assert reg.kinds() == ["user", "feedback", "project", "reference"]
    assert reg.policy_for("user") == KindPolicy(always=True, max_entries=8)
    assert reg.policy_for("feedback") == KindPolicy(always=True, max_entries=8)
    assert reg.policy_for("project") == KindPolicy(always=False, max_entries=6)
    assert reg.policy_for("reference") == KindPolicy(always=False, max_entries=4)
    assert reg.policy_for("incident") == KindPolicy(always=False, max_entries=4)
    assert reg.policy_for("") is FALLBACK_KIND_POLICY
    assert reg.always_kinds() == ["user", "feedback"]


def test_set_overrides_and_adds_and_copies_are_independent() -> None:
    reg = KindRegistry()
    reg.set("user", KindPolicy(always=False, max_entries=3))
    reg.set("incident", KindPolicy(always=True, max_entries=2))
    assert reg.always_kinds() == ["feedback", "incident"]
    assert reg.policy_for("incident").max_entries == 2
    assert KindRegistry().policy_for("user").always, "changing one registry changed another"
    only = KindRegistry({"note": KindPolicy(True, 1)}, fallback=KindPolicy(False, 9))
    assert only.kinds() == ["note"] and only.policy_for("user") == KindPolicy(False, 9)


@pytest.mark.parametrize("bad", ["Incident", "a_b", "", "x" * 65])
def test_a_kind_that_is_not_kebab_case_is_refused_by_name(bad: str) -> None:
    with pytest.raises(KindPolicyError, match="not kebab-case") as err:
        KindRegistry().set(bad, KindPolicy(True, 1))
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_max_entries_under_one_is_refused(bad: Any) -> None:
    with pytest.raises(KindPolicyError, match=f"max_entries is {re.escape(repr(bad))}"):
        KindPolicy(always=True, max_entries=bad)


def test_a_policy_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(TypeError, match="not a KindPolicy"):
        KindRegistry().set("user", (True, 3))  # type: ignore[arg-type]


def test_kind_of_reads_the_type_meta() -> None:
    assert kind_of(Entry("user", "a", "x", {"type": "feedback"})) == "feedback"
    assert kind_of(Entry("user", "a", "x")) == ""


# -- the block under a policy --------------------------------------------------------------


def test_policy_shows_always_kinds_and_names_the_rest(store: Store) -> None:
    put(store, "user", "editor", "Prefers Vim.", "user")
    put(store, "user", "tone", "Short answers.", "feedback")
    put(store, "project", "build", "Run make check.", "project")
    put(store, "project", "docs", "See the wiki.", "reference")
    put(store, "project", "plain", "No kind at all.")
    block, manifest = render(store, ["user", "project"], policy=KindRegistry())
    head = block.rsplit("\n\n", 1)[0]
    assert head == (
        "# Memory\n\n## user\n\n"
        "### editor (12 of 4096 bytes)\n\nPrefers Vim.\n\n"
        "### tone (14 of 4096 bytes)\n\nShort answers.\n\n"
        "## project\n\n"
        "Recalled when relevant, not shown; fetch with memory_search: "
        "build (15 bytes), docs (13 bytes), plain (15 bytes)"
    )
    summary = block.rsplit("\n\n", 1)[1]
    size = len(block.encode())
    assert summary == (
        f"Entries: 2 shown, 3 omitted. Block: {size} of 32768 bytes ({32768 - size} free). "
        "Entry limit: 4096 bytes."
    )
    assert [(m.scope, m.name, m.reason) for m in manifest.entries] == [
        ("user", "editor", ""),
        ("user", "tone", ""),
    ]
    assert [(m.scope, m.name, m.reason) for m in manifest.omitted] == [
        ("project", "build", OMIT_RECALL_ONLY),
        ("project", "docs", OMIT_RECALL_ONLY),
        ("project", "plain", OMIT_RECALL_ONLY),
    ]
    parts, _ = render_parts(store, ["user", "project"], policy=KindRegistry())
    assert "memory/project:recalled" in [p.id for p in parts]


def test_without_a_policy_every_entry_is_shown_as_before(store: Store) -> None:
    put(store, "user", "editor", "Prefers Vim.", "user")
    put(store, "project", "build", "Run make check.", "project")
    block, manifest = render(store, ["user", "project"])
    assert "### build (15 of 4096 bytes)\n\nRun make check." in block
    assert "Recalled when relevant" not in block
    assert manifest.omitted == ()
    assert render(store, ["user", "project"], policy=None) == (block, manifest)


def test_kind_limit_keeps_the_most_recent_over_all_scopes(store: Store) -> None:
    reg = KindRegistry()
    reg.set("user", KindPolicy(always=True, max_entries=2))
    put(store, "user", "a-oldest", "one", "user")  # written first, so the oldest
    put(store, "team", "b-middle", "two", "user")
    put(store, "user", "c-newest", "three", "user")
    block, manifest = render(store, ["user", "team"], policy=reg)
    assert [m.name for m in manifest.entries] == ["c-newest", "b-middle"]
    assert manifest.omitted == (
        ManifestEntry("user", "a-oldest", store.get("user", "a-oldest").hash, 3, OMIT_KIND_LIMIT),
    )
    assert "fetch with memory_search: a-oldest (3 bytes)" in block


def test_custom_always_kind_is_shown(store: Store) -> None:
    reg = KindRegistry()
    reg.set("incident", KindPolicy(always=True, max_entries=1))
    put(store, "project", "outage", "DB down on Friday.", "incident")
    put(store, "project", "build", "Run make check.", "project")
    _, manifest = render(store, ["project"], policy=reg)
    assert [m.name for m in manifest.entries] == ["outage"]
    assert [(m.name, m.reason) for m in manifest.omitted] == [("build", OMIT_RECALL_ONLY)]


def test_policy_reason_round_trips_through_records(store: Store) -> None:
    put(store, "user", "editor", "Prefers Vim.", "user")
    put(store, "project", "build", "Run make check.", "project")
    _, under_policy = render(store, ["user", "project"], policy=KindRegistry())
    _, without = render(store, ["user", "project"])
    _ns, whole = under_policy.record()
    assert b'"reason":"recall-only"' in whole
    assert apply_manifest_record(Manifest(), whole) == under_policy
    _ns, delta = under_policy.record_since(without)
    assert apply_manifest_record(without, delta) == under_policy
    assert under_policy.hash() != without.hash()


@pytest.mark.slow
def test_budget_under_a_policy_names_both_lines_and_stays_in_bound(store: Store) -> None:
    for i in range(6):
        put(store, "user", f"fact-{i}", f"{i}" * 300, "user")
    for i in range(5):
        put(store, "user", f"note-{i}", "n" * 50, "project")
    bound = 1200
    block, manifest = render(store, ["user"], max_total_bytes=bound, policy=KindRegistry())
    assert len(block.encode()) <= bound
    reasons = [m.reason for m in manifest.omitted]
    assert reasons.count(OMIT_RECALL_ONLY) == 5 and OMIT_BUDGET in reasons
    assert "Not shown, over the block budget" in block
    assert "Recalled when relevant, not shown" in block
    assert len(manifest.entries) + len(manifest.omitted) == 11


def test_a_policy_that_is_not_a_registry_is_a_type_error(store: Store) -> None:
    with pytest.raises(TypeError, match="not a KindRegistry"):
        render(store, ["user"], policy={"user": KindPolicy(True, 1)})  # type: ignore[arg-type]


# -- memory_save's type ---------------------------------------------------------------------


def test_save_schema_lists_the_registry_kinds(store: Store) -> None:
    save = tools(store, ["user"])[0]
    assert save.input_schema["properties"]["type"]["enum"] == [
        "user",
        "feedback",
        "project",
        "reference",
    ]
    reg = KindRegistry()
    reg.set("incident", KindPolicy(True, 2))
    save = tools(store, ["user"], kinds=reg)[0]
    assert save.input_schema["properties"]["type"]["enum"][-1] == "incident"
    res = save({"name": "outage", "content": "DB down.", "type": "incident"})
    assert not res.is_error, res.text
    assert store.get("user", "outage").meta == {"type": "incident"}


def test_save_type_sets_the_kind_and_keeps_other_meta(store: Store) -> None:
    save = tools(store, ["user"])[0]
    res = save({"name": "tone", "content": "Short.", "meta": {"description": "Tone"}})
    assert not res.is_error
    res = save({"name": "tone", "content": "Shorter.", "type": "feedback"})
    assert not res.is_error, res.text
    assert store.get("user", "tone").meta == {"description": "Tone", "type": "feedback"}
    assert "meta replaced (description, type)" in res.text


def test_save_refuses_a_kind_outside_the_enum(store: Store) -> None:
    save = tools(store, ["user"])[0]
    res = save({"name": "x", "content": "y", "type": "gossip"})
    assert res.is_error
    assert res.text == (
        'invalid arguments: type: expected one of ["user", "feedback", "project", "reference"], '
        'got "gossip"'
    )
    with pytest.raises(Exception, match="no such entry"):
        store.get("user", "x")
