"""The memory inspector: a local web page over a store (``agentmemory ui``).

What it shows and the rules it keeps (a token on every request, CSRF on every POST, memory as
untrusted text, read-only unless ``--write``) are in docs/inspector.md. :func:`create_app` builds
the ASGI app over a :class:`Source`; :func:`serve` runs it on 127.0.0.1 until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

from .app import create_app
from .serve import serve
from .source import Source

__all__ = ["Source", "create_app", "serve"]
