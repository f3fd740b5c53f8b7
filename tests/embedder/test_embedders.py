"""Embedders: the protocol, the registry, the hashing embedder, the packaged model through
sentence-transformers and through onnxruntime, and the Chroma adapters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import embedders
from embedders import (
    ChromaEmbedder,
    Embedder,
    HashingEmbedder,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    UnknownEmbedderError,
)
from embedders.preload import start_loading

SENTENCES = [
    "the cat sat on the mat",
    "a feline rested on the rug",
    "quarterly revenue grew 5%",
    "Python's GIL serialises bytecode execution",
    "remember to water the plants on Friday",
    "the user prefers dark mode and vim key bindings",
]


def assert_unit_rows(matrix: np.ndarray, n: int, dim: int) -> None:
    assert matrix.shape == (n, dim)
    assert matrix.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), np.ones(n), atol=1e-5)


# --- the protocol and the package surface ---------------------------------------------------


def test_import_embedders_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, json, embedders\n"
        "heavy = ['torch', 'sentence_transformers', 'chromadb', 'onnxruntime', 'transformers',"
        " 'agentmemory', 'recallers']\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_hashing_embedder_satisfies_protocol() -> None:
    assert isinstance(HashingEmbedder(), Embedder)


# --- the hashing embedder ---------------------------------------------------------------------


def test_hashing_shapes_dtype_and_unit_rows() -> None:
    e = HashingEmbedder(64)
    assert e.dim == 64
    assert e.name == "hashing:64"
    assert_unit_rows(e.embed(SENTENCES), len(SENTENCES), 64)
    empty = e.embed([])
    assert empty.shape == (0, 64)
    assert empty.dtype == np.float32


def test_hashing_text_without_words_is_a_zero_row() -> None:
    out = HashingEmbedder(32).embed(["", "?! ...", "word"])
    assert not out[0].any()
    assert not out[1].any()
    assert np.linalg.norm(out[2]) == pytest.approx(1.0)


def test_hashing_counts_words_case_insensitively() -> None:
    e = HashingEmbedder(1024)
    a, b, c = e.embed(["Cat MAT", "mat, cat!", "dog"])
    assert np.array_equal(a, b)
    # "cat mat" and "dog": 1024 buckets, three words: orthogonal unless a bucket collides.
    assert float(a @ c) == pytest.approx(0.0)
    # one word in a single bucket: the row is exactly one 1.0.
    assert sorted(c.tolist()).count(1.0) == 1


def test_hashing_shared_words_raise_similarity() -> None:
    e = HashingEmbedder(256)
    q, near, far = e.embed(["water the plants", "the plants need water", "quarterly revenue"])
    assert float(q @ near) > float(q @ far)


@pytest.mark.slow
def test_hashing_is_the_same_in_another_process() -> None:
    code = (
        "import json, sys, embedders\n"
        "texts = json.loads(sys.stdin.read())\n"
        "print(json.dumps(embedders.HashingEmbedder(128).embed(texts).tolist()))\n"
    )
    # different PYTHONHASHSEED values: str hashing differs between the two children.
    outs = []
    for seed in ("1", "2"):
        proc = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(SENTENCES),
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        outs.append(np.array(json.loads(proc.stdout), dtype=np.float32))
    here = HashingEmbedder(128).embed(SENTENCES)
    assert np.array_equal(outs[0], outs[1])
    assert np.array_equal(outs[0], here)


def test_hashing_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="positive integer"):
        HashingEmbedder(0)
    with pytest.raises(TypeError, match="not one str"):
        HashingEmbedder().embed("one text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text 1 is a int"):
        HashingEmbedder().embed(["ok", 3])  # type: ignore[list-item]


def test_hashing_fingerprint_depends_on_dim() -> None:
    assert HashingEmbedder(64).fingerprint == HashingEmbedder(64).fingerprint
    assert HashingEmbedder(64).fingerprint != HashingEmbedder(65).fingerprint
    assert "64" in HashingEmbedder(64).fingerprint


def test_hashing_thread_safe() -> None:
    e = HashingEmbedder(97)
    texts = [f"{s} number {i}" for i in range(50) for s in SENTENCES]
    expected = e.embed(texts)
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: e.embed(texts), range(16)))
    for got in results:
        assert np.array_equal(got, expected)


# --- the registry ---------------------------------------------------------------------------


def test_registry_default_names() -> None:
    known = embedders.names()
    assert known == sorted(known)
    for name in (embedders.DEFAULT_EMBEDDER, embedders.ONNX_EMBEDDER, "hashing"):
        assert name in known


def test_registry_builds_hashing_by_name() -> None:
    assert embedders.get("hashing").dim == embedders.DEFAULT_HASHING_DIM
    e = embedders.get("hashing:48")
    assert isinstance(e, HashingEmbedder)
    assert e.dim == 48
    assert embedders.get(e.name).fingerprint == e.fingerprint
    with pytest.raises(ValueError, match="integer dimension"):
        embedders.get("hashing:wide")


def test_registry_unknown_name_lists_known_ones() -> None:
    with pytest.raises(KeyError) as info:
        embedders.get("word2vec:google-news")
    err = info.value
    assert isinstance(err, UnknownEmbedderError)
    message = str(err)
    assert "'word2vec:google-news'" in message
    for name in embedders.names():
        assert name in message


def test_registry_register_and_refuse_duplicates() -> None:
    name = "test-hashing-7"
    embedders.register(name, lambda: HashingEmbedder(7))
    try:
        assert embedders.get(name).dim == 7
        assert name in embedders.names()
        with pytest.raises(ValueError, match="already registered"):
            embedders.register(name, lambda: HashingEmbedder(8))
        embedders.register(name, lambda: HashingEmbedder(8), replace=True)
        assert embedders.get(name).dim == 8
    finally:
        from embedders import registry

        with registry._lock:
            registry._factories.pop(name, None)


def test_l2_normalize_keeps_zero_rows() -> None:
    out = embedders.l2_normalize([[3.0, 4.0], [0.0, 0.0]])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])


def test_model_embedders_are_built_without_loading_anything() -> None:
    code = (
        "import sys, json, embedders\n"
        "e = embedders.get(embedders.DEFAULT_EMBEDDER)\n"
        "o = embedders.get(embedders.ONNX_EMBEDDER)\n"
        "heavy = ['torch', 'sentence_transformers', 'onnxruntime', 'transformers']\n"
        "print(json.dumps([e.dim, o.dim, e.embed([]).shape[1], [m for m in heavy if m in sys.modules]]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [384, 384, 384, []]


def test_model_options_are_checked() -> None:
    with pytest.raises(ValueError, match="batch_size is 0"):
        SentenceTransformerEmbedder(batch_size=0)
    with pytest.raises(ValueError, match="threads is 0"):
        OnnxEmbedder(threads=0)
    with pytest.raises(ValueError, match="needs a local model folder"):
        embedders.get("onnx:no-such/model-id")


def test_default_cache_dir_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(embedders.CACHE_DIR_ENV, str(tmp_path / "cache"))
    assert embedders.default_cache_dir() == tmp_path / "cache"
    assert OnnxEmbedder().cache_dir == tmp_path / "cache"
    assert OnnxEmbedder(cache_dir=tmp_path / "other").cache_dir == tmp_path / "other"
    monkeypatch.delenv(embedders.CACHE_DIR_ENV)
    assert embedders.default_cache_dir().name == "agentmemory"


# --- fingerprints: which embedders give the same vectors ------------------------------------

W1 = "sha256:" + "1f" * 32
W2 = "sha256:" + "2e" * 32
ST = f"sentence-transformers:all-MiniLM-L6-v2;dim=384;weights={W1};max_seq_length=256"
ONNX = f"onnx:all-MiniLM-L6-v2;dim=384;weights={W1};max_seq_length=256"
HASHING = "hashing:256;dim=256;version=blake2b-words-v1"


def test_fingerprint_fields_splits_name_and_fields() -> None:
    assert embedders.fingerprint_fields(ONNX) == {
        "name": "onnx:all-MiniLM-L6-v2",
        "family": "onnx",
        "model": "all-MiniLM-L6-v2",
        "dim": "384",
        "weights": W1,
        "max_seq_length": "256",
    }
    folder = embedders.fingerprint_fields("sentence-transformers:/models/e5:v2;dim=8")
    assert (folder["family"], folder["model"], folder["dim"]) == (
        "sentence-transformers",
        "/models/e5:v2",
        "8",
    )


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "no-family;dim=384",
        ":model;dim=384",
        "onnx:m;dim",
        "onnx:m;dim=1;dim=1",
        "onnx:m;Dim=1",
        "onnx:m;model=other",
    ],
)
def test_fingerprint_fields_refuses_other_forms(bad: str) -> None:
    with pytest.raises(ValueError, match="embedder fingerprint"):
        embedders.fingerprint_fields(bad)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (ST, ONNX),
        (ONNX, ST),
        (ST, ST),
        (HASHING, HASHING),
        ("custom-thing", "custom-thing"),  # equal strings are the protocol's own promise
        (
            f"sentence-transformers:/models/x;dim=8;weights={W2};max_seq_length=64;pooling=mean",
            f"onnx:/models/x;dim=8;weights={W2};max_seq_length=64;pooling=mean",
        ),
    ],
)
def test_same_model_through_another_runtime_gives_the_same_vectors(a: str, b: str) -> None:
    assert embedders.same_vectors(a, b)


@pytest.mark.parametrize(
    "other",
    [
        f"onnx:all-MiniLM-L6-v2;dim=384;weights={W2};max_seq_length=256",  # other weights
        f"onnx:all-MiniLM-L6-v2;dim=256;weights={W1};max_seq_length=256",  # other dim
        f"onnx:all-MiniLM-L6-v2;dim=384;weights={W1};max_seq_length=128",  # other seq length
        f"onnx:/models/copy;dim=384;weights={W1};max_seq_length=256",  # other model folder
        f"onnx:all-MiniLM-L6-v2;dim=384;weights={W1};max_seq_length=256;pooling=cls",
        f"onnx:all-MiniLM-L6-v2;dim=384;weights={W1}",  # no max_seq_length
        f"onnx:all-MiniLM-L6-v2;dim=384;weights=md5:{'0' * 32};max_seq_length=256",
        f"openai:all-MiniLM-L6-v2;dim=384;weights={W1};max_seq_length=256",  # unknown family
        HASHING,
        "hashing:384;dim=384;version=blake2b-words-v1",
        "all-MiniLM-L6-v2",  # not a fingerprint at all
        "",
    ],
)
def test_other_models_or_unknown_forms_do_not_give_the_same_vectors(other: str) -> None:
    assert not embedders.same_vectors(ST, other)
    assert not embedders.same_vectors(other, ST)


def test_same_vectors_needs_well_formed_model_fields() -> None:
    bad_dim = f"onnx:m;dim=0;weights={W1};max_seq_length=256"
    assert not embedders.same_vectors(bad_dim, bad_dim.replace("onnx:", "sentence-transformers:"))
    short = "sentence-transformers:m;dim=3;weights=sha256:abc;max_seq_length=9"
    assert not embedders.same_vectors(short, short.replace("sentence-transformers:", "onnx:"))


# --- the packaged model: sentence-transformers and onnxruntime ------------------------------

LONG_TEXT = " ".join(f"topic{i} alpha beta" for i in range(200))  # well over 256 word pieces


@pytest.fixture(scope="module")
def st_embedder() -> SentenceTransformerEmbedder:
    """The default embedder, loaded once for this module (import and load take seconds)."""
    e = SentenceTransformerEmbedder()
    e.embed(["warm up"])
    return e


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def onnx_embedder(onnx_cache: Path) -> OnnxEmbedder:
    """The ONNX path, exported once into a temporary cache for this module."""
    e = OnnxEmbedder(cache_dir=onnx_cache)
    e.embed(["warm up"])
    return e


@pytest.mark.slow
def test_packaged_model_knows_a_cat_from_revenue(st_embedder: SentenceTransformerEmbedder) -> None:
    cat, feline, revenue = st_embedder.embed(
        ["the cat sat on the mat", "a feline rested on the rug", "quarterly revenue grew 5%"]
    )
    assert float(cat @ feline) > float(cat @ revenue) + 0.2


@pytest.mark.slow
def test_packaged_model_shapes_and_identity(st_embedder: SentenceTransformerEmbedder) -> None:
    assert isinstance(st_embedder, Embedder)
    assert st_embedder.name == "sentence-transformers:all-MiniLM-L6-v2"
    assert st_embedder.dim == 384
    assert st_embedder.max_seq_length == 256
    assert_unit_rows(st_embedder.embed(SENTENCES), len(SENTENCES), 384)
    assert st_embedder.embed([]).shape == (0, 384)
    fingerprint = st_embedder.fingerprint
    assert fingerprint.startswith("sentence-transformers:all-MiniLM-L6-v2;dim=384;weights=sha256:")
    assert fingerprint.endswith(";max_seq_length=256")
    assert SentenceTransformerEmbedder(max_seq_length=128).fingerprint != fingerprint


@pytest.mark.slow
def test_packaged_model_truncates_at_max_seq_length(
    st_embedder: SentenceTransformerEmbedder,
) -> None:
    a, b = st_embedder.embed([LONG_TEXT, LONG_TEXT + " completely different ending words"])
    assert float(a @ b) > 0.9999


@pytest.mark.slow
def test_packaged_model_thread_safe(st_embedder: SentenceTransformerEmbedder) -> None:
    expected = st_embedder.embed(SENTENCES)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: st_embedder.embed(SENTENCES), range(8)))
    for got in results:
        np.testing.assert_allclose(got, expected, atol=1e-6)


@pytest.mark.slow
def test_onnx_gives_the_same_vectors(
    st_embedder: SentenceTransformerEmbedder, onnx_embedder: OnnxEmbedder
) -> None:
    texts = [*SENTENCES, LONG_TEXT, "Ünïcödé, 東京 and emoji 🎉", "x"]
    reference = st_embedder.embed(texts)
    got = onnx_embedder.embed(texts)
    assert_unit_rows(got, len(texts), 384)
    cosines = (reference * got).sum(axis=1)
    assert cosines.min() > 0.999, cosines
    assert onnx_embedder.name == "onnx:all-MiniLM-L6-v2"
    # same weights, so the weights part of the fingerprints agrees
    assert onnx_embedder.fingerprint.split(";")[2] == st_embedder.fingerprint.split(";")[2]


@pytest.mark.slow
def test_real_st_and_onnx_fingerprints_give_the_same_vectors(
    st_embedder: SentenceTransformerEmbedder, onnx_embedder: OnnxEmbedder
) -> None:
    st, onnx = st_embedder.fingerprint, onnx_embedder.fingerprint
    assert st != onnx
    assert embedders.same_vectors(st, onnx) and embedders.same_vectors(onnx, st)
    shorter = SentenceTransformerEmbedder(max_seq_length=128).fingerprint
    assert not embedders.same_vectors(shorter, onnx)
    assert not embedders.same_vectors(HashingEmbedder(384).fingerprint, onnx)


@pytest.mark.slow
def test_onnx_export_is_cached_and_reused_without_torch(
    onnx_embedder: OnnxEmbedder, onnx_cache: Path
) -> None:
    assert onnx_embedder.onnx_path.is_file()
    assert onnx_embedder.onnx_path.is_relative_to(onnx_cache)
    code = (
        "import sys, json, embedders\n"
        "v = embedders.get(embedders.ONNX_EMBEDDER).embed(['the cat sat on the mat'])\n"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'v': v[0].tolist()}))\n"
    )
    env = {**os.environ, embedders.CACHE_DIR_ENV: str(onnx_cache)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    result = json.loads(out.stdout)
    assert result["torch"] is False
    here = onnx_embedder.embed(["the cat sat on the mat"])[0]
    np.testing.assert_allclose(np.array(result["v"], dtype=np.float32), here, atol=1e-5)


@pytest.mark.slow
def test_onnx_thread_safe(onnx_embedder: OnnxEmbedder) -> None:
    texts = [f"{s} ({i})" for i in range(10) for s in SENTENCES]
    expected = onnx_embedder.embed(texts)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: onnx_embedder.embed(texts), range(8)))
    for got in results:
        np.testing.assert_allclose(got, expected, atol=1e-6)


_PRELOAD = """
import json, sys, threading
import embedders
from pathlib import Path
mode, cache, folder = sys.argv[1], sys.argv[2], sys.argv[3]
e = embedders.OnnxEmbedder(cache_dir=cache)
if mode == "exit":  # start the load and leave at once: the interpreter waits for it
    print(json.dumps({"started": e.start_loading()}))
    raise SystemExit(0)
