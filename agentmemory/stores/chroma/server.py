"""A store folder's own Chroma server: ``chroma run`` from the installed chromadb, started
detached on 127.0.0.1 and a free port, recorded in the folder so that every process opening the
folder connects to it with ``chromadb.HttpClient`` (docs/storage.md#several-processes).

The server keeps its collections in ``DIR/chroma-server/db`` (not in ``DIR/chroma``, the
embedded client's folder: the two indexes never share files, each has its own cursor in the
journal's ``store_state``). The record, ``DIR/chroma-server/server.json``, holds the server's
pid, host, port, start time (RFC 3339 UTC) and the chromadb version that started it. A record
whose process is gone is ignored (with a :class:`~agentmemory.errors.ServerRecordWarning`) and replaced
by the next start. Starting takes a :class:`~agentmemory.stores.chroma.clients.FolderLock` on
``DIR/chroma-server`` so that two openers starting at once start one server.

No server of our own is written here: this module only runs, finds, checks and stops
``chroma run``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agentmemory.errors import (
    ChromaAddressError,
    ChromaServerError,
    ChromaServerTimeoutError,
    ServerRecordWarning,
)
from agentmemory.stores.processes import pid_running
from agentmemory.wire import format_time

from .folder_lock import FolderLock

__all__ = [
    "DEFAULT_CHROMA_PORT",
    "SERVER_FOLDER",
    "SERVER_HOST",
    "SERVER_RECORD",
    "SERVER_TIMEOUT_S",
    "START_TIMEOUT_S",
    "TIMEOUT_ENV",
    "ChromaAddress",
    "ServerRecord",
    "chromadb_version",
    "connect_url",
    "folder_client",
    "live_record",
    "parse_chroma_address",
    "read_record",
    "server_timeout_s",
    "start_server",
    "stop_server",
    "store_client",
]

SERVER_FOLDER = "chroma-server"
"""The folder inside a store folder that holds its server's data (``db``), record and log."""

SERVER_RECORD = "server.json"
"""The record's file name inside :data:`SERVER_FOLDER`."""

SERVER_HOST = "127.0.0.1"
"""The address a folder's server listens on (loopback only)."""

START_TIMEOUT_S = 60.0
"""How long :func:`start_server` waits for ``chroma run`` to answer its heartbeat, in seconds
(how long it takes: benchmarks/README.md, "Notes moved from docstrings", agentmemory.stores.chroma)."""

SERVER_TIMEOUT_S = 30.0
"""How long one request to a Chroma server may wait for its answer, in seconds (the default of
:func:`server_timeout_s`): past it the request fails as for a server that is gone (a write stays
in the journal, a search answers from BM25 and says so; docs/storage.md#a-stuck-server). Long
enough for the largest upsert a store sends (one batch of the index's chunk)."""

CONNECT_TIMEOUT_S = 5.0
"""How long opening a TCP connection to a Chroma server may take, in seconds (at most the
request timeout)."""

TIMEOUT_ENV = "AGENTMEMORY_CHROMA_TIMEOUT"
"""The variable that sets :func:`server_timeout_s` for every store of the process (seconds)."""

_LOG_FILE = "server.log"

_clients_lock = threading.Lock()
_clients: dict[tuple[str, int, bool], Any] = {}
_clients_pid: dict[tuple[str, int, bool], int] = {}


@dataclass(frozen=True, slots=True)
class ServerRecord:
    """A folder's Chroma server as ``server.json`` records it.

    Attributes:
        pid: the ``chroma run`` process.
        host: where it listens (``127.0.0.1``).
        port: its TCP port.
        started: when it started (RFC 3339 UTC).
        chromadb: the chromadb package version that started it (openers of another version
            are refused: the client and server protocols change between versions).
        path: its data folder (``DIR/chroma-server/db``).
    """

    pid: int
    host: str
    port: int
    started: str
    chromadb: str
    path: str

    @property
    def url(self) -> str:
        """``http://host:port``."""
        return f"http://{self.host}:{self.port}"

    def describe(self) -> str:
        """``http://127.0.0.1:PORT (pid N)``, for messages."""
        return f"{self.url} (pid {self.pid})"


def chromadb_version() -> str:
    """The installed chromadb package's version (from its metadata: no import of chromadb)."""
    from importlib.metadata import version

    return version("chromadb")


