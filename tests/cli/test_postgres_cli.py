"""The command line on servers: ``--dsn`` / ``$AGENTMEMORY_DSN`` keeps the journal in PostgreSQL
(tests/pg_cluster.py) and ``--chroma-url`` / ``$AGENTMEMORY_CHROMA_URL`` (older names ``--chroma``
/ ``$AGENTMEMORY_CHROMA``) the vectors on a Chroma server (started as tests/stores/test_chroma_server.py
starts it); each command is its own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

AGENTMEMORY = str(Path(sys.executable).parent / "agentmemory")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "AGENTMEMORY_PATH": "/nonexistent/agentmemory-folder", **(env or {})}
    return subprocess.run(
        [AGENTMEMORY, *args], capture_output=True, text=True, env=full, timeout=120, check=False
    )


def test_commands_share_a_postgres_journal_and_a_chroma_server(
    pg_dsn: str,
    chroma_port: int,
) -> None:
    chroma = f"127.0.0.1:{chroma_port}"
    saved = run(
        "save", "user/editor", "Prefers dark mode in Vim.", "--embedder", "hashing:32",
        "--dsn", pg_dsn, "--chroma-url", chroma,
    )  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    hosts = {"AGENTMEMORY_DSN": pg_dsn, "AGENTMEMORY_CHROMA_URL": f"http://{chroma}"}
    assert run("save", "project/build", "Run make check first.", env=hosts).returncode == 0
    found = run("search", "dark", "mode", "--json", env=hosts)
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert result["mode"] == "hybrid" and result["scopes"] == ["project", "user"]
    assert (result["hits"][0]["scope"], result["hits"][0]["name"]) == ("user", "editor")
    assert set(result["hits"][0]["legs"]) == {"bm25", "vector"}
    got = run("get", "user/editor", "--dsn", pg_dsn)  # the journal alone: no Chroma needed
    assert got.returncode == 0 and "Prefers dark mode in Vim." in got.stdout, got.stderr
    bm25 = run("search", "vim", "--mode", "bm25", "--dsn", pg_dsn)
    assert bm25.returncode == 0 and "user/editor" in bm25.stdout, bm25.stderr
    no_vectors = run("search", "vim", "--dsn", pg_dsn)
    assert no_vectors.returncode != 0
    assert no_vectors.stderr.count("\n") == 1 and "--chroma-url HOST:PORT" in no_vectors.stderr
    verified = run("verify", "--json", env=hosts)
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["ok"] is True
    aliased = run("search", "vim", "--json", "--dsn", pg_dsn, "--chroma", chroma)  # older name
    assert aliased.returncode == 0, aliased.stderr
    assert set(json.loads(aliased.stdout)["hits"][0]["legs"]) == {"bm25", "vector"}
    journal = run("journal", "--json", "--dsn", pg_dsn)
    assert journal.returncode == 0, journal.stderr
    assert journal.stdout.count('"seq"') == 2


def test_a_dsn_that_cannot_connect_is_one_line_without_the_password() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dsn = f"host=127.0.0.1 port={port} dbname=memory user=agent password=Hunter2-secret"
    out = run("list", "--dsn", dsn)
    assert out.returncode != 0
    assert out.stderr.count("\n") == 1, out.stderr
    assert f"postgresql://agent@127.0.0.1:{port}/memory" in out.stderr
    assert "Hunter2-secret" not in out.stderr + out.stdout


def test_the_mcp_server_works_on_the_same_servers(
    pg_dsn: str,
    chroma_port: int,
    tmp_path: Path,
) -> None:
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    hosts = {"AGENTMEMORY_DSN": pg_dsn, "AGENTMEMORY_CHROMA": f"127.0.0.1:{chroma_port}"}
    saved = run("save", "user/editor", "Prefers dark mode in Vim.", "--embedder", "hashing:32", env=hosts)  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    params = StdioServerParameters(
        command=AGENTMEMORY,
        args=["mcp", "--scope", "user", "--scope", "project"],
        env={**hosts, "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"},
    )
    answers: list[str] = []

    async def main() -> None:
        with (tmp_path / "server.log").open("w") as err:
            async with Client(stdio_client(params, errlog=err)) as client:  # type: ignore[arg-type]
                with anyio.fail_after(120):
                    found = await client.call_tool("memory_search", {"query": "dark mode editor"})
                    answers.append(str(found.content[0].text))  # type: ignore[union-attr]
                    await client.call_tool(
                        "memory_save",
                        {"scope": "project", "name": "deploy", "content": "Staging first."},
                    )

    anyio.run(main)
    assert "user/editor" in answers[0], answers[0]
    listed = run("list", "project", "--json", "--dsn", pg_dsn)  # the server's write, elsewhere
    assert listed.returncode == 0 and "Staging first." in listed.stdout, listed.stderr
    verified = run("verify", "--json", env=hosts)
    assert verified.returncode == 0 and json.loads(verified.stdout)["ok"] is True, verified.stderr


def test_export_reads_the_postgres_journal_given_by_dsn(pg_dsn: str, tmp_path: Path) -> None:
    from agentmemory import Entry
    from agentmemory.stores.postgres.store import PostgresStore

    with PostgresStore(pg_dsn) as store:
        store.put(Entry("project", "deploy", "Deploys go through staging first."))
        store.put(Entry("user", "editor", "Prefers dark mode.", {"description": "Editor"}))
    # $AGENTMEMORY_PATH names no store: export must read PostgreSQL, not a folder.
    lines = run("export", "--dsn", pg_dsn)
    assert lines.returncode == 0, lines.stderr
    exported = [json.loads(line) for line in lines.stdout.splitlines()]
    assert [(e["scope"], e["name"], e["content"]) for e in exported] == [
        ("project", "deploy", "Deploys go through staging first."),
        ("user", "editor", "Prefers dark mode."),
    ]
    folder = tmp_path / "folder"
    md = run("export", "--format", "markdown", str(folder), "user", env={"AGENTMEMORY_DSN": pg_dsn})
    assert md.returncode == 0, md.stderr
    assert "exported 1 entry" in md.stderr
    assert (folder / "user" / "editor.md").read_text().endswith("---\nPrefers dark mode.")


def test_a_folder_keeps_its_vectors_on_the_server_chroma_url_names(
    chroma_port: int,
    tmp_path: Path,
) -> None:
    folder = tmp_path / "store"
    address = f"127.0.0.1:{chroma_port}"
    saved = run(
        "save", "user/editor", "Prefers dark mode in Vim.", "--embedder", "hashing:32",
        "--path", str(folder), "--chroma-url", address,
    )  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    assert (folder / "journal.sqlite3").is_file()
    assert not (folder / "chroma").exists(), "the index went to an embedded folder"
    found = run(
        "search", "dark", "mode", "--json", "--path", str(folder),
        env={"AGENTMEMORY_CHROMA": f"http://{address}"},  # the older variable, a URL
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert (hits[0]["name"], set(hits[0]["legs"])) == ("editor", {"bm25", "vector"})
    assert not (folder / "chroma").exists()
