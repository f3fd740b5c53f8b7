"""A Markdown folder never reads or writes through a symbolic link inside it
(docs/filestore-format.md#links), on real links: an entry file or a scope folder linked outside
the folder leaks nothing through get, list, render, search or reconcile, and a save through a
linked scope folder is refused with nothing written, inside the folder or outside it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentmemory import Entry, FileStore, render
from agentmemory.errors import NotFoundError, StoreLinkError

SECRET = "outside secret token zebra"


@pytest.fixture
def folder(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "memory"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"---\n---\n{SECRET}\n")
    with FileStore(root) as st:
        st.put(Entry("user", "cat", "the cat sat on the mat"))
    return root, outside


def everything_seen(st: FileStore) -> str:
    seen = [e.content for scope in st.scopes() for e in st.list(scope)]
    seen += [e.content for e in st.search(st.scopes() or ["user"], "zebra secret")]
    seen.append(render(st, st.scopes() or ["user"])[0])
    return "\n".join(seen)


def test_a_linked_entry_file_is_not_read_and_reconcile_names_it(folder: tuple[Path, Path]) -> None:
    root, outside = folder
    os.symlink(outside / "secret.md", root / "user" / "leak.md")
    with FileStore(root) as st:
        with pytest.raises(NotFoundError):
            st.get("user", "leak")
        assert SECRET not in everything_seen(st)
        done = st.reconcile()
        assert done.changes == []
        assert [(f.key, "symbolic link" in f.reason) for f in done.unjournaled] == [
            ("user/leak", True)
        ]
        st.put(Entry("user", "dog", "dogs bark"))  # a write's sweep journals nothing of it
    assert SECRET not in (root / "journal.jsonl").read_text()
    assert (outside / "secret.md").read_text() == f"---\n---\n{SECRET}\n"


def test_a_linked_scope_folder_is_not_a_scope_and_is_not_written(
    folder: tuple[Path, Path],
) -> None:
    root, outside = folder
    os.symlink(outside, root / "team")
    with FileStore(root) as st:
        assert st.scopes() == ["user"]
        assert SECRET not in everything_seen(st)
        done = st.reconcile()
        assert [f.key for f in done.unjournaled] == ["team/"]
        with pytest.raises(StoreLinkError, match=r"team is a symbolic link"):
            st.put(Entry("team", "secret", "overwritten"))
        last = st.last_seq()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]  # no INDEX.md outside
    assert (outside / "secret.md").read_text() == f"---\n---\n{SECRET}\n"
    with FileStore(root) as st:
        assert st.last_seq() == last  # nothing journaled by the refused save


def test_a_journaled_entry_replaced_by_a_link_is_not_tombstoned(folder: tuple[Path, Path]) -> None:
    root, outside = folder
    (root / "user" / "cat.md").unlink()
    os.symlink(outside / "secret.md", root / "user" / "cat.md")
    with FileStore(root) as st:
        done = st.reconcile()
        assert done.changes == [] and [f.key for f in done.unjournaled] == ["user/cat"]
    assert SECRET not in (root / "journal.jsonl").read_text()


@pytest.mark.parametrize("name", ["journal.jsonl", ".state.json"])
def test_a_linked_store_file_is_refused_before_anything_is_read(
    folder: tuple[Path, Path], name: str
) -> None:
    root, outside = folder
    target = outside / name
    os.replace(root / name, target)
    os.symlink(target, root / name)
    before = target.read_bytes()
    with pytest.raises(StoreLinkError, match=rf"{name} is a symbolic link"):
        FileStore(root)
    assert target.read_bytes() == before
