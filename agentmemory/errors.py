"""The error tree of agentmemory.

Every error the library raises on purpose derives from :class:`AgentMemoryError`. Each message names
the entry (``scope/name``), the value and the limit involved, and says what to do next, because the
text reaches people and, through the tools, the model. Where a builtin fits, the error also derives
from it (``KeyError`` for a missing entry, ``ValueError`` for bad input, ``TimeoutError`` for a held
lock), so ``except ValueError`` keeps working for callers that know nothing of this library.

The tree (a builtin base in brackets; the root ``agentmemory`` module re-exports the errors a
caller of the contract catches, the others are imported from here)::

    AgentMemoryError
        entries and writes
            NotFoundError            [KeyError]         no live entry scope/name
            InvalidEntryError        [ValueError]       an entry, scope, name or meta breaks a rule
            EntryTooLargeError       [ValueError]       content over max_entry_bytes
            ConflictError                               an if_hash write found another state
            KindPolicyError          [ValueError]       a kind policy it cannot hold
        recall
            EmptyQueryError          [recallers.EmptyQueryError, a ValueError]  an empty query
            RecallModeError          [ValueError]       an unknown mode, or vectors it lacks
            RerankError              [ValueError]       a rerank= the store cannot serve
        render and manifests
            BudgetError              [ValueError]       a render bound the block cannot meet
            ManifestBaseError        [ValueError]       a delta on a manifest the reader lacks
            ManifestRecordError      [ValueError]       a manifest record that does not fold
        stores and opening them
            StoreFormatError         [ValueError]       a store file this code cannot read
            StoreLockedError         [TimeoutError]     another writer held the store
            StoreUnavailableError    [ConnectionError]  the database server is out of reach
            StoreIOError             [OSError]          the disk or the OS failed the database
                StoreFullError                          the disk or the quota is full
            StoreLinkError           [OSError]          a link where a Markdown folder reads or writes
            NoStoreError             [FileNotFoundError]  no store at the path given
            EmbedderMismatchError    [ValueError]       another embedder than the vectors' own
            EmbedderNameError        [ValueError]       an embedder name the registry refuses
            ChromaServerError        [ConnectionError]  a Chroma server that cannot be used
                ChromaServerTimeoutError [TimeoutError]  a server that did not answer in time
                ChromaAddressError   [ValueError]       a missing or malformed server address
        indexes (derived data; the journal is intact)
            IndexOutOfStepError                         the vector index misses the journal
                IndexWriteError                         a write the vector index did not take
            IndexDamagedError                           an index whose pages or files are damaged
                IndexReadOnlyError                      a vector index that may not be written
        JSON Lines import
            ImportLineError          [ValueError]       a line that is not an entry
            ImportIncompleteError                       an import that stopped midway
        evaluation
            DataNotFoundError        [FileNotFoundError]  a data set in none of the places
            DataFormatError          [ValueError]       a data file not in its public schema
            DownloadError            [OSError]          a failed or mismatched download
        tools
            ToolConfigError          [ValueError]       scopes or bounds the tools cannot serve

    UserWarning (warnings, not errors: the operation went on)
        ServerRecordWarning      a recorded Chroma server whose process is gone
        IndexDamagedWarning      a write that missed the damaged lexical index
        IndexOutOfStepWarning    a store opened with a vector index behind its journal

The group lines (``entries and writes``, ...) are headings, not classes.

The wording follows the Go module the contract comes from (docs/contract.md#errors).

This module imports no other module of agentmemory (the import graph's bottom); it imports
:mod:`recallers.errors`, because ``EmptyQueryError`` is also a :class:`recallers.EmptyQueryError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from recallers.errors import EmptyQueryError as _RecallersEmptyQuery

if TYPE_CHECKING:
    from .entries import Change

__all__ = [
    "AgentMemoryError",
    "BudgetError",
    "ChromaAddressError",
    "ChromaServerError",
    "ChromaServerTimeoutError",
    "ConflictError",
    "DataFormatError",
    "DataNotFoundError",
    "DownloadError",
    "EmbedderMismatchError",
    "EmbedderNameError",
    "EmptyQueryError",
    "EntryTooLargeError",
    "ImportIncompleteError",
    "ImportLineError",
    "IndexDamagedError",
    "IndexDamagedWarning",
    "IndexOutOfStepError",
    "IndexOutOfStepWarning",
    "IndexReadOnlyError",
    "IndexWriteError",
    "InvalidEntryError",
    "KindPolicyError",
    "ManifestBaseError",
    "ManifestRecordError",
    "NoStoreError",
    "NotFoundError",
    "RecallModeError",
    "RerankError",
    "ServerRecordWarning",
    "StoreFormatError",
    "StoreFullError",
    "StoreIOError",
    "StoreLinkError",
    "StoreLockedError",
    "StoreUnavailableError",
    "ToolConfigError",
    "io_error",
]


class AgentMemoryError(Exception):
    """Root of every error agentmemory raises on purpose."""


class NotFoundError(AgentMemoryError, KeyError):
    """No live entry ``scope/name``: never written, or forgotten (a tombstone counts as absent).

    Attributes:
        scope: the scope asked for.
        name: the name asked for.
    """

    def __init__(self, scope: str, name: str) -> None:
        self.scope = scope
        self.name = name
        super().__init__(f"agentmemory: no such entry: {scope}/{name}")

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class InvalidEntryError(AgentMemoryError, ValueError):
    """An entry, scope, name or meta that breaks the rules of :func:`agentmemory.check_entry`.

    The message starts ``agentmemory: invalid entry: `` and names the entry, the field and the
    value. Nothing was written.

    Attributes:
        field: which part of the entry broke a rule: ``"scope"``, ``"name"``, ``"content"``,
            ``"meta"`` or ``"query"``.
        detail: the message without its ``agentmemory: invalid entry: `` prefix.
    """

    def __init__(self, detail: str, *, field: str = "") -> None:
        self.field = field
        self.detail = detail
        super().__init__(f"agentmemory: invalid entry: {detail}")


class KindPolicyError(AgentMemoryError, ValueError):
    """A kind policy or kind registry given a value it cannot hold: a kind that is not
    kebab-case, or ``max_entries`` under 1. The message names the value and the rule."""


class EntryTooLargeError(AgentMemoryError, ValueError):
    """Content over the store's ``max_entry_bytes``. Nothing was written.

    Attributes:
        scope, name: the entry.
        size: the attempted content size in UTF-8 bytes.
        limit: the store's bound in bytes.
        stored: the size in bytes of the live entry, or ``None`` when there is none.
    """

    def __init__(self, scope: str, name: str, size: int, limit: int, stored: int | None) -> None:
        self.scope = scope
        self.name = name
        self.size = size
        self.limit = limit
        self.stored = stored
        msg = f"agentmemory: entry {scope}/{name} is {size} bytes, over the {limit} byte limit"
        if stored is not None:
            msg += f"; it holds {stored} bytes now"
        super().__init__(msg + "; split it or trim it")


class ConflictError(AgentMemoryError):
    """A conditional write (``if_hash``) found another state than the one it expected.

    Attributes:
        scope, name: the entry.
        want: the hash the caller required, ``""`` for "must not exist".
        have: the hash the store holds, ``""`` when there is no live entry.
    """

    def __init__(self, scope: str, name: str, want: str, have: str) -> None:
        self.scope = scope
        self.name = name
        self.want = want
        self.have = have
        key = f"{scope}/{name}"
        if want == "":
            msg = f"agentmemory: entry {key} already exists with hash {have}"
        elif have == "":
            msg = f"agentmemory: entry {key} no longer exists; expected hash {want}"
        else:
            msg = f"agentmemory: entry {key} has hash {have}, not {want}; read it again"
        super().__init__(msg)


class BudgetError(AgentMemoryError, ValueError):
    """A render bound the block cannot meet, or a negative scope cap. No block is returned."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"agentmemory: render bound is too small for the block: {detail}")


