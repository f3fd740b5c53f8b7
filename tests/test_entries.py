"""Entry rules: names, hashes, every validation rule and its message, conflicts, match, sessions,
and the journal line encoding (docs/contract.md#entries to docs/contract.md#lost-updates)."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentmemory
from agentmemory import (
    ConflictError,
    Entry,
    EntryTooLargeError,
    InvalidEntryError,
    MemStore,
    NotFoundError,
    check_entry,
    content_hash,
    valid_name,
)
from agentmemory.rules import matches
from agentmemory.wire import decode_change, encode_change, format_time, go_quote, parse_time

VALID = ["a", "style", "a-b-c", "a1-2b", "0", "a" * 64]
INVALID = ["", "A", "a b", "a_b", "a.b", "a--b", "-a", "a-", "ä", "a/b", "..", "a" * 65]


@pytest.mark.parametrize("name", VALID)
def test_valid_names(name: str) -> None:
    assert valid_name(name)


@pytest.mark.parametrize("name", INVALID)
def test_invalid_names(name: str) -> None:
    assert not valid_name(name)


@pytest.mark.slow
@given(st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,5}", fullmatch=True))
def test_generated_kebab_names_are_valid(name: str) -> None:
    assert valid_name(name)


def test_hash_of_empty_content_is_the_sha256_of_nothing() -> None:
    h = content_hash("")
    assert h == "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert len(h) == 71


# (entry, field, words the message must contain): one row per rule of
# docs/contract.md#the-order-of-checks-in-put.
RULES = [
    (
        Entry("User", "a", "x"),
        "scope",
        ['scope "User"', "kebab-case", "64 bytes", '"user"', 'entry named "a"'],
    ),
    (
        Entry("user", "A b", "x"),
        "name",
        ['name "A b"', "kebab-case", "64 bytes", '"a-b"', "in scope user"],
    ),
    (Entry("user", "a", ""), "content", ["user/a", "no content", "use forget"]),
    (
        Entry("user", "a", b"x\xff".decode("utf-8", "surrogateescape")),
        "content",
        ["user/a", "not valid UTF-8", "at character 1"],
    ),
    (Entry("user", "a", "x", {"Type": "y"}), "meta", ["user/a", 'meta key "Type"', '"type"']),
    (Entry("user", "a", "x", {"name": "y"}), "meta", ["user/a", 'meta key "name"', "reserved"]),
    (
        Entry("user", "a", "x", {"description": "a\nb"}),
        "meta",
        ["user/a", '"description"', "spans lines", "one line", 'not "a\\nb"'],
    ),
    (
        Entry("user", "a", "x", {"description": " a "}),
        "meta",
        ["user/a", '"description"', "leading or trailing space", '(" a ")', 'trim it to "a"'],
    ),
    (
        Entry("user", "a", "x", {"description": "d" * 60 + " "}),
        "meta",
        ['("' + "d" * 20 + "…" + "d" * 19 + ' ")', 'trim it to "' + "d" * 20 + "…"],
    ),
    (
        Entry("user", "a", "x", {"description": "d\udcff"}),
        "meta",
        ["user/a", '"description"', "not valid UTF-8", "at character 1"],
    ),
    (
        Entry("user", "a", "x", {"description": "d" * 1024}),
        "meta",
        ["user/a", "1035 bytes", "1024 byte limit"],
    ),
]


@pytest.mark.parametrize(("entry", "field", "words"), RULES)
def test_each_rule_refuses_with_a_message_naming_entry_field_value_and_limit(
    entry: Entry, field: str, words: list[str]
) -> None:
    with pytest.raises(InvalidEntryError) as info:
        check_entry(entry, 4096)
    assert info.value.field == field
    text = str(info.value)
    assert text.startswith("agentmemory: invalid entry: ")
    for w in words:
        assert w in text, f"{w!r} not in {text!r}"
    store = MemStore()
    with pytest.raises(InvalidEntryError):
        store.put(entry)
    assert list(store.journal()) == [], "a refused write left a journal record"


def test_rules_apply_in_order_first_failure_wins() -> None:
    with pytest.raises(InvalidEntryError) as info:
        check_entry(Entry("Bad", "Bad", ""), 1)
    assert info.value.field == "scope"
    with pytest.raises(InvalidEntryError) as info:
        check_entry(Entry("user", "a", "x" * 10, {"Bad": "v"}), 1)
    assert info.value.field == "meta", "invalid meta is reported before the size"


def test_empty_meta_value_is_allowed_and_meta_at_the_limit_fits() -> None:
    check_entry(Entry("user", "a", "x", {"k": ""}))
    check_entry(Entry("user", "a", "x", {"description": "d" * (1024 - 11)}))


def test_size_errors_carry_the_numbers_and_the_exact_reference_text() -> None:
    check_entry(Entry("user", "a", "x" * 9), 9)  # at the limit is fine
    check_entry(Entry("user", "a", "x" * 10_000), 0)  # 0 means no limit
    with pytest.raises(EntryTooLargeError) as info:
        check_entry(Entry("user", "a", "x" * 10), 9)
    assert str(info.value) == (
        "agentmemory: entry user/a is 10 bytes, over the 9 byte limit; split it or trim it"
    )
    assert (info.value.size, info.value.limit, info.value.stored) == (10, 9, None)
    with pytest.raises(EntryTooLargeError) as info:
        check_entry(Entry("user", "a", "x" * 10), 9, Entry("user", "a", "abc"))
    assert str(info.value) == (
        "agentmemory: entry user/a is 10 bytes, over the 9 byte limit; "
        "it holds 3 bytes now; split it or trim it"
    )


def test_size_is_counted_in_utf8_bytes() -> None:
    e = Entry("user", "a", "日本")  # 2 characters, 6 bytes
    assert e.size == 6
    with pytest.raises(EntryTooLargeError):
        check_entry(e, 5)


@pytest.mark.parametrize(
    ("stored", "if_hash", "message"),
    [
        ("x", "", "agentmemory: entry user/a already exists with hash " + content_hash("x")),
        (
            "x",
            content_hash("y"),
            f"agentmemory: entry user/a has hash {content_hash('x')}, not {content_hash('y')}; "
            "read it again",
        ),
        (
            None,
            content_hash("y"),
            f"agentmemory: entry user/a no longer exists; expected hash {content_hash('y')}",
        ),
    ],
)
def test_conflict_messages(stored: str | None, if_hash: str, message: str) -> None:
    store = MemStore()
    if stored is not None:
        store.put(Entry("user", "a", stored))
    with pytest.raises(ConflictError) as info:
        store.put(Entry("user", "a", "new"), if_hash=if_hash)
    assert str(info.value) == message


def test_preconditions_that_pass() -> None:
    store = MemStore()
    x, y, z = (content_hash(c) for c in "xyz")
    changes = [
        store.put(Entry("user", "a", "x")),  # unconditional, none stored
        store.put(Entry("user", "a", "y")),  # unconditional, one stored: built on it
        store.put(Entry("user", "b", "x"), if_hash=""),  # must not exist, none
        store.put(Entry("user", "b", "z"), if_hash=x),  # the right hash
    ]
    got = [(c.seq, c.entry.key, c.entry.hash, c.prev, c.replaced) for c in changes]
    assert got == [
        (1, "user/a", x, "", ""),
        (2, "user/a", y, x, x),
        (3, "user/b", x, "", ""),
        (4, "user/b", z, x, x),
    ]
    assert [c.entry.deleted for c in changes] == [False] * 4
    assert [(e.name, e.content) for e in store.list("user")] == [("a", "y"), ("b", "z")]
    assert list(store.journal()) == changes


def test_invalid_entry_with_if_hash_is_invalid_not_a_conflict() -> None:
    store = MemStore()
    store.put(Entry("user", "a", "x"))
    with pytest.raises(InvalidEntryError):
        store.put(Entry("user", "a", ""), if_hash="")


def test_mem_store_scopes_are_those_with_a_live_entry() -> None:
    store = MemStore()
    assert store.scopes() == []
    store.put(Entry("user", "a", "x"))
    store.put(Entry("project", "b", "y"))
    store.put(Entry("a", "c", "z"))
    assert store.scopes() == ["a", "project", "user"]
    store.forget("project", "b")
    assert store.scopes() == ["a", "user"]


def test_not_found_is_a_key_error_with_a_readable_message() -> None:
    with pytest.raises(KeyError) as info:
        MemStore().get("user", "nope")
    assert isinstance(info.value, NotFoundError)
    assert str(info.value) == "agentmemory: no such entry: user/nope"


MATCH_ENTRY = Entry(
    "user", "editor-choice", "Uses Neovim.\nDark theme.", {"description": "Editor preference"}
)


@pytest.mark.parametrize(
    "query", ["", "neovim", "NEOVIM dark", "editor", "preference", "choice", "  neovim  theme"]
)
def test_match_examples(query: str) -> None:
    assert matches(MATCH_ENTRY, query)


@pytest.mark.parametrize("query", ["neovim light", "emacs", "description"])
def test_match_counter_examples(query: str) -> None:
    assert not matches(MATCH_ENTRY, query)  # meta keys are not searched


def test_session_attribution_nests_and_is_per_thread() -> None:
    store = MemStore()
    assert agentmemory.current_session() == ""
    with agentmemory.session("outer"):
        store.put(Entry("user", "a", "1"))
        with agentmemory.session("inner"):
            store.put(Entry("user", "a", "2"))
            store.put(Entry("user", "a", "3"), session="explicit")
        seen: list[str] = []
        t = threading.Thread(target=lambda: seen.append(agentmemory.current_session()))
        t.start()
        t.join()
        assert seen == [""], "a new thread starts without the session"
        store.forget("user", "a")
    assert [c.session for c in store.journal()] == ["outer", "inner", "explicit", "outer"]


@pytest.mark.parametrize(
    ("t", "text"),
    [
        (datetime(2026, 9, 20, 10, 0, 3, tzinfo=UTC), "2026-09-20T10:00:03Z"),
        (datetime(2026, 9, 20, 10, 0, 3, 500000, tzinfo=UTC), "2026-09-20T10:00:03.5Z"),
        (datetime(2026, 9, 20, 10, 0, 0, 123456, tzinfo=UTC), "2026-09-20T10:00:00.123456Z"),
    ],
)
def test_times_are_go_rfc3339nano(t: datetime, text: str) -> None:
    assert format_time(t) == text
    assert parse_time(text) == t


def test_parse_time_accepts_nanoseconds_and_offsets() -> None:
    assert parse_time("2026-09-20T10:00:00.123456789Z").microsecond == 123456
    assert parse_time("2026-09-20T12:00:00+02:00") == datetime(2026, 9, 20, 10, tzinfo=UTC)


def test_go_quote_matches_strconv_quote() -> None:
    assert go_quote('a"b\\c') == '"a\\"b\\\\c"'
    assert go_quote("tab\there\n") == '"tab\\there\\n"'
    assert go_quote("\x00\x7f") == '"\\x00\\x7f"'
    assert go_quote("süß ✓ 日本") == '"süß ✓ 日本"'


def test_journal_line_is_the_go_encoding() -> None:
    at = datetime(2026, 9, 20, 10, 0, 3, 500000, tzinfo=UTC)
    store = MemStore(clock=lambda: at)
    with agentmemory.session("s1"):
        store.put(Entry("user", "style", "a <b> & c\u2028", {"type": "x", "description": "d"}))
    change = next(store.journal())
    line = encode_change(change)
    assert line == (
        '{"seq":1,"entry":{"scope":"user","name":"style","content":"a \\u003cb\\u003e \\u0026 c'
        '\\u2028","meta":{"description":"d","type":"x"},"hash":"'
        + content_hash("a <b> & c\u2028")
        + '","updated":"2026-09-20T10:00:03.5Z"},"session":"s1","at":"2026-09-20T10:00:03.5Z"}'
    )
    assert json.loads(line)["entry"]["content"] == "a <b> & c\u2028"
    assert decode_change(line) == change


def test_callers_cannot_reach_the_store_through_returned_values() -> None:
    store = MemStore()
    meta = {"description": "d"}
    rec = store.put(Entry("user", "a", "x", meta))
    meta["description"] = "changed by caller"
    assert rec.entry.meta is not None
    rec.entry.meta["description"] = "changed through the record"
    assert store.get("user", "a").meta == {"description": "d"}