def _server_dir(folder: Path) -> Path:
    return folder / SERVER_FOLDER


def read_record(folder: str | os.PathLike[str]) -> ServerRecord | None:
    """The record in ``folder`` (a store folder), or ``None`` when there is none or it does not
    parse (a record cut short is the same as none)."""
    path = _server_dir(Path(folder)) / SERVER_RECORD
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return ServerRecord(
            pid=int(data["pid"]),
            host=str(data["host"]),
            port=int(data["port"]),
            started=str(data["started"]),
            chromadb=str(data["chromadb"]),
            path=str(data["path"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _is_chroma(pid: int) -> bool:
    """Whether ``pid`` runs ``chroma`` (``False`` for a pid reused by another program; ``True``
    where ``/proc`` cannot tell)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True
    return b"chroma" in argv


def server_timeout_s(value: float | None = None) -> float:
    """The request timeout to use, in seconds: ``value`` when given, else
    ``$AGENTMEMORY_CHROMA_TIMEOUT``, else :data:`SERVER_TIMEOUT_S`.

    Raises:
        ValueError: the value (or the variable) is not a number of seconds above 0; the message
            names where it came from, the value and the limit.
    """
    where = "server_timeout_s"
    raw: object = value
    if value is None:
        text = os.environ.get(TIMEOUT_ENV, "").strip()
        if not text:
            return SERVER_TIMEOUT_S
        where, raw = f"${TIMEOUT_ENV}", text
    try:
        seconds = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(
            f"{where} is {raw!r}; it must be a number of seconds above 0 (the default is "
            f"{SERVER_TIMEOUT_S:g})"
        )
    return seconds


def _timed_out(err: BaseException) -> bool:
    """Whether ``err`` is a request that ran past its timeout (httpx's, as chromadb's client
    raises it)."""
    import httpx

    return isinstance(err, httpx.TimeoutException | ChromaServerTimeoutError)


def _stuck(where: str, timeout_s: float, advice: str) -> ChromaServerTimeoutError:
    return ChromaServerTimeoutError(
        where,
        f"it did not answer within {timeout_s:g} s (is it stopped or overloaded?); {advice}; "
        f"the timeout is ${TIMEOUT_ENV} (seconds, default {SERVER_TIMEOUT_S:g})",
        timeout_s,
    )


def _bound(client: Any, timeout_s: float, where: str) -> None:
    """Give ``client``'s HTTP session (an ``httpx.Client``: chromadb makes it with no timeout)
    the request timeout ``timeout_s``. The session is shared by every client of one server in
    the process (chromadb keeps one per address), so the last store opened sets it."""
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if not isinstance(session, httpx.Client):
        raise ChromaServerError(
            where,
            f"chromadb {chromadb_version()}'s HTTP client keeps no httpx session that "
            "agentmemory can give a timeout; install the chromadb version pyproject.toml names",
        )
    session.timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_S))


def _http_client(host: str, port: int, *, ssl: bool = False, timeout_s: float) -> Any:
    """One ``chromadb.HttpClient`` per (host, port) in this process, telemetry off, each
    request bounded by ``timeout_s`` seconds.

    chromadb's constructor already asks the server who the caller is; it runs in a daemon
    thread joined for ``timeout_s``, so a stopped server cannot hang the caller (the thread is
    left to the server, and ends with the process at the latest).

    Raises:
        ChromaServerTimeoutError: the constructor's requests did not finish in ``timeout_s``.
        Exception: what chromadb's constructor raised (a refused connection, another protocol).
    """
    key = (host, port, ssl)
    where = f"{'https' if ssl else 'http'}://{host}:{port}"
    with _clients_lock:
        client = _clients.get(key)
        if client is None or _clients_pid.get(key) != os.getpid():
            client = _construct(host, port, ssl, timeout_s, where)
            _clients[key] = client
            _clients_pid[key] = os.getpid()
        _bound(client, timeout_s, where)
        return client


def _construct(host: str, port: int, ssl: bool, timeout_s: float, where: str) -> Any:
    import chromadb
    from chromadb.config import Settings

    made: list[Any] = []
    failed: list[BaseException] = []

    def build() -> None:
        try:
            made.append(
                chromadb.HttpClient(
                    host=host, port=port, ssl=ssl, settings=Settings(anonymized_telemetry=False)
                )
            )
        except BaseException as err:
            failed.append(err)

    worker = threading.Thread(target=build, name="agentmemory-chroma-connect", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise _stuck(where, timeout_s, "nothing was sent to it")
    if failed:
        raise failed[0]
    return made[0]


def _answers(host: str, port: int, timeout_s: float = CONNECT_TIMEOUT_S) -> bool:
    """Whether a Chroma server answers its heartbeat at ``host:port`` within ``timeout_s``."""
    try:
        _http_client(host, port, timeout_s=timeout_s).heartbeat()
    except Exception:
        return False
    return True


def live_record(folder: str | os.PathLike[str], *, report: bool = True) -> ServerRecord | None:
    """The folder's record when its process runs, else ``None``. A record whose process is gone
    is reported (a :class:`~agentmemory.errors.ServerRecordWarning`, when ``report``) and ignored."""
    record = read_record(folder)
    if record is None:
        return None
    if pid_running(record.pid) and _is_chroma(record.pid):
        return record
    if report:
        warnings.warn(
            f"agentmemory: store {folder}: the Chroma server recorded at {record.describe()}, "
            f"started {record.started}, is no longer running; the record is ignored (and "
            f"replaced by the next 'agentmemory server start --path {folder}')",
            ServerRecordWarning,
            stacklevel=2,
        )
    return None


def _check(record: ServerRecord, folder: Path, timeout_s: float) -> Any:
    """An HttpClient on ``record``'s server after checking it answers (within ``timeout_s``
    seconds) and its version.

    Raises:
        ChromaServerTimeoutError: it did not answer in time (stopped, or overloaded).
        ChromaServerError: it is of another chromadb version, or something else answers.
    """
    mine = chromadb_version()
    if record.chromadb != mine:
        raise ChromaServerError(
            record.describe(),
            f"it was started by chromadb {record.chromadb}, and this process has chromadb "
            f"{mine} (their protocols may differ); stop it with 'agentmemory server stop "
            f"--path {folder}' and start it again from this installation",
        )
    restart = (
        f"see {_server_dir(folder) / _LOG_FILE}, then 'agentmemory server stop --path "
        f"{folder}' and 'agentmemory server start --path {folder}'"
    )
    try:
        client = _http_client(record.host, record.port, timeout_s=timeout_s)
        client.heartbeat()
    except Exception as err:
        if _timed_out(err):
            raise _stuck(record.describe(), timeout_s, restart) from None
        raise ChromaServerError(
            record.describe(),
            f"process {record.pid} runs but no Chroma server answers on port {record.port} "
            f"({type(err).__name__}: is the port taken by something else?); {restart}",
        ) from None
    return client


DEFAULT_CHROMA_PORT = 8000
"""The port of an ``http://HOST`` address that names none: ``chroma run``'s default port."""


@dataclass(frozen=True, slots=True)
class ChromaAddress:
    """A Chroma server's address, as :func:`parse_chroma_address` reads it.

    Attributes:
        host: the host name or IP address (an IPv6 address without its brackets).
        port: the TCP port, 1 to 65535.
        ssl: ``True`` for ``https://``.
    """

    host: str
    port: int
    ssl: bool

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` (``https://`` with ``ssl``; an IPv6 host in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.ssl else 'http'}://{host}:{self.port}"


def parse_chroma_address(address: str) -> ChromaAddress:
    """The Chroma server named by ``address``: ``HOST:PORT`` (``127.0.0.1:8000``,
    ``[::1]:8000``) or a URL, ``http://HOST[:PORT]`` or ``https://HOST[:PORT]`` (without a port,
    :data:`DEFAULT_CHROMA_PORT` for http and 443 for https). Surrounding spaces and one trailing
    ``/`` are allowed. The one reader of a Chroma server address: ``--chroma-url`` (and its
    alias ``--chroma``), ``$AGENTMEMORY_CHROMA_URL`` (``$AGENTMEMORY_CHROMA``) and
    ``open_store(chroma_url=...)`` all go through it (docs/storage.md#the-chroma-server-address).

    Raises:
        ChromaAddressError: ``address`` is empty; has no port (``HOST:PORT`` form) or a port
            that is not a number from 1 to 65535; has another scheme than http or https, no
            host, or a path, query, fragment or user name (Chroma's client takes none of them).
            The message names the value (a password in it as ``***``).
    """
    text = address.strip()
    parts = urlsplit(text if "://" in text else f"http://{text}")
    try:
        port = parts.port
    except ValueError:  # not a number, or past 65535
        port = -1
    problem = ""
    if not text:
        problem = "it is empty"
    elif parts.scheme not in ("http", "https"):
        problem = f"its scheme is {parts.scheme!r}, not http or https"
    elif not parts.hostname:
        problem = "it names no host"
    elif port is not None and not 1 <= port <= 65535:
        problem = "its port is not a number from 1 to 65535"
    elif port is None and "://" not in text:
        problem = "it has no port"
    elif parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        problem = "it has more than a scheme, a host and a port"
    if problem:
        shown = address.replace(parts.password, "***") if parts.password else address
        raise ChromaAddressError(
            shown,
            f"{problem}; give HOST:PORT or http://HOST:PORT (for example 127.0.0.1:8000)",
        )
    assert parts.hostname is not None
    ssl = parts.scheme == "https"
    if port is None:
        port = 443 if ssl else DEFAULT_CHROMA_PORT
    return ChromaAddress(parts.hostname, port, ssl)


def connect_url(url: str, *, timeout_s: float | None = None) -> Any:
    """An HttpClient on the Chroma server at ``url`` (any address
    :func:`parse_chroma_address` reads: ``http://host:port`` or ``host:port``), after a
    heartbeat; each request it sends waits at most ``timeout_s`` seconds
    (:func:`server_timeout_s`).

    Raises:
        ChromaAddressError: ``url`` is not an address :func:`parse_chroma_address` reads.
        ChromaServerTimeoutError: it did not answer within the timeout.
        ChromaServerError: nothing answers there as a Chroma server of a protocol this
            chromadb speaks.
        ValueError: ``timeout_s`` (or its variable) is not a number of seconds above 0.
    """
    address = parse_chroma_address(url)
    timeout = server_timeout_s(timeout_s)
    try:
        client = _http_client(address.host, address.port, ssl=address.ssl, timeout_s=timeout)
        client.heartbeat()
    except Exception as err:
        if _timed_out(err):
            raise _stuck(address.url, timeout, "is it the server you meant?") from None
        raise ChromaServerError(
            address.url,
            f"no Chroma server of chromadb {chromadb_version()}'s protocol answers there "
            f"({type(err).__name__}: {err}); start one with 'chroma run --host {address.host} "
            f"--port {address.port}'",
        ) from None
    return client


def folder_client(
    folder: Path, *, start: bool, timeout_s: float | None = None
) -> tuple[Any, ServerRecord] | None:
    """An HttpClient on ``folder``'s own server and its record: the live one recorded, or (with
    ``start``) one started now when none runs; ``None`` when none runs and ``start`` is false.
    Each request waits at most ``timeout_s`` seconds (:func:`server_timeout_s`).

    Raises:
        ChromaServerTimeoutError: the recorded server runs but did not answer in time.
        ChromaServerError: the recorded server is of another chromadb version or does not
            answer, or the server could not be started.
    """
    timeout = server_timeout_s(timeout_s)
    record = live_record(folder)
    if record is None:
        if not start:
            return None
        record = start_server(folder)
    return _check(record, folder, timeout), record


def store_client(
    folder: Path | None, *, url: str | None, shared: bool, timeout_s: float | None = None
) -> tuple[Any, str] | None:
    """The Chroma server client a store opens, and the server in words for messages: the
    server at ``url`` when given; else ``folder``'s own server when one runs, or (with
    ``shared``) one started now (:func:`folder_client`); ``None`` for the folder's embedded
    client (or when there is no folder: the caller gives its client). Each request waits at
    most ``timeout_s`` seconds (:func:`server_timeout_s`).

    Raises:
        ChromaServerError: as :func:`connect_url` and :func:`folder_client` (a
            :class:`~agentmemory.errors.ChromaServerTimeoutError` when it did not answer in time).
    """
    if url:
        return connect_url(url, timeout_s=timeout_s), url
    if folder is None:
        return None
    found = folder_client(folder, start=shared, timeout_s=timeout_s)
    if found is None:
        return None
    client, record = found
    return client, record.describe()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((SERVER_HOST, 0))
        return int(s.getsockname()[1])


def _port_free(port: int) -> bool:
    """Whether nothing listens on ``port`` (SO_REUSEADDR, as servers bind: connections of a
    killed server left in TIME_WAIT do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((SERVER_HOST, port))
        except OSError:
            return False
    return True


def _chroma_command() -> str:
    beside = Path(sys.executable).parent / "chroma"
    if beside.exists():
        return str(beside)
    found = shutil.which("chroma")
    if found is None:
        raise ChromaServerError(
            "(not started)",
            f"the chroma command of the chromadb package is neither beside {sys.executable} nor "
            "on PATH; reinstall chromadb in this environment",
        )
    return found


def start_server(
    folder: str | os.PathLike[str],
    *,
    port: int | None = None,
    timeout_s: float = START_TIMEOUT_S,
) -> ServerRecord:
    """Start ``chroma run`` for ``folder`` (a store folder, created when missing) on
    127.0.0.1, detached (its own session: it outlives this process), and record it; return the
    record. When a live server is recorded already, return its record and start nothing.

    Args:
        folder: the store folder.
        port: the TCP port; ``None`` picks a free one.
        timeout_s: how long to wait for the server's heartbeat, in seconds.

    Raises:
        ChromaServerError: ``port`` is taken by something else; ``chroma run`` exited or did
            not answer within ``timeout_s`` (the message quotes its log).
        StoreLockedError: another process kept the start lock past ``timeout_s``.
    """
    where = Path(folder)
    home = _server_dir(where)
    home.mkdir(parents=True, exist_ok=True)
    with FolderLock.acquire(home, timeout_s=timeout_s + 10.0, detail="starting its server"):
        found = live_record(where, report=False)  # the opener has reported a dead one
        if found is not None:
            return found
        if port is None:
            port = _free_port()
        elif not _port_free(port):
            raise ChromaServerError(
                f"http://{SERVER_HOST}:{port}",
                f"port {port} is taken by another program; leave out --port to use a free one",
            )
        db = home / "db"
        log_path = home / _LOG_FILE
        argv = [_chroma_command(), "run", "--path", str(db), "--host", SERVER_HOST]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [*argv, "--port", str(port)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
            )
        _children.append(proc)
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise ChromaServerError(
                    f"http://{SERVER_HOST}:{port}",
                    f"chroma run exited with status {proc.returncode}: {_tail(log_path)}",
                )
            if _answers(SERVER_HOST, port):
                break
            if time.monotonic() > deadline:
                _terminate(proc.pid)
                raise ChromaServerError(
                    f"http://{SERVER_HOST}:{port}",
                    f"chroma run did not answer within {timeout_s:g} s: {_tail(log_path)}",
                )
            time.sleep(0.1)
        record = ServerRecord(
            pid=proc.pid,
            host=SERVER_HOST,
            port=port,
            started=format_time(datetime.now(UTC)),
            chromadb=chromadb_version(),
            path=str(db),
        )
        tmp = home / (SERVER_RECORD + ".tmp")
        tmp.write_text(json.dumps(asdict(record)), encoding="utf-8")
        os.replace(tmp, home / SERVER_RECORD)
        return record


_children: list[subprocess.Popen[bytes]] = []


def _reap() -> None:
    """Collect the exit status of servers this process started that have exited (no zombies)."""
    for proc in list(_children):
        if proc.poll() is not None:
            _children.remove(proc)


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    kept = [ln for ln in text.splitlines() if ln.strip()][-lines:]
    return " | ".join(kept) or "(empty log)"


def _terminate(pid: int, timeout_s: float = 10.0) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while pid_running(pid) and time.monotonic() < deadline:
        _reap()
        time.sleep(0.05)
    if pid_running(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        while pid_running(pid):
            _reap()
            time.sleep(0.05)
    _reap()


def stop_server(folder: str | os.PathLike[str], *, timeout_s: float = 10.0) -> ServerRecord | None:
    """Stop ``folder``'s recorded server (SIGTERM, then SIGKILL after ``timeout_s`` seconds) and
    remove its record; return the record, or ``None`` when no server was recorded. A record
    whose process is gone is removed too (and returned)."""
    home = _server_dir(Path(folder))
    record = read_record(folder)
    if record is None:
        return None
    if pid_running(record.pid):
        _terminate(record.pid, timeout_s)
    with contextlib.suppress(FileNotFoundError):
        (home / SERVER_RECORD).unlink()
    return record
