"""A throwaway PostgreSQL cluster for tests and benchmarks: ``initdb`` into a temporary folder,
``pg_ctl start`` on 127.0.0.1 and a free port, ``pg_ctl stop`` at the end.

The binaries are Debian's ``postgresql`` package (``/usr/lib/postgresql/<version>/bin``; ``.ci/run``
installs it when missing) or any ``initdb`` on ``PATH``. PostgreSQL refuses to run as root, so
when this process is root the cluster runs as the unprivileged ``postgres`` user the package
creates (through ``runuser``), and its folder is handed to that user. Clients connect over TCP
with the cluster's superuser and no password (``trust`` on loopback only).

Used by ``tests/conftest.py`` (one cluster per test session) and ``benchmarks/journal_backends.py``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Cluster", "ClusterUnavailable", "find_bin_dir", "running_cluster"]

RUN_AS_WHEN_ROOT = "postgres"
"""The unprivileged user the cluster runs as when this process is root (Debian's package user)."""

START_TIMEOUT_S = 60


class ClusterUnavailable(RuntimeError):
    """PostgreSQL's server binaries (or the user to run them as) are missing; the message says
    what is missing and how to install it."""


def find_bin_dir() -> Path:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``: the newest
    ``/usr/lib/postgresql/<version>/bin``, else the folder of ``initdb`` on ``PATH``.

    Raises:
        ClusterUnavailable: none is found.
    """
    root = Path("/usr/lib/postgresql")
    if root.is_dir():
        versions = sorted(
            (p for p in root.iterdir() if (p / "bin" / "initdb").exists()),
            key=lambda p: [int(x) if x.isdigit() else 0 for x in p.name.split(".")],
        )
        if versions:
            return versions[-1] / "bin"
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).resolve().parent
    raise ClusterUnavailable(
        "PostgreSQL's server binaries (initdb, pg_ctl) are not installed; "
        "run `apt-get install -y postgresql` (Debian) or put initdb on PATH"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    """A running cluster.

    Attributes:
        port: the TCP port on 127.0.0.1.
        user: the superuser to connect as.
        folder: the temporary folder (data directory ``data``, the server log ``server.log``).
    """

    port: int
    user: str
    folder: Path
    _made: Iterator[int] = field(default_factory=itertools.count, repr=False)

    def dsn(self, dbname: str = "postgres", **extra: str) -> str:
        """A libpq connection string for ``dbname`` on this cluster (TCP, no password)."""
        parts = {"host": "127.0.0.1", "port": str(self.port), "user": self.user, "dbname": dbname}
        parts.update(extra)
        return " ".join(f"{k}={v}" for k, v in parts.items())

    def create_database(self, prefix: str = "t") -> str:
        """Create an empty database (UTF-8, C collation) and return its DSN."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(self._made)}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'")
        return self.dsn(name)


def _run(argv: list[str], run_as: str | None, **kwargs: object) -> subprocess.CompletedProcess[str]:
    if run_as is not None:
        argv = ["runuser", "-u", run_as, "--", *argv]
    return subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]


@contextlib.contextmanager
def running_cluster(*, durable: bool = False, settings: Sequence[str] = ()) -> Iterator[Cluster]:
    """Start a fresh cluster and yield it; stop it and delete its folder on exit.

    Args:
        durable: keep PostgreSQL's defaults (``fsync``, synchronous commit), as a benchmark wants.
            By default tests run with ``fsync=off``: a crash of the machine would lose the
            throwaway cluster, never a client's transaction semantics.
        settings: more server settings (``name=value``), applied last.

    Raises:
        ClusterUnavailable: no binaries, or this process is root and the ``postgres`` user is
            missing.
        RuntimeError: ``initdb`` or ``pg_ctl start`` failed (with its output and the log).
    """
    bin_dir = find_bin_dir()
    run_as: str | None = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(RUN_AS_WHEN_ROOT)
        except KeyError:
            raise ClusterUnavailable(
                f"running as root, and PostgreSQL refuses root; the user {RUN_AS_WHEN_ROOT!r} "
                "to run it as is missing (`apt-get install -y postgresql` creates it)"
            ) from None
        run_as = RUN_AS_WHEN_ROOT
        user = RUN_AS_WHEN_ROOT
    else:
        user = pwd.getpwuid(os.geteuid()).pw_name
    folder = Path(tempfile.mkdtemp(prefix="agentmemory-pg-"))
    try:
        if run_as is not None:
            shutil.chown(folder, user=run_as)
        data = folder / "data"
        log = folder / "server.log"
        done = _run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                user,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ],
            run_as,
        )
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed ({done.returncode}): {done.stderr or done.stdout}")
        server = [
            "listen_addresses=127.0.0.1",
            f"unix_socket_directories={folder}",
            "max_connections=100",
        ]
        if not durable:
            server += ["fsync=off", "synchronous_commit=off", "full_page_writes=off"]
        server += list(settings)
        for attempt in range(5):
            port = _free_port()
            opts = " ".join(f"-c {s}" for s in [f"port={port}", *server])
            done = _run(
                [
                    str(bin_dir / "pg_ctl"),
                    "-D",
                    str(data),
                    "-l",
                    str(log),
                    "-o",
                    opts,
                    "-w",
                    "-t",
                    str(START_TIMEOUT_S),
                    "start",
                ],
                run_as,
            )
            if done.returncode == 0:
                break
            if attempt == 4 or "could not bind" not in (log.read_text() if log.exists() else ""):
                raise RuntimeError(
                    f"pg_ctl start failed ({done.returncode}): {done.stderr or done.stdout}; "
                    f"log: {log.read_text() if log.exists() else '(none)'}"
                )
        try:
            yield Cluster(port=port, user=user, folder=folder)
        finally:
            _run(
                [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], run_as
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
