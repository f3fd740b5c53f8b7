"""What a purge does to an embedded Chroma folder's files, and what it checks there afterwards.

Chroma keeps deleted bytes in three places: free pages and the write-ahead log of
``chroma.sqlite3``, segment folders of dropped collections, and the unused capacity of the HNSW
segment files, which hnswlib writes from memory it never cleared (docs/storage.md#purge-and-the-files).
Each function here works on the folder's files alone; the caller holds the index's write lock so
no write races it.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import struct
from contextlib import suppress
from pathlib import Path

from agentmemory.wording import counted

__all__ = [
    "ZERO_CHUNK",
    "chroma_copies",
    "glob_escape",
    "hnsw_slack",
    "scrub_chroma_folder",
    "zero_hnsw_slack",
]

BUSY_TIMEOUT_S = 5.0
"""How long (seconds) the scrub waits for Chroma's own connection to release ``chroma.sqlite3``."""

_SEGMENT_DIR = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

_HEADER = struct.Struct("<iQQQQ")
"""The start of hnswlib's ``header.bin`` as chroma's fork writes it (native byte order, which is
little-endian on every platform chromadb ships wheels for): persistence version (int32), then
``offsetLevel0_``, ``max_elements_``, ``cur_element_count``, ``size_data_per_element_`` (size_t,
8 bytes each). docs/storage.md#purge-and-the-files."""

_FLOAT32_BYTES = 4
"""``length.bin`` holds one float32 norm per element slot."""


def _orphans(folder: Path, conn: sqlite3.Connection) -> list[Path]:
    """Segment folders (UUID names) under ``folder`` that ``segments`` no longer lists."""
    known = {str(r[0]) for r in conn.execute("SELECT id FROM segments")}
    return [
        p
        for p in folder.iterdir()
        if p.is_dir() and _SEGMENT_DIR.fullmatch(p.name) and p.name not in known
    ]


def hnsw_slack(segment: Path) -> dict[str, tuple[int, int]] | None:
    """The unused capacity of one HNSW segment folder, as ``{file name: (start, end)}`` byte
    ranges of ``data_level0.bin`` and ``length.bin`` from the last element to the file's end
    (empty when the file ends at the last element, as it does after hnswlib grew the index);
    ``None`` when the folder is not a segment this module understands (no ``header.bin``,
    another persistence version, or file sizes outside what the header allows: shorter than the
    elements or longer than the capacity), which a caller must leave alone.
    """
    try:
        head = (segment / "header.bin").read_bytes()[: _HEADER.size]
        if len(head) < _HEADER.size:
            return None
        version, offset0, capacity, count, per_element = _HEADER.unpack(head)
        sizes = {
            "data_level0.bin": (segment / "data_level0.bin").stat().st_size,
            "length.bin": (segment / "length.bin").stat().st_size,
        }
    except OSError:
        return None
    if version != 1 or offset0 != 0 or not 0 <= count <= capacity or per_element <= 0:
        return None
    per = {"data_level0.bin": per_element, "length.bin": _FLOAT32_BYTES}
    if any(not count * per[n] <= size <= capacity * per[n] for n, size in sizes.items()):
        return None
    return {n: (count * per[n], size) for n, size in sizes.items()}


ZERO_CHUNK = 1 << 20
"""Bytes of unused capacity read (and, when not all zeros, overwritten) at a time."""


def zero_hnsw_slack(folder: Path, *, sync: bool = True) -> int:
    """Overwrite with zeros the unused capacity of every HNSW segment under ``folder`` (see
    :func:`hnsw_slack`) where it is not zeros already, and fsync each file written when ``sync``;
    return the bytes overwritten (0 when every capacity was zeros, or ``folder`` does not exist).

    hnswlib allocates ``max_elements`` slots with ``malloc`` and writes all of them to
    ``data_level0.bin`` and ``length.bin`` when it creates the files (and Chroma writes a segment
    whose elements are still in its write log that way whenever a process loads it, at its first
    search or write there), so the slots past the last element hold whatever the process's heap
    held there, an erased content's text or hash among it. hnswlib reads those slots only after
    it writes an element into them, so zeros change nothing it does. The capacity is read first,
    in :data:`ZERO_CHUNK` pieces, and a file is opened for writing only when a piece is not
    zeros: a folder zeroed at its last close costs reads only at the next open. The caller holds
    the folder lock with no Chroma client of its own open on the folder (or every write to it
    held off): an element written concurrently could otherwise be zeroed. A segment this module
    does not understand is left untouched. docs/storage.md#purge-and-the-files.

    Raises:
        OSError: a segment file could not be read or written (a full disk among the causes).
    """
    if not folder.is_dir():
        return 0
    zeroed = 0
    for segment in sorted(p for p in folder.iterdir() if _SEGMENT_DIR.fullmatch(p.name)):
        slack = hnsw_slack(segment) if segment.is_dir() else None
        for name, (start, end) in (slack or {}).items():
            if end > start:
                zeroed += _zero_range(segment / name, start, end, sync=sync)
    return zeroed


