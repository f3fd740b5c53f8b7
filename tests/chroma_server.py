"""A real Chroma server for the tests: `chroma run` on 127.0.0.1 and a free port, in a temporary
folder, started by the test session that needs it and stopped by it (``tests/conftest.py``'s
``chroma_port`` and ``chroma_client`` fixtures)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SERVER_START_TIMEOUT_S = 60.0


class ChromaServerFailed(RuntimeError):
    """`chroma run` exited or did not answer in time; the message holds its log."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_client(port: int) -> Any:
    """A ``chromadb.HttpClient`` to the server on 127.0.0.1:``port``, telemetry off."""
    import chromadb
    from chromadb.config import Settings

    return chromadb.HttpClient(
        host="127.0.0.1", port=port, settings=Settings(anonymized_telemetry=False)
    )


@contextmanager
def running_chroma_server(home: Path) -> Iterator[int]:
    """Run `chroma run` over ``home/db`` until the block ends (terminate, then kill); yield its
    port once it answers a heartbeat.

    Raises:
        ChromaServerFailed: the command is missing, exits, or does not answer within
            :data:`SERVER_START_TIMEOUT_S` seconds.
    """
    chroma = Path(sys.executable).parent / "chroma"
    if not chroma.exists():
        raise ChromaServerFailed(f"the chroma command is missing beside {sys.executable}")
    port = free_port()
    log_path = home / "server.log"
    with open(log_path, "w") as log:
        argv = [str(chroma), "run", "--path", str(home / "db"), "--host", "127.0.0.1"]
        proc = subprocess.Popen([*argv, "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + SERVER_START_TIMEOUT_S
            while True:
                if proc.poll() is not None:
                    raise ChromaServerFailed(
                        f"chroma run exited with {proc.returncode}: {log_path.read_text()}"
                    )
                try:
                    with http_client(port) as probe:
                        probe.heartbeat()
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise ChromaServerFailed(
                            f"chroma run did not answer in {SERVER_START_TIMEOUT_S} s: "
                            f"{log_path.read_text()}"
                        ) from None
                    time.sleep(0.2)
            yield port
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
