"""A full disk is its own error, never damage (issue 22 case 6; docs/storage.md#a-full-disk),
and a read-only mount is read, not refused (case 7).

Each test mounts a real, small tmpfs (a real file system that fills up: it needs root and
``mount``), fills it with a file, and works the store on it: writes fail with ``StoreFullError``
and leave every file as it was, reads keep working, ``verify`` says the disk is full and
``verify --repair`` moves nothing; a write whose journal record landed is never reported as
failed, even when ``.state.json`` could not be saved after it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentmemory import Entry, FileStore, StoreFullError, StoreIOError
from agentmemory.stores.markdown.journal_file import Cursor

ROOT = Path(__file__).resolve().parents[1]
AGENTMEMORY = str(Path(sys.executable).parent / "agentmemory")
ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("AGENTMEMORY_")},
    "HF_HUB_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
}
PAGE = 4096  # tmpfs allocates whole pages


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A fresh 8 MiB tmpfs mounted at ``tmp_path/fs`` for the test, unmounted after it."""
    where = tmp_path / "fs"
    where.mkdir()
    mount = shutil.which("mount")
    done = (
        subprocess.run(
            [mount, "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(where)],
            capture_output=True,
            text=True,
        )
        if mount is not None and os.geteuid() == 0
        else None
    )
    if done is None or done.returncode != 0:
        why = "not root, or no mount(8)" if done is None else done.stderr.strip()
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but a small tmpfs cannot be mounted here: {why}")
        pytest.skip(f"a small tmpfs cannot be mounted here ({why})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(fs: Path, leave_pages: int = 0) -> None:
    """Fill ``fs`` to the last byte, then give back ``leave_pages`` pages."""
    pads = []
    for n in range(leave_pages):
        pad = fs / f"pad-{n}"
        pad.write_bytes(b"x" * PAGE)
        pads.append(pad)
    fd = os.open(fs / "filler", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for chunk in (b"\0" * (64 * 1024), b"\0" * 512):  # then the bytes a big write left
            while True:
                try:
                    os.write(fd, chunk)
                except OSError:
                    break
    finally:
        os.close(fd)
    for pad in pads:
        pad.unlink()


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (path -> bytes), for 'nothing was written'."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def cli(*args: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [AGENTMEMORY, *args, "--path", str(path), "--embedder", "hashing"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=ENV,
    )


def test_a_markdown_put_on_a_full_disk_is_refused_and_changes_no_file(small_fs: Path) -> None:
    folder = small_fs / "notes"
    st = FileStore(folder)
    st.put(Entry(scope="user", name="editor", content="Prefers Vim."))
    before = snapshot(folder)
    fill(small_fs)
    try:
        with pytest.raises(StoreFullError) as caught:
            st.put(Entry(scope="user", name="editor", content="Prefers Neovim now."))
        assert isinstance(caught.value, StoreIOError) and caught.value.kind == "full"
        assert "the disk is full; nothing was written" in str(caught.value)
        with pytest.raises(StoreFullError):
            st.put(Entry(scope="user", name="shell", content="Uses zsh."))
        assert snapshot(folder) == before  # no file ahead of the journal, no temporary file
        assert [e.content for e in st.list("user")] == ["Prefers Vim."]  # reads go on
    finally:
        (small_fs / "filler").unlink()
        st.close()
    again = FileStore(folder)
    try:  # the refused writes left nothing for the next write to journal as a person's edit
        change = again.put(Entry(scope="user", name="shell", content="Uses zsh."))
        assert change.seq == 2
        assert [c.entry.name for c in again.journal()] == ["editor", "shell"]
    finally:
        again.close()


def test_a_markdown_write_that_landed_is_never_reported_as_failed(small_fs: Path) -> None:
    # .state.json is derived: a full disk may stop it from being saved after the journal record
    # landed; the put then returns its record (a retry would duplicate it) and the cursor lags.
    folder = small_fs / "notes"
    st = FileStore(folder)
    st.put_many(
        Entry(scope="bulk", name=f"fact-{i:03d}", content=f"Fact number {i}.") for i in range(90)
    )
    st.put(Entry(scope="user", name="a", content="first"))
    outcomes: dict[str, int] = {"refused": 0, "landed": 0, "lagged": 0}
    try:
        for free in range(0, 7):
            journal = (folder / "journal.jsonl").read_bytes()
            if (len(journal) % PAGE) + 400 > PAGE:  # keep the append inside its last page
                st.put(Entry(scope="user", name="pad", content="p" * 200))
                continue
            before = snapshot(folder)
            seq = st.last_seq()
            fill(small_fs, free)
            try:
                change = st.put(Entry(scope="user", name=f"n{free}", content=f"note {free}"))
            except StoreFullError:
                outcomes["refused"] += 1
                assert snapshot(folder) == before
                assert st.last_seq() == seq
            else:
                outcomes["landed"] += 1
                assert change.seq == seq + 1
                assert st.last_seq() == seq + 1
                saved = Cursor.decode((folder / ".state.json").read_bytes())
                if saved.seq < change.seq:
                    outcomes["lagged"] += 1
            finally:
                (small_fs / "filler").unlink()
    finally:
        st.close()
    assert outcomes["refused"] and outcomes["landed"], outcomes
    assert outcomes["lagged"], outcomes  # the case the issue names did happen and stood
    again = FileStore(folder)
    try:  # the lagging cursor is caught up from the journal: every record once, in order
        seqs = [c.seq for c in again.journal()]
        assert seqs == list(range(1, len(seqs) + 1))
        assert again.put(Entry(scope="user", name="after", content="x")).seq == len(seqs) + 1
        assert Cursor.decode((folder / ".state.json").read_bytes()).seq == len(seqs) + 1
    finally:
        again.close()


@pytest.mark.slow  # real processes that open Chroma
def test_a_full_disk_is_not_damage_to_verify_and_repair_moves_nothing(small_fs: Path) -> None:
    folder = small_fs / "store"
    made = cli("save", "user/editor", "Prefers Vim.", path=folder)
    assert made.returncode == 0, made.stderr
    fill(small_fs)
    try:
        saved = cli("save", "user/shell", "Uses zsh.", path=folder)
        assert saved.returncode == 1
        assert "the disk is full; nothing was written" in saved.stderr
        assert "Traceback" not in saved.stderr and "damaged" not in saved.stderr
        found = cli("search", "vim", path=folder)  # reads keep working, from BM25
        assert found.returncode == 0, found.stderr
        assert "user/editor" in found.stdout
        assert "full" in found.stderr
        for args in (["verify"], ["verify", "--repair"], ["reindex"]):
            checked = cli(*args, path=folder)
            assert checked.returncode == 1, (args, checked.stdout, checked.stderr)
            assert "the disk is full" in checked.stderr, (args, checked.stderr)
            assert "damaged" not in checked.stdout + checked.stderr, (args, checked.stderr)
            assert (folder / "chroma").is_dir(), args
            assert not [p for p in folder.iterdir() if p.name.startswith("chroma.damaged")], args
    finally:
        (small_fs / "filler").unlink()
    cured = cli("verify", path=folder)
    assert cured.returncode == 0, cured.stdout + cured.stderr
    assert cli("save", "user/shell", "Uses zsh.", path=folder).returncode == 0
    listed = cli("search", "vim zsh", path=folder)
    assert "user/editor" in listed.stdout and "user/shell" in listed.stdout, listed.stdout


@pytest.mark.slow  # real processes that open Chroma
@pytest.mark.parametrize("kind", ["sqlite", "markdown"])
def test_a_read_only_mount_is_searched_and_refuses_writes_in_one_line(
    small_fs: Path, kind: str
) -> None:
    # before, a hybrid search failed on chroma.lock ("Read-only file system")
    folder = small_fs / "store"
    made = cli("save", "user/editor", "Prefers Vim.", "--format", kind, path=folder)
    assert made.returncode == 0, made.stderr
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    before = snapshot(folder)
    found = cli("search", "vim", path=folder)
    assert found.returncode == 0, found.stderr
    assert "user/editor" in found.stdout
    assert "may not be written here" in found.stderr and "BM25" in found.stderr
    assert "damaged" not in found.stderr and "Traceback" not in found.stderr
    saved = cli("save", "user/shell", "Uses zsh.", path=folder)
    assert saved.returncode == 1
    lines = saved.stderr.strip().splitlines()
    assert "the store is read-only here" in lines[-1] and "Traceback" not in saved.stderr, lines
    assert snapshot(folder) == before
