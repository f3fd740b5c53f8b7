"""Export any store as a Markdown folder and import one into any store: the round trip is exact."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentmemory import (
    AgentMemoryError,
    Entry,
    FileStore,
    MemStore,
    SqliteStore,
)
from agentmemory.stores.markdown.transfer import (
    export_markdown,
    import_markdown,
    is_markdown_folder,
    live_entries,
)

TRICKY = [
    Entry("user", "odd", "  ---\nname: not-meta\n---\nsüß ✓ 日本"),
    Entry("user", "fm", "---\nname: x\n---\nbody that looks like a file\n"),
    Entry("user", "crlf", "line one\r\nline two\r\n", {"description": "Windows: text"}),
    Entry("user", "empty-value", "x", {"empty": "", "a-key": "value: with colon"}),
    Entry("project", "build", "make check", {"description": "How to build"}),
    Entry("project", "gone", "forgotten before the export"),
]


def live(st: object) -> list[tuple[str, str, str, dict[str, str] | None]]:
    return [(e.scope, e.name, e.content, e.meta) for e in live_entries(st)]


def test_round_trip_sqlite_to_folder_to_memory_is_exact(tmp_path: Path) -> None:
    src = SqliteStore(tmp_path / "src.sqlite3")
    for e in TRICKY:
        src.put(e)
    src.forget("project", "gone")
    changes = export_markdown(src, tmp_path / "folder")
    assert [c.entry.key for c in changes] == [
        "project/build",
        "user/crlf",
        "user/empty-value",
        "user/fm",
        "user/odd",
    ]
    assert {c.session for c in changes} == {"export"}
    assert is_markdown_folder(tmp_path / "folder")
    assert not (tmp_path / "folder" / "project" / "gone.md").exists()
    dst = MemStore()
    imported = import_markdown(tmp_path / "folder", dst)
    assert len(imported) == 5 and {c.session for c in imported} == {"import"}
    assert live(dst) == live(src)
    back = SqliteStore(tmp_path / "back.sqlite3")
    import_markdown(tmp_path / "folder", back)
    assert live(back) == live(src)


def test_export_refuses_a_folder_in_use_and_import_a_file_it_cannot_store(tmp_path: Path) -> None:
    src = MemStore()
    src.put(Entry("user", "a", "x" * 300))
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "notes.txt").write_text("mine")
    with pytest.raises(AgentMemoryError, match="not an empty folder"):
        export_markdown(src, tmp_path / "used")
    export_markdown(src, tmp_path / "folder")  # the folder's bound fits the entry
    small = MemStore(max_entry_bytes=256)
    with pytest.raises(AgentMemoryError, match=r"a\.md") as err:
        import_markdown(tmp_path / "folder", small)
    assert "300 bytes" in str(err.value)
    assert list(small.journal()) == [], "a refused import wrote something"
    with pytest.raises(AgentMemoryError, match="not a folder"):
        import_markdown(tmp_path / "missing", small)


def test_put_many_writes_once_and_journals_a_persons_edit_first(tmp_path: Path) -> None:
    st = FileStore(tmp_path)
    st.put(Entry("user", "a", "one"))
    p = tmp_path / "user" / "a.md"
    p.write_text(p.read_text().replace("one", "one, by hand"))
    changes = st.put_many(
        [Entry("user", "a", "two"), Entry("user", "b", "bee"), Entry("user", "a", "three")],
        session="bulk",
    )
    assert [c.seq for c in changes] == [3, 4, 5]
    journal = list(st.journal())
    assert [(c.seq, c.source, c.entry.content) for c in journal] == [
        (1, "", "one"),
        (2, "reconciled", "one, by hand"),
        (3, "", "two"),
        (4, "", "bee"),
        (5, "", "three"),
    ]
    assert journal[4].replaced == journal[2].entry.hash
    assert st.get("user", "a").content == "three"
    assert "- [b](b.md)" in (tmp_path / "user" / "INDEX.md").read_text()
    with pytest.raises(AgentMemoryError):
        st.put_many([Entry("user", "c", "fine"), Entry("user", "Bad", "no")])
    assert [c.seq for c in st.journal()][-1] == 5 and not (tmp_path / "user" / "c.md").exists()
