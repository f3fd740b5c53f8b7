"""The conformance suite every :class:`~agentmemory.Store` passes.

It holds every case of the Go module's ``storetest.Run`` (docs/contract.md#the-conformance-suite), in
the same order: validation, put/get/list, bounds, if_hash, forget, journal, lost updates, search,
concurrency and persistence. It needs no test framework: a case is a function that takes a
:class:`Harness` and raises ``AssertionError`` on a failure. A third party runs it against its own
store with pytest like this::

    import pytest
    from agentmemory.testing import CASES, Harness

    @pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
    def test_conformance(case, tmp_path):
        case(Harness(new=lambda: MyStore(tmp_path / "db"), reopen=lambda s: MyStore(s.path)))

or without one, with :func:`run`. ``new`` must return a fresh, empty store each call whose
``max_entry_bytes`` is at least 256; ``reopen`` returns a second handle on the same storage, or is
``None`` for a store that does not persist (the persistence case then does nothing).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from .entries import REDACTED, SOURCE_PURGED, Change, Entry, content_hash
from .errors import ConflictError, EntryTooLargeError, InvalidEntryError, NotFoundError
from .lost_updates import lost_updates
from .session import provenance, session
from .store import Store

__all__ = ["CASES", "Harness", "run"]

MIN_SUITE_ENTRY_BYTES = 256
"""The smallest ``max_entry_bytes`` the bounds case can run with."""


@dataclass
class Harness:
    """How the suite makes stores.

    Attributes:
        new: returns a fresh, empty store (``max_entry_bytes >= 256``) on every call.
        reopen: returns a second handle on the storage of the store it is given, or ``None`` for
            a store that does not persist.
    """

    new: Callable[[], Store]
    reopen: Callable[[Store], Store] | None = None
    _open: list[Store] = field(default_factory=list, repr=False)

    @contextmanager
    def store(self) -> Iterator[Store]:
        """A fresh store from ``new``, closed (with every handle reopened from it) on exit."""
        st = self.new()
        self._open.append(st)
        try:
            yield st
        finally:
            while self._open:
                self._open.pop().close()

    def second_handle(self, st: Store) -> Store:
        """A handle from ``reopen``, closed when the enclosing :meth:`store` block ends."""
        assert self.reopen is not None
        other = self.reopen(st)
        self._open.append(other)
        return other


def _same_entry(got: Entry, want: Entry) -> bool:
    return (
        got.scope == want.scope
        and got.name == want.name
        and got.content == want.content
        and (got.meta or None) == (want.meta or None)
    )


def _raises(exc: type[BaseException], fn: Callable[[], object]) -> BaseException:
    try:
        fn()
    except exc as err:
        return err
    raise AssertionError(f"expected {exc.__name__}")


def _journal(st: Store, after: int = 0) -> list[Change]:
    return list(st.journal(after))


def case_validation(h: Harness) -> None:
    """Sixteen invalid entries are refused with InvalidEntryError; nothing reaches the store."""
    bad: list[tuple[str, Entry]] = [
        ("empty scope", Entry("", "a", "x")),
        ("upper scope", Entry("User", "a", "x")),
        ("path scope", Entry("../etc", "a", "x")),
        ("empty name", Entry("user", "", "x")),
        ("spaced name", Entry("user", "a b", "x")),
        ("double hyphen", Entry("user", "a--b", "x")),
        ("leading hyphen", Entry("user", "-a", "x")),
        ("dotted name", Entry("user", "a.md", "x")),
        ("long name", Entry("user", "a" * 65, "x")),
        ("empty content", Entry("user", "a", "")),
        ("bad utf8", Entry("user", "a", b"x\xff".decode("utf-8", "surrogateescape"))),
        ("meta key", Entry("user", "a", "x", {"Type": "y"})),
        ("reserved meta", Entry("user", "a", "x", {"name": "y"})),
        ("multiline meta", Entry("user", "a", "x", {"description": "a\nb"})),
        ("padded meta", Entry("user", "a", "x", {"description": " a "})),
        ("meta too big", Entry("user", "a", "x", {"description": "d" * 1024})),
    ]
    with h.store() as st:
        for label, e in bad:
            try:
                st.put(e)
            except InvalidEntryError:
                continue
            except Exception as err:  # pragma: no cover - reported as a failure
                raise AssertionError(f"{label}: raised {type(err).__name__}: {err}") from err
            raise AssertionError(f"{label}: put accepted an invalid entry")
        assert st.list("user") == [], "an invalid entry reached the store"
        assert _journal(st) == [], "an invalid entry reached the journal"


def case_put_get_list(h: Harness) -> None:
    """Round trips byte for byte; meta None stays None; list is by name; meta replaced whole."""
    with h.store() as st:
        _raises(NotFoundError, lambda: st.get("user", "missing"))
        assert st.list("nowhere") == []
        style = Entry(
            "user",
            "style",
            "Short answers.\n",
            {"description": "How to answer", "type": "feedback"},
        )
        odd = Entry("user", "odd", "  ---\nname: not-meta\n---\nsüß ✓ 日本")
        st.put(style)
        st.put(odd)
        st.put(Entry("project", "build", "make check"))
        got = st.get("user", "style")
        assert got.hash == content_hash(style.content)
        assert got.updated is not None and not got.deleted
        assert _same_entry(got, style), got
        got_odd = st.get("user", "odd")
        assert got_odd.content == odd.content, "content must round-trip byte for byte"
        assert got_odd.meta is None, f"empty meta must read as None, got {got_odd.meta!r}"
        listed = st.list("user")
        assert [e.name for e in listed] == ["odd", "style"]
        for e in listed:
            assert e.hash == content_hash(e.content) and e.updated is not None
            assert e.scope == "user"
        assert [e.name for e in st.list("project")] == ["build"]
        st.put(Entry("user", "style", "Long answers.\n", {"type": "feedback"}))
        got = st.get("user", "style")
        assert got.content == "Long answers.\n" and got.meta == {"type": "feedback"}
        assert got.description == "", "meta is replaced whole, not merged"
        assert got.meta is not None
        got.meta["type"] = "changed"
        assert st.get("user", "style").meta == {"type": "feedback"}, "caller mutation leaked in"
        st.put(Entry("user", "bare", "x", {}))
        assert st.get("user", "bare").meta is None


def case_bounds(h: Harness) -> None:
    """Content at the bound lands; over it is refused with the sizes; a refusal writes nothing."""
    with h.store() as st:
        limit = st.max_entry_bytes
        assert limit >= MIN_SUITE_ENTRY_BYTES, f"max_entry_bytes {limit} < {MIN_SUITE_ENTRY_BYTES}"
        st.put(Entry("user", "at", "x" * limit))
        err = _raises(EntryTooLargeError, lambda: st.put(Entry("user", "over", "x" * (limit + 1))))
        assert isinstance(err, EntryTooLargeError)
        assert (err.size, err.limit, err.stored) == (limit + 1, limit, None)
        assert (err.scope, err.name) == ("user", "over")
        _raises(NotFoundError, lambda: st.get("user", "over"))
        st.put(Entry("user", "small", "ten bytes!"))
        err = _raises(EntryTooLargeError, lambda: st.put(Entry("user", "small", "y" * (limit + 7))))
        assert isinstance(err, EntryTooLargeError)
        assert err.stored == 10 and err.size == limit + 7
        assert "holds 10 bytes now" in str(err)
        assert st.get("user", "small").content == "ten bytes!"
        assert len(_journal(st)) == 2


def case_if_hash(h: Harness) -> None:
    """if_hash is a precondition; "" means must not exist; a tombstone counts as absent."""
    with h.store() as st:
        st.put(Entry("user", "profile", "Chris."), if_hash="")
        h1 = content_hash("Chris.")
        err = _raises(ConflictError, lambda: st.put(Entry("user", "profile", "Chris."), if_hash=""))
        assert isinstance(err, ConflictError) and (err.want, err.have) == ("", h1)
        stale = content_hash("stale")
        err = _raises(
            ConflictError,
            lambda: st.put(Entry("user", "profile", "Chris. Prefers Go."), if_hash=stale),
        )
        assert isinstance(err, ConflictError) and (err.want, err.have) == (stale, h1)
        assert st.get("user", "profile").content == "Chris."
        h2 = st.put(Entry("user", "profile", "Chris. Prefers Go."), if_hash=h1).entry.hash
        st.forget("user", "profile")
        err = _raises(ConflictError, lambda: st.put(Entry("user", "profile", "again"), if_hash=h2))
        assert isinstance(err, ConflictError) and (err.want, err.have) == (h2, "")
        st.put(Entry("user", "profile", "again"), if_hash="")
        _raises(InvalidEntryError, lambda: st.put(Entry("user", "Bad", "x"), if_hash=""))
        assert len(_journal(st)) == 4


def case_forget(h: Harness) -> None:
    """Forget writes a tombstone with the last content and meta; the name can be created again."""
    with h.store() as st:
        _raises(NotFoundError, lambda: st.forget("user", "missing"))
        st.put(Entry("user", "tz", "Europe/London", {"description": "Timezone"}))
        st.put(Entry("user", "keep", "kept"))
        with session("sess-f"):
            rec = st.forget("user", "tz")
        assert rec.entry.deleted and rec.seq == 3 and rec.session == "sess-f"
        _raises(NotFoundError, lambda: st.get("user", "tz"))
        assert [e.name for e in st.list("user")] == ["keep"]
        _raises(NotFoundError, lambda: st.forget("user", "tz"))
        assert st.search(["user"], "London") == []
        changes = _journal(st)
        assert len(changes) == 3
        tomb = changes[2]
        assert tomb.entry.deleted and tomb.entry.content == "Europe/London"
        assert tomb.entry.hash == content_hash("Europe/London")
        assert tomb.prev == tomb.replaced == tomb.entry.hash
        assert tomb.session == "sess-f" and tomb.entry.description == "Timezone"
        assert tomb.entry.updated is not None
        st.put(Entry("user", "tz", "Europe/Paris"))
        after = _journal(st, 3)
        assert len(after) == 1
        assert (after[0].prev, after[0].replaced, after[0].entry.deleted) == ("", "", False)


def case_journal(h: Harness) -> None:
    """Records are contiguous, equal to what put returned, resumable, and the caller's own copy."""
    with h.store() as st:
        assert _journal(st) == []
        writes: list[tuple[str, Entry]] = [
            ("sess-a", Entry("user", "one", "1")),
            ("sess-b", Entry("user", "two", "2")),
            ("sess-b", Entry("user", "one", "1b")),
            ("", Entry("project", "one", "p1")),
            ("sess-a", Entry("user", "one", "1c", {"k": "v"})),
        ]
        expected_prev = ["", "", content_hash("1"), "", content_hash("1b")]
        returned: list[Change] = []
        for sess, e in writes:
            with session(sess):
                rec = st.put(e)
            assert rec is not None
            returned.append(rec)
        changes = _journal(st)
        for got, want in zip(changes, returned, strict=True):
            assert got == want, f"journal record differs from the returned one:\n{got}\n{want}"
        if returned[4].entry.meta is not None:
            returned[4].entry.meta["k"] = "changed"
        object.__setattr__(returned[0], "entry", returned[0].entry.copy(meta={"x": "y"}))
        assert _journal(st)[4].entry.meta == {"k": "v"}, "mutating a returned record leaked in"
        assert _journal(st)[0].entry.meta is None
        assert [c.seq for c in changes] == [1, 2, 3, 4, 5]
        last_at = None
        for c, (sess, e), prev in zip(changes, writes, expected_prev, strict=True):
            assert (c.entry.scope, c.entry.name, c.entry.content) == (e.scope, e.name, e.content)
            assert c.entry.meta == e.meta
            assert c.entry.hash == content_hash(e.content) and not c.entry.deleted
            assert c.entry.updated is not None
            assert c.prev == prev and c.replaced == prev
            assert c.session == sess and c.source == "" and c.at is not None
            assert last_at is None or c.at >= last_at, "at went backwards"
            last_at = c.at
        assert st.get("user", "one").updated == changes[4].entry.updated
        for after in (0, 1, 3, 4, 5, 6, 100):
            window = _journal(st, after)
            assert len(window) == max(0, 5 - after), (after, len(window))
            if window:
                assert window[0].seq == after + 1
        it = st.journal(0)
        first_two = [next(it), next(it)]
        close = getattr(it, "close", None)
        if close is not None:
            close()
        assert [c.seq for c in first_two] == [1, 2]
        yielded = next(iter(st.journal(0)))
        object.__setattr__(yielded.entry, "content", "changed")
        assert next(iter(st.journal(0))).entry.content == "1"


