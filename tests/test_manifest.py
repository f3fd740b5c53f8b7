"""Manifest: hash, whole records, deltas, applying them, and the fold (docs/contract.md#manifests).

The hashes and JSON below are the reference's examples, with the hashes it abbreviates written out
in full (each is the SHA-256 of the content named beside it, and the abbreviation is checked too).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from agentmemory import (
    Entry,
    Manifest,
    ManifestEntry,
    ManifestFold,
    MemStore,
    apply_manifest_record,
    content_hash,
    render,
)
from agentmemory.errors import ManifestBaseError, ManifestRecordError
from agentmemory.manifest import MANIFEST_FOLD_DEPTH, MANIFEST_NS, OMIT_BLOCK, OMIT_BUDGET

GOLDEN = Path(__file__).resolve().parent / "golden" / "render"

# sha256 of "A\n", "B\n", "C\n", "D" * 300 and "B2\n"
HA = "sha256:06f961b802bc46ee168555f066d28f4f0e9afdf3f88174c1ee6f9de004fc30a0"
HB = "sha256:c0cde77fa8fef97d476c10aad3d2d54fcc2f336140d073651c2dcccf1e379fd6"
HC = "sha256:12f37a8a84034d3e623d726fe10e5031f4df997ac13f4d5571b5a90c41fb84fe"
HD = "sha256:c3e4aa037edd6d6a9ac164bb5aac86b71eb0770b3bdab5ac14204d0c4a3aa82f"
HB2 = "sha256:9a66cad0c766cb805dadfcfdc06f3efed248914d70b1ca335e921c7cfcdf8a37"
EXAMPLE_HASH = "sha256:557ad3562e895bc894358ea09c2f77d895983f311535a62a71e81194ad7b6479"
EDITED_HASH = "sha256:1a5f3026415faa0c2dfb449bbf947497c5403beb030a3e4fccceb24e51c0d040"
EMPTY_HASH = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def abbrev(h: str) -> str:
    return f"{h[:11]}…{h[-4:]}"


def example() -> Manifest:
    """The reference's example: a, b, c shown (2 bytes each), d omitted (300 bytes, budget)."""
    return Manifest(
        entries=(
            ManifestEntry("user", "a", HA, 2),
            ManifestEntry("user", "b", HB, 2),
            ManifestEntry("user", "c", HC, 2),
        ),
        omitted=(ManifestEntry("user", "d", HD, 300, OMIT_BUDGET),),
    )


def fixture(n: int, shown: int) -> Manifest:
    """n entries of scope user, the first ``shown`` shown, the rest omitted for the budget."""
    es = [ManifestEntry("user", f"fact-{i:03d}", content_hash(str(i)), 40 + i) for i in range(n)]
    return Manifest(
        tuple(es[:shown]),
        tuple(ManifestEntry(e.scope, e.name, e.hash, e.bytes, OMIT_BUDGET) for e in es[shown:]),
    )


def replace(
    m: Manifest,
    *,
    entries: list[ManifestEntry] | None = None,
    omitted: list[ManifestEntry] | None = None,
) -> Manifest:
    return Manifest(
        m.entries if entries is None else tuple(entries),
        m.omitted if omitted is None else tuple(omitted),
    )


def data_of(record: tuple[str, bytes]) -> bytes:
    ns, data = record
    assert ns == MANIFEST_NS == "agentmemory:render"
    return data


def test_the_hash_examples() -> None:
    # the inputs are the reference's: 06f9…30a0, c0cd…9fd6, 12f3…84fe, c3e4…a82f
    assert [abbrev(h) for h in (HA, HB, HC, HD)] == [
        "sha256:06f9…30a0",
        "sha256:c0cd…9fd6",
        "sha256:12f3…84fe",
        "sha256:c3e4…a82f",
    ]
    assert example().hash() == EXAMPLE_HASH
    assert Manifest().hash() == EMPTY_HASH