class ManifestBaseError(AgentMemoryError, ValueError):
    """A manifest delta whose base is not a manifest the reader holds."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(
            "agentmemory: manifest delta is not based on a manifest the reader holds: " + detail
        )


class ManifestRecordError(AgentMemoryError, ValueError):
    """A manifest record that cannot be read or folded: not JSON, a member of the wrong type, or a
    delta whose operations do not fit the manifest it is based on, or whose result does not hash as
    it says. Messages follow the Go module (docs/contract.md#applying-a-record): they start
    ``agentmemory: manifest record:``, ``agentmemory: manifest delta:`` or ``agentmemory: manifest
    delta entries|omitted: element <i> ...``. The manifest in force is unchanged.
    """


class StoreFormatError(AgentMemoryError, ValueError):
    """A store file this code cannot read: not a database, a table of ours with other columns, a
    schema from a newer version, or a journal record that does not decode. Nothing was written.

    Attributes:
        path: the file.
        detail: what was found and what to do, without the ``agentmemory: store <path>`` prefix.
    """

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(f"agentmemory: store {path} cannot be read: {detail}")


class StoreLockedError(AgentMemoryError, TimeoutError):
    """Another writer held the store past the timeout; names the file and, where known, the holder.

    Attributes:
        path: the file or folder that is held.
        holder: who holds it (for example ``"pid 4242 on host laptop"``), or ``""`` when unknown.
    """

    def __init__(self, path: str, holder: str = "", detail: str = "") -> None:
        self.path = path
        self.holder = holder
        msg = f"agentmemory: store {path} is locked"
        if holder:
            msg += f" by {holder}"
        if detail:
            msg += f"; {detail}"
        super().__init__(msg)


class StoreUnavailableError(AgentMemoryError, ConnectionError):
    """The store's database server cannot be reached, or the connection dropped during an
    operation (``PostgresStore``). A write that failed this way wrote nothing, unless the message
    says its outcome could not be checked.

    Attributes:
        where: the database, as ``postgresql://user@host:port/dbname`` (never the password).
        detail: what happened and what to do, without the ``agentmemory: store <where>`` prefix.
    """

    def __init__(self, where: str, detail: str) -> None:
        self.where = where
        self.detail = detail
        super().__init__(f"agentmemory: store {where} is unavailable: {detail}")


class ChromaServerError(AgentMemoryError, ConnectionError):
    """A Chroma server of a store folder (``agentmemory server``, or ``--chroma-url``) cannot be
    used: it does not answer, it is of another chromadb version than this process's, its port is
    taken by something else, or it did not start (docs/storage.md#several-processes).

    Attributes:
        where: the server, as ``http://127.0.0.1:PORT`` (with ``pid N`` when it is the folder's).
        detail: what happened and what to do.
    """

    def __init__(self, where: str, detail: str) -> None:
        self.where = where
        self.detail = detail
        super().__init__(f"agentmemory: Chroma server {where}: {detail}")


class ChromaServerTimeoutError(ChromaServerError, TimeoutError):
    """A Chroma server did not answer within the request timeout (stopped with SIGSTOP, or
    overloaded): not damage and not a refusal. An opener of the folder opens the journal alone
    (docs/storage.md#a-stuck-server).

    Attributes:
        where: the server, as :class:`ChromaServerError` names it.
        detail: what happened and what to do.
        timeout_s: the timeout that ran out, in seconds.
    """

    def __init__(self, where: str, detail: str, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        super().__init__(where, detail)


class ChromaAddressError(ChromaServerError, ValueError):
    """A Chroma server address that is missing where one is needed (a store whose journal is in
    PostgreSQL keeps its vectors on a server), or that is not ``HOST:PORT`` or
    ``http(s)://HOST[:PORT]`` (docs/storage.md#the-chroma-server-address).

    Attributes:
        value: the address as given, or ``None`` when none was given.
        where: ``value`` quoted, or ``(no address given)``.
        detail: what is wrong and what to give.
    """

    def __init__(self, value: str | None, detail: str) -> None:
        self.value = value
        super().__init__(repr(value) if value is not None else "(no address given)", detail)


class ServerRecordWarning(UserWarning):
    """A store folder records a Chroma server whose process is gone: the record is ignored (and
    replaced when the opener starts a server), and this warning says so once per open."""


class EmbedderMismatchError(AgentMemoryError, ValueError):
    """A store opened with another embedder than the one its vectors were made with.

    Attributes:
        path: the store.
        stored: the fingerprint recorded with the store.
        given: the fingerprint of the embedder passed in.
    """

    def __init__(self, path: str, stored: str, given: str) -> None:
        self.path = path
        self.stored = stored
        self.given = given
        super().__init__(
            f"agentmemory: store {path} was indexed with embedder {stored}, not {given}; "
            "open it with that embedder, or open it with reindex=True (or call reindex()) "
            "to rebuild the index with the new one"
        )


class EmbedderNameError(AgentMemoryError, ValueError):
    """An embedder name the registry cannot build: unknown, or with an argument it refuses
    (``"hashing:abc"``). Nothing was opened.

    Attributes:
        name: the name given.
        detail: the registry's message (it lists the names it knows).
    """

    def __init__(self, name: str, detail: str) -> None:
        self.name = name
        self.detail = detail
        super().__init__(detail)


class NoStoreError(AgentMemoryError, FileNotFoundError):
    """A store folder that holds no store (it has no ``journal.sqlite3``), or a store path that is
    a file. Raised by opening an existing store (:func:`agentmemory.open_journal`,
    :func:`agentmemory.open_store` with ``create=False``); nothing was created.

    Attributes:
        path: the folder (or file) given.
        is_file: ``True`` when ``path`` is a file, not a folder.
    """

    def __init__(self, path: str, *, is_file: bool = False) -> None:
        self.path = path
        self.is_file = is_file
        if is_file:
            msg = f"agentmemory: store path {path} is a file, not a folder"
        else:
            msg = f"agentmemory: no store at {path} (it has no journal.sqlite3)"
        super().__init__(msg)


class EmptyQueryError(AgentMemoryError, _RecallersEmptyQuery):
    """A search query that is empty or only white space. Nothing was searched.

    Also a :class:`recallers.EmptyQueryError` (and so a ``ValueError``), so that a caller of the
    ranking package alone and a caller of a store catch the same thing."""

    def __init__(self, query: str = "") -> None:
        super().__init__(query)


class RecallModeError(AgentMemoryError, ValueError):
    """A ``recall`` mode that is unknown, or that needs vectors the store does not keep.

    Attributes:
        mode: the mode asked for.
        store: the kind of store (``"MemStore"``).
    """

    def __init__(self, mode: str, store: str, *, known: Sequence[str]) -> None:
        self.mode = mode
        self.store = store
        if mode in known:
            msg = (
                f"agentmemory: recall mode {mode!r} needs a vector index and {store} keeps none; "
                "use mode 'bm25' or 'auto', or open a ChromaStore"
            )
        else:
            msg = f"agentmemory: recall mode {mode!r} is not one of {', '.join(known)}"
        super().__init__(msg)


class ImportLineError(AgentMemoryError, ValueError):
    """A JSON Lines file that cannot be imported (:func:`agentmemory.jsonl.read_entries`): not
    UTF-8, or a line that is not an entry (not JSON, not an object, an unknown member, a missing
    scope, name or content, an entry rule broken, an entry given twice). Nothing was written.

    Attributes:
        source: the file (or ``"stdin"``).
        line: the number of the first bad line, from 1.
        detail: what is wrong with it.
        others: how many more bad lines follow it.
    """

    def __init__(self, source: str, line: int, detail: str, *, others: int = 0) -> None:
        self.source = source
        self.line = line
        self.detail = detail
        self.others = others
        more = f" ({others} more bad line{'s' if others > 1 else ''})" if others else ""
        super().__init__(f"agentmemory: {source} line {line}: {detail}{more}; nothing was imported")


class ImportIncompleteError(AgentMemoryError):
    """An import (:func:`agentmemory.jsonl.import_entries`) that stopped midway: a batch could not
    be written (the store locked, the disk full, a read-only file). The batches before it are in
    the store; running the same import again finishes it (what is stored unchanged is skipped).
    The original error is the ``__cause__``.

    Attributes:
        done: how many entries of the file are in the store (written or already there).
        line: the first line of the batch that failed.
    """

    def __init__(self, cause: BaseException, *, done: int, line: int) -> None:
        self.done = done
        self.line = line
        if isinstance(cause, AgentMemoryError):
            what = str(cause).removeprefix("agentmemory: ")
        else:
            what = f"the store could not be written ({type(cause).__name__}: {cause})"
        where = (
            f"the {done} entries before line {line} are in the store"
            if done
            else ("nothing was imported")
        )
        super().__init__(
            f"agentmemory: {what}; {where}; run the same import again to finish "
            "(entries already stored unchanged are skipped)"
        )


class IndexOutOfStepError(AgentMemoryError):
    """The vector index is out of step with the journal and could not be repaired on its own.

    The message says what was found and how to repair it (usually ``reindex()``).
    """


class IndexWriteError(IndexOutOfStepError):
    """A write reached the journal, but the vector index could not be updated after it.

    The write happened: ``get``, ``list``, ``search`` and the journal show it; only vector search
    may miss it (or still find the old text) until the store brings the index up to date, which it
    does at its next write, when it is next opened, or on ``repair()``. The original error is the
    ``__cause__``.

    Attributes:
        path: the store.
        changes: the journal records of the write, in order.
    """

    def __init__(self, path: str, changes: Sequence[Change], cause: BaseException) -> None:
        self.path = path
        self.changes = list(changes)
        seqs = [c.seq for c in self.changes]
        where = f"seq {seqs[0]}" if len(seqs) == 1 else f"seq {min(seqs)} to {max(seqs)}"
        super().__init__(
            f"agentmemory: store {path}: the write is in the journal ({where}) but the vector "
            f"index was not updated ({type(cause).__name__}: {cause}); get, list and search see "
            "it, vector search may miss it until the index catches up at the next write, at the "
            "next open, or on repair()"
        )


class StoreLinkError(AgentMemoryError, OSError):
    """A symbolic link inside a Markdown folder where the store would read or write through it
    (its journal, cursor, vector folder or purge marker; a scope folder a write goes to). The
    store never follows a link inside its folder: these folders are committed, and git keeps
    links, so a link could make it read or overwrite a file outside the folder
    (docs/filestore-format.md#links). Nothing was read through it or written.

    Attributes:
        path: the link.
        target: where it points (as ``readlink`` says; ``""`` when it cannot be read).
    """

    def __init__(self, path: str, target: str) -> None:
        self.path = path
        self.target = target
        super().__init__(
            f"agentmemory: {path} is a symbolic link (to {target!r}); a Markdown folder never "
            "reads or writes through a link inside it, so nothing was read or written: replace "
            "the link with the file or folder itself, or remove it"
        )


class StoreIOError(AgentMemoryError, OSError):
    """The store's database failed for a reason outside agentmemory: the disk is full, the folder
    is read-only, the file's pages are damaged, or the operating system refused the file. The
    message is one line naming the store's folder, what happened and the cure.

    Attributes:
        path: the store's folder.
        kind: ``"full"``, ``"read-only"``, ``"damaged"`` or ``"io"``.
        detail: what the database said.
    """

    CURES: ClassVar[dict[str, str]] = {
        "full": "the disk is full; nothing was written: free some space and run the command "
        "again (an import goes on from where it stopped)",
        "read-only": "the store is read-only here; reads work, writes need a folder and files "
        "you may write",
        "damaged": "the journal database is damaged; copy the folder aside, then run "
        "'agentmemory verify' on it to see what is left, or restore the folder from a backup",
        "io": "the operating system refused the file; check the disk and the folder, then run "
        "the command again",
    }

    def __init__(self, path: str, kind: str, detail: str) -> None:
        self.path = path
        self.kind = kind
        self.detail = detail
        super().__init__(
            f"agentmemory: store {path}: {self.CURES.get(kind, self.CURES['io'])} ({detail})"
        )


class StoreFullError(StoreIOError):
    """The disk (or the quota) that holds the store is full (docs/storage.md#a-full-disk).

    A full disk is never damage: nothing is moved aside or rebuilt because of it. The write that
    raised it wrote nothing of itself (a write whose journal record landed never raises it: a
    derived file that could not be written lags and is caught up later). ``kind`` is ``"full"``.

    Attributes:
        path: the store's folder.
        detail: what the operating system or the database said.
    """

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(path, "full", detail)


def io_error(path: str, kind: str, detail: str) -> StoreIOError:
    """The :class:`StoreIOError` of ``kind`` (``"full"`` gives a :class:`StoreFullError`)."""
    return StoreFullError(path, detail) if kind == "full" else StoreIOError(path, kind, detail)


class IndexDamagedError(AgentMemoryError):
    """An index of the store (derived data: the lexical index or the vector index) cannot be read
    or written because its pages or files are damaged. The journal is intact; the cure is to
    rebuild the index from it (``agentmemory verify --repair``), which retrying does not replace.

    Attributes:
        path: the store's folder (or database file).
        index: ``"lexical"`` or ``"vector"``.
        detail: what the database said.
    """

    def __init__(self, path: str, index: str, detail: str) -> None:
        self.path = path
        self.index = index
        self.detail = detail
        super().__init__(
            f"agentmemory: the {index} index of store {path} is damaged ({detail}); the journal "
            f"is intact: run 'agentmemory verify --repair --path {path}' to rebuild the index "
            "from it"
        )


class IndexReadOnlyError(IndexDamagedError):
    """The vector index's files may not be written here (a read-only ``chroma/`` folder or
    ``chroma.sqlite3``, an immutable file): unusable as a damaged index is, so the journal takes
    the writes alone meanwhile, but nothing is wrong with its files and nothing is moved aside.
    The cure is to make them writable, then ``agentmemory verify --repair`` indexes what the
    journal took meanwhile (docs/storage.md#a-read-only-vector-index).

    Attributes: those of :class:`IndexDamagedError` (``index`` is ``"vector"``).
    """

    def __init__(self, path: str, index: str, detail: str) -> None:
        super().__init__(path, index, detail)
        self.args = (
            f"agentmemory: the {index} index of store {path} may not be written here ({detail}); "
            f"make {path}/chroma and the files in it writable, then run 'agentmemory verify "
            f"--repair --path {path}' to index what the journal took meanwhile",
        )


class IndexDamagedWarning(UserWarning):
    """A write reached the journal but not the lexical index, which is damaged; search misses it
    until ``agentmemory verify --repair`` rebuilds the index."""


class IndexOutOfStepWarning(UserWarning):
    """A store opened with a vector index that misses what its journal holds (for example, its
    Chroma folder was deleted). The store works; vector search misses the entries until
    ``reindex()`` or ``repair()``; ``verify()`` lists them."""


class DataNotFoundError(AgentMemoryError, FileNotFoundError):
    """An evaluation data set that is in none of the places looked at.

    Attributes:
        dataset: which set (``"locomo"``, ``"scifact"``).
        looked: the paths tried, in order.
        url: where the public file can be fetched.

    ``why``, when given, replaces the usual cure (``--data`` or ``--download``) in the message.
    """

    def __init__(
        self, dataset: str, looked: list[str], url: str, *, why: str | None = None
    ) -> None:
        self.dataset = dataset
        self.looked = looked
        self.url = url
        cure = why or (
            f"give its folder with --data, or fetch the public file ({url}) with --download "
            "(into the cache, or into the folder --data names)"
        )
        super().__init__(
            f"agentmemory: no {dataset} data found (looked in {', '.join(looked)}); {cure}"
        )


class DataFormatError(AgentMemoryError, ValueError):
    """An evaluation data file that is not in its public schema (LoCoMo's ``locomo10.json``, a
    BEIR ``corpus.jsonl``/``queries.jsonl``/``qrels/*.tsv``): not JSON, a row without its id, a
    qrels line without a score. The message names the file and the line or sample.

    Attributes:
        path: the file (or, for a LoCoMo sample, the file it came from when known, else ``""``).
    """

    def __init__(self, message: str, *, path: str = "") -> None:
        self.path = path
        super().__init__(message)


class DownloadError(AgentMemoryError, OSError):
    """A download that failed or did not match its expected SHA-256; nothing was left behind.

    Attributes:
        url: what was fetched.
        detail: what went wrong (HTTP status, network error, the digests that differ).
    """

    def __init__(self, url: str, detail: str) -> None:
        self.url = url
        self.detail = detail
        super().__init__(f"agentmemory: download of {url} failed: {detail}")


class ToolConfigError(AgentMemoryError, ValueError):
    """:func:`agentmemory.tools` was given a set of scopes it cannot serve: none, one that is not
    kebab-case, one given twice, one both writable and read-only, or search bounds under 1.
    Raised when the tools are built, never by a tool call."""


class RerankError(AgentMemoryError, ValueError):
    """A ``recall(rerank=...)`` the store cannot serve: ``rerank=True`` on a store opened without
    a reranker, or a ``rerank`` that is neither a bool, a reranker nor a reranker's name
    (docs/recall.md#reranking). Nothing was searched.

    Attributes:
        value: the ``rerank`` given.
    """

    def __init__(self, value: object, detail: str) -> None:
        self.value = value
        super().__init__(f"agentmemory: rerank={value!r}: {detail}")
