"""Fetching the public data files, against an http.server on 127.0.0.1 (never the internet)."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from agentmemory.errors import DataNotFoundError, DownloadError
from agentmemory.eval import (
    LONGMEMEVAL_SHA256,
    LONGMEMEVAL_URL,
    download,
    fetch_dataset,
    find_data,
    load_locomo,
    locate_data,
)

BODY = b'[{"sample_id": "conv-1", "conversation": {}, "qa": []}]\n' * 2000  # ~110 KB
BODY_SHA256 = hashlib.sha256(BODY).hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    files: ClassVar[dict[str, bytes]] = {}
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        if self.path == "/boom":
            self.send_error(500, "server exploded")
            return
        if self.path == "/short":  # promises more than it sends, then hangs up
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY) * 2))
            self.end_headers()
            self.wfile.write(BODY)
            return
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404, "no such file")
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Handler]]]:
    """An HTTP server on 127.0.0.1 at a free port; stopped when the test ends."""

    class Handler(_Handler):
        files: ClassVar[dict[str, bytes]] = {"/locomo10.json": BODY}
        hits: ClassVar[list[str]] = []

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", Handler
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*"))


def test_good_file_is_saved_and_then_served_from_the_cache(
    server: tuple[str, type[_Handler]], tmp_path: Path
) -> None:
    url, handler = server
    dest = tmp_path / "cache" / "locomo10.json"
    assert download(f"{url}/locomo10.json", dest, BODY_SHA256.upper()) == dest
    assert dest.read_bytes() == BODY
    assert _leftovers(tmp_path / "cache") == ["locomo10.json"]
    # A second call finds the file with the right digest and fetches nothing.
    download(f"{url}/locomo10.json", dest, BODY_SHA256)
    assert handler.hits == ["/locomo10.json"]


def test_bad_checksum_deletes_and_raises(
    server: tuple[str, type[_Handler]], tmp_path: Path
) -> None:
    url, _ = server
    dest = tmp_path / "locomo10.json"
    with pytest.raises(DownloadError, match=f"SHA-256 is {BODY_SHA256}, expected 00ff") as err:
        download(f"{url}/locomo10.json", dest, "00ff" * 16)
    assert err.value.url == f"{url}/locomo10.json"
    assert _leftovers(tmp_path) == []


def test_bad_checksum_keeps_an_existing_file(
    server: tuple[str, type[_Handler]], tmp_path: Path
) -> None:
    url, _ = server
    dest = tmp_path / "locomo10.json"
    dest.write_bytes(b"old")
    with pytest.raises(DownloadError):
        download(f"{url}/locomo10.json", dest, "00ff" * 16)
    assert dest.read_bytes() == b"old"
    assert _leftovers(tmp_path) == ["locomo10.json"]


@pytest.mark.parametrize(("path", "message"), [("/boom", "HTTP 500"), ("/nope", "HTTP 404")])
def test_server_error_leaves_nothing(
    server: tuple[str, type[_Handler]], tmp_path: Path, path: str, message: str
) -> None:
    url, _ = server
    with pytest.raises(DownloadError, match=message):
        download(f"{url}{path}", tmp_path / "f.json", None)
    assert _leftovers(tmp_path) == []


def test_truncated_body_leaves_nothing(server: tuple[str, type[_Handler]], tmp_path: Path) -> None:
    url, _ = server
    with pytest.raises(DownloadError):
        download(f"{url}/short", tmp_path / "f.json", None)
    assert _leftovers(tmp_path) == []


def test_unreachable_server_is_a_download_error(tmp_path: Path) -> None:
    # Port 1 on 127.0.0.1: nothing listens there, the connection is refused at once.
    with pytest.raises(DownloadError, match="--data"):
        download("http://127.0.0.1:1/x.json", tmp_path / "x.json", None, timeout_s=5)
    assert _leftovers(tmp_path) == []


def test_fetch_locomo_into_a_cache_then_find_it(
    server: tuple[str, type[_Handler]], tmp_path: Path
) -> None:
    url, _ = server
    got = fetch_dataset("locomo", root=tmp_path, url=f"{url}/locomo10.json", progress=False)
    assert got == tmp_path / "locomo" / "locomo10.json"
    assert find_data("locomo", tmp_path) == got
    with pytest.raises(ValueError):  # the test body is not a real LoCoMo file
        load_locomo(got)


def test_fetch_longmemeval_into_a_folder_then_evaluate_reads_it(
    server: tuple[str, type[_Handler]], tmp_path: Path
) -> None:
    url, handler = server
    fixture = Path(__file__).resolve().parents[1] / "data" / "longmemeval_fixture.json"
    handler.files["/longmemeval_s_cleaned.json"] = fixture.read_bytes()
    said: list[str] = []
    got = locate_data(
        "longmemeval",
        tmp_path,
        download=True,
        announce=said.append,
        url=f"{url}/longmemeval_s_cleaned.json",
    )
    assert got == tmp_path / "longmemeval" / "longmemeval_s_cleaned.json"
    assert got.read_bytes() == fixture.read_bytes()  # no digest is known, so none is checked
    assert said and "longmemeval" in said[0]
    assert find_data("longmemeval", tmp_path) == got
    assert LONGMEMEVAL_SHA256 is None
    assert LONGMEMEVAL_URL.startswith("https://huggingface.co/datasets/xiaowu0162/")


def _beir_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("scifact/corpus.jsonl", json.dumps({"_id": "1", "title": "T", "text": "x"}))
        zf.writestr("scifact/queries.jsonl", json.dumps({"_id": "q", "text": "x"}))
        zf.writestr("scifact/qrels/test.tsv", "query-id\tcorpus-id\tscore\nq\t1\t1\n")
        zf.writestr("scifact/qrels/train.tsv", "query-id\tcorpus-id\tscore\n")
    return buf.getvalue()


def test_fetch_a_beir_zip_extracts_the_three_files(
    server: tuple[str, type[_Handler]], tmp_path: Path
) -> None:
    url, handler = server
    body = _beir_zip()
    handler.files["/scifact.zip"] = body
    got = fetch_dataset("scifact", root=tmp_path, url=f"{url}/scifact.zip", progress=False)
    assert got == tmp_path / "scifact"
    assert sorted(p.relative_to(got).as_posix() for p in got.rglob("*") if p.is_file()) == [
        "SOURCE.json",
        "corpus.jsonl",
        "qrels/test.tsv",
        "queries.jsonl",
    ]
    source = json.loads((got / "SOURCE.json").read_text(encoding="utf-8"))
    assert source["sha256"] == hashlib.sha256(body).hexdigest()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp folder left


def test_fetch_a_bad_zip_leaves_nothing(server: tuple[str, type[_Handler]], tmp_path: Path) -> None:
    url, handler = server
    handler.files["/scifact.zip"] = b"not a zip at all"
    with pytest.raises(DownloadError, match="not a readable zip"):
        fetch_dataset("scifact", root=tmp_path, url=f"{url}/scifact.zip", progress=False)
    assert _leftovers(tmp_path) == []


def test_locate_data_finds_or_fetches_only_when_allowed(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    (folder / "locomo").mkdir(parents=True)
    (folder / "locomo" / "locomo10.json").write_bytes(BODY)
    said: list[str] = []
    assert locate_data("locomo", folder, download=True, announce=said.append) == (
        folder / "locomo" / "locomo10.json"
    )
    with pytest.raises(DataNotFoundError, match="--download"):
        locate_data("scifact", folder)
    assert said == [] and _leftovers(folder) == ["locomo", "locomo10.json"]


def test_download_with_data_fetches_into_that_folder_or_says_why_not(
    server: tuple[str, type[_Handler]], tmp_path: Path
) -> None:
    """``--download --data DIR`` with nothing found fetches into DIR, beside what DIR holds; a
    ``--data`` naming a file is refused with the reason, and nothing is fetched."""
    url, handler = server
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    said: list[str] = []
    got = locate_data(
        "locomo", folder, download=True, announce=said.append, url=f"{url}/locomo10.json"
    )
    assert got == folder / "locomo" / "locomo10.json" and got.read_bytes() == BODY
    assert said == [
        f"agentmemory: fetching the public locomo data ({url}/locomo10.json) into {folder}"
    ]
    assert (folder / "notes.txt").read_text() == "mine"
    assert locate_data("locomo", folder) == got  # found there from now on
    new = tmp_path / "new"  # a folder not made yet is made
    assert locate_data("locomo", new, download=True, url=f"{url}/locomo10.json").is_file()
    hits = list(handler.hits)
    for named in (tmp_path / "nothing.json", folder / "notes.txt"):
        with pytest.raises(DataNotFoundError, match="names a file") as err:
            locate_data("scifact", named, download=True, url=f"{url}/scifact.zip")
        assert str(named) in str(err.value) and "fetches into a folder" in str(err.value)
    assert handler.hits == hits and not (tmp_path / "nothing.json").exists()
