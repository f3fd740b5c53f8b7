"""The Markdown folder: :class:`FileStore`, one file per entry that a person can read, edit and
commit, beside ``journal.jsonl`` (docs/filestore-format.md).

The face is this package's ``__all__``; its modules are internal
(docs/README.md#public-face-and-internal-modules), except ``transfer`` (``export_markdown``,
``import_markdown``), imported by whoever uses it.
"""

from __future__ import annotations

from .reconcile import Reconciliation, UnjournaledFile
from .store import FileStore

__all__ = ["FileStore", "Reconciliation", "UnjournaledFile"]
