"""docs/filestore-format.md's worked example, replayed with a fixed clock and compared byte for
byte, file by file, with the files the document shows; and the document's other numbers."""

from __future__ import annotations

import hashlib
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agentmemory import Entry, FileStore, lost_updates
from agentmemory.stores.markdown.lock_file import LockHolder

DOC = Path(__file__).resolve().parents[2] / "docs" / "filestore-format.md"
BLOCK = re.compile(r"<!-- (expected|person-writes): (\S+) -->\n```\n(.*?)```\n", re.S)


def doc_files(kind: str) -> dict[str, bytes]:
    text = DOC.read_text(encoding="utf-8")
    return {m[2]: m[3].encode() for m in BLOCK.finditer(text) if m[1] == kind}


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def replay(root: Path) -> FileStore:
    """The example's six records, as the document tells them."""
    start = datetime(2026, 9, 20, 10, 0, 0, tzinfo=UTC)
    ticks = iter(start + timedelta(seconds=s) for s in range(100))
    st = FileStore(root, clock=lambda: next(ticks))
    meta = {"description": "How to answer", "type": "feedback"}
    st.put(Entry("user", "editor", "Uses Neovim with a dark theme.\n"), session="slack")
    r2 = st.put(Entry("user", "style", "Prefers short answers.\n", meta), session="slack")
    st.put(
        Entry("user", "style", "Prefers short answers & tabs.\n", meta),
        if_hash=r2.entry.hash,
        session="telegram",
    )
    st.put(
        Entry("user", "style", "Prefers short answers. Lives in Bristol.\n", meta),
        based_on=r2.entry.hash,
        session="slack",
    )
    person = root / "user" / "style.md"
    person.write_bytes(doc_files("person-writes")["user/style.md"])
    when = 1_789_898_404_500_000_000  # 2026-09-20T10:00:04.5Z
    os.utime(person, ns=(when, when))
    assert [c.seq for c in st.reconcile().changes] == [5]
    st.forget("user", "editor", session="slack")
    return st


def test_the_worked_example_byte_for_byte(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    replay(root)
    expected = doc_files("expected")
    assert sorted(expected) == [".state.json", "journal.jsonl", "user/INDEX.md", "user/style.md"]
    present = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert present == sorted(expected), "the folder holds other files than the document shows"
    for name, want in expected.items():
        assert (root / name).read_bytes() == want, f"{name} differs from the document"


def test_the_example_numbers_hold_independently(tmp_path: Path) -> None:
    """Hashes, the cursor's head, off and meta fingerprint, checked with hashlib, not the store."""
    root = tmp_path / "memory"
    st = replay(root)
    journal = (root / "journal.jsonl").read_bytes()
    state = (root / ".state.json").read_text()
    first = journal[: journal.index(b"\n") + 1]
    assert f'"head":"{sha(first)}"' in state
    assert f'"off":{len(journal)}' in state
    person = b"Prefers short answers and tabs. Lives in Bristol.\n"
    assert sha(person).startswith("sha256:3365f6ed") and sha(person).endswith("9b3d")
    assert f'"hash":"{sha(person)}"' in state
    fingerprint = sha(b"description=How to answer\ntype=feedback\n")
    assert fingerprint.startswith("sha256:22d5") and fingerprint.endswith("6d75")
    assert f'"meta":"{fingerprint}"' in state
    changes = list(st.journal())
    for c in changes:
        assert c.entry.hash == sha(c.entry.content.encode())
    lost = lost_updates(st)
    assert [(u.change.seq, u.over) for u in lost] == [(4, changes[2].entry.hash)]
    assert changes[4].source == "reconciled" and changes[4].session == ""
    assert (
        changes[5].entry.deleted and changes[5].prev == changes[5].replaced == changes[0].entry.hash
    )


def test_the_documented_lock_and_its_claim_name() -> None:
    holder = LockHolder.parse(b'{"pid":4242,"host":"laptop","since":"2026-09-20T10:00:07.5Z"}')
    assert holder == LockHolder(4242, "laptop", "2026-09-20T10:00:07.5Z")
    assert holder.fingerprint() == "48b4f2386aa71ca2"
    text = DOC.read_text(encoding="utf-8")
    assert ".lock.taken-48b4f2386aa71ca2" in text
    assert holder.encode() == b'{"pid":4242,"host":"laptop","since":"2026-09-20T10:00:07.5Z"}'