def case_lost_updates(h: Harness) -> None:
    """Two writes built on one read: the later is a lost update; anchored writers report none."""
    with h.store() as st:
        st.put(Entry("user", "profile", "Chris."))
        read = st.get("user", "profile")
        slack = "Chris. Lives in Bristol."
        with session("slack"):
            st.put(Entry("user", "profile", slack), based_on=read.hash)
        with session("telegram"):
            st.put(Entry("user", "profile", "Chris. Prefers Go."), based_on=read.hash)
        lost = lost_updates(st)
        assert len(lost) == 1, lost
        c = lost[0].change
        assert c.seq == 3 and c.session == "telegram" and c.prev == read.hash
        assert c.replaced == content_hash(slack) and lost[0].over == content_hash(slack)
        assert lost_updates(st, after=2) == []
    with h.store() as st:
        st.put(Entry("user", "e", "one"), if_hash="")
        st.put(Entry("user", "e", "two"), if_hash=content_hash("one"))
        st.put(Entry("user", "e", "three"), based_on=content_hash("two"))
        st.put(Entry("user", "e", "four"))
        st.forget("user", "e")
        st.put(Entry("user", "e", "again"))
        assert lost_updates(st) == []
        st.put(Entry("user", "e", "again!"), based_on=content_hash("by hand"))
        lost = lost_updates(st)
        assert len(lost) == 1
        assert lost[0].change.prev == content_hash("by hand")
        assert lost[0].over == lost[0].change.replaced == content_hash("again")


