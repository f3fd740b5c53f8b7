"""The ``agentmemory`` command line: a click group with one function per subcommand.

Commands parse their arguments, call one library function and print its result; the rules live in
the library. Every command works on one store folder (``DIR/journal.sqlite3`` and ``DIR/chroma/``),
taken from ``--path``, else the environment variable ``AGENTMEMORY_PATH``, else
:func:`agentmemory.default_store_path`.

- Reads (``get``, ``list``, ``export``, ``render``, ``journal``, ``lost-updates``, ``search --mode
  bm25``) open only the journal (:func:`agentmemory.open_journal`): fast, no model, and safe beside
  a running ``agentmemory mcp`` on the same store. They refuse a folder that holds no store.
- Writes and vector search (``save``, ``forget``, ``import``, ``search``, ``verify``,
  ``reindex``, ``mcp``) open the store with :func:`agentmemory.open_store`, whose vector index is
  owned by one process at a time, and which chooses the embedder: left out, the packaged
  all-MiniLM-L6-v2 through onnxruntime for a new store or one indexed with that model, else the
  store's own; ``--embedder NAME`` is taken when it gives the store's vectors, and refused
  otherwise; ``agentmemory reindex --embedder NAME`` switches.
- ``import`` and ``export`` are :mod:`agentmemory.jsonl`: ``export`` (and ``list --json``) write
  what ``import`` takes back exactly.
- Output is for people; ``--json`` prints JSON for programs (entries and journal records in the
  Go module's JSON forms, one per line where there are several).
- Errors print one line, ``agentmemory: <what happened and what to do>``, on stderr and exit 1;
  usage errors (a bad option or argument) print one line too, ending ``(see 'agentmemory
  <command> --help')``, and exit 2, as click does. Nothing is half-written: a write the store
  refuses writes nothing, and ``import`` checks the whole file before it writes any of it.
- A write that reached the journal but whose vector update failed
  (:class:`~agentmemory.IndexWriteError`) is a success: the command prints its usual output
  (``--json`` included), one ``agentmemory: warning:`` line on stderr, and exits 0; the index
  catches up at the next write or open, or with ``agentmemory verify --repair``.

Each subcommand imports what it needs when it runs, so ``agentmemory --help`` stays fast.

One module per concept: :mod:`~agentmemory.cli.group` (the group ``main`` and its one-line
errors), :mod:`~agentmemory.cli.options` (the shared options), :mod:`~agentmemory.cli.opening`
(opening stores with the command line's wording), :mod:`~agentmemory.cli.output` (what commands
print besides results), and the commands by group: :mod:`~agentmemory.cli.entries` (save, get,
list, forget, purge, forget-session), :mod:`~agentmemory.cli.recall` (search, render,
recall-part), :mod:`~agentmemory.cli.history` (journal, lost-updates),
:mod:`~agentmemory.cli.index` (verify, reindex), :mod:`~agentmemory.cli.transfer` (import, export,
reconcile), :mod:`~agentmemory.cli.serving` (mcp, server) and :mod:`~agentmemory.cli.evaluation`
(eval, demo). Importing a command module registers its commands on ``main``.
"""

from __future__ import annotations

# each command module registers its commands on `main` when imported
from . import entries, evaluation, history, index, inspector, recall, serving, transfer  # noqa: F401
from .group import CliError, main
from .options import FORMAT_ENV, PATH_ENV

__all__ = [
    "FORMAT_ENV",
    "PATH_ENV",
    "CliError",
    "main",
]
