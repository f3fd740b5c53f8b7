"""Out of date on purpose only: valid-from / valid-until and supersedes (docs/kinds.md), on
MemStore, SqliteStore and ChromaStore (hashing vectors)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from harnesses import open_kind

from agentmemory import (
    Entry,
    InvalidEntryError,
    MemStore,
    NotFoundError,
    SqliteStore,
    Store,
    render,
    tools,
)


class DayClock:
    """A settable clock: writes are stamped at noon UTC of ``day``."""

    def __init__(self) -> None:
        self.day = date(2026, 1, 1)

    def __call__(self) -> datetime:
        return datetime(self.day.year, self.day.month, self.day.day, 12, tzinfo=UTC)


KINDS = ["chroma", "file", "mem", "sqlite"]


@pytest.fixture
def clock() -> DayClock:
    return DayClock()


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: DayClock) -> Iterator[Store]:
    st = open_kind(request.param, tmp_path, clock=clock)
    yield st
    st.close()


def names(hits: object) -> list[str]:
    return [h.entry.name for h in hits]  # type: ignore[attr-defined]


# -- the meta rules on put ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("meta", "words"),
    [
        ({"valid-until": "tomorrow"}, ['meta "valid-until" is "tomorrow", not an ISO date']),
        ({"valid-from": "2026-13-01"}, ['meta "valid-from" is "2026-13-01", not an ISO date']),
        ({"valid-until": "2026-1-5"}, ["not an ISO date", "YYYY-MM-DD"]),
        (
            {"valid-from": "2026-05-01", "valid-until": "2026-04-30"},
            ["valid-from 2026-05-01 is after valid-until 2026-04-30", "never be in force"],
        ),
        ({"supersedes": "Old Note"}, ['supersedes is "Old Note", not the kebab-case name']),
        ({"supersedes": "deploy"}, ["supersedes names the entry itself"]),
    ],
)
def test_bad_validity_meta_is_refused_and_nothing_written(
    store: Store, meta: dict[str, str], words: list[str]
) -> None:
    with pytest.raises(InvalidEntryError) as err:
        store.put(Entry("project", "deploy", "Deploys on Monday.", meta))
    assert err.value.field == "meta"
    for w in words:
        assert w in str(err.value)
    assert "project/deploy" in str(err.value)
    with pytest.raises(NotFoundError):
        store.get("project", "deploy")
    assert list(store.journal()) == []


@pytest.mark.parametrize(
    ("snake", "kebab"), [("valid_until", "valid-until"), ("valid_from", "valid-from")]
)
def test_a_snake_case_validity_key_is_refused_naming_the_kebab_case_key(
    store: Store, snake: str, kebab: str
) -> None:
    """Meta keys are kebab-case (docs/kinds.md#out-of-date-on-purpose-only): ``valid_until`` is
    refused, and the message names the key to write instead; the tool says the same."""
    with pytest.raises(InvalidEntryError) as err:
        store.put(Entry("project", "deploy", "Deploys on Monday.", {snake: "2026-03-31"}))
    assert err.value.field == "meta"
    assert str(err.value) == (
        f'agentmemory: invalid entry: project/deploy meta key "{snake}" is not kebab-case '
        f'(lowercase letters, digits and single hyphens, up to 64 bytes); use e.g. "{kebab}"'
    )
    said = tools(store, ["project"])[0](
        {"name": "deploy", "content": "Deploys on Monday.", "meta": {snake: "2026-03-31"}}
    )
    assert said.is_error and said.text == str(err.value)
    assert list(store.journal()) == []


def test_meta_rules_come_before_the_size_bound(tmp_path: Path) -> None:
    st = MemStore(max_entry_bytes=4)
    with pytest.raises(InvalidEntryError, match="not an ISO date"):
        st.put(Entry("p", "a", "too long", {"valid-until": "soon"}))


# -- validity dates -------------------------------------------------------------------------


def test_expired_and_future_entries_leave_block_recall_and_search(store: Store) -> None:
    store.put(
        Entry("project", "freeze", "Merge freeze until March.", {"valid-until": "2026-03-31"})
    )
    store.put(Entry("project", "launch", "Launch freeze in May.", {"valid-from": "2026-05-01"}))
    store.put(Entry("project", "always", "The freeze rules are in the wiki."))
    for day, shown in [
        ("2026-03-31", ["always", "freeze"]),
        ("2026-04-15", ["always"]),
        ("2026-05-01", ["always", "launch"]),
    ]:
        _, manifest = render(store, ["project"], as_of=day)
        assert [m.name for m in manifest.entries] == shown, day
        assert manifest.omitted == ()
        got = store.recall("freeze", scopes=["project"], limit=5, as_of=day)
        assert sorted(names(got)) == shown, day
    # Out of date is not deleted: get, list, the reference search and the journal keep it.
    assert store.get("project", "freeze").content == "Merge freeze until March."
    assert [e.name for e in store.list("project")] == ["always", "freeze", "launch"]
    assert len(store.search(["project"], "freeze")) == 3
    assert len(list(store.journal())) == 3


def test_default_day_is_today(store: Store) -> None:
    store.put(Entry("project", "old", "Deploys on Monday.", {"valid-until": "2020-01-01"}))
    store.put(Entry("project", "new", "Deploys on Tuesday.", {"valid-from": "2020-01-02"}))
    _, manifest = render(store, ["project"])
    assert [m.name for m in manifest.entries] == ["new"]
    assert names(store.recall("deploys", scopes=["project"])) == ["new"]
    every = store.recall("deploys", scopes=["project"], include_superseded=True)
    assert sorted(names(every)) == ["new", "old"]
    result = tools(store, ["project"])[3]({"query": "deploys"})
    assert "project/new" in result.text and "project/old" not in result.text


@pytest.mark.slow
def test_recall_fills_its_limit_past_out_of_date_hits(store: Store) -> None:
    for i in range(12):  # strong matches, all expired
        store.put(
            Entry("notes", f"old-{i:02d}", "alpha alpha alpha beta", {"valid-until": "2020-01-01"})
        )
    for i in range(3):  # weaker matches, in force
        store.put(Entry("notes", f"live-{i}", f"alpha and {i} other words of text"))
    got = store.recall("alpha", scopes=["notes"], limit=3, mode="bm25")
    assert sorted(names(got)) == ["live-0", "live-1", "live-2"]
    assert [h.legs["bm25"].rank for h in got] == [1, 2, 3]


def test_as_of_must_be_a_day(store: Store) -> None:
    with pytest.raises(ValueError, match="not an ISO date"):
        store.recall("x", scopes=["p"], as_of="last week")
    with pytest.raises(ValueError, match="not an ISO date"):
        render(store, ["p"], as_of="2026/01/01")


# -- supersedes -----------------------------------------------------------------------------


def test_superseded_twice_and_as_of(store: Store, clock: DayClock) -> None:
    clock.day = date(2026, 1, 1)
    store.put(Entry("project", "deploy-a", "The deploy day is Monday."))
    clock.day = date(2026, 1, 10)
    store.put(
        Entry("project", "deploy-b", "The deploy day is Tuesday.", {"supersedes": "deploy-a"})
    )
    clock.day = date(2026, 1, 20)
    store.put(
        Entry("project", "deploy-c", "The deploy day is Wednesday.", {"supersedes": "deploy-b"})
    )
    q = "deploy day"
    assert names(store.recall(q, scopes=["project"])) == ["deploy-c"]
    assert names(store.recall(q, scopes=["project"], as_of="2026-01-05")) == ["deploy-a"]
    assert names(store.recall(q, scopes=["project"], as_of="2026-01-10")) == ["deploy-b"]
    assert names(store.recall(q, scopes=["project"], as_of=date(2026, 1, 19))) == ["deploy-b"]
    assert names(store.recall(q, scopes=["project"], as_of="2026-01-20")) == ["deploy-c"]
    assert names(store.recall(q, scopes=["project"], as_of="2025-12-31")) == []
    every = store.recall(q, scopes=["project"], include_superseded=True)
    assert sorted(names(every)) == ["deploy-a", "deploy-b", "deploy-c"]
    _, manifest = render(store, ["project"])
    assert [m.name for m in manifest.entries] == ["deploy-c"]
    # The retired entries stay live and in the journal.
    assert store.get("project", "deploy-a").content == "The deploy day is Monday."
    assert [c.entry.name for c in store.journal()] == ["deploy-a", "deploy-b", "deploy-c"]


def test_an_edit_after_the_date_does_not_move_supersession(store: Store, clock: DayClock) -> None:
    clock.day = date(2026, 1, 1)
    store.put(Entry("project", "old", "Standup at nine."))
    clock.day = date(2026, 2, 1)
    store.put(Entry("project", "new", "Standup at ten.", {"supersedes": "old"}))
    clock.day = date(2026, 3, 1)
    store.put(Entry("project", "new", "Standup at ten sharp.", {"supersedes": "old"}))
    assert names(store.recall("standup", scopes=["project"], as_of="2026-02-15")) == ["new"]
    assert names(store.recall("standup", scopes=["project"], as_of="2026-01-15")) == ["old"]


def test_supersession_is_per_scope_and_ends_when_the_new_entry_is_forgotten(store: Store) -> None:
    store.put(Entry("user", "editor", "Uses Vim."))
    store.put(Entry("team", "editor", "The team uses Emacs."))
    store.put(Entry("user", "editor-2", "Uses Helix now.", {"supersedes": "editor"}))
    _, manifest = render(store, ["user", "team"])
    assert [(m.scope, m.name) for m in manifest.entries] == [
        ("user", "editor-2"),
        ("team", "editor"),
    ]
    store.forget("user", "editor-2")
    _, manifest = render(store, ["user", "team"])
    assert [(m.scope, m.name) for m in manifest.entries] == [("user", "editor"), ("team", "editor")]


def test_a_future_successor_retires_from_its_valid_from(store: Store) -> None:
    store.put(Entry("project", "plan", "Ship in June."))
    store.put(
        Entry(
            "project", "plan-2", "Ship in July.", {"supersedes": "plan", "valid-from": "2026-06-01"}
        )
    )
    _, before = render(store, ["project"], as_of="2026-05-31")
    _, after = render(store, ["project"], as_of="2026-06-01")
    assert [m.name for m in before.entries] == ["plan"]
    assert [m.name for m in after.entries] == ["plan-2"]


def test_memory_save_supersedes_says_what_it_retired(store: Store) -> None:
    save, _, _, search = tools(store, ["project"])
    assert not save({"name": "deploy", "content": "Deploys on Monday."}).is_error
    res = save({"name": "deploy-2", "content": "Deploys on Tuesday.", "supersedes": "deploy"})
    assert not res.is_error, res.text
    assert res.text.endswith(
        "; retired project/deploy (18 bytes), which leaves the memory block and search and "
        "stays in the journal"
    )
    assert store.get("project", "deploy-2").meta == {"supersedes": "deploy"}
    assert "project/deploy " not in search({"query": "deploys"}).text
    missing = save({"name": "x", "content": "y", "supersedes": "nothing-here"})
    assert missing.is_error
    assert missing.text == (
        "supersedes names project/nothing-here, which does not exist; name an entry of scope "
        "project, or leave supersedes out"
    )
    itself = save({"name": "deploy-2", "content": "z", "supersedes": "deploy-2"})
    assert itself.is_error and "itself" in itself.text
    bad = save({"name": "x", "content": "y", "supersedes": "Not A Name"})
    assert bad.is_error and "not kebab-case" in bad.text
    with pytest.raises(NotFoundError):
        store.get("project", "x")


def test_sqlite_finds_superseding_entries_through_the_index(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "s.sqlite3") as st:
        st.put(Entry("p", "a", "x"))
        st.put(Entry("p", "b", "y", {"supersedes": "a"}))
        assert [e.name for e in st.superseding(["p"])] == ["b"]
    conn = sqlite3.connect(tmp_path / "s.sqlite3")
    try:
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT name FROM memory_entries WHERE scope = 'p' AND (CASE WHEN"
            " json_valid(meta) THEN json_extract(meta, '$.supersedes') END) IS NOT NULL"
        ).fetchall()
        steps = [r[0] for r in conn.execute("SELECT name FROM store_schema ORDER BY version")]
    finally:
        conn.close()
    assert "memory_entries_supersedes" in " ".join(str(r[-1]) for r in plan)
    assert "m003_supersedes_index" in steps


@pytest.mark.slow
def test_day_boundaries_are_utc(store: Store) -> None:
    store.put(Entry("p", "a", "alpha", {"valid-until": "2026-01-01"}))
    late = datetime(2026, 1, 1, 23, 59, tzinfo=UTC)
    assert names(store.recall("alpha", scopes=["p"], as_of=late)) == ["a"]
    assert names(store.recall("alpha", scopes=["p"], as_of=late + timedelta(minutes=2))) == []
