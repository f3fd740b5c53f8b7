"""Reading embedder fingerprints, and the rule for when two of them give the same vectors.

A fingerprint is ``"<family>:<model>;<key>=<value>;..."``: the embedder's registry name, then
fields such as ``dim=384``, ``weights=sha256:<hex>`` and ``max_seq_length=256``
(``SentenceTransformerEmbedder``, ``OnnxEmbedder``) or ``version=blake2b-words-v1``
(``HashingEmbedder``). A store records the fingerprint of the embedder that indexed it; opening
it with another embedder is safe exactly when :func:`same_vectors` holds for the two.
"""

from __future__ import annotations

import re

__all__ = [
    "INTERCHANGEABLE_RUNTIMES",
    "REQUIRED_MODEL_FIELDS",
    "fingerprint_fields",
    "same_vectors",
]

INTERCHANGEABLE_RUNTIMES = frozenset({"onnx", "sentence-transformers"})
"""Embedder families that run a sentence-transformers model folder with the same result: the
ONNX path reproduces Transformer + mean Pooling + L2 normalisation (it refuses other pipelines),
and its vectors match sentence-transformers' to cosine > 0.999 for the packaged model
(tests/embedder/test_embedders.py, ``test_onnx_gives_the_same_vectors``)."""

REQUIRED_MODEL_FIELDS = frozenset({"dim", "max_seq_length", "weights"})
"""Fields a model fingerprint must carry for :func:`same_vectors` to compare it across runtimes."""

_NAME = re.compile(r"[^\s;:=]+:[^;]+")
_FIELD_KEY = re.compile(r"[a-z][a-z0-9_]*")
_WEIGHTS = re.compile(r"sha256:[0-9a-f]{64}")
_POSITIVE = re.compile(r"[1-9][0-9]*")


def fingerprint_fields(fingerprint: str) -> dict[str, str]:
    """Split ``fingerprint`` into its parts, all strings: ``"name"`` (the registry name before
    the first ``;``), ``"family"`` and ``"model"`` (that name split at its first ``:``), then one
    item per ``key=value`` field, in order.

    ``"onnx:all-MiniLM-L6-v2;dim=384;weights=sha256:ab…;max_seq_length=256"`` gives
    ``{"name": "onnx:all-MiniLM-L6-v2", "family": "onnx", "model": "all-MiniLM-L6-v2",
    "dim": "384", "weights": "sha256:ab…", "max_seq_length": "256"}``.

    Raises ``ValueError`` naming the fingerprint when it is not in that form: no
    ``<family>:<model>`` name, a field without ``=``, a key that is not lower-case
    ``[a-z][a-z0-9_]*`` or is one of ``name``, ``family``, ``model``, or a key given twice.
    """
    name, *fields = fingerprint.split(";")
    if _NAME.fullmatch(name) is None:
        raise ValueError(
            f"embedder fingerprint {fingerprint!r} does not start with '<family>:<model>'"
        )
    family, _, model = name.partition(":")
    parts = {"name": name, "family": family, "model": model}
    for field in fields:
        key, sep, value = field.partition("=")
        if not sep or _FIELD_KEY.fullmatch(key) is None or key in parts:
            raise ValueError(
                f"embedder fingerprint {fingerprint!r} has field {field!r}; fields are "
                "'<key>=<value>' with distinct lower-case keys"
            )
        parts[key] = value
    return parts


def same_vectors(fingerprint_a: str, fingerprint_b: str) -> bool:
    """Whether embedders with these fingerprints give the same vectors for the same texts, so
    that a store indexed with one may be searched and written with the other.

    True when the two strings are equal, or when all of these hold:

    - both families are in :data:`INTERCHANGEABLE_RUNTIMES` (``sentence-transformers``,
      ``onnx``): the same model run through another runtime;
    - the model parts of the names are equal (``all-MiniLM-L6-v2``, or the same folder as
      given), so the pooling and tokenizer configuration come from the same place;
    - both have exactly the same field keys, among them all of :data:`REQUIRED_MODEL_FIELDS`,
      and every field has the same value: ``dim`` and ``max_seq_length`` (positive integers),
      ``weights`` (``sha256:`` and 64 hex digits, the digest of the weight files), and any other
      field either records (pooling, normalisation) likewise.

    False otherwise, also for a fingerprint :func:`fingerprint_fields` cannot read. Vectors
    across runtimes agree to cosine > 0.999, not bit for bit, so a store written with both holds
    vectors of both; rankings agree to that precision. Never raises.
    """
    if fingerprint_a == fingerprint_b:
        return True
    try:
        a = fingerprint_fields(fingerprint_a)
        b = fingerprint_fields(fingerprint_b)
    except ValueError:
        return False
    if not {a["family"], b["family"]} <= INTERCHANGEABLE_RUNTIMES:
        return False
    if a["model"] != b["model"] or a.keys() != b.keys() or not a.keys() >= REQUIRED_MODEL_FIELDS:
        return False
    if _WEIGHTS.fullmatch(a["weights"]) is None:
        return False
    if _POSITIVE.fullmatch(a["dim"]) is None or _POSITIVE.fullmatch(a["max_seq_length"]) is None:
        return False
    return all(a[key] == b[key] for key in a if key not in ("name", "family"))