def test_the_scope_cap_golden_manifest_hash() -> None:
    want = "sha256:4b3fa03ec3ca9b949c42ee6aecc086e713f2632c09ca20bb301fa607a639eab9"
    store = MemStore(max_entry_bytes=256)
    for scope, n, size in (("environment", 8, 60), ("user", 2, 40)):
        for i in range(n):
            store.put(Entry(scope, f"{scope}-{i:02d}", chr(97 + i) * (size - 1) + "\n"))
    _, man = render(
        store, ["environment", "user"], max_total_bytes=1000, scope_max_bytes={"environment": 400}
    )
    assert man.hash() == want
    # and the golden file, read back as a whole record, is that manifest
    text = (GOLDEN / "scope-cap.manifest.json").read_bytes()
    assert apply_manifest_record(Manifest(), text).hash() == want


def test_record_is_compact_go_json() -> None:
    m = Manifest(
        (ManifestEntry("user", "a", HA, 2),), (ManifestEntry("user", "d", HD, 300, OMIT_BUDGET),)
    )
    assert (
        data_of(m.record())
        == (
            '{"entries":[{"scope":"user","name":"a","hash":"' + HA + '","bytes":2}],'
            '"omitted":[{"scope":"user","name":"d","hash":"'
            + HD
            + '","bytes":300,"reason":"budget"}]}'
        ).encode()
    )
    # "entries" always present, "omitted" absent when empty; Go's HTML-safe escapes; raw UTF-8
    assert data_of(Manifest().record()) == b'{"entries":[]}'
    odd = Manifest(omitted=(ManifestEntry("s", "n", "h", 1, "<a&b> ü\u2028"),))
    assert (
        data_of(odd.record())
        == (
            '{"entries":[],"omitted":[{"scope":"s","name":"n","hash":"h","bytes":1,'
            '"reason":"\\u003ca\\u0026b\\u003e ü\\u2028"}]}'
        ).encode()
    )
    assert apply_manifest_record(Manifest(), data_of(odd.record())) == odd
    # the zero Manifest Go marshals ("entries":null) reads as the empty manifest
    assert apply_manifest_record(example(), b'{"entries":null}') == Manifest()


def test_record_since_example() -> None:
    prev = example()
    nxt = replace(
        prev, entries=[prev.entries[0], ManifestEntry("user", "b", HB2, 3), prev.entries[2]]
    )
    assert nxt.hash() == EDITED_HASH
    assert (abbrev(EXAMPLE_HASH), abbrev(EDITED_HASH), abbrev(HB2)) == (
        "sha256:557a…6479",
        "sha256:1a5f…d040",
        "sha256:9a66…8a37",
    )
    data = data_of(nxt.record_since(prev))
    assert (
        data
        == (
            '{"base":"' + EXAMPLE_HASH + '","hash":"' + EDITED_HASH + '",'
            '"entries":[{"keep":1},{"scope":"user","name":"b","hash":"' + HB2 + '","bytes":3},'
            '{"keep":1}],"omitted":[{"keep":1}]}'
        ).encode()
    )
    assert apply_manifest_record(prev, data) == nxt


def test_a_first_manifest_is_recorded_whole() -> None:
    m = example()
    assert m.record_since(Manifest()) == m.record()


def test_identity() -> None:
    m = example()
    assert m.hash() == example().hash()
    assert replace(m, entries=[m.entries[1], m.entries[0], m.entries[2]]).hash() != m.hash()
    assert replace(m, omitted=[]).hash() != m.hash()
    other = ManifestEntry("user", "d", HD, 300, "something else")
    assert replace(m, omitted=[other]).hash() != m.hash()
    edited = replace(m, entries=[ManifestEntry("user", "a", HB, 2), *m.entries[1:]])
    assert edited.hash() != m.hash()
    # a manifest is a value: lists become tuples, and it cannot be changed
    built = Manifest(list(m.entries), list(m.omitted))  # type: ignore[arg-type]
    assert built == m and isinstance(built.entries, tuple)
    with pytest.raises(AttributeError):
        m.entries = ()  # type: ignore[misc]


