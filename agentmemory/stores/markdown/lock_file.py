"""The writer lock of a Markdown folder: a ``.lock`` file that names its holder
(docs/filestore-format.md#the-lock).

A writer holds the folder while ``.lock`` exists and names it::

    {"pid":4242,"host":"laptop","since":"2026-09-20T10:00:07.5Z"}

* Taking it: the holder's text is written to a temporary file that is hard-linked to ``.lock``;
  ``link(2)`` fails when ``.lock`` exists, so exactly one writer creates it, and the lock never
  exists without its text.
* Waiting: a writer that finds it held polls from 1 ms, doubling up to 50 ms, until its timeout
  (2 s by default), then raises :class:`~agentmemory.StoreLockedError` naming the holder.
* Releasing: ``.lock`` is removed only when it still names this holder.
* A dead holder's lock (its ``host`` is this host and its ``pid`` names no running process) is
  taken over through a claim, so that of several writers that find it, exactly one removes it:
  ``.lock`` is hard-linked to ``.lock.taken-<fingerprint of the dead holder>``; the writer whose
  link succeeds reads the claim, removes ``.lock`` if the claim still names the dead holder, then
  removes the claim; everyone then races to create ``.lock`` afresh. A lock without ``host`` is
  never taken over.
* :func:`break_lock` removes ``.lock`` and every claim, for a person who knows no writer runs
  (a taker that died between its link and its removal leaves a claim that blocks takeovers).

This is not ``flock(2)`` (compare :mod:`agentmemory.stores.chroma.clients`): the lock is a file another
implementation of the format can take and release, on any file system with hard links.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import socket
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agentmemory.errors import StoreLockedError
from agentmemory.stores.processes import pid_exists
from agentmemory.wire import format_time, go_json

from .atomic_write import TEMP_PREFIX

__all__ = [
    "CLAIM_PREFIX",
    "DEFAULT_LOCK_TIMEOUT_S",
    "LOCK_NAME",
    "LockFile",
    "LockHolder",
    "break_lock",
    "read_holder",
]

LOCK_NAME = ".lock"
"""The lock file's name in the folder."""

CLAIM_PREFIX = ".lock.taken-"
"""The name prefix of a takeover claim; the rest is the dead holder's fingerprint."""

DEFAULT_LOCK_TIMEOUT_S = 2.0
"""How long a writer waits for a held lock before :class:`StoreLockedError`, in seconds (the
reference implementation's default)."""

_FIRST_PAUSE_S = 0.001
_MAX_PAUSE_S = 0.05

_SINCE_RE = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})")


def _unix_nanos(since: str) -> int:
    """``since`` (RFC 3339, any fraction up to nanoseconds, any offset) as integer nanoseconds
    since the epoch; ``ValueError`` when it is not RFC 3339."""
    m = _SINCE_RE.fullmatch(since.strip())
    if m is None:
        raise ValueError(f"not an RFC 3339 time: {since!r}")
    base, frac, offset = m.groups()
    tz = "+00:00" if offset == "Z" else offset
    seconds = int(datetime.fromisoformat(base + tz).timestamp())
    return seconds * 1_000_000_000 + int((frac or "0").ljust(9, "0"))


@dataclass(frozen=True, slots=True)
class LockHolder:
    """Who a ``.lock`` names.

    Attributes:
        pid: the holder's process id (0 when the file gave none).
        host: the holder's host name, or ``None`` when the file gave none (such a lock is never
            taken over).
        since: when it took the lock, RFC 3339 as written (``""`` when absent).
    """

    pid: int
    host: str | None
    since: str

    @classmethod
    def me(cls) -> LockHolder:
        """This process, on this host, now."""
        return cls(os.getpid(), socket.gethostname(), format_time(datetime.now(UTC)))

    @classmethod
    def parse(cls, data: bytes) -> LockHolder | None:
        """The holder a lock file's bytes name, or ``None`` for an empty or unreadable file."""
        try:
            d = json.loads(data)
        except ValueError:
            return None
        if not isinstance(d, dict):
            return None
        pid = d.get("pid")
        host = d.get("host")
        since = d.get("since")
        return cls(
            pid if isinstance(pid, int) and not isinstance(pid, bool) else 0,
            host if isinstance(host, str) and host else None,
            since if isinstance(since, str) else "",
        )

    def encode(self) -> bytes:
        """The lock file's bytes: ``{"pid":…,"host":…,"since":…}`` (compact JSON, ``host``
        omitted when ``None``)."""
        d: dict[str, object] = {"pid": self.pid}
        if self.host is not None:
            d["host"] = self.host
        d["since"] = self.since
        return go_json(d).encode()

    def stale(self) -> bool:
        """Whether the holder is certainly dead: its host is this host and its pid (> 0) names
        no running process. A zombie (exited, not yet reaped) still counts as running."""
        return self.host == socket.gethostname() and self.pid > 0 and not pid_exists(self.pid)

    def fingerprint(self) -> str:
        """16 hex digits: the first 8 bytes of SHA-256 of ``"<host>|<pid>|<since in unix ns>"``
        (the claim's name, docs/filestore-format.md#the-lock). Raises ``ValueError`` when
        ``since`` is not RFC 3339."""
        text = f"{self.host or ''}|{self.pid}|{_unix_nanos(self.since)}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def describe(self) -> str:
        """In words, for an error: ``"pid 4242 on host laptop since 2026-09-20T10:00:07.5Z"``."""
        words = f"pid {self.pid} on host {self.host or '(unknown)'}"
        if self.since:
            words += f" since {self.since}"
        return words


