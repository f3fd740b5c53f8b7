"""Run the inspector on 127.0.0.1 with uvicorn until Ctrl-C or SIGTERM (uvicorn's own graceful
shutdown), announcing its URL first (docs/inspector.md#starting-it)."""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable

__all__ = ["bind", "serve"]

DEFAULT_HOST = "127.0.0.1"


def bind(host: str = DEFAULT_HOST, port: int = 0) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (``0``: a free port).

    Raises ``OSError`` when the port is taken or the host cannot be bound."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def serve(app: object, sock: socket.socket, *, ready: Callable[[], object] | None = None) -> None:
    """Serve ``app`` on ``sock`` until Ctrl-C or SIGTERM, then return (open connections are
    finished first); ``ready`` is called once the server accepts connections. Main thread only
    (it sets the SIGINT and SIGTERM handlers while it runs)."""
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")  # type: ignore[arg-type]
    server = uvicorn.Server(config)
    if ready is not None:
        startup = server.startup

        async def announced(sockets: list[socket.socket] | None = None) -> None:
            await startup(sockets=sockets)
            ready()

        server.startup = announced  # type: ignore[method-assign]
    # uvicorn shuts down gracefully on SIGINT and SIGTERM, then raises the signal again for the
    # handler it found: ours turn that into a normal return (exit status 0), not a kill
    previous = {sig: signal.signal(sig, _stopped) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run(sockets=[sock])
    except _Stopped:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sock.close()


class _Stopped(Exception):
    """Raised by the signal handler once uvicorn has shut down."""


def _stopped(signum: int, frame: object) -> None:
    raise _Stopped
