"""The near-duplicate check at save time (docs/contract.md#near-duplicates-at-save-time) with the
real default embedder (all-MiniLM-L6-v2 through onnxruntime): through ``agentmemory mcp`` as a
process driven by the SDK's stdio client, and through ``agentmemory save``. The rules on every
store kind are the conformance suite's ``case_near_duplicates``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from agentmemory import SqliteStore
from agentmemory.cli import main
from embedders import ONNX_EMBEDDER

ROOT = Path(__file__).resolve().parents[2]
MODEL = ONNX_EMBEDDER  # the packaged model, loaded from the installed package by path

STORED = "Prefers dark mode in Vim."
RESTATED = "In Vim the user wants the dark theme."  # cosine 0.78 to STORED with MODEL
UNRELATED = "Deploys to staging happen every Tuesday at 10:00 UTC."

pytestmark = pytest.mark.slow  # the real model; a server process


def journal_of(folder: Path) -> list[tuple[int, str, str]]:
    with SqliteStore(folder / "journal.sqlite3") as journal:
        return [(c.seq, c.entry.key, c.entry.content) for c in journal.journal()]


def serve(folder: Path, errlog: Path, calls: list[tuple[str, str]], *extra: str) -> list[object]:
    """Start ``agentmemory mcp`` on ``folder`` (scope user, the real model, options ``extra``),
    call memory_save with each (name, content) and return the results."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "agentmemory",
            "mcp",
            "--path",
            str(folder),
            "--scope",
            "user",
            "--embedder",
            MODEL,
            *extra,
        ],
        cwd=str(ROOT),
        env={"HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"},
    )
    results: list[object] = []

    async def body() -> None:
        with errlog.open("w") as err:
            async with Client(stdio_client(params, errlog=err)) as client:  # type: ignore[arg-type]
                with anyio.fail_after(180):
                    for name, content in calls:
                        results.append(
                            await client.call_tool(
                                "memory_save", {"name": name, "content": content}
                            )
                        )

    anyio.run(body)
    return results


def text_of(result: object) -> tuple[bool, str]:
    content = result.content  # type: ignore[attr-defined]
    assert len(content) == 1 and content[0].type == "text"
    return bool(result.is_error), str(content[0].text)  # type: ignore[attr-defined]


