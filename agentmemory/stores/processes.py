"""Whether another process on this host is still there: the question a lock holder, a purge in
progress and a folder's Chroma server each ask of a pid they recorded."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["pid_exists", "pid_running"]


def pid_exists(pid: int) -> bool:
    """Whether a process with this pid exists on this host (``kill(pid, 0)``; a process of
    another user exists too). ``False`` for a pid under 1."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def pid_running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (killed but not reaped): read from
    ``/proc/<pid>/stat``; where there is no ``/proc``, whether it exists."""
    if not pid_exists(pid):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: kill(0) is all we know
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