def _search_fixture(st: Store) -> None:
    st.put(
        Entry(
            "user", "editor", "Uses Neovim with a dark theme.", {"description": "Editor preference"}
        )
    )
    st.put(
        Entry(
            "user",
            "language",
            "Prefers Go over Python for tools.",
            {"description": "Language preference"},
        )
    )
    st.put(Entry("user", "timezone", "Europe/London"))
    st.put(Entry("project", "build", "Run make check before a commit; the Go toolchain is 1.25."))
    st.put(Entry("hidden", "secret", "Go is also mentioned here."))


def case_search(h: Harness) -> None:
    """search is the reference predicate: every word, any case, in name, meta values or content."""
    table: list[tuple[str, list[str], str, set[str]]] = [
        ("one word, one scope", ["user"], "neovim", {"user/editor"}),
        ("case", ["user"], "NEOVIM", {"user/editor"}),
        ("across scopes", ["user", "project"], "Go", {"user/language", "project/build"}),
        ("scope restricts", ["user"], "Go", {"user/language"}),
        ("all words must match", ["user", "project"], "Go Python", {"user/language"}),
        ("name matches", ["user"], "timezone", {"user/timezone"}),
        ("description matches", ["user"], "preference", {"user/editor", "user/language"}),
        ("no match", ["user", "project"], "rust", set()),
        ("unknown scope", ["nowhere"], "go", set()),
    ]
    with h.store() as st:
        _search_fixture(st)
        for label, scopes, query, want in table:
            got = {e.key for e in st.search(scopes, query)}
            assert got == want, f"{label}: search({scopes}, {query!r}) gave {got}, want {want}"
        limited = st.search(["user", "project"], "Go", 1)
        assert len(limited) == 1, f"limit 1 gave {len(limited)}"
        for e in st.search(["user", "project"], "Go"):
            assert e.hash and e.updated is not None and not e.deleted