def _dirty_pieces(path: Path, start: int, end: int) -> list[tuple[int, int]]:
    """The :data:`ZERO_CHUNK` pieces of ``path``'s bytes ``[start, end)`` that are not zeros,
    as (offset, length)."""
    out = []
    with path.open("rb") as f:
        for at in range(start, end, ZERO_CHUNK):
            f.seek(at)
            data = f.read(min(ZERO_CHUNK, end - at))
            if data != bytes(len(data)):
                out.append((at, len(data)))
    return out


def _zero_range(path: Path, start: int, end: int, *, sync: bool) -> int:
    """Zero bytes ``[start, end)`` of ``path`` where they are not zeros (fsync when ``sync`` and
    any was written); return the bytes written."""
    dirty = _dirty_pieces(path, start, end)
    if not dirty:
        return 0
    fd = os.open(path, os.O_WRONLY)
    try:
        for at, size in dirty:
            os.pwrite(fd, bytes(size), at)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    return sum(size for _, size in dirty)


def scrub_chroma_folder(folder: Path) -> list[str]:
    """Vacuum ``folder/chroma.sqlite3`` with ``secure_delete``, truncate its WAL, remove the
    segment folders of dropped collections, and zero the HNSW files' unused capacity
    (:func:`zero_hnsw_slack`); return one line per thing done. A folder without
    ``chroma.sqlite3`` is left alone (``[]``).

    Raises:
        sqlite3.OperationalError: Chroma's own connection held ``chroma.sqlite3`` past
            :data:`BUSY_TIMEOUT_S` (the HNSW files' unused capacity is zeroed all the same).
    """
    db = folder / "chroma.sqlite3"
    if not db.exists():
        return []
    conn = sqlite3.connect(str(db), isolation_level=None, timeout=BUSY_TIMEOUT_S)
    try:
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        orphans = _orphans(folder, conn)
    except BaseException:
        zero_hnsw_slack(folder)  # a failed vacuum never leaves the segment files unzeroed
        raise
    finally:
        conn.close()
    for p in orphans:
        shutil.rmtree(p, ignore_errors=True)
    out = [f"{folder.name}/chroma.sqlite3: vacuumed, WAL truncated"]
    if orphans:
        out.append(
            f"{folder.name}/: {counted(len(orphans), 'segment folder')} of dropped collections removed"
        )
    zeroed = zero_hnsw_slack(folder)
    if zeroed:
        out.append(f"{folder.name}/: {zeroed} bytes of unused HNSW capacity zeroed")
    return out


def glob_escape(text: str) -> str:
    """``text`` as a literal in an sqlite ``GLOB`` pattern (``*``, ``?`` and ``[`` in brackets)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def chroma_copies(folder: Path, vid: str) -> list[str]:
    """What ``folder``'s Chroma files still hold for vector id ``vid`` and its windows'
    ids (``vid#1``, ``vid#2``, ...; docs/storage.md#ids-and-metadata): rows in
    ``chroma.sqlite3`` (``embeddings``, ``embeddings_queue``), free pages and segment folders of
    dropped collections; one line each, ``[]`` when none. The HNSW files' unused capacity is not
    judged: a process that opens the folder writes fresh capacity from its own heap, which
    cannot be told from an erased content once the content is gone (the purge zeroes it,
    :func:`zero_hnsw_slack`)."""
    db = folder / "chroma.sqlite3"
    if not db.exists():
        return []
    found: list[str] = []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    try:
        for table, column in (("embeddings", "embedding_id"), ("embeddings_queue", "id")):
            with suppress(sqlite3.OperationalError):  # a Chroma version without the table
                n = conn.execute(
                    f"SELECT COUNT(*) FROM {table} WHERE {column} = ? OR {column} GLOB ?",
                    (vid, glob_escape(vid) + "#*"),
                )
                if int(n.fetchone()[0]):
                    found.append(f"chroma.sqlite3 {table} rows for {vid}")
        free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
        if free:
            found.append(f"chroma.sqlite3: {free} free pages that may hold old bytes")
        orphans = _orphans(folder, conn)
        if orphans:
            found.append(f"{len(orphans)} segment folders of dropped collections")
    finally:
        conn.close()
    return found