BASE = fixture(600, 126)


def edit_cases() -> list[tuple[str, Manifest, bool]]:
    b = BASE
    es, om = list(b.entries), list(b.omitted)
    patched = es.copy()
    patched[60] = ManifestEntry("user", es[60].name, content_hash("patched"), 43)
    om_patched = om.copy()
    om_patched[300] = ManifestEntry(
        "user", om[300].name, content_hash("patched"), om[300].bytes, OMIT_BUDGET
    )
    last, first = es[-1], om[0]
    swapped = es.copy()
    swapped[10], swapped[11] = swapped[11], swapped[10]
    return [
        ("unchanged", b, True),
        ("patch-shown", replace(b, entries=patched), True),
        ("patch-omitted", replace(b, omitted=om_patched), True),
        (
            "create-at-start",
            replace(b, entries=[ManifestEntry("user", "aaa", content_hash("new"), 3), *es]),
            True,
        ),
        ("forget-last-shown", replace(b, entries=es[:-1]), True),
        (
            "shown-to-omitted",
            Manifest(
                tuple(es[:-1]),
                (ManifestEntry(last.scope, last.name, last.hash, last.bytes, OMIT_BUDGET), *om),
            ),
            True,
        ),
        (
            "omitted-to-shown",
            Manifest(
                (*es, ManifestEntry(first.scope, first.name, first.hash, first.bytes)),
                tuple(om[1:]),
            ),
            True,
        ),
        ("swap", replace(b, entries=swapped), True),
        ("truncated", fixture(3, 3), True),
        ("emptied", Manifest(), False),
        ("all-new", Manifest((ManifestEntry("project", "rule", content_hash("r"), 1),)), False),
        ("name-twice", replace(b, entries=[*es, es[0]]), False),
    ]


@pytest.mark.parametrize(("name", "nxt", "delta"), edit_cases(), ids=[c[0] for c in edit_cases()])
def test_record_since(name: str, nxt: Manifest, delta: bool) -> None:
    whole = len(data_of(BASE.record()))
    data = data_of(nxt.record_since(BASE))
    assert (b'"base"' in data) == delta
    if delta:
        assert len(data) <= whole // 100, data
    else:
        assert data == data_of(nxt.record())
    assert apply_manifest_record(BASE, data).hash() == nxt.hash()


def test_record_since_random_chain() -> None:
    rng = random.Random(1)

    def edit(lst: tuple[ManifestEntry, ...]) -> tuple[ManifestEntry, ...]:
        out = list(lst)
        op = rng.randrange(4)
        if op == 0 and out:
            del out[rng.randrange(len(out))]
        elif op == 1 and out:
            i = rng.randrange(len(out))
            e = out[i]
            out[i] = ManifestEntry(
                e.scope, e.name, content_hash(str(rng.random())), e.bytes, e.reason
            )
        elif op == 2 and len(out) > 1:
            i = rng.randrange(len(out) - 1)
            out[i], out[i + 1] = out[i + 1], out[i]
        else:
            new = ManifestEntry("user", f"new-{rng.randrange(1 << 30)}", content_hash("x"), 1)
            out.insert(rng.randrange(len(out) + 1), new)
        return tuple(out)

    have = fixture(40, 15)
    recorded = have
    deltas = 0
    for _ in range(500):
        if rng.randrange(2):
            nxt = Manifest(edit(have.entries), have.omitted)
        else:
            nxt = Manifest(have.entries, edit(have.omitted))
        data = data_of(nxt.record_since(have))
        deltas += b'"base"' in data
        recorded = apply_manifest_record(recorded, data)
        assert recorded.hash() == nxt.hash()
        have = nxt
    assert deltas > 400


