"""IndexCursor without Chroma: the contiguous advance, the failed set, catch-up plans, reset,
rewind, and persistence in a real SqliteStore's store_state (docs/storage.md#the-index-cursor)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentmemory import Entry, SqliteStore, StoreFormatError
from agentmemory.stores.chroma.cursor import CatchUp, IndexCursor

KEY = "chroma-index:embedded:agentmemory:cursor"


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[SqliteStore]:
    with SqliteStore(tmp_path / "journal.sqlite3") as st:
        yield st


def test_the_cursor_advances_only_over_a_contiguous_applied_run(journal: SqliteStore) -> None:
    cursor = IndexCursor.load(journal, KEY)
    assert cursor.position == 0 and cursor.persisted == 0
    assert cursor.mark_applied([2, 3]) is False, "1 is not applied: 2 and 3 wait"
    assert cursor.position == 0 and cursor.applied == {2, 3}
    assert cursor.mark_applied([5]) is False
    assert cursor.mark_applied([1]) is True
    assert cursor.position == 3 and cursor.applied == {5}
    assert cursor.mark_applied([4]) is True
    assert cursor.position == 5 and cursor.applied == frozenset()
    assert cursor.mark_applied([2]) is False, "a record at or below the cursor changes nothing"
    assert cursor.position == 5


def test_a_failed_record_holds_the_cursor_until_it_is_applied(journal: SqliteStore) -> None:
    cursor = IndexCursor.load(journal, KEY)
    cursor.mark_applied([1])
    cursor.mark_failed([2, 1])
    assert cursor.failed == {2}, "a record behind the cursor cannot fail any more"
    cursor.mark_applied([3, 4])
    assert cursor.position == 1
    assert cursor.catch_up(after=64) == CatchUp(start=1, top=4, done=frozenset({3, 4}))
    cursor.mark_applied([2])
    assert cursor.position == 4 and cursor.failed == frozenset()
    assert cursor.catch_up(after=64) is None


def test_a_catch_up_is_due_when_enough_applied_records_wait(journal: SqliteStore) -> None:
    cursor = IndexCursor.load(journal, KEY)
    cursor.mark_applied(range(2, 5))  # 1 was written by another process, not seen here
    assert cursor.catch_up(after=4) is None
    assert cursor.catch_up(after=3) == CatchUp(start=0, top=4, done=frozenset({2, 3, 4}))
    assert cursor.catch_up(after=100, force=True) == CatchUp(0, 4, frozenset({2, 3, 4}))


def test_save_persists_forward_only_and_a_new_cursor_reads_it_back(
    journal: SqliteStore,
) -> None:
    cursor = IndexCursor.load(journal, KEY)
    cursor.save(journal)
    assert journal.get_state(KEY) is None, "nothing moved: nothing written"
    cursor.mark_applied([1, 2, 3])
    cursor.save(journal)
    assert journal.get_state(KEY) == "3" and cursor.persisted == 3
    again = IndexCursor.load(journal, KEY)
    assert again.position == 3 and again.applied == frozenset()
    journal.set_state(KEY, "7")  # another writer recorded more; an older value never wins
    cursor.save(journal)
    assert journal.get_state(KEY) == "7"


def test_reset_moves_forward_only_and_rewind_persists_zero(journal: SqliteStore) -> None:
    cursor = IndexCursor.load(journal, KEY)
    cursor.mark_applied([1, 2])
    cursor.mark_applied([6, 9])
    cursor.mark_failed([4])
    cursor.reset(5)
    assert cursor.position == 6, "5 reached, then 6 was already applied"
    assert cursor.applied == {9} and cursor.failed == frozenset()
    cursor.reset(3)
    assert cursor.position == 6
    cursor.save(journal)
    assert journal.get_state(KEY) == "6"
    cursor.rewind(journal)
    assert cursor.position == 0 and cursor.applied == frozenset() and cursor.persisted == 0
    assert journal.get_state(KEY) == "0"


def test_threads_marking_in_any_order_leave_the_cursor_at_the_top(journal: SqliteStore) -> None:
    cursor = IndexCursor.load(journal, KEY)
    n, threads = 400, 8

    def work(k: int) -> None:
        for s in range(n, 0, -1):
            if s % threads == k and cursor.mark_applied([s]):
                cursor.save(journal)

    runners = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in runners:
        t.start()
    for t in runners:
        t.join()
    assert cursor.position == n and cursor.applied == frozenset()
    cursor.save(journal)
    assert journal.get_state(KEY) == str(n)


def test_a_deferred_save_is_written_with_the_next_write_and_never_goes_back(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.sqlite3"
    with SqliteStore(path) as a, SqliteStore(path) as b, SqliteStore(path) as reader:
        cursor = IndexCursor.load(a, KEY)
        cursor.mark_applied([1, 2])
        cursor.save(a, deferred=True)
        assert a.get_state(KEY) == "2", "the handle sees its deferred value"
        assert reader.get_state(KEY) is None, "not written yet"
        a.put(Entry("user", "x", "a write carries it"))
        assert reader.get_state(KEY) == "2"
        # two handles sharing one cursor: each later save replaces what the others deferred
        cursor.mark_applied([3])
        cursor.save(a, deferred=True)
        cursor.mark_applied([4])
        cursor.save(b, deferred=True)
        b.put(Entry("user", "y", "b writes first"))
        assert reader.get_state(KEY) == "4"
        a.put(Entry("user", "z", "a's deferred value is 4 now, not 3"))
        assert reader.get_state(KEY) == "4"
        cursor.rewind(b)
        assert reader.get_state(KEY) == "0"
        a.close()  # close writes what is deferred: the value after the rewind
        assert reader.get_state(KEY) == "0"
        cursor.mark_applied([1])
        cursor.save(b, deferred=True)  # a is closed: skipped, no error
    with SqliteStore(path) as again:
        assert again.get_state(KEY) == "1", "b's close wrote its deferred value"


@pytest.mark.parametrize("value", ["-1", "seven", "1.5"])
def test_a_value_that_is_not_a_seq_is_refused_naming_the_key(
    journal: SqliteStore, value: str
) -> None:
    journal.set_state(KEY, value)
    with pytest.raises(StoreFormatError, match=KEY) as info:
        IndexCursor.load(journal, KEY)
    assert repr(value) in str(info.value)
