"""Where the evaluation data lives, and fetching the public files into a cache.

Lookup order for a data set (:func:`find_data`): the ``data`` path the caller gives (``--data``);
else the ``shared/data`` folder next to the repository when present (a development checkout;
docs/recall.md#evaluation-data); else the cache folder
(``platformdirs.user_cache_dir("agentmemory")/data``, or ``$AGENTMEMORY_CACHE_DIR/data``).
When none holds the files, :class:`~agentmemory.errors.DataNotFoundError` names the places tried, the
public URL and ``--download``.

:func:`download` fetches one public file with ``urllib``, checks its SHA-256 and caches it; it
writes to a temporary file beside the target and renames it into place only when complete and
matching, so no partial file is ever left. LoCoMo's ``locomo10.json`` has a known digest
(:data:`LOCOMO_SHA256`). The BEIR SciFact zip has no published digest: :func:`fetch_dataset` checks
what it can (a readable zip holding the three files, 5,183 documents and 300 judged test queries)
and records the digest it saw in ``SOURCE.json`` beside the extracted files. LongMemEval's
``longmemeval_s_cleaned.json`` (:data:`LONGMEMEVAL_URL`) has no published digest either, and none
was checked when this code was written (no network here), so :data:`LONGMEMEVAL_SHA256` is
``None``: the file is fetched unchecked and the loader checks its format when a run reads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from ..errors import DataNotFoundError, DownloadError

__all__ = [
    "DATASETS",
    "LOCOMO_SHA256",
    "LOCOMO_URL",
    "LONGMEMEVAL_SHA256",
    "LONGMEMEVAL_URL",
    "SCIFACT_URL",
    "cache_dir",
    "download",
    "fetch_dataset",
    "find_data",
    "locate_data",
    "repo_data_dir",
]

LOCOMO_URL = "https://github.com/snap-research/locomo/raw/main/data/locomo10.json"
"""The public LoCoMo file: 10 conversations (CC BY-NC 4.0)."""

LOCOMO_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
"""SHA-256 of ``locomo10.json`` at :data:`LOCOMO_URL`."""

SCIFACT_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip"
"""The BEIR SciFact zip (corpus, queries, qrels); no digest is published for it."""

SCIFACT_DOCUMENTS = 5183
"""Documents in SciFact's corpus (BEIR paper, Table 1)."""

SCIFACT_TEST_QUERIES = 300
"""Judged test queries in SciFact (BEIR paper, Table 1)."""

LONGMEMEVAL_URL = (
    "https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned/resolve/main/"
    "longmemeval_s_cleaned.json"
)
"""The public LongMemEval_S file, cleaned (2025/09): 500 questions, each with a haystack of about
40 sessions (about 115k tokens); the URL the LongMemEval README gives
(github.com/xiaowu0162/LongMemEval). ``longmemeval_m_cleaned.json`` beside it (about 500 sessions
per question) is read too when given with ``--data``."""

LONGMEMEVAL_SHA256: str | None = None
"""SHA-256 of the file at :data:`LONGMEMEVAL_URL`: unknown. None is published, and it was not
measured here (no network when this was written), so a download is not checked against one."""

DATASETS = ("locomo", "scifact", "longmemeval")
"""The data sets :func:`find_data` and :func:`fetch_dataset` know."""

_LOCOMO_FILES = ("locomo-dev.json", "locomo10.json")
_SCIFACT_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")
# LongMemEval_S before _M (ten times the sessions); the oracle file only when named, since its
# haystack is the evidence sessions alone.
_LONGMEMEVAL_FILES = (
    "longmemeval_s_cleaned.json",
    "longmemeval_s.json",
    "longmemeval_m_cleaned.json",
    "longmemeval_m.json",
)
_URLS = {"locomo": LOCOMO_URL, "scifact": SCIFACT_URL, "longmemeval": LONGMEMEVAL_URL}
_BLOCK_BYTES = 1 << 16


