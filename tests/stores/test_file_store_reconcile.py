"""A person edits, adds and removes entry files between writes; the journal records every change
as reconciled, in order, with the chain intact. And damage: a torn tail, a lost or wrong cursor."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from agentmemory import ConflictError, Entry, FileStore, lost_updates
from agentmemory.entries import content_hash


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def assert_chain(st: FileStore) -> None:
    last: dict[str, str] = {}
    for c in st.journal():
        assert c.replaced == last.get(c.entry.key, ""), f"record {c.seq} breaks the chain"
        last[c.entry.key] = "" if c.entry.deleted else c.entry.hash


def test_hand_edits_adds_and_removals_are_journaled_as_reconciled(tmp_path: Path) -> None:
    st = FileStore(tmp_path, max_entry_bytes=256)
    st.put(Entry("user", "a", "Alpha.\n"), session="s1")
    st.put(Entry("user", "b", "Beta.\n", {"description": "B"}), session="s1")
    st.put(Entry("project", "c", "Gamma.\n"), session="s1")
    # A person, in an editor:
    b = tmp_path / "user" / "b.md"
    b.write_text(b.read_text().replace("Beta.", "Beta, edited by hand."))
    (tmp_path / "user" / "new.md").write_text("Written without frontmatter.\n")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "x.md").write_text("---\ndescription: A new scope\n---\nX.\n")
    (tmp_path / "project" / "c.md").unlink()
    a = tmp_path / "user" / "a.md"
    a.write_text(a.read_text().replace("updated: ", "updated: 1999"))  # only the time changed
    huge = tmp_path / "user" / "huge.md"
    huge.write_text("y" * 300)
    empty = tmp_path / "user" / "empty.md"
    empty.write_text("---\ndescription: nothing below\n---\n")
    before = {p: p.read_bytes() for p in (huge, empty)}

    done = st.reconcile()
    got = [(c.entry.key, c.entry.deleted) for c in done.changes]
    assert got == [
        ("notes/x", False),
        ("project/c", True),
        ("user/b", False),
        ("user/new", False),
    ], "reconciled records must come in scope/name byte order"
    assert {c.source for c in done.changes} == {"reconciled"}
    assert {c.session for c in done.changes} == {""}
    assert len({c.at for c in done.changes}) == 1
    assert [c.seq for c in done.changes] == [4, 5, 6, 7]
    by_key = {c.entry.key: c for c in done.changes}
    assert by_key["user/b"].prev == by_key["user/b"].replaced == content_hash("Beta.\n")
    assert by_key["user/b"].entry.content == "Beta, edited by hand.\n"
    assert by_key["user/b"].entry.meta == {"description": "B"}
    assert by_key["user/new"].prev == by_key["user/new"].replaced == ""
    assert by_key["notes/x"].entry.meta == {"description": "A new scope"}
    assert by_key["project/c"].entry.content == "Gamma.\n"  # the last whole record
    assert sorted(u.key for u in done.unjournaled) == ["user/empty", "user/huge"]
    assert "over the 256 byte limit" in {u.key: u.reason for u in done.unjournaled}["user/huge"]
    assert all(p.read_bytes() == data for p, data in before.items()), "unjournaled file changed"
    assert "- [x](x.md) \u2014 A new scope" in (tmp_path / "notes" / "INDEX.md").read_text()
    assert "No entries." in (tmp_path / "project" / "INDEX.md").read_text()
    assert_chain(st)
    assert lost_updates(st) == []

    journal = (tmp_path / "journal.jsonl").read_bytes()
    state = (tmp_path / ".state.json").stat().st_mtime_ns
    again = st.reconcile()
    assert again.changes == [] and len(again.unjournaled) == 2
    assert (tmp_path / "journal.jsonl").read_bytes() == journal, "nothing to do wrote something"
    assert (tmp_path / ".state.json").stat().st_mtime_ns == state


def test_a_write_over_a_persons_edit_records_the_persons_version_first(tmp_path: Path) -> None:
    st = FileStore(tmp_path)
    read = st.put(Entry("user", "profile", "Chris.\n"), session="agent")
    p = tmp_path / "user" / "profile.md"
    p.write_text(p.read_text().replace("Chris.", "Chris. Lives in Bristol."))
    person = content_hash("Chris. Lives in Bristol.\n")
    # The agent saves from what it read before the person's edit.
    c = st.put(
        Entry("user", "profile", "Chris. Prefers Go.\n"),
        based_on=read.entry.hash,
        session="agent",
    )
    changes = list(st.journal())
    assert [(x.seq, x.source, x.session) for x in changes] == [
        (1, "", "agent"),
        (2, "reconciled", ""),
        (3, "", "agent"),
    ]
    assert changes[1].entry.content == "Chris. Lives in Bristol.\n"
    assert c.replaced == person and c.prev == read.entry.hash
    assert_chain(st)
    lost = lost_updates(st)
    assert [(u.change.seq, u.over) for u in lost] == [(3, person)], "the person's edit was lost"
    # An unanchored write after another hand edit builds on the file: nothing is reported.
    p.write_text(p.read_text().replace("Prefers Go.", "Prefers Go and Rust."))
    st.put(Entry("user", "profile", "Chris. Prefers Go and Rust. Tabs.\n"))
    assert [u.change.seq for u in lost_updates(st)] == [3]
    assert_chain(st)


def test_a_write_over_a_file_the_store_cannot_journal(tmp_path: Path) -> None:
    st = FileStore(tmp_path, max_entry_bytes=256)
    first = st.put(Entry("user", "big", "small"))
    p = tmp_path / "user" / "big.md"
    p.write_text("z" * 400)  # a person pasted too much
    found = st.get("user", "big")
    c = st.put(Entry("user", "big", "trimmed"), if_hash=found.hash)
    assert c.seq == 2, "the unjournalable file must not be journaled"
    assert c.prev == c.replaced == first.entry.hash, "the chain names the journal's last state"
    assert_chain(st)
    p.write_text("")  # emptied by hand, then forgotten
    tomb = st.forget("user", "big")
    assert tomb.entry.content == "trimmed" and tomb.prev == tomb.replaced == c.entry.hash
    assert not p.exists()


def test_reconcile_reads_the_journal_from_the_cursor(tmp_path: Path) -> None:
    st = FileStore(tmp_path)
    for i in range(3):
        st.put(Entry("user", f"e{i}", f"entry {i}"))
    j = tmp_path / "journal.jsonl"
    lines = j.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"seq":2', b'"seq":0')  # same length: break record 2 in place
    j.write_bytes(b"\n".join(lines))
    assert len(st.damaged_lines()) == 1
    assert st.reconcile().damaged == [], "reconcile read the journal before its cursor"
    (tmp_path / ".state.json").unlink()
    fresh = FileStore(tmp_path)
    rebuilt = fresh.reconcile()
    assert [d.line for d in rebuilt.damaged] == [2], "a rebuilt cursor reads the whole journal"
    # e1's only line is damaged, so the journal never saw its file: journaled now, after seq 3.
    assert [(c.seq, c.entry.key, c.source) for c in rebuilt.changes] == [
        (4, "user/e1", "reconciled")
    ]
    state = json.loads((tmp_path / ".state.json").read_text())
    assert sorted(state["entries"]) == ["user/e0", "user/e1", "user/e2"]
    assert state["off"] == j.stat().st_size and state["seq"] == 4


def test_a_torn_tail_is_one_damaged_line_and_its_seq_is_reused(tmp_path: Path) -> None:
    st = FileStore(tmp_path)
    st.put(Entry("user", "editor", "Neovim."))
    j = tmp_path / "journal.jsonl"
    with open(j, "ab") as f:
        f.write(b'{"seq":2,"entry":{"scope":"user","name":"sty')  # a writer died here
    assert [c.seq for c in st.journal()] == [1]
    assert st.damaged_lines() == [], "an unterminated last line is not a record nor damage yet"
    c = st.put(Entry("user", "style", "Short."))
    assert c.seq == 2, "the torn record's seq was never taken"
    assert [x.seq for x in st.journal()] == [1, 2]
    damaged = st.damaged_lines()
    assert [(d.line, d.reason) for d in damaged] == [(2, "not JSON")]
    assert j.read_bytes().endswith(b"\n") and j.read_bytes().count(b"\n") == 3
    assert FileStore(tmp_path).put(Entry("user", "more", "x")).seq == 3


def test_the_cursor_is_derived_deleted_damaged_or_foreign_it_is_rebuilt(tmp_path: Path) -> None:
    st = FileStore(tmp_path)
    st.put(Entry("user", "a", "A", {"k": "v"}))
    st.put(Entry("user", "b", "B"))
    state = tmp_path / ".state.json"
    good = state.read_bytes()
    want_entries = {
        "user/a": {"hash": sha(b"A"), "meta": sha(b"k=v\n")},
        "user/b": {"hash": sha(b"B")},
    }
    assert json.loads(good)["entries"] == want_entries
    for bad in (None, b"{not json", json.dumps({"seq": 1, "off": 5, "head": "x", "entries": {}})):
        if bad is None:
            state.unlink()
        else:
            state.write_bytes(bad.encode() if isinstance(bad, str) else bad)
        other = FileStore(tmp_path)  # a new handle trusts only the file
        other.put(Entry("user", "b", "B"))  # rewrites b unchanged: one record
        now = json.loads(state.read_bytes())
        assert now["entries"] == want_entries, f"cursor not rebuilt from {bad!r}"
        assert now["off"] == (tmp_path / "journal.jsonl").stat().st_size
    assert [c.seq for c in st.journal()] == [1, 2, 3, 4, 5]
    assert_chain(st)
    os.remove(state)
    assert st.reconcile().changes == [] and state.exists(), "reconcile writes a lost cursor"


class CountingReads(FileStore):
    """A real FileStore that counts the entry files it opens."""

    reads = 0

    def _read_entry(self, scope: str, name: str) -> tuple[Entry, tuple[int, ...]] | None:
        self.reads += 1
        return super()._read_entry(scope, name)


def test_a_write_journals_every_hand_change_in_the_folder_first(tmp_path: Path) -> None:
    """A write to one entry journals what a person changed anywhere in the folder (edited in
    place, added, removed) as reconciled records, in scope/name byte order, before its own
    record; a long-lived handle opens only the files whose stat changed since it last looked."""
    st = CountingReads(tmp_path)
    for i in range(20):
        st.put(Entry("user", f"e{i:02d}", f"Entry {i}.\n"))
    st.put(Entry("project", "gone", "To be removed by hand.\n"))
    st.reads = 0
    st.put(Entry("project", "other", "Nothing changed by hand."))
    assert st.reads <= 3, f"an unchanged folder opened {st.reads} files"
    path = tmp_path / "user" / "e07.md"
    with open(path, "r+b") as f:  # edited in place: same inode, the text one byte longer
        data = f.read()
        f.seek(0)
        f.write(data.replace(b"Entry 7.", b"Entry 7!!"))
    (tmp_path / "user" / "added.md").write_text("Added by a person.\n")
    (tmp_path / "project" / "gone.md").unlink()
    st.reads = 0
    mine = st.put(Entry("project", "other", "Written by the agent."))
    assert st.reads <= 5, f"three hand changes opened {st.reads} files"
    tail = list(st.journal(after=mine.seq - 4))
    assert [(c.entry.key, c.source, c.entry.deleted) for c in tail] == [
        ("project/gone", "reconciled", True),
        ("user/added", "reconciled", False),
        ("user/e07", "reconciled", False),
        ("project/other", "", False),
    ]
    assert tail[2].entry.content == "Entry 7!!\n" and tail[2].prev == content_hash("Entry 7.\n")
    assert_chain(st)
    assert st.reconcile().changes == [], "nothing is left for reconcile"
    assert "added" in (tmp_path / "user" / "INDEX.md").read_text()
    assert "gone" not in (tmp_path / "project" / "INDEX.md").read_text()
    hits = st.recall("entry 7!!", scopes=["user"], mode="bm25")
    assert hits[0].entry.key == "user/e07"
    # a fresh handle (a one-shot process) looks at every file once, then only at changes
    fresh = CountingReads(tmp_path)
    fresh.put(Entry("project", "third", "Another write."))
    assert fresh.reads >= 22
    fresh.reads = 0
    fresh.put(Entry("project", "fourth", "And another."))
    assert fresh.reads <= 3
    assert [c.source for c in fresh.journal(after=mine.seq)] == ["", ""]


def test_a_refused_write_journals_no_hand_change(tmp_path: Path) -> None:
    """A write refused by its precondition writes nothing, the hand edit elsewhere included;
    the next write journals it."""
    st = FileStore(tmp_path)
    st.put(Entry("user", "a", "Alpha.\n"))
    st.put(Entry("user", "b", "Beta.\n"))
    (tmp_path / "user" / "a.md").write_text("Alpha, by hand.\n")
    n = st.last_seq()
    with pytest.raises(ConflictError):
        st.put(Entry("user", "b", "Beta 2.\n"), if_hash="sha256:" + "0" * 64)
    assert st.last_seq() == n
    st.put(Entry("user", "b", "Beta 2.\n"))
    assert [(c.entry.key, c.source) for c in st.journal(after=n)] == [
        ("user/a", "reconciled"),
        ("user/b", ""),
    ]
