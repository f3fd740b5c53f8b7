"""FileStore on real files: the entry file, INDEX.md, the journal line, atomic writes."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentmemory import Entry, FileStore, InvalidEntryError, NotFoundError, SqliteStore
from agentmemory.stores.markdown.journal_file import JOURNAL_NAME


def ticking(start: datetime) -> Iterator[datetime]:
    t = start
    while True:
        yield t
        t += timedelta(seconds=1)


def fixed_clock() -> object:
    it = ticking(datetime(2026, 9, 20, 10, 0, 0, tzinfo=UTC))
    return lambda: next(it)


def test_entry_file_is_frontmatter_then_content_byte_for_byte(tmp_path: Path) -> None:
    st = FileStore(tmp_path, clock=fixed_clock())  # type: ignore[arg-type]
    st.put(Entry("user", "style", "Short answers.", {"type": "feedback", "description": "How"}))
    st.put(Entry("user", "odd", "  ---\nname: not-meta\n---\nsüß ✓ 日本"))
    st.put(Entry("user", "blank", "x", {"empty": ""}))
    assert (tmp_path / "user" / "style.md").read_bytes() == (
        b"---\nname: style\nupdated: 2026-09-20T10:00:00Z\n"
        b"description: How\ntype: feedback\n---\nShort answers."
    )
    assert (tmp_path / "user" / "odd.md").read_bytes() == (
        "---\nname: odd\nupdated: 2026-09-20T10:00:01Z\n---\n  ---\nname: not-meta\n---\nsüß ✓ 日本"
    ).encode()
    assert (
        (tmp_path / "user" / "blank.md")
        .read_bytes()
        .startswith(b"---\nname: blank\nupdated: 2026-09-20T10:00:02Z\nempty:\n---\nx")
    )
    assert st.get("user", "blank").meta == {"empty": ""}
    assert (tmp_path / "user" / "INDEX.md").read_text() == (
        "# user\n\n- [blank](blank.md)\n- [odd](odd.md)\n- [style](style.md) \u2014 How\n"
    )
    st.forget("user", "blank")
    st.forget("user", "odd")
    st.forget("user", "style")
    assert not (tmp_path / "user" / "style.md").exists()
    assert (tmp_path / "user" / "INDEX.md").read_text() == "# user\n\nNo entries.\n"
    leftovers = [p.name for p in tmp_path.rglob(".tmp-*")]
    assert leftovers == [], "atomic writes left temporaries behind"
    assert not (tmp_path / ".lock").exists(), "the lock outlived the write"


def test_journal_lines_are_the_sqlite_line_column(tmp_path: Path) -> None:
    """The same writes with the same clock give the same journal text in both stores."""
    writes = [
        ("put", Entry("user", "style", "Uses <b> & \u2028 ok", {"description": "A & B"}), "s-1"),
        ("put", Entry("user", "style", "Second.\n"), ""),
        ("forget", Entry("user", "style", "-"), "s-2"),
        ("put", Entry("project", "build", "make check"), ""),
    ]
    fs = FileStore(tmp_path / "folder", clock=fixed_clock())  # type: ignore[arg-type]
    sq = SqliteStore(tmp_path / "db.sqlite3", clock=fixed_clock())  # type: ignore[arg-type]
    for st in (fs, sq):
        for op, e, session in writes:
            if op == "put":
                st.put(e, session=session or None)
            else:
                st.forget(e.scope, e.name, session=session or None)
    sq.close()
    with sqlite3.connect(tmp_path / "db.sqlite3") as conn:
        lines = [r[0] for r in conn.execute("SELECT line FROM memory_journal ORDER BY seq")]
    text = (tmp_path / "folder" / JOURNAL_NAME).read_text(encoding="utf-8")
    assert text == "".join(line + "\n" for line in lines)
    assert "\\u003cb\\u003e \\u0026 \\u2028" in text


def test_a_hand_written_file_reads_leniently(tmp_path: Path) -> None:
    st = FileStore(tmp_path)
    (tmp_path / "notes").mkdir()
    plain = tmp_path / "notes" / "plain.md"
    plain.write_text("No frontmatter at all.\n")
    os.utime(plain, ns=(1_789_898_407_500_000_000, 1_789_898_407_500_000_000))
    e = st.get("notes", "plain")
    assert e.content == "No frontmatter at all.\n" and e.meta is None
    assert e.updated == datetime(2026, 9, 20, 10, 0, 7, 500000, tzinfo=UTC)
    (tmp_path / "notes" / "loose.md").write_text(
        "---\nname: other\nupdated: yesterday\nBad Key: x\nno colon here\n"
        "description :  Spaced out  \n---\nBody"
    )
    loose = st.get("notes", "loose")
    assert loose.name == "loose" and loose.content == "Body"
    assert loose.meta == {"description": "Spaced out"}
    (tmp_path / "notes" / "open.md").write_text("---\ndescription: never closed\nBody")
    assert st.get("notes", "open").content == "---\ndescription: never closed\nBody"
    (tmp_path / "notes" / "INDEX.md").write_text("# notes\n")
    (tmp_path / "notes" / "Upper.md").write_text("not an entry")
    (tmp_path / "notes" / ".tmp-abc").write_text("a temporary")
    assert [x.name for x in st.list("notes")] == ["loose", "open", "plain"]


def test_names_outside_the_grammar_never_reach_the_file_system(tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("outside any scope")
    st = FileStore(tmp_path / "store")
    with pytest.raises(NotFoundError):
        st.get("..", "secret")
    assert st.list("..") == []
    with pytest.raises(NotFoundError):
        st.forget("..", "secret")
    with pytest.raises(InvalidEntryError):
        st.put(Entry("..", "secret", "x"))
    assert (tmp_path / "secret.md").read_text() == "outside any scope"


def test_the_readme_markdown_folder_example_runs_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Memory you can read") :]
    code = section[section.index("```python\n") + 10 : section.index("```\n", 10)]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    assert (
        (tmp_path / "notes" / "user" / "editor.md")
        .read_text()
        .endswith("---\nPrefers dark mode in Vim.\n")
    )
    assert "- [editor](editor.md) \u2014 Editor" in (tmp_path / "notes/user/INDEX.md").read_text()
