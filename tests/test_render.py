"""Render: the block the model reads, byte for byte (docs/contract.md#the-render).

The golden files under tests/golden/render/ pin every fixture of section 3.5 (``<case>.md``,
``<case>.manifest.json``, ``<case>.parts``); ``pytest --update-golden`` rewrites them, and the
rewrite is a reviewed diff. Independently of the files, each fixture is held to the numbers the
reference documents (sizes, part lengths, summary lines, whole texts), so the golden files are not
only what this code computed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmemory import (
    DEFAULT_MAX_TOTAL_BYTES,
    BudgetError,
    Entry,
    InvalidEntryError,
    Manifest,
    MemStore,
    Part,
    render,
    render_parts,
    usage,
)
from agentmemory.manifest import OMIT_BUDGET
from agentmemory.render import PART_SEPARATOR, SUMMARY_PART_ID, TITLE_PART_ID, join_parts, part_id

GOLDEN = Path(__file__).resolve().parent / "golden" / "render"

SUMMARY_RE = re.compile(
    r"Entries: (\d+) shown, (\d+) omitted\. Block: (\d+) of (\d+) bytes \(( *)(\d+) free\)\. "
    r"Entry limit: (\d+) bytes\."
)


def nbytes(text: str) -> int:
    return len(text.encode("utf-8"))


def filler(n: int, c: str) -> str:
    """``n`` bytes of one letter ending in a newline (the reference's ``filler(n, c)``)."""
    return c * (n - 1) + "\n"


@dataclass
class Case:
    name: str
    scopes: list[str]
    entries: list[Entry]
    max_total: int = DEFAULT_MAX_TOTAL_BYTES
    entry_max: int = 4096
    caps: dict[str, int] = field(default_factory=dict)


def scope_entries(scope: str, n: int, size: int) -> list[Entry]:
    return [Entry(scope, f"{scope}-{i:02d}", filler(size, chr(ord("a") + i))) for i in range(n)]


CASES = [
    Case("empty", ["user", "project"], []),
    Case("no-scopes", [], [Entry("user", "unseen", "not rendered")]),
    Case(
        "one-scope",
        ["user"],
        [
            Entry(
                "user",
                "style",
                "Short answers.\n\nCode in Go.\n",
                {"description": "How the user likes answers", "type": "feedback"},
            ),
            Entry("user", "timezone", "Europe/London"),
            Entry("project", "unlisted", "not in the scopes"),
        ],
    ),
    Case(
        "two-scopes",
        ["user", "project"],
        [
            Entry("user", "editor", "Neovim, dark theme — süß ✓ 日本\n", {"description": "Editor"}),
            Entry("project", "build", "#### Build\n\nRun `make check` before a commit.\n"),
        ],
    ),
    Case(
        "at-bound",
        ["user"],
        [Entry("user", c, filler(256, c)) for c in "abcd"],
        max_total=1024,
        entry_max=256,
    ),
    Case(
        "omitted",
        ["user", "project", "empty"],
        [
            Entry("user", "a", filler(256, "a")),
            Entry("user", "b", filler(256, "b")),
            Entry("user", "c", filler(256, "c"), {"description": "The last one shown"}),
            Entry("user", "d", filler(256, "d"), {"description": "Does not fit"}),
            Entry("user", "e", filler(100, "e")),
            Entry("project", "build", "make check\n"),
        ],
        max_total=1000,
        entry_max=256,
    ),
    Case(
        "skipped",
        ["user"],
        [
            Entry("user", "architecture-notes", filler(512, "n"), {"description": "Long"}),
            Entry("user", "bristol", "Lives in Bristol.\n"),
            Entry("user", "more-notes", filler(500, "m")),
            Entry("user", "zz-passport", "In the top drawer.\n"),
        ],
        max_total=900,
        entry_max=512,
    ),
    Case(
        "many-small",
        ["user"],
        [
            Entry("user", f"note-{i:02d}", f"Fact {i}.\n", {"description": f"What fact {i} is for"})
            for i in range(12)
        ],
        max_total=700,
        entry_max=256,
    ),
    Case(
        "scope-cap",
        ["environment", "user"],
        scope_entries("environment", 8, 60) + scope_entries("user", 2, 40),
        max_total=1000,
        entry_max=256,
        caps={"environment": 400},
    ),
]


def store_with(entries: Sequence[Entry], entry_max: int = 4096) -> MemStore:
    store = MemStore(max_entry_bytes=entry_max)
    for e in entries:
        store.put(e)
    return store


def check_golden(name: str, got: bytes, update: bool) -> None:
    path = GOLDEN / name
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(got)
        return
    assert path.exists(), f"{path} is missing; run `pytest --update-golden` and review the diff"
    want = path.read_bytes()
    assert got == want, f"{path.name} differs from the golden file:\n--- got ---\n{got.decode()}"


def check_block(
    store: MemStore,
    block: str,
    parts: list[Part],
    man: Manifest,
    bound: int,
    caps: Mapping[str, int],
) -> None:
    """What holds for every block: the bound, a summary stating the block's own size, parts that
    join to the block, and a manifest that matches what the block shows."""
    size = nbytes(block)
    assert size <= bound
    assert join_parts(parts) == block
    assert parts[0] == Part(TITLE_PART_ID, "# Memory")
    assert parts[-1].id == SUMMARY_PART_ID
    assert block.endswith(parts[-1].text)
    m = SUMMARY_RE.fullmatch(parts[-1].text)
    assert m is not None, parts[-1].text
    shown, omitted, said, of, pad, free, limit = m.groups()
    assert (int(shown), int(omitted)) == (len(man.entries), len(man.omitted))
    assert (int(said), int(of), int(free)) == (size, bound, bound - size)
    assert len(pad) + len(free) == len(str(bound))
    assert int(limit) == store.max_entry_bytes
    ids = [p.id for p in parts]
    assert len(ids) == len(set(ids))
    for p in parts:
        if p.id.count("/") != 2:  # an entry's content may keep one trailing newline
            assert not p.text.startswith("\n") and not p.text.endswith("\n")
    by_id = {p.id: p.text for p in parts}
    for me in man.entries:
        e = store.get(me.scope, me.name)
        assert (me.hash, me.bytes, me.reason) == (e.hash, e.size, "")
        content = e.content[:-1] if e.content.endswith("\n") else e.content
        assert by_id[part_id(me.scope, me.name)].endswith("\n\n" + content)
    for me in man.omitted:
        e = store.get(me.scope, me.name)
        assert (me.hash, me.bytes, me.reason) == (e.hash, e.size, OMIT_BUDGET)
        assert part_id(me.scope, me.name) not in by_id
    # a capped scope keeps its entries and omission line inside its cap
    for scope, cap in caps.items():
        taken = sum(
            len(PART_SEPARATOR) + nbytes(p.text)
            for p in parts
            if p.id.startswith(f"memory/{scope}/") or p.id == f"memory/{scope}:omitted"
        )
        assert taken <= cap


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden(case: Case, update_golden: bool) -> None:
    store = store_with(case.entries, case.entry_max)
    kw = {"max_total_bytes": case.max_total, "scope_max_bytes": case.caps}
    block, man = render(store, case.scopes, **kw)  # type: ignore[arg-type]
    parts, parts_man = render_parts(store, case.scopes, **kw)  # type: ignore[arg-type]
    assert parts_man == man
    check_block(store, block, parts, man, case.max_total, case.caps)
    assert render(store, case.scopes, **kw) == (block, man)  # type: ignore[arg-type]

    check_golden(f"{case.name}.md", block.encode("utf-8"), update_golden)
    check_golden(
        f"{case.name}.manifest.json", (man.to_json(indent=2) + "\n").encode(), update_golden
    )
    listing = "".join(f"{p.id} {nbytes(p.text)}\n" for p in parts)
    check_golden(f"{case.name}.parts", listing.encode(), update_golden)


def rendered(name: str) -> tuple[str, list[Part], Manifest]:
    case = next(c for c in CASES if c.name == name)
    store = store_with(case.entries, case.entry_max)
    parts, man = render_parts(
        store, case.scopes, max_total_bytes=case.max_total, scope_max_bytes=case.caps
    )
    return join_parts(parts), parts, man


def listing(parts: list[Part]) -> list[tuple[str, int]]:
    return [(p.id, nbytes(p.text)) for p in parts]


# The numbers below are the Go module's (docs/contract.md#golden-fixtures), written out by hand.


def test_worked_example_one_scope() -> None:
    block, parts, man = rendered("one-scope")
    assert block == (
        "# Memory\n"
        "\n"
        "## user\n"
        "\n"
        "### style (28 of 4096 bytes) — How the user likes answers\n"
        "\n"
        "Short answers.\n"
        "\n"
        "Code in Go.\n"
        "\n"
        "### timezone (13 of 4096 bytes)\n"
        "\n"
        "Europe/London\n"
        "\n"
        "Entries: 2 shown, 0 omitted. Block: 250 of 32768 bytes (32518 free). "
        "Entry limit: 4096 bytes."
    )
    assert nbytes(block) == 250
    assert listing(parts) == [
        ("memory", 8),
        ("memory/user", 7),
        ("memory/user/style", 88),
        ("memory/user/timezone", 46),
        ("memory:summary", 93),
    ]
    assert [e.name for e in man.entries] == ["style", "timezone"] and not man.omitted


def test_fixture_empty() -> None:
    block, parts, _ = rendered("empty")
    assert block == (
        "# Memory\n\n## user\n\nNo entries.\n\n## project\n\nNo entries.\n\n"
        "Entries: 0 shown, 0 omitted. Block: 150 of 32768 bytes (32618 free). "
        "Entry limit: 4096 bytes."
    )
    assert listing(parts) == [
        ("memory", 8),
        ("memory/user", 20),
        ("memory/project", 23),
        ("memory:summary", 93),
    ]


def test_fixture_no_scopes() -> None:
    block, parts, man = rendered("no-scopes")
    assert nbytes(block) == 103
    assert listing(parts) == [("memory", 8), ("memory:summary", 93)]
    assert man == Manifest()


def test_fixture_two_scopes() -> None:
    block, parts, _ = rendered("two-scopes")
    assert nbytes(block) == 284
    assert listing(parts) == [
        ("memory", 8),
        ("memory/user", 7),
        ("memory/user/editor", 81),
        ("memory/project", 10),
        ("memory/project/build", 75),
        ("memory:summary", 93),
    ]
    # Content is verbatim: a level-four heading stays, multi-byte text counts in bytes.
    assert "### editor (40 of 4096 bytes) — Editor\n\nNeovim, dark theme — süß ✓ 日本\n\n" in block
    assert "\n\n#### Build\n\nRun `make check` before a commit.\n\n" in block


def test_fixture_at_bound() -> None:
    block, _, man = rendered("at-bound")
    assert nbytes(block) == 765
    assert [e.name for e in man.entries] == ["a", "b"]
    assert [e.name for e in man.omitted] == ["c", "d"]
    assert (
        "\n\nNot shown, over the block budget; fetch with memory_search: "
        "c (256 bytes), d (256 bytes)\n\n" in block
    )
    assert block.endswith(
        "Entries: 2 shown, 2 omitted. Block: 765 of 1024 bytes ( 259 free). Entry limit: 256 bytes."
    )


def test_fixture_omitted() -> None:
    block, parts, man = rendered("omitted")
    assert block == (
        "# Memory\n\n## user\n\n"
        f"### a (256 of 256 bytes)\n\n{'a' * 255}\n\n"
        f"### b (256 of 256 bytes)\n\n{'b' * 255}\n\n"
        f"### e (100 of 256 bytes)\n\n{'e' * 99}\n\n"
        "Not shown, over the block budget; fetch with memory_search: c (256 bytes), d (256 bytes)"
        "\n\n## project\n\n### build (11 of 256 bytes)\n\nmake check\n\n"
        "## empty\n\nNo entries.\n\n"
        "Entries: 4 shown, 2 omitted. Block: 968 of 1000 bytes (  32 free). Entry limit: 256 bytes."
    )
    assert nbytes(block) == 968
    assert listing(parts) == [
        ("memory", 8),
        ("memory/user", 7),
        ("memory/user/a", 281),
        ("memory/user/b", 281),
        ("memory/user/e", 125),
        ("memory/user:omitted", 88),
        ("memory/project", 10),
        ("memory/project/build", 39),
        ("memory/empty", 21),
        ("memory:summary", 90),
    ]
    shown = [(e.scope, e.name, e.hash[:15], e.hash[-4:], e.bytes) for e in man.entries]
    assert shown[0] == ("user", "a", "sha256:e719308a", "4937", 256)
    assert shown[1][1:2] == ("b",) and shown[1][4] == 256
    assert shown[2] == ("user", "e", "sha256:66415057", "4f1c", 100)
    assert shown[3] == ("project", "build", "sha256:d064dfa4", "ea26", 11)
    assert [(e.name, e.bytes, e.reason) for e in man.omitted] == [
        ("c", 256, "budget"),
        ("d", 256, "budget"),
    ]
    # the manifest file: indented 2 spaces, "omitted" carries the reason
    text = (GOLDEN / "omitted.manifest.json").read_text()
    assert text.startswith('{\n  "entries": [\n    {\n      "scope": "user",\n      "name": "a",')
    assert '"reason": "budget"' in text and text.endswith("  ]\n}\n")


def test_fixture_skipped_a_big_entry_does_not_hide_the_small_ones() -> None:
    block, _, man = rendered("skipped")
    assert nbytes(block) == 861
    assert [e.name for e in man.entries] == ["architecture-notes", "bristol", "zz-passport"]
    assert [e.name for e in man.omitted] == ["more-notes"]


def test_fixture_many_small() -> None:
    block, _, man = rendered("many-small")
    assert nbytes(block) == 694
    assert len(man.entries) == 8 and len(man.omitted) == 4
    assert (
        "Not shown, over the block budget; fetch with memory_search: note-08 (8 bytes), and 3 more"
        in block
    )
    assert "(  6 free)" in block


def test_fixture_scope_cap() -> None:
    block, _, man = rendered("scope-cap")
    assert block == (
        "# Memory\n\n## environment\n\n"
        f"### environment-00 (60 of 256 bytes)\n\n{'a' * 59}\n\n"
        f"### environment-01 (60 of 256 bytes)\n\n{'b' * 59}\n\n"
        f"### environment-02 (60 of 256 bytes)\n\n{'c' * 59}\n\n"
        "Not shown, over the block budget; fetch with memory_search: environment-03 (60 bytes), "
        "and 4 more\n\n## user\n\n"
        f"### user-00 (40 of 256 bytes)\n\n{'a' * 39}\n\n"
        f"### user-01 (40 of 256 bytes)\n\n{'b' * 39}\n\n"
        "Entries: 5 shown, 5 omitted. Block: 665 of 1000 bytes ( 335 free). Entry limit: 256 bytes."
    )
    assert nbytes(block) == 665
    assert [e.name for e in man.entries] == [
        "environment-00",
        "environment-01",
        "environment-02",
        "user-00",
        "user-01",
    ]


def test_summary_example_of_section_3_2() -> None:
    # One entry of 10 bytes under a 243-byte bound: size and free cross a power of ten.
    store = store_with([Entry("user", "a", "x" * 9 + "\n")])
    block, _ = render(store, ["user"], max_total_bytes=243)
    assert block.endswith("Block: 145 of 243 bytes ( 98 free). Entry limit: 4096 bytes.")
    assert nbytes(block) == 145


# The Go module's other render tests (docs/contract.md#golden-fixtures).


def test_budget_nine_full_entries_under_the_default_bound() -> None:
    store = store_with(
        [Entry("user", f"note-{c}", filler(4096, c)) for c in "abcdefghi"],
    )
    block, man = render(store, ["user"])
    assert len(man.entries) == 7
    assert [e.name for e in man.omitted] == ["note-h", "note-i"]
    assert (
        "Not shown, over the block budget; fetch with memory_search: "
        "note-h (4096 bytes), note-i (4096 bytes)" in block
    )
    assert block.endswith(
        "Entries: 7 shown, 2 omitted. Block: 29126 of 32768 bytes ( 3642 free). "
        "Entry limit: 4096 bytes."
    )
    assert nbytes(block) == 29126


def test_packs_the_budget_in_list_order() -> None:
    entries = [Entry("user", f"note-{i:02d}", filler(3000, "n")) for i in range(12)]
    store = store_with([*entries, Entry("user", "zz-passport", "In the top drawer.\n")])
    block, man = render(store, ["user"])
    assert "### zz-passport (19 of 4096 bytes)" in block
    assert "zz-passport" not in [e.name for e in man.omitted]
    names = [e.name for e in man.entries]
    assert names == sorted(names) and man.omitted
    assert nbytes(block) <= DEFAULT_MAX_TOTAL_BYTES


def test_counts_the_headings_and_descriptions() -> None:
    store = store_with(
        [
            Entry("user", f"note-{i:03d}", filler(20, "x"), {"description": "d" * 200})
            for i in range(600)
        ]
    )
    block, man = render(store, ["user"])
    assert nbytes(block) <= DEFAULT_MAX_TOTAL_BYTES
    assert len(man.entries) + len(man.omitted) == 600 and man.omitted
    assert "Not shown, over the block budget; fetch with memory_search:" in block


def test_tiny_bound_counts_what_it_cannot_name() -> None:
    store = store_with([Entry("user", f"note-{i}", filler(200, "x")) for i in range(8)])
    block, man = render(store, ["user"], max_total_bytes=180)
    assert (len(man.entries), len(man.omitted)) == (0, 8)
    assert "\n\nNot shown, over the block budget: 8 entries.\n\n" in block
    assert nbytes(block) == 154


class Boom(Exception):
    pass


class FailingStore:
    """A store whose list fails: render passes the error on unchanged."""

    max_entry_bytes = 4096

    def list(self, scope: str) -> list[Entry]:
        raise Boom("boom")


def test_errors() -> None:
    with pytest.raises(InvalidEntryError, match='scope "Bad" is not kebab-case'):
        render(MemStore(), ["user", "Bad"])
    with pytest.raises(InvalidEntryError, match='scope "user" is given twice'):
        render_parts(MemStore(), ["user", "user"])
    with pytest.raises(Boom, match="boom"):
        render(FailingStore(), ["user"])
    with pytest.raises(TypeError, match="list of scopes"):
        render(MemStore(), "user")
    # the bound is checked before the scopes, as in the reference
    with pytest.raises(BudgetError):
        render(MemStore(), ["Bad"], max_total_bytes=0)


@pytest.fixture(scope="module")
def twenty() -> MemStore:
    return store_with([Entry("user", f"n-{i:02d}", filler(300, "x")) for i in range(20)])


@pytest.mark.parametrize("bound", [0, -100, 1, 80])
def test_budget_refused(twenty: MemStore, bound: int) -> None:
    with pytest.raises(BudgetError) as err:
        render(twenty, ["user", "project"], max_total_bytes=bound)
    with pytest.raises(BudgetError):
        render_parts(twenty, ["user", "project"], max_total_bytes=bound)
    msg = str(err.value)
    assert msg.startswith("agentmemory: render bound is too small for the block: ")
    if bound < 1:
        assert f"the bound is {bound} bytes" in msg
    else:
        assert re.search(rf"2 scope headings take \d+ bytes, the bound is {bound};", msg)


def test_budget_floor(twenty: MemStore) -> None:
    scopes = ["user", "project"]
    floor = 0
    for bound in range(1, 1025):
        try:
            block, _ = render(twenty, scopes, max_total_bytes=bound)
        except BudgetError:
            continue
        assert nbytes(block) <= bound
        floor = bound
        break
    assert floor == 135
    parts, man = render_parts(twenty, scopes, max_total_bytes=floor)
    assert nbytes(join_parts(parts)) == 134
    assert "memory/user:omitted" not in [p.id for p in parts]  # no room even for the count
    assert (len(man.entries), len(man.omitted)) == (0, 20)
    for bound in range(floor, floor + 64):
        block, _ = render(twenty, scopes, max_total_bytes=bound)
        assert nbytes(block) <= bound


def test_negative_cap_is_refused() -> None:
    with pytest.raises(BudgetError, match='scope "user" is capped at -1 bytes'):
        render(MemStore(), ["user"], scope_max_bytes={"user": -1})


@pytest.fixture(scope="module")
def env_and_user() -> MemStore:
    return store_with(scope_entries("environment", 20, 150) + scope_entries("user", 2, 80))


@pytest.mark.parametrize(
    ("caps", "env", "user"),
    [
        ({}, 17, 0),
        ({"environment": 2400}, 12, 2),
        ({"environment": 2400, "user": 1000}, 12, 2),
        ({"environment": 0}, 0, 2),
        ({"environment": 1 << 20}, 17, 0),
        ({"project": 0}, 17, 0),
    ],
    ids=["uncapped", "env-capped", "both-capped", "env-zero", "cap-over-bound", "unlisted-scope"],
)
def test_scope_max_bytes(env_and_user: MemStore, caps: dict[str, int], env: int, user: int) -> None:
    scopes = ["environment", "user"]
    parts, man = render_parts(env_and_user, scopes, max_total_bytes=3575, scope_max_bytes=caps)
    check_block(env_and_user, join_parts(parts), parts, man, 3575, caps)
    assert sum(e.scope == "environment" for e in man.entries) == env
    assert sum(e.scope == "user" for e in man.entries) == user
    assert len(man.entries) + len(man.omitted) == 22
    if caps.get("environment") == 0:  # the cap counts the omission line too: no room for it
        assert "memory/environment:omitted" not in [p.id for p in parts]


def test_a_write_changes_only_its_part_and_the_summary() -> None:
    store = store_with([Entry("user", f"note-{i}", filler(3000, chr(97 + i))) for i in range(8)])
    scopes = ["user", "project"]
    before, _ = render_parts(store, scopes)
    assert [p.id for p in before[:3]] == [TITLE_PART_ID, "memory/user", part_id("user", "note-0")]
    assert before[-1].id == SUMMARY_PART_ID
    store.put(Entry("user", "note-6", "Likes Bristol"))
    after, _ = render_parts(store, scopes)
    assert [p.id for p in after] == [p.id for p in before]
    changed = [a.id for a, b in zip(after, before, strict=True) if a.text != b.text]
    assert changed == [part_id("user", "note-6"), SUMMARY_PART_ID]
    b1, b2 = join_parts(before), join_parts(after)
    assert b1[: b1.index("### note-6")] == b2[: b2.index("### note-6")]


def test_content_is_verbatim_but_one_trailing_newline() -> None:
    store = store_with(
        [
            Entry("user", "a", "# Not a title\n\n## nor a scope\n\n"),
            Entry("user", "b", "ends without a newline"),
        ]
    )
    parts, _ = render_parts(store, ["user"])
    by_id = {p.id: p.text for p in parts}
    # content ending in "\n\n" keeps one; the headings inside stay as they are
    assert by_id["memory/user/a"] == "### a (31 of 4096 bytes)\n\n# Not a title\n\n## nor a scope\n"
    assert by_id["memory/user/b"] == "### b (22 of 4096 bytes)\n\nends without a newline"


@pytest.mark.slow
def test_summary_is_exact_across_digit_boundaries() -> None:
    # The block's size and its free count cross powers of ten in opposite directions here.
    for bound in (400, 1000, 2000, 11000, DEFAULT_MAX_TOTAL_BYTES):
        for n in range(1, bound + 1, 7):
            store = store_with(
                [Entry("user", "a", filler(n, "a")), Entry("user", "b", "b\n")], bound
            )
            parts, man = render_parts(store, ["user"], max_total_bytes=bound)
            check_block(store, join_parts(parts), parts, man, bound, {})


@pytest.mark.slow
def test_random_sweep() -> None:
    rng = random.Random(1)
    for _ in range(20000):
        bound = 120 + rng.randrange(4000)
        entries = []
        for j in range(1 + rng.randrange(4)):
            meta = {"description": "d" * rng.randrange(1, 40)} if rng.randrange(2) else None
            entries.append(Entry("user", f"e{j}", "x" * (1 + rng.randrange(300)), meta))
        store = store_with(entries)
        try:
            parts, man = render_parts(store, ["user"], max_total_bytes=bound)
        except BudgetError:
            assert bound < 170
            continue
        check_block(store, join_parts(parts), parts, man, bound, {})


# Property: for random stores, scopes, caps and bounds, the block is never over its bound and its
# summary states its true size; or the render is refused because the bound is under the floor the
# reference defines (title + widest summary + scope headings).

NAMES = ["a", "b", "note", "note-1", "x-y-z", "zz", "0", "long-name-" + "q" * 40]
SCOPES = ["user", "project", "environment", "a-b"]
NO_SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=NO_SURROGATES), min_size=1, max_size=60
)
DESCRIPTION = st.text(
    alphabet=st.characters(
        codec="utf-8", exclude_categories=NO_SURROGATES, exclude_characters="\r\n"
    ),
    max_size=30,
).map(str.strip)


