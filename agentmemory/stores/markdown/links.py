"""Symbolic links inside a Markdown folder: found, reported, never followed
(docs/filestore-format.md#links).

A Markdown folder is meant to be committed, and git keeps symbolic links, so a folder may arrive
with an entry file or a scope folder that points anywhere on the machine. The store reads and
writes only real files and folders inside its own folder: an entry file or scope folder that is
a link is not an entry (it is listed by :func:`folder_links`, and ``reconcile`` and ``verify``
report it as not journaled, with the reason); a link where the store keeps its own files
(``journal.jsonl``, ``.state.json``, ``.vectors``, ``.purge.json``) or a linked scope folder a
write would go to is refused with :class:`~agentmemory.errors.StoreLinkError` before anything is
read or written. Entry files are opened with ``O_NOFOLLOW`` under a scope folder opened with
``O_NOFOLLOW`` (:func:`open_entry_file`), so a link made between a check and a read is not
followed either. The folder itself may be reached through a link: only links inside it count.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from agentmemory.errors import StoreLinkError
from agentmemory.rules import valid_name

from .entry_file import ENTRY_SUFFIX
from .journal_file import JOURNAL_NAME, STATE_NAME
from .journal_rewrite import PURGE_MARKER

__all__ = [
    "STORE_FILES",
    "FolderLink",
    "check_scope_folder",
    "check_store_files",
    "folder_links",
    "is_link",
    "link_target",
    "open_entry_file",
]

STORE_FILES = (JOURNAL_NAME, STATE_NAME, ".vectors", PURGE_MARKER)
"""The store's own files and folders at the top of a Markdown folder (a link there is refused)."""

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO named like an entry must not block a read
_NOT_THERE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EISDIR, errno.ENXIO)


@dataclass(frozen=True, slots=True)
class FolderLink:
    """A link inside a Markdown folder where an entry file or a scope folder would be.

    Attributes:
        path: the link.
        key: the entry it stands for, ``"scope/name"``, or ``"scope/"`` for a scope folder.
        target: where it points (``readlink``).
    """

    path: Path
    key: str
    target: str

    @property
    def reason(self) -> str:
        """Why it is not journaled, for reconcile's and verify's reports."""
        what = "a scope folder" if self.key.endswith("/") else "an entry file"
        return (
            f"a symbolic link (to {self.target!r}) where {what} would be; a Markdown folder "
            "never reads through a link: replace it with the file itself, or remove it"
        )


def link_target(path: Path) -> str:
    """Where the link ``path`` points, or ``""`` when it cannot be read."""
    try:
        return os.readlink(path)
    except OSError:
        return ""


def is_link(path: Path) -> bool:
    """Whether ``path`` is a symbolic link (not followed)."""
    return os.path.islink(path)


def check_store_files(root: Path) -> None:
    """Refuse a folder whose own files (:data:`STORE_FILES`) include a link.

    Raises:
        StoreLinkError: naming the first link found.
    """
    for name in STORE_FILES:
        path = root / name
        if is_link(path):
            raise StoreLinkError(str(path), link_target(path))


def check_scope_folder(root: Path, scope: str) -> None:
    """Refuse a write to ``scope`` when its folder is a link.

    Raises:
        StoreLinkError: ``root/scope`` is a symbolic link.
    """
    path = root / scope
    if is_link(path):
        raise StoreLinkError(str(path), link_target(path))


def open_entry_file(root: Path, scope: str, name: str) -> tuple[bytes, os.stat_result] | None:
    """The bytes of ``root/scope/name.md`` and its ``stat`` (taken before reading), or ``None``
    when there is no such regular file, or the file or its scope folder is a link (neither is
    followed: ``O_NOFOLLOW`` on both)."""
    try:
        folder = os.open(root / scope, os.O_RDONLY | _DIRECTORY | _NOFOLLOW)
    except OSError as err:
        if err.errno in _NOT_THERE:
            return None
        raise
    try:
        fd = os.open(f"{name}{ENTRY_SUFFIX}", os.O_RDONLY | _NOFOLLOW | _NONBLOCK, dir_fd=folder)
    except OSError as err:
        if err.errno in _NOT_THERE:
            return None
        raise
    finally:
        os.close(folder)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), st
    finally:
        os.close(fd)


def folder_links(root: Path) -> list[FolderLink]:
    """Every link inside ``root`` where a scope folder (a kebab-case name at the top) or an
    entry file (``<name>.md`` in a real scope folder) would be, by key."""
    found: list[FolderLink] = []
    try:
        top = list(os.scandir(root))
    except OSError:
        return []
    for d in top:
        if not valid_name(d.name):
            continue
        if d.is_symlink():
            found.append(FolderLink(Path(d.path), f"{d.name}/", link_target(Path(d.path))))
            continue
        if not d.is_dir(follow_symlinks=False):
            continue
        try:
            inside = list(os.scandir(d.path))
        except OSError:
            continue
        for f in inside:
            stem = f.name[: -len(ENTRY_SUFFIX)] if f.name.endswith(ENTRY_SUFFIX) else ""
            if valid_name(stem) and f.is_symlink():
                found.append(
                    FolderLink(Path(f.path), f"{d.name}/{stem}", link_target(Path(f.path)))
                )
    return sorted(found, key=lambda link: link.key.encode())