if mode == "store":  # a store starts the load as it opens
    from agentmemory import ChromaStore
    st = ChromaStore(Path(folder), embedder=e)
    again = e.start_loading()
else:
    st = None
    again = [e.start_loading(), e.start_loading()]
for t in threading.enumerate():
    if t.name == "agentmemory-model-load":
        t.join()
loaded = "onnxruntime" in sys.modules  # before any text was embedded
v = e.embed(["the cat sat on the mat"])[0].tolist()
if st is not None:
    from agentmemory import Entry
    st.put(Entry("user", "cat", "the cat sat on the mat"))
    hits = [h.entry.name for h in st.recall("a cat on a mat", scopes=["user"], mode="vector")]
    st.close()
else:
    hits = []
print(json.dumps({"again": again, "loaded": loaded, "v": v, "hits": hits}))
"""


def _preload(mode: str, cache: Path, folder: Path) -> tuple[dict[str, object], str]:
    out = subprocess.run(
        [sys.executable, "-c", _PRELOAD, mode, str(cache), str(folder)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


@pytest.mark.slow
def test_onnx_start_loading_loads_the_model_before_the_first_text(
    onnx_embedder: OnnxEmbedder, onnx_cache: Path, tmp_path: Path
) -> None:
    got, _ = _preload("embedder", onnx_cache, tmp_path)
    assert got["again"] == [True, False]  # one load, however often it is asked for
    assert got["loaded"] is True
    here = onnx_embedder.embed(["the cat sat on the mat"])[0]
    np.testing.assert_allclose(np.array(got["v"], dtype=np.float32), here, atol=1e-5)


@pytest.mark.slow
def test_a_store_starts_loading_its_model_as_it_opens(
    onnx_embedder: OnnxEmbedder, onnx_cache: Path, tmp_path: Path
) -> None:
    got, _ = _preload("store", onnx_cache, tmp_path / "store")
    assert got["again"] is False  # the store's open had started it
    assert got["loaded"] is True
    assert got["hits"] == ["cat"]


@pytest.mark.slow
def test_a_process_that_exits_while_its_model_loads_exits_cleanly(
    onnx_embedder: OnnxEmbedder, onnx_cache: Path, tmp_path: Path
) -> None:
    got, err = _preload("exit", onnx_cache, tmp_path)
    assert got == {"started": True} and err == ""


def test_start_loading_leaves_a_first_export_to_embed(tmp_path: Path) -> None:
    e = OnnxEmbedder(cache_dir=tmp_path / "empty")
    assert e.start_loading() is False
    assert not e.onnx_path.exists()
    assert start_loading(HashingEmbedder(64)) is False  # nothing to load


@pytest.mark.slow
def test_a_model_that_fails_to_load_in_the_background_fails_the_first_embed(
    tmp_path: Path,
) -> None:
    def broken() -> OnnxEmbedder:
        e = OnnxEmbedder(cache_dir=tmp_path / "cache")
        e.onnx_path.parent.mkdir(parents=True, exist_ok=True)
        e.onnx_path.write_bytes(b"not an onnx model")
        return e

    with pytest.raises(Exception) as plain:
        broken().embed(["x"])
    e = broken()
    assert e.start_loading() is True
    with pytest.raises(type(plain.value), match=r"(?i)protobuf|parse|load"):
        e.embed(["x"])


@pytest.mark.slow
def test_registry_default_is_the_packaged_model(st_embedder: SentenceTransformerEmbedder) -> None:
    e = embedders.get(embedders.DEFAULT_EMBEDDER)
    assert isinstance(e, SentenceTransformerEmbedder)
    assert e.fingerprint == st_embedder.fingerprint
    folder = embedders.get(f"sentence-transformers:{embedders.packaged_model_path()}")
    assert folder.fingerprint.split(";")[1:] == st_embedder.fingerprint.split(";")[1:]


# --- Chroma adapters --------------------------------------------------------------------------


def _chroma_client(path: Path) -> object:
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


def test_our_embedder_serves_a_real_chroma_collection(tmp_path: Path) -> None:
    hashing = HashingEmbedder(128)
    fn = embedders.as_chroma_embedding_function(hashing)
    client = _chroma_client(tmp_path / "chroma")
    col = client.get_or_create_collection(  # type: ignore[attr-defined]
        "notes", embedding_function=fn, configuration={"hnsw": {"space": "cosine"}}
    )
    docs = ["the cat sat on the mat", "quarterly revenue grew", "water the plants on friday"]
    col.add(ids=["cat", "revenue", "plants"], documents=docs)
    stored = col.get(ids=["cat"], include=["embeddings"])["embeddings"][0]
    np.testing.assert_allclose(stored, hashing.embed([docs[0]])[0], atol=1e-6)
    hits = col.query(query_texts=["where did the cat sit"], n_results=1)
    assert hits["ids"] == [["cat"]]
    # reopened by name only, Chroma rebuilds our function from its saved config
    again = _chroma_client(tmp_path / "chroma").get_collection("notes")  # type: ignore[attr-defined]
    assert again.query(query_texts=["revenue"], n_results=1)["ids"] == [["revenue"]]


def test_a_chroma_function_serves_as_an_embedder() -> None:
    fn = embedders.as_chroma_embedding_function(HashingEmbedder(32))
    wrapped = ChromaEmbedder(fn, name="chroma:hashing-32", batch_size=2)
    assert isinstance(wrapped, Embedder)
    assert wrapped.dim == 32
    assert wrapped.name == "chroma:hashing-32"
    assert "agentmemory-embedder" in wrapped.fingerprint
    assert '"hashing:32"' in wrapped.fingerprint
    np.testing.assert_allclose(wrapped.embed(SENTENCES), HashingEmbedder(32).embed(SENTENCES))
    assert wrapped.embed([]).shape == (0, 32)


@pytest.mark.slow
def test_chromas_sentence_transformer_function_matches_ours(
    st_embedder: SentenceTransformerEmbedder,
) -> None:
    from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction

    fn = SentenceTransformerEmbeddingFunction(model_name=str(embedders.packaged_model_path()))
    wrapped = ChromaEmbedder(fn, name="chroma:sentence-transformers-minilm")
    assert wrapped.dim == 384
    got = wrapped.embed(SENTENCES)
    assert_unit_rows(got, len(SENTENCES), 384)
    assert (got * st_embedder.embed(SENTENCES)).sum(axis=1).min() > 0.999


def test_weights_digest_covers_every_weight_file(tmp_path: Path) -> None:
    import hashlib

    (tmp_path / "1_Dense").mkdir()
    (tmp_path / "model.safetensors").write_bytes(b"weights-one")
    (tmp_path / "1_Dense" / "pytorch_model.bin").write_bytes(b"dense")
    (tmp_path / "README.md").write_text("not a weight file")
    expected = hashlib.sha256(
        b"1_Dense/pytorch_model.bin\0dense" + b"model.safetensors\0weights-one"
    ).hexdigest()
    assert embedders.weights_digest(tmp_path) == "sha256:" + expected
    (tmp_path / "model.safetensors").write_bytes(b"other weights")  # new size: cache key changes
    assert embedders.weights_digest(tmp_path) != "sha256:" + expected
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no weight file"):
        embedders.weights_digest(tmp_path / "empty")


@pytest.mark.parametrize("cls", [SentenceTransformerEmbedder, OnnxEmbedder])
@pytest.mark.parametrize("option", ["batch_size", "threads", "max_seq_length"])
def test_run_options_under_one_are_refused_by_name(cls: type, option: str) -> None:
    with pytest.raises(ValueError, match=f"^{option} is 0; it must be at least 1$"):
        cls(**{option: 0})


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        super().__init__(64)
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.texts += list(texts)
        return super().embed(texts)


def test_recent_vectors_gives_the_inner_rows_and_embeds_a_repeated_text_once() -> None:
    from embedders.recent import RECENT_CALL_TEXTS, RECENT_TEXTS, RecentVectors

    inner = CountingEmbedder()
    recent = RecentVectors(inner)
    plain = HashingEmbedder(64)
    assert (recent.name, recent.dim, recent.fingerprint) == (inner.name, 64, inner.fingerprint)
    first = recent.embed(["dark mode in vim"])
    again = recent.embed(["tmux", "dark mode in vim", "tmux"])
    assert np.array_equal(first, plain.embed(["dark mode in vim"]))
    assert np.array_equal(again, plain.embed(["tmux", "dark mode in vim", "tmux"]))
    assert again.dtype == np.float32 and recent.embed([]).shape == (0, 64)
    assert inner.texts == ["dark mode in vim", "tmux"]  # each text once
    bulk = [f"note {i}" for i in range(RECENT_CALL_TEXTS + 1)]
    recent.embed(bulk)
    recent.embed(bulk[:1])
    assert inner.texts[2:] == [*bulk, bulk[0]]  # a bulk call is not remembered
    for i in range(RECENT_TEXTS):
        recent.embed([f"other {i}"])
    recent.embed(["dark mode in vim"])  # pushed out by newer texts: embedded again
    assert inner.texts[-1] == "dark mode in vim"


class Unwindowed:
    """An embedder without windows (the protocol's four members only): 16-dim hashing vectors."""

    name = "unwindowed"
    dim = 16
    fingerprint = "unwindowed/16"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return HashingEmbedder(16).embed(texts)


def test_remembering_keeps_windows_visible_and_the_embedder_copyable() -> None:
    """``isinstance(x, Windowed)`` looks attributes up statically from Python 3.12, so the
    memo of a windowed embedder has ``windows`` and ``window_layout`` of its own."""
    import copy
    import inspect
    import pickle

    from embedders import Windowed, window_layout
    from embedders.recent import remembering

    class Halves(HashingEmbedder):
        window_layout = "chars:half"

        def windows(self, text: str) -> list[tuple[int, int]]:
            mid = len(text) // 2
            return [(0, mid), (mid, len(text))] if mid else [(0, len(text))]

    windowed = remembering(Halves(16))
    assert isinstance(windowed, Windowed) and window_layout(windowed) == "chars:half"
    assert inspect.getattr_static(windowed, "windows") is not None
    assert windowed.windows("abcd") == [(0, 2), (2, 4)]
    plain = remembering(Unwindowed())
    assert not isinstance(plain, Windowed) and window_layout(plain) == window_layout(Unwindowed())
    for made in (copy.copy(plain), copy.deepcopy(plain), pickle.loads(pickle.dumps(plain))):
        assert np.array_equal(made.embed(["tmux"]), HashingEmbedder(16).embed(["tmux"]))