def widest_floor(scopes: Sequence[str], store: MemStore, bound: int) -> int:
    total = sum(len(store.list(s)) for s in scopes)
    w = len(str(bound))
    summary = (
        f"Entries: {total} shown, {total} omitted. Block: {bound} of {bound} bytes "
        f"({bound:>{w}} free). Entry limit: {store.max_entry_bytes} bytes."
    )
    heads = [f"## {s}" if store.list(s) else f"## {s}\n\nNo entries." for s in scopes]
    return len("# Memory") + 2 + len(summary) + sum(2 + len(h) for h in heads)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    limit=st.integers(min_value=240, max_value=5000),
    scopes=st.lists(st.sampled_from(SCOPES), unique=True, max_size=3),
    rows=st.lists(
        st.tuples(st.sampled_from(SCOPES), st.sampled_from(NAMES), TEXT, DESCRIPTION), max_size=25
    ),
    bound=st.integers(min_value=-3, max_value=3000),
    caps=st.dictionaries(st.sampled_from(SCOPES), st.integers(0, 1500), max_size=2),
)
def test_property_block_is_within_its_bound_and_states_its_size(
    limit: int,
    scopes: list[str],
    rows: list[tuple[str, str, str, str]],
    bound: int,
    caps: dict[str, int],
) -> None:
    store = MemStore(max_entry_bytes=limit)
    for scope, name, content, desc in rows:
        store.put(Entry(scope, name, content, {"description": desc} if desc else None))
    try:
        parts, man = render_parts(store, scopes, max_total_bytes=bound, scope_max_bytes=caps)
    except BudgetError:
        assert bound < 1 or widest_floor(scopes, store, bound) > bound
        return
    assert widest_floor(scopes, store, bound) <= bound
    block = join_parts(parts)
    check_block(store, block, parts, man, bound, caps)
    listed = [(s, e.name) for s in scopes for e in store.list(s)]
    assert sorted((e.scope, e.name) for e in man.entries + man.omitted) == sorted(listed)


def test_usage_names_the_tools_and_the_heading_rule() -> None:
    u = usage()
    for tool in ("memory_save", "memory_patch", "memory_forget", "memory_search"):
        assert tool in u
    assert "level four" in u and "\n" not in u
    assert "kebab-case" in u and "description" in u and "old_text" in u