CONCURRENT_WRITERS = 4
CONCURRENT_ITERATIONS = 8


def case_concurrent(h: Harness) -> None:
    """Four threads write and append to one shared entry with if_hash; nothing is lost."""
    with h.store() as st:
        st.put(Entry("user", "shared", "facts:"))
        errors: list[BaseException] = []

        def writer(w: int) -> None:
            try:
                with session(f"sess-{w}"):
                    for i in range(CONCURRENT_ITERATIONS):
                        st.put(Entry("user", f"w{w}-n{i}", f"writer {w} entry {i}"))
                        for _ in range(200):
                            cur = st.get("user", "shared")
                            try:
                                st.put(
                                    Entry("user", "shared", cur.content + f" w{w}-{i}"),
                                    if_hash=cur.hash,
                                )
                                break
                            except ConflictError:
                                continue
                        else:
                            raise AssertionError(f"writer {w} gave up on shared after 200 tries")
            except BaseException as err:  # reported below
                errors.append(err)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(CONCURRENT_WRITERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        shared = st.get("user", "shared").content
        for w in range(CONCURRENT_WRITERS):
            for i in range(CONCURRENT_ITERATIONS):
                assert f" w{w}-{i}" in shared, f"lost append w{w}-{i}"
                st.get("user", f"w{w}-n{i}")
        changes = _journal(st)
        n = 1 + CONCURRENT_WRITERS * CONCURRENT_ITERATIONS * 2
        assert len(changes) == n, len(changes)
        assert [c.seq for c in changes] == list(range(1, n + 1))
        last: dict[str, str] = {}
        for c in changes:
            assert c.replaced == last.get(c.entry.key, ""), f"record {c.seq} breaks the chain"
            assert c.prev == c.replaced, f"record {c.seq} was not anchored"
            last[c.entry.key] = "" if c.entry.deleted else c.entry.hash
        assert last["user/shared"] == st.get("user", "shared").hash


def case_persistence(h: Harness) -> None:
    """A second handle sees the same entries and journal, and each sees the other's writes."""
    if h.reopen is None:
        return
    with h.store() as st:
        with session("sess-p"):
            st.put(Entry("user", "style", "Short.", {"description": "How to answer"}))
            st.put(Entry("user", "gone", "temporary"))
            st.put(Entry("user", "odd", "  ---\nname: x\n---\nsüß ✓ 日本"))
            st.put(Entry("project", "build", "make check"))
            st.forget("user", "gone")
        before = _journal(st)
        style = st.get("user", "style")
        st2 = h.second_handle(st)
        assert st2.max_entry_bytes == st.max_entry_bytes
        got = st2.get("user", "style")
        assert _same_entry(got, style) and got.hash == style.hash and got.updated == style.updated
        assert st2.get("user", "odd").content == "  ---\nname: x\n---\nsüß ✓ 日本"
        _raises(NotFoundError, lambda: st2.get("user", "gone"))
        assert [e.name for e in st2.list("user")] == ["odd", "style"]
        assert _journal(st2) == before, "the reopened journal differs"
        st2.put(Entry("user", "more", "more facts"))
        tail = _journal(st, len(before))
        assert len(tail) == 1 and tail[0].seq == len(before) + 1
        st.get("user", "more")
        st3 = h.second_handle(st2)
        assert len(st3.search(["user"], "more")) == 1


def case_out_of_date(h: Harness) -> None:
    """Validity meta (docs/kinds.md#out-of-date-on-purpose-only): a bad date or supersedes is
    refused; an expired or superseded entry leaves recall, stays in get, list and the journal,
    and include_superseded finds it; a second handle judges the same."""
    with h.store() as st:
        bad_metas: list[dict[str, str]] = [{"valid-until": "soon"}, {"supersedes": "Bad Name"}]
        for meta in bad_metas:
            entry = Entry("p", "x", "deploy", meta)
            _raises(InvalidEntryError, lambda entry=entry: st.put(entry))  # type: ignore[misc]
        assert _journal(st) == [], "a refused write reached the journal"
        st.put(Entry("p", "old", "deploy on monday"))
        st.put(Entry("p", "new", "deploy on friday", {"supersedes": "old"}))
        st.put(Entry("p", "gone", "deploy on sunday", {"valid-until": "2000-01-01"}))
        for handle in [st] + ([h.second_handle(st)] if h.reopen is not None else []):
            found = [hit.entry.name for hit in handle.recall("deploy", scopes=["p"], limit=5)]
            assert found == ["new"], f"recall judged out-of-date entries in force: {found}"
            every = handle.recall("deploy", scopes=["p"], limit=5, include_superseded=True)
            assert sorted(hit.entry.name for hit in every) == ["gone", "new", "old"]
            assert handle.get("p", "old").content == "deploy on monday"
            assert [e.name for e in handle.list("p")] == ["gone", "new", "old"]
            assert len(_journal(handle)) == 3


def case_provenance(h: Harness) -> None:
    """Provenance (docs/kinds.md#provenance): message, tool and reason set in the session
    context reach each journal record, and a second handle reads them back."""
    with h.store() as st:
        with session("s-1"), provenance(message="m-1", tool="t", reason="asked"):
            st.put(Entry("p", "a", "x"))
            st.forget("p", "a")
        st.put(Entry("p", "b", "y"))
        handles = [st] + ([h.second_handle(st)] if h.reopen is not None else [])
        for handle in handles:
            got = [(c.session, c.message, c.tool, c.reason) for c in _journal(handle)]
            assert got == [
                ("s-1", "m-1", "t", "asked"),
                ("s-1", "m-1", "t", "asked"),
                ("", "", "", ""),
            ], got


def case_purge(h: Harness) -> None:
    """A store with ``purge`` (docs/contract.md#purge-erasing-an-entry-for-good): every record
    of the entry is redacted, numbering and chains kept, one ``purged`` record names the reason;
    other entries untouched; a store without ``purge``, or whose ``can_purge`` is false (a
    ChromaStore over a journal that cannot purge), passes."""
    with h.store() as st:
        purge = getattr(st, "purge", None)
        if purge is None or not getattr(st, "can_purge", True):
            return
        st.put(Entry("user", "keep", "kept words"))
        st.put(Entry("user", "secret", "alpha secret words"))
        st.put(
            Entry("user", "secret", "beta secret words"), if_hash=content_hash("alpha secret words")
        )
        receipt = purge("user", "secret", reason="asked to erase", session="cli")
        assert receipt.tombstone is not None and receipt.tombstone.seq == 4
        assert receipt.redacted == (2, 3, 4) and receipt.record.seq == 5
        _raises(NotFoundError, lambda: st.get("user", "secret"))
        _raises(InvalidEntryError, lambda: purge("user", "keep", reason="  "))
        _raises(NotFoundError, lambda: purge("user", "never", reason="why"))
        js = _journal(st)
        assert [c.seq for c in js] == [1, 2, 3, 4, 5]
        for c in js[1:4]:
            assert c.redacted and c.entry.content == REDACTED and c.entry.meta is None
            assert "sha256:" not in c.entry.hash + c.prev + c.replaced
        assert js[2].replaced == js[1].entry.hash and js[3].entry.deleted
        last = js[4]
        assert last.source == SOURCE_PURGED and last.entry.content == "asked to erase"
        assert last.session == "cli" and last.entry.deleted
        assert lost_updates(st) == []
        assert (
            st.search(["user"], "secret") == [] and st.get("user", "keep").content == "kept words"
        )
        assert st.verify_erased("user", "secret").erased  # type: ignore[attr-defined]
        assert not st.verify_erased("user", "keep").erased  # type: ignore[attr-defined]


def _has_vector_leg(st: Store) -> bool:
    from .errors import RecallModeError

    try:
        st.recall("probe", scopes=["user"], limit=1, mode="vector")
    except RecallModeError:
        return False
    return True


def case_near_duplicates(h: Harness) -> None:
    """The near-duplicate check of ``memory_save`` (docs/contract.md#near-duplicates-at-save-time):
    on a store with a vector leg, a copy of a live entry under another name is named
    (``report``) or refused with nothing written (``refuse``); the entry itself, the one a save
    supersedes, superseded entries, entries of scopes the tools do not read and unrelated content
    are never named; a copy of an entry of a read-only scope is named too; a replace lands under
    ``refuse`` (it adds no copy) and names them; ``off`` names nothing. On a store without one, every save
    lands and names nothing. Only exact copies count as near here, so the case holds with any
    embedder (a copy's cosine is 1)."""
    from .tools import tools

    fact = "Prefers dark mode in Vim."
    with h.store() as st:
        st.put(Entry("user", "editor", fact))
        st.put(Entry("team", "style", "Tabs, not spaces, in Go code."))
        st.put(Entry("secret", "copy", fact))  # a scope these tools may not read
        vectors = _has_vector_leg(st)

        def save(policy: str, **args: str) -> tuple[bool, tuple[str, ...], str]:
            kit = {t.name: t for t in tools(st, ["user"], read_scopes=["team"], duplicates=policy)}
            got = kit["memory_save"](args)
            return got.is_error, tuple(d.key for d in got.duplicates), got.text

        before = len(_journal(st))
        refused, named, text = save("refuse", name="dark", content=fact)
        if vectors:
            assert refused and named == ("user/editor",), text  # never secret/copy
            assert "memory_patch" in text and 'supersedes "editor"' in text, text
            assert len(_journal(st)) == before, "a refused save reached the journal"
            _raises(NotFoundError, lambda: st.get("user", "dark"))
        else:
            assert not refused and named == (), text
            st.forget("user", "dark")
        assert save("refuse", name="editor", content=fact)[:2] == (False, ())  # itself
        got = save("refuse", name="editor-v2", content=fact, supersedes="editor")
        assert got[:2] == (False, ()), got  # the entry it supersedes
        assert save("report", name="deploys", content="Staging deploys are on Tuesdays.")[1] == ()
        refused, named, text = save("report", name="again", content=fact)
        assert not refused
        assert named == (("user/editor-v2",) if vectors else ()), text  # not the superseded one
        # refuse stops a new copy only: replacing an entry adds none, so it lands and names
        refused, named, text = save("refuse", name="again", content=fact)
        assert not refused and named == (("user/editor-v2",) if vectors else ()), text
        named = save("report", name="tabs", content="Tabs, not spaces, in Go code.")[1]
        assert named == (("team/style",) if vectors else ()), named
        assert save("off", name="again-2", content=fact)[1] == ()


CASES: tuple[Callable[[Harness], None], ...] = (
    case_validation,
    case_put_get_list,
    case_bounds,
    case_if_hash,
    case_forget,
    case_journal,
    case_lost_updates,
    case_search,
    case_concurrent,
    case_persistence,
    case_out_of_date,
    case_provenance,
    case_purge,
    case_near_duplicates,
)
"""Every case: the reference's, in its order, then the out-of-date and provenance rules
(docs/kinds.md#out-of-date-on-purpose-only, docs/kinds.md#provenance), purge and the
near-duplicate check (docs/contract.md#near-duplicates-at-save-time)."""


def run(harness: Harness) -> None:
    """Run every case against ``harness``; the first failing case raises ``AssertionError``."""
    for case in CASES:
        case(harness)