def test_apply_refuses() -> None:
    base = fixture(20, 10)
    nxt = Manifest(base.entries[1:], base.omitted)
    delta = data_of(nxt.record_since(base))
    assert b'"base"' in delta
    with pytest.raises(ManifestBaseError) as err:
        apply_manifest_record(Manifest(), delta)
    assert str(err.value) == (
        "agentmemory: manifest delta is not based on a manifest the reader holds: the delta is "
        f"based on {base.hash()}, the manifest in force is {EMPTY_HASH}"
    )
    h = base.hash()
    cases = [
        ("{", "agentmemory: manifest record: "),
        (
            '{"base":"' + h + '","hash":"x","entries":[{"keep":11}]}',
            "keeps 11 entries and 10 are left",
        ),
        (
            '{"base":"' + h + '","hash":"x","entries":[{"keep":0}]}',
            "neither a positive keep nor an entry",
        ),
        (
            '{"base":"' + h + '","hash":"x","entries":[{"keep":1,"scope":"user","name":"a"}]}',
            "agentmemory: manifest delta entries: element 0 is both a keep and an entry",
        ),
        (
            '{"base":"' + h + '","hash":"x","omitted":[{"scope":"user","hash":"h"}]}',
            "agentmemory: manifest delta omitted: element 0 names no entry",
        ),
        (
            '{"base":"'
            + h
            + '","hash":"sha256:00","entries":[{"keep":10}],"omitted":[{"keep":10}]}',
            f"agentmemory: manifest delta: the result hashes {h}, the delta says sha256:00",
        ),
        (
            '{"base":"' + h + '","hash":"x","entries":{}}',
            "agentmemory: manifest delta: entries is an object, not an array",
        ),
        (
            '{"base":"' + h + '","hash":"x","entries":[{"keep":1.5}]}',
            "keep is a number, not an integer",
        ),
        ('{"base":5}', "agentmemory: manifest record: base is a number, not a string"),
        (
            '{"entries":[{"bytes":"2"}]}',
            "agentmemory: manifest record: entries[0].bytes is a string",
        ),
        ("[]", "agentmemory: manifest record: the record is an array, not an object"),
        ('{"entries":[]} x', "agentmemory: manifest record: "),
    ]
    for data, want in cases:
        with pytest.raises(ManifestRecordError) as refused:
            apply_manifest_record(base, data)
        assert want in str(refused.value), (data, str(refused.value))
    # a delta onto a manifest that names an entry twice cannot say which one it keeps
    twice = Manifest((base.entries[0], base.entries[0]))
    bad = '{"base":"' + twice.hash() + '","hash":"x"}'
    with pytest.raises(ManifestRecordError, match="names an entry twice"):
        apply_manifest_record(twice, bad)
    # a whole record is the manifest it holds, whatever is in force
    assert apply_manifest_record(fixture(3, 1), data_of(nxt.record())) == nxt


def test_records_read_as_go_reads_them() -> None:
    prev = example()
    # a "base" member, even "", makes a delta; a null base does not
    with pytest.raises(ManifestBaseError):
        apply_manifest_record(prev, '{"base":"","hash":""}')
    assert (
        apply_manifest_record(
            Manifest(), '{"base":"' + EMPTY_HASH + '","hash":"' + EMPTY_HASH + '"}'
        )
        == Manifest()
    )
    assert apply_manifest_record(prev, '{"base":null}') == Manifest()
    # member names match case-insensitively, the last of a repeated member wins, unknown ones
    # are ignored, and null leaves the zero value
    data = (
        '{"ENTRIES":[{"Scope":"user","NAME":"a","hash":"h","bytes":2,"extra":[1]}],'
        '"entries":[{"scope":"user","name":"a","hash":"h","Bytes":2,"reason":null}],'
        '"Omitted":null,"comment":"ignored"}'
    )
    assert apply_manifest_record(prev, data) == Manifest((ManifestEntry("user", "a", "h", 2),))
    delta = json.loads(data_of(replace(prev, omitted=[]).record_since(prev)))
    upper = json.dumps({k.upper(): v for k, v in delta.items()})
    assert apply_manifest_record(prev, upper) == replace(prev, omitted=[])
    # an op is an entry when any entry member is present, even with a null value
    op_null = '{"base":"' + prev.hash() + '","hash":"x","entries":[{"keep":1,"scope":null}]}'
    with pytest.raises(ManifestRecordError, match="both a keep and an entry"):
        apply_manifest_record(prev, op_null)


