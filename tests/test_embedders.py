"""Embedders: the protocol, the registry, the hashing embedder, the packaged model through
sentence-transformers and through onnxruntime, and the Chroma adapters."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import embedders
from embedders import Embedder, HashingEmbedder, UnknownEmbedderError

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


def test_all_is_sorted_and_complete() -> None:
    assert embedders.__all__ == sorted(embedders.__all__)
    for name in embedders.__all__:
        assert hasattr(embedders, name), name


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
            env={**__import__("os").environ, "PYTHONHASHSEED": seed},
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
    for name in ("hashing",):
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
