"""AgentMemoryRetriever: a LangChain retriever over real stores' recall
(docs/integrations.md#langchain)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langchain_core", reason="the langchain extra is not installed")

from harnesses import open_kind

from agentmemory import EmptyQueryError, Entry, InvalidEntryError
from agentmemory.integrations.langchain import AgentMemoryRetriever

ENTRIES = {
    "editor": "Prefers dark mode in Vim.",
    "deploys": "Deploys run on Fridays after the review.",
    "coffee": "Drinks oat milk flat whites.",
}


@pytest.mark.parametrize("kind", ["sqlite", "chroma"])
def test_documents_carry_scope_name_score_and_each_legs_rank(kind: str, tmp_path: Path) -> None:
    with open_kind(kind, tmp_path) as st:
        for name, text in ENTRIES.items():
            st.put(Entry(scope="user", name=name, content=text, meta={"description": name}))
        st.put(Entry(scope="other", name="editor", content="Uses dark mode in Emacs."))
        docs = AgentMemoryRetriever(store=st, scopes=["user"], limit=2).invoke("dark mode Vim")
    assert docs[0].page_content == "Prefers dark mode in Vim."
    assert len(docs) <= 2 and all(d.metadata["scope"] == "user" for d in docs)
    top = docs[0].metadata
    assert (top["name"], top["key"], top["description"]) == ("editor", "user/editor", "editor")
    assert top["bm25_rank"] == 1 and top["score"] > 0
    if kind == "chroma":
        assert top["method"] not in ("bm25", "vector") and top["vector_rank"] is not None
    else:
        assert top["method"] == "bm25" and top["vector_rank"] is None
    assert top["unavailable"] == {}


def test_bad_input_is_refused_by_the_stores_own_errors(tmp_path: Path) -> None:
    with open_kind("sqlite", tmp_path) as st:
        st.put(Entry(scope="user", name="editor", content="Prefers dark mode."))
        with pytest.raises(EmptyQueryError):
            AgentMemoryRetriever(store=st, scopes=["user"]).invoke("   ")
        with pytest.raises(InvalidEntryError, match="Team A"):
            AgentMemoryRetriever(store=st, scopes=["Team A"]).invoke("dark")
        with pytest.raises(ValueError, match="limit"):
            AgentMemoryRetriever(store=st, scopes=["user"], limit=0)