def test_omit_block() -> None:
    shown = fixture(5, 3)
    everything = [*shown.entries, *shown.omitted]
    dropped = Manifest(
        omitted=tuple(
            ManifestEntry(e.scope, e.name, e.hash, e.bytes, OMIT_BLOCK) for e in everything
        )
    )
    budget = Manifest(
        omitted=tuple(
            ManifestEntry(e.scope, e.name, e.hash, e.bytes, OMIT_BUDGET) for e in everything
        )
    )
    assert OMIT_BLOCK == "block" and OMIT_BUDGET == "budget"
    for other in (Manifest(), budget, shown):
        assert dropped.hash() != other.hash()
        got = apply_manifest_record(other, data_of(dropped.record_since(other)))
        assert got == dropped and not got.entries
        assert {e.reason for e in got.omitted} == {OMIT_BLOCK}


def test_fold_two_agents_taking_turns() -> None:
    a = fixture(600, 126)
    b = Manifest((ManifestEntry("billing", "plan", content_hash("p"), 10),))
    f = ManifestFold()
    assert f.manifest() == Manifest() and len(f) == 0
    f.apply(data_of(a.record()))
    f.apply(data_of(b.record_since(a)))  # b on taking over, on the manifest in force
    whole = len(data_of(a.record()))
    last_a = a
    for i in range(10):
        es = list(last_a.entries)
        if i % 2 == 1:
            es[i] = ManifestEntry("user", es[i].name, content_hash(f"patched{i}"), es[i].bytes)
        next_a = replace(last_a, entries=es)
        data = data_of(next_a.record_since(last_a))  # on a's own last manifest
        assert b'"base"' in data and len(data) <= whole // 100
        with pytest.raises(ManifestBaseError):
            apply_manifest_record(f.manifest(), data)
        f.apply(data)
        assert f.manifest() == next_a
        f.apply(data_of(b.record_since(b)))
        assert f.manifest() == b
        last_a = next_a
    assert len(f) == 7  # distinct manifests in force: a, b and the five patched versions of a


def test_fold_depth_and_refusals() -> None:
    a = fixture(600, 126)
    g = ManifestFold()
    g.apply(data_of(a.record()))
    for i in range(MANIFEST_FOLD_DEPTH):
        g.apply(data_of(fixture(3 + i, 1).record()))
    assert len(g) == MANIFEST_FOLD_DEPTH == 8
    before = g.manifest()
    delta = data_of(Manifest(a.entries[1:], a.omitted).record_since(a))
    with pytest.raises(ManifestBaseError, match="not among the 8 manifests last in force"):
        g.apply(delta)
    assert g.manifest() == before
    with pytest.raises(ManifestRecordError):
        g.apply('{"base":"' + before.hash() + '","hash":"sha256:00"}')
    assert g.manifest() == before
    # within the depth a delta resolves, even on the oldest held; that manifest then leads
    g.apply(data_of(fixture(3, 1).record()))  # moves to the front, no new slot
    old = fixture(4, 1)
    g.apply(data_of(Manifest(old.entries, old.omitted[1:]).record_since(old)))
    assert g.manifest() == Manifest(old.entries, old.omitted[1:])
    # a fresh fold takes a delta on the empty manifest, and nothing else
    h = ManifestFold()
    with pytest.raises(ManifestBaseError, match="not among the 0 manifests"):
        h.apply(delta)
    empty_delta = '{"base":"' + EMPTY_HASH + '","hash":"' + EMPTY_HASH + '"}'
    h.apply(empty_delta)
    assert h.manifest() == Manifest() and len(h) == 1