def read_holder(folder: Path) -> LockHolder | None:
    """The holder ``folder/.lock`` names now, or ``None`` when there is no lock or it names
    nobody (empty or not JSON)."""
    try:
        return LockHolder.parse((folder / LOCK_NAME).read_bytes())
    except OSError:
        return None


def break_lock(folder: Path) -> list[str]:
    """Remove ``.lock`` and every ``.lock.taken-*`` claim in ``folder``; return the names removed.

    For a person who knows that no writer is running (a writer on another host that died, or a
    taker that died mid-takeover). Breaking the lock of a live writer lets two writers in.
    """
    removed: list[str] = []
    for p in [*sorted(folder.glob(f"{CLAIM_PREFIX}*")), folder / LOCK_NAME]:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
            removed.append(p.name)
    return removed


class LockFile:
    """The ``.lock`` of one folder, taken by :meth:`acquire` and given back by :meth:`release`.

    Not re-entrant and not shared between threads: the store serialises its own threads with a
    mutex before it takes this lock.

    Args:
        folder: the Markdown folder (must exist).
        timeout_s: how long :meth:`acquire` waits for a live holder, in seconds (>= 0).
    """

    def __init__(self, folder: Path, *, timeout_s: float = DEFAULT_LOCK_TIMEOUT_S) -> None:
        if timeout_s < 0:
            raise ValueError(f"lock timeout is {timeout_s} s; it must be 0 or more seconds")
        self._folder = folder
        self._timeout_s = timeout_s
        self._mine: LockHolder | None = None

    @property
    def path(self) -> Path:
        """``folder/.lock``."""
        return self._folder / LOCK_NAME

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._mine is not None

    def acquire(self) -> None:
        """Take the lock, waiting up to the timeout and taking over a dead holder's lock.

        Raises:
            StoreLockedError: a live holder (or an unfinished takeover's claim) kept the lock for
                the whole timeout; ``holder`` names who the lock names.
            OSError: the folder cannot be written.
        """
        if self._mine is not None:
            raise RuntimeError(f"{self.path} is already held by this LockFile")
        me = LockHolder.me()
        tmp = self._folder / f"{TEMP_PREFIX}lock-{secrets.token_hex(8)}"
        try:
            tmp.write_bytes(me.encode())
            deadline = time.monotonic() + self._timeout_s
            pause = _FIRST_PAUSE_S
            while True:
                try:
                    os.link(tmp, self.path)
                except FileExistsError:
                    pass
                else:
                    self._mine = me
                    return
                holder = read_holder(self._folder)
                if holder is not None and holder.stale() and self._take_over(holder):
                    continue  # the dead holder's lock is gone: race to create ours
                if time.monotonic() >= deadline:
                    raise self._locked(holder)
                time.sleep(pause)
                pause = min(pause * 2, _MAX_PAUSE_S)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()

    def _take_over(self, dead: LockHolder) -> bool:
        """Try to remove ``dead``'s lock through the claim; ``True`` when the caller should try
        to create the lock at once (the lock is gone), ``False`` when it should wait."""
        try:
            claim = self._folder / f"{CLAIM_PREFIX}{dead.fingerprint()}"
        except ValueError:
            return False  # a lock we cannot fingerprint is never taken over
        try:
            os.link(self.path, claim)
        except FileExistsError:
            return False  # another taker holds the claim: wait for it
        except FileNotFoundError:
            return True  # the lock went away meanwhile
        try:
            try:
                claimed = LockHolder.parse(claim.read_bytes())
            except OSError:
                claimed = None
            if claimed == dead:
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
        finally:
            with contextlib.suppress(FileNotFoundError):
                claim.unlink()
        return True

    def _locked(self, holder: LockHolder | None) -> StoreLockedError:
        claims = sorted(p.name for p in self._folder.glob(f"{CLAIM_PREFIX}*"))
        if holder is None:
            who = "a writer that has not named itself"
        else:
            who = holder.describe()
            if holder.stale():
                who += " (no longer running)"
        detail = f"waited {self._timeout_s:g} s"
        if claims:
            detail += (
                f"; a takeover was left unfinished ({', '.join(claims)}): if no writer runs, "
                "break the lock (FileStore.break_lock())"
            )
        else:
            detail += "; retry later, or break the lock if you know its holder is gone"
        return StoreLockedError(str(self._folder), who, detail)

    def release(self) -> None:
        """Remove ``.lock`` if it still names this holder; idempotent. A lock that names someone
        else (it was broken and taken meanwhile) is left alone."""
        mine, self._mine = self._mine, None
        if mine is None:
            return
        if read_holder(self._folder) == mine:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