def test_the_mcp_server_names_a_restatement_and_refuses_it_under_refuse(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    got = [
        text_of(r)
        for r in serve(
            folder,
            tmp_path / "err1.log",
            [("editor", STORED), ("editor-theme", RESTATED), ("deploys", UNRELATED)],
        )
    ]
    assert [error for error, _ in got] == [False, False, False], got
    assert "near-duplicates" not in got[0][1]
    saved = got[1][1]
    assert saved.startswith("Saved user/editor-theme ")
    assert "near-duplicates: user/editor (cosine 0." in saved, saved
    assert (
        'keep one copy: save user/editor-theme again with supersedes "editor" (it retires '
        "user/editor), or forget user/editor-theme with memory_forget" in saved
    ), saved
    assert "near-duplicates" not in got[2][1], got[2][1]  # the unrelated save names nothing

    before = journal_of(folder)
    got = [
        text_of(r)
        for r in serve(
            folder,
            tmp_path / "err2.log",
            [("vim-theme", "The user wants Vim in a dark colour scheme."), ("pets", UNRELATED[:5])],
            "--duplicates",
            "refuse",
        )
    ]
    error, text = got[0]
    assert error, text
    assert text.startswith("agentmemory: user/vim-theme was not saved: its content is a near-")
    assert 'edit that entry with memory_patch, or save with supersedes "editor' in text, text
    assert text.endswith("nothing was written")
    assert journal_of(folder)[: len(before)] == before
    assert [key for _, key, _ in journal_of(folder)[len(before) :]] == ["user/pets"]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_agentmemory_save_reports_refuses_and_says_so_in_json(tmp_path: Path) -> None:
    folder = str(tmp_path / "store")
    common = ["--path", folder, "--embedder", MODEL]
    assert run("save", "user/editor", STORED, *common).exit_code == 0
    r = run("save", "user/editor-theme", RESTATED, *common)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("created user/editor-theme: ")
    assert "agentmemory: note: near-duplicates: user/editor (cosine 0." in r.stderr, r.stderr
    assert "--supersedes editor" in r.stderr
    r = run("save", "user/deploys", UNRELATED, *common, "--json")
    assert r.exit_code == 0 and "duplicates" not in json.loads(r.stdout), r.stdout
    r = run("save", "user/theme", "The user wants the dark theme in Vim.", *common, "--json")
    named = [d["key"] for d in json.loads(r.stdout)["duplicates"]]
    assert named[:2] in (["user/editor-theme", "user/editor"], ["user/editor", "user/editor-theme"])

    before = journal_of(tmp_path / "store")
    r = run("save", "user/dark", RESTATED, *common, "--duplicates", "refuse")
    assert r.exit_code == 1
    line = r.stderr.strip()
    assert line.startswith("agentmemory: user/dark was not saved: ") and "user/editor-theme" in line
    assert journal_of(tmp_path / "store") == before
    r = run("save", "user/dark", RESTATED, *common, "--duplicates", "off")
    assert r.exit_code == 0 and "near-duplicates" not in r.stderr


def test_a_store_with_a_reranker_still_names_a_copy_by_its_cosine(tmp_path: Path) -> None:
    """The check ranks by cosine with the store's reranker off: a random tiny cross-encoder
    (built offline; it puts the copy below unrelated entries) must not hide an exact copy."""
    from harnesses import TINY, build_cross_encoder

    from agentmemory import ChromaStore, Entry, tools
    from embedders import HashingEmbedder
    from recallers import CrossEncoderReranker

    folder = build_cross_encoder(tmp_path / "ce", **TINY)
    reranker = CrossEncoderReranker(folder)
    others = [f"Unrelated note {i} about the garden, the bus and lunch." for i in range(6)]
    with ChromaStore.open(tmp_path / "c", embedder=HashingEmbedder(), reranker=reranker) as st:
        st.put(Entry("user", "editor", STORED))
        for i, text in enumerate(others):
            st.put(Entry("user", f"other-{i}", text))
        reranked = st.recall(STORED, scopes=["user"], limit=7, mode="vector")
        assert reranked[0].entry.name != "editor"  # the reranker would hide the copy
        kit = {t.name: t for t in tools(st, ["user"], duplicates="refuse")}
        got = kit["memory_save"]({"name": "dark", "content": STORED})
        assert got.is_error and [d.key for d in got.duplicates] == ["user/editor"], got.text


@pytest.mark.parametrize("kind", ["chroma", "markdown"])
def test_a_save_that_checks_for_duplicates_embeds_its_text_once(tmp_path: Path, kind: str) -> None:
    """The check embeds the new text as a query and the put embeds it for the index: the
    store remembers the vector, so the model is called once for it (benchmarks/README.md,
    "Near-duplicates at save time")."""
    from agentmemory import ChromaStore, FileStore, Store, tools
    from embedders import HashingEmbedder

    class Counting(HashingEmbedder):
        def __init__(self) -> None:
            super().__init__(64)
            self.texts: list[str] = []

        def embed(self, texts: Any) -> Any:
            self.texts += list(texts)
            return super().embed(texts)

    counting = Counting()
    st: Store = (
        ChromaStore.open(tmp_path / "c", embedder=counting)
        if kind == "chroma"
        else FileStore(tmp_path / "f", embedder=counting)
    )
    with st:
        kit = {t.name: t for t in tools(st, ["user"])}
        for name, text in (("editor", STORED), ("deploys", UNRELATED)):
            assert not kit["memory_save"]({"name": name, "content": text}).is_error
        assert counting.texts.count(STORED) == 1 and counting.texts.count(UNRELATED) == 1
        hits = st.recall(STORED, scopes=["user"], mode="vector")
        assert hits[0].entry.name == "editor"  # the remembered vector is the right one