def repo_data_dir() -> Path | None:
    """The ``shared/data`` folder next to the repository this package was imported from, when it
    exists (an editable development install); ``None`` otherwise."""
    repo = Path(__file__).resolve().parents[2]
    candidate = repo.parent / "shared" / "data"
    return candidate if candidate.is_dir() else None


def cache_dir() -> Path:
    """The cache folder: ``$AGENTMEMORY_CACHE_DIR`` when set, else
    ``platformdirs.user_cache_dir("agentmemory")``. Not created here."""
    env = os.environ.get("AGENTMEMORY_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("agentmemory"))


def _check_dataset(dataset: str) -> str:
    if dataset not in DATASETS:
        raise ValueError(f"unknown data set {dataset!r}; known: {', '.join(DATASETS)}")
    return dataset


def _candidates(dataset: str, root: Path) -> list[Path]:
    """The paths under ``root`` that may hold ``dataset``, most specific first."""
    files = {"locomo": _LOCOMO_FILES, "longmemeval": _LONGMEMEVAL_FILES}.get(dataset)
    if files is not None:
        if root.is_file():
            return [root]
        return [d / f for d in (root, root / dataset) for f in files]
    return [root, root / "scifact"]


def _holds(dataset: str, path: Path) -> bool:
    if dataset in ("locomo", "longmemeval"):
        return path.is_file()
    return all((path / f).is_file() for f in _SCIFACT_FILES)


def find_data(dataset: str, data: str | Path | None = None) -> Path:
    """The LoCoMo or LongMemEval JSON file, or the SciFact folder, to read.

    With ``data``: that file, or a folder holding it directly or in a ``locomo``/``scifact``/
    ``longmemeval`` subfolder (so both ``--data DIR`` and ``--data DIR/scifact`` work). For
    LoCoMo a folder's ``locomo-dev.json`` is preferred to ``locomo10.json``; for LongMemEval
    ``longmemeval_s_cleaned.json``, then ``longmemeval_s.json``, ``longmemeval_m_cleaned.json``,
    ``longmemeval_m.json`` (the oracle file only when ``data`` names it). Without ``data``: the
    ``shared/data`` folder next to the repository when present, then ``cache_dir()/data``.

    Raises :class:`~agentmemory.errors.DataNotFoundError` naming every path tried, the public URL and
    ``--download``; ``ValueError`` for an unknown ``dataset``.
    """
    _check_dataset(dataset)
    roots: list[Path] = []
    if data is not None:
        roots.append(Path(data).expanduser())
    else:
        repo = repo_data_dir()
        if repo is not None:
            roots.append(repo)
        roots.append(cache_dir() / "data")
    looked: list[str] = []
    for root in roots:
        for path in _candidates(dataset, root):
            if _holds(dataset, path):
                return path
            looked.append(str(path))
    raise DataNotFoundError(dataset, looked, _URLS[dataset])


def download(
    url: str,
    dest: str | Path,
    sha256: str | None = None,
    *,
    timeout_s: float = 60.0,
    progress: bool = False,
) -> Path:
    """Fetch ``url`` into ``dest`` and return ``dest``.

    When ``dest`` already exists and matches ``sha256`` (or ``sha256`` is ``None``) nothing is
    fetched: the cache is used. Otherwise the body is streamed into a temporary file in
    ``dest``'s folder while its SHA-256 is computed, then renamed onto ``dest`` only if complete
    and equal to ``sha256`` (hex, any case). ``timeout_s`` bounds each network wait, in seconds;
    ``progress`` shows a tqdm bar on stderr.

    Raises :class:`~agentmemory.errors.DownloadError` (an ``OSError``) on an HTTP error status, a network
    error, a body shorter than its ``Content-Length``, or a digest mismatch; in every case no
    temporary file is left and an existing ``dest`` is not replaced.
    """
    dest = Path(dest)
    want = sha256.lower() if sha256 else None
    if dest.is_file() and (want is None or _sha256_file(dest) == want):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            have = _fetch(url, out, timeout_s=timeout_s, progress=progress, label=dest.name)
        if want is not None and have != want:
            raise DownloadError(
                url,
                f"SHA-256 is {have}, expected {want}; the file was deleted. The published "
                "file may have changed: check it and fetch it by hand, then pass --data",
            )
        os.replace(tmp, dest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return dest


def _fetch(url: str, out: BinaryIO, *, timeout_s: float, progress: bool, label: str) -> str:
    """Stream ``url``'s body into ``out``; return its hex SHA-256. Raises ``DownloadError``."""
    request = urllib.request.Request(url, headers={"User-Agent": "agentmemory-eval"})
    try:
        response = urllib.request.urlopen(request, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        raise DownloadError(url, f"the server answered HTTP {exc.code} {exc.reason}") from None
    except OSError as exc:  # URLError, timeouts, refused connections
        raise DownloadError(
            url, f"{exc}; check the network, or fetch the file by hand and pass --data"
        ) from None
    from tqdm.auto import tqdm

    digest = hashlib.sha256()
    received = 0
    with response:
        length = response.headers.get("Content-Length")
        total = int(length) if length and length.isdigit() else None
        with tqdm(
            total=total, unit="B", unit_scale=True, desc=label, disable=not progress, leave=False
        ) as bar:
            while True:
                try:
                    block = response.read(_BLOCK_BYTES)
                except (OSError, http.client.HTTPException) as exc:
                    raise DownloadError(url, f"the connection broke: {exc}") from None
                if not block:
                    break
                out.write(block)
                digest.update(block)
                received += len(block)
                bar.update(len(block))
    if total is not None and received != total:
        raise DownloadError(url, f"received {received} of {total} bytes; try again")
    return digest.hexdigest()


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_dataset(
    dataset: str,
    *,
    root: str | Path | None = None,
    url: str | None = None,
    timeout_s: float = 60.0,
    progress: bool = True,
) -> Path:
    """Download ``dataset`` into ``root`` (default ``cache_dir()/data``) and return what
    :func:`find_data` would return for it.

    LoCoMo: ``locomo10.json`` from ``url`` (default :data:`LOCOMO_URL`), checked against
    :data:`LOCOMO_SHA256` (only when ``url`` is the default). SciFact: the BEIR zip (default
    :data:`SCIFACT_URL`), extracted to ``<root>/scifact/`` after checking that it is a readable
    zip holding ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/test.tsv`` with 5,183 documents
    and 300 judged queries (only for the default ``url``); its SHA-256 is written to
    ``<root>/scifact/SOURCE.json``. Nothing half-extracted is left. LongMemEval:
    ``longmemeval_s_cleaned.json`` from ``url`` (default :data:`LONGMEMEVAL_URL`) into
    ``<root>/longmemeval/``, not checked against a digest (:data:`LONGMEMEVAL_SHA256` is unknown).

    Raises :class:`~agentmemory.errors.DownloadError` when fetching or checking fails.
    """
    _check_dataset(dataset)
    base = Path(root) if root is not None else cache_dir() / "data"
    if dataset == "locomo":
        source = url or LOCOMO_URL
        want = LOCOMO_SHA256 if source == LOCOMO_URL else None
        return download(
            source, base / "locomo" / "locomo10.json", want, timeout_s=timeout_s, progress=progress
        )
    if dataset == "longmemeval":
        target_file = base / "longmemeval" / "longmemeval_s_cleaned.json"
        return download(
            url or LONGMEMEVAL_URL,
            target_file,
            LONGMEMEVAL_SHA256,
            timeout_s=timeout_s,
            progress=progress,
        )
    source = url or SCIFACT_URL
    target = base / "scifact"
    if _holds("scifact", target):
        return target
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=base, prefix=".scifact."))
    try:
        archive = download(
            source, work / "scifact.zip", None, timeout_s=timeout_s, progress=progress
        )
        digest = _sha256_file(archive)
        out = work / "scifact"
        _extract_beir(source, archive, out)
        if source == SCIFACT_URL:
            _check_scifact(source, out)
        (out / "SOURCE.json").write_text(
            json.dumps({"url": source, "sha256": digest}, indent=2) + "\n", encoding="utf-8"
        )
        if target.exists():
            shutil.rmtree(target)
        os.replace(out, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def locate_data(
    dataset: str,
    data: str | Path | None = None,
    *,
    download: bool = False,
    announce: Callable[[str], object] | None = None,
    url: str | None = None,
) -> Path:
    """The data of ``dataset`` to read: :func:`find_data`; when it finds nothing and ``download``
    is set, :func:`fetch_dataset` from ``url`` (default the public file) into the folder ``data``
    names, or into the cache when ``data`` is ``None`` (``announce``, when given, is called first
    with one line saying what is fetched, from where, into where). What ``agentmemory eval`` and
    ``agentmemory demo`` read, ``--data`` and ``--download`` being ``data`` and ``download``.
    A download only adds the set's own files (``<folder>/locomo/locomo10.json``,
    ``<folder>/scifact/``, ``<folder>/longmemeval/longmemeval_s_cleaned.json``); nothing already
    in the folder is replaced.

    Raises :class:`~agentmemory.errors.DataNotFoundError` when nothing is found and nothing may be
    fetched: ``download`` not set, or ``data`` naming a file (a download goes into a folder; the
    message says so), what :func:`fetch_dataset` raises, and ``ValueError`` for an unknown
    ``dataset``.
    """
    try:
        return find_data(dataset, data)
    except DataNotFoundError as exc:
        if not download:
            raise
        looked = exc.looked
    root = None if data is None else Path(data).expanduser()
    if root is not None and (root.is_file() or (not root.exists() and root.suffix)):
        raise DataNotFoundError(
            dataset,
            looked,
            url or _URLS[dataset],
            why=f"--download fetches into a folder, and --data {root} names a file; give the "
            f"folder to fetch into (the data lands in <folder>/{dataset}/)",
        )
    source = url or _URLS[dataset]
    if announce is not None:
        into = "the cache" if root is None else str(root)
        announce(f"agentmemory: fetching the public {dataset} data ({source}) into {into}")
    return fetch_dataset(dataset, root=root, url=url)


def _extract_beir(url: str, archive: Path, out: Path) -> None:
    """Copy the three BEIR files out of ``archive`` (at any folder depth) into ``out``."""
    try:
        with zipfile.ZipFile(archive) as zf:
            members = {
                name: info for info in zf.infolist() if not (name := info.filename).endswith("/")
            }
            for wanted in _SCIFACT_FILES:
                found = [m for m in members if m == wanted or m.endswith("/" + wanted)]
                if not found:
                    raise DownloadError(url, f"the zip holds no {wanted}; not a BEIR set")
                member = min(found, key=len)
                target = out / wanted
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(member) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
    except zipfile.BadZipFile as exc:
        raise DownloadError(url, f"not a readable zip: {exc}") from None


def _check_scifact(url: str, folder: Path) -> None:
    with open(folder / "corpus.jsonl", encoding="utf-8") as fh:
        documents = sum(1 for line in fh if line.strip())
    with open(folder / "qrels" / "test.tsv", encoding="utf-8") as fh:
        queries = {line.split("\t")[0] for line in list(fh)[1:] if line.strip()}
    if documents != SCIFACT_DOCUMENTS or len(queries) != SCIFACT_TEST_QUERIES:
        raise DownloadError(
            url,
            f"the zip holds {documents} documents and {len(queries)} judged test queries, not "
            f"SciFact's {SCIFACT_DOCUMENTS} and {SCIFACT_TEST_QUERIES}",
        )
