"""The state a vector index keeps in its journal, and which embedder may open the index.

A :class:`~agentmemory.ChromaStore` keeps five values in its journal's ``store_state`` table
(docs/storage.md#the-index-cursor, docs/storage.md#the-embedder-fingerprint), under keys
``chroma-index:<kind>:<prefix>:<what>``, ``kind`` being ``embedded`` (the folder's own Chroma
files) or ``client`` (a Chroma server), ``prefix`` the collection prefix:

* ``cursor``: every journal record up to this ``seq`` is applied to the index;
* ``embedder``: the fingerprint of the embedder the vectors were made with;
* ``windows``: the window layout the vectors were made with (``embedders.window_layout``,
  docs/storage.md#windows-and-the-index-state); absent in an index made before windows, which
  held one vector per entry (``"whole"``);
* ``lost``: the scopes the index was found to have lost (a deleted Chroma folder), until a
  reindex or a clean repair;
* ``purge``: the scope of a purge whose index part has not finished.

Keeping them in the journal means they survive with it, are written in its transactions, and
are seen by every process that opens it (a ``PostgresStore`` journal shares them across hosts).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentmemory.errors import EmbedderMismatchError
from embedders import same_vectors

from .cursor import StateStore

__all__ = ["STATE_NAMESPACE", "IndexStateKeys", "check_embedder"]

STATE_NAMESPACE = "chroma-index"
"""The first part of every key a vector index keeps in its journal."""


@dataclass(frozen=True, slots=True)
class IndexStateKeys:
    """The journal state keys of one index (see the module docstring).

    Attributes:
        embedded: the index is a folder's own Chroma files (else a Chroma server's).
        prefix: the index's collection prefix.
    """

    embedded: bool
    prefix: str

    def _key(self, what: str, *, embedded: bool | None = None) -> str:
        kind = "embedded" if (self.embedded if embedded is None else embedded) else "client"
        return f"{STATE_NAMESPACE}:{kind}:{self.prefix}:{what}"

    @property
    def cursor(self) -> str:
        """The key of the index cursor."""
        return self._key("cursor")

    @property
    def embedder(self) -> str:
        """The key of the recorded embedder fingerprint."""
        return self._key("embedder")

    @property
    def windows(self) -> str:
        """The key of the recorded window layout (absent: ``"whole"``, one vector per entry)."""
        return self._key("windows")

    @property
    def lost(self) -> str:
        """The key of the scopes the index lost (``""`` or absent: none)."""
        return self._key("lost")

    @property
    def purge(self) -> str:
        """The key of a pending purge's scope (``""`` or absent: none)."""
        return self._key("purge")

    @property
    def sibling_embedder(self) -> str:
        """The embedder key of the folder's other kind of index (embedded or server)."""
        return self._key("embedder", embedded=not self.embedded)


def check_embedder(
    journal: StateStore, keys: IndexStateKeys, given: str, *, reindex: bool, where: str
) -> str:
    """Check that an embedder of fingerprint ``given`` may open the index, record it when the
    index has none yet, and return the fingerprint the index's vectors were made with
    (docs/storage.md#the-embedder-fingerprint).

    An index takes the embedder it recorded, or one giving the same vectors
    (:func:`embedders.same_vectors`: the same model through its other runtime), and keeps its
    recorded fingerprint. A folder's first index of one kind (say, on a server) takes the
    embedder of its other kind: one folder, one embedder. ``reindex`` allows any embedder (the
    caller then rebuilds every vector) and returns ``given``. ``where`` names the store in the
    error.

    Raises:
        EmbedderMismatchError: the index (or the folder's other index) was made with an
            embedder giving other vectors; it names both fingerprints.
    """
    stored = journal.get_state(keys.embedder)
    if not reindex:
        recorded = stored if stored is not None else journal.get_state(keys.sibling_embedder)
        if recorded is not None and not same_vectors(recorded, given):
            raise EmbedderMismatchError(where, recorded, given)
    if stored is None:
        journal.set_state(keys.embedder, given)
    return given if stored is None or reindex else stored
