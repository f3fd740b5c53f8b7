"""``python -m agentmemory``: the command line (:func:`agentmemory.cli.main`)."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    main(prog_name="agentmemory")