def whole_records(n: int) -> list[bytes]:
    """Whole records of n manifests sharing nothing with each other's defaults."""
    return [data_of(fixture(3 + i, 1).record()) for i in range(n)]


def fold_record_cases() -> list[tuple[str, list[bytes], Manifest, str]]:
    a = fixture(600, 126)
    b = Manifest((ManifestEntry("billing", "plan", content_hash("p"), 10),))
    es = list(a.entries)
    es[7] = ManifestEntry("user", es[7].name, content_hash("patched"), es[7].bytes)
    next_a = replace(a, entries=es)
    ra, rb = data_of(a.record()), data_of(b.record_since(a))
    return [
        ("empty fold, first manifest", [], a, ""),
        ("own manifest in force", [ra], next_a, a.hash()),
        ("own manifest behind the other agent's", [ra, rb], next_a, a.hash()),
        ("own manifest behind seven others", [ra, *whole_records(7)], next_a, a.hash()),
        ("own manifest past the depth", [ra, *whole_records(8)], next_a, ""),
        ("nothing in common with any", [ra, rb], fixture(3, 0), ""),
    ]


@pytest.mark.parametrize(
    ("name", "path", "m", "want_base"), fold_record_cases(), ids=[c[0] for c in fold_record_cases()]
)
def test_fold_record(name: str, path: list[bytes], m: Manifest, want_base: str) -> None:
    f = ManifestFold()
    for data in path:
        f.apply(data)
    before = f.manifest()
    data = data_of(f.record(m))
    assert json.loads(data).get("base", "") == want_base
    if want_base:
        assert len(data) < len(data_of(m.record()))
    else:
        assert data == data_of(m.record())
    assert f.manifest() == before and len(f) == min(len(path), MANIFEST_FOLD_DEPTH)  # not moved
    reader = ManifestFold()
    for d in [*path, data]:
        reader.apply(d)
    assert reader.manifest() == m


def test_fold_record_picks_the_smallest_delta() -> None:
    a = fixture(600, 126)
    near = replace(a, entries=[ManifestEntry("user", "zzz", content_hash("z"), 1), *a.entries])
    far = fixture(30, 10)
    f = ManifestFold()
    for m in (a, near, far):  # far in force, near behind it, a oldest
        f.apply(data_of(m.record()))
    es = list(a.entries)
    es[3] = ManifestEntry("user", es[3].name, content_hash("x"), 1)
    m = replace(a, entries=es)  # one patch on a: the delta on a beats the delta on near
    data = data_of(f.record(m))
    assert json.loads(data)["base"] == a.hash()
    assert len(data) == min(len(data_of(m.record_since(x))) for x in (a, near, far))


def test_fold_record_tie_goes_to_the_manifest_in_force() -> None:
    # x and y differ in one entry's hash; m differs from both in that entry, so the deltas on x
    # and on y are the same size (their bases are hashes of equal length), and smaller than whole.
    base = fixture(100, 100)

    def with_hash(h: str) -> Manifest:
        es = list(base.entries)
        es[7] = ManifestEntry("user", es[7].name, content_hash(h), es[7].bytes)
        return replace(base, entries=es)

    x, y, m = with_hash("x"), with_hash("y"), with_hash("m")
    dx, dy = data_of(m.record_since(x)), data_of(m.record_since(y))
    assert len(dx) == len(dy) < len(data_of(m.record()))
    for in_force, older in ((x, y), (y, x)):
        f = ManifestFold()
        f.apply(data_of(older.record()))
        f.apply(data_of(in_force.record()))
        data = data_of(f.record(m))
        assert json.loads(data)["base"] == in_force.hash()
        assert apply_manifest_record(f.manifest(), data) == m  # a plain reader resolves it
