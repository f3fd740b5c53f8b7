"""The docs answer every citation: each ``docs/<file>.md#<anchor>`` in the code names a page that
exists and a heading on it, and no file cites design notes that are not in the repository.

Anchors are GitHub's heading slugs: the heading text lowercased, each space turned into ``-``, and
every character other than a letter, a digit, ``-`` or ``_`` dropped (``Recall@k`` gives
``recallk``, ``Verify, repair, reindex`` gives ``verify-repair-reindex``); a repeated heading gets
``-1``, ``-2``, ... in order.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PACKAGES = tuple(
    sorted(
        p.name
        for p in ROOT.iterdir()
        if (p / "__init__.py").is_file() and p.name not in ("tests", "benchmarks", "notebooks")
    )
)
"""The import packages (every top-level folder with an ``__init__.py``: agentmemory, embedders,
recallers, ...): nothing in them may point outside the repository."""
CITING = (*PACKAGES, "tests", "benchmarks", "notebooks")
"""Every folder whose files may cite the docs."""
SUFFIXES = {".py", ".md", ".ipynb", ".txt", ".toml", ".cfg"}

CITATION = re.compile(r"docs/([A-Za-z0-9_-]+\.md)#([A-Za-z0-9_-]*)")
PAGE = re.compile(r"docs/([A-Za-z0-9_-]+\.md)")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
FENCE = re.compile(r"^\s*(```|~~~)")
RELATIVE_LINK = re.compile(r"\]\((?!https?:)([A-Za-z0-9_./-]*\.md)?#([^)\s]*)\)")

# Design notes that live outside the repository; a maintainer who clones it cannot read them.
FORBIDDEN_IN_PACKAGES = ("../shared", "reference/go-", "go-contract", "go-recall", "measured-here")
FORBIDDEN_ELSEWHERE = ("reference/go-", "go-contract", "go-recall", "measured-here")
FORBIDDEN_PHRASE = re.compile(r"\bSPEC\b[\s#*/\"]+(section|§)", re.IGNORECASE)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (Markdown links and code spans reduced to their
    text first)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # [text](url) -> text
    text = text.replace("`", "").strip().lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a Markdown page (headings inside code fences are not headings)."""
    seen: Counter[str] = Counter()
    found: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m is None:
            continue
        base = slug(m.group(2))
        found.add(base if seen[base] == 0 else f"{base}-{seen[base]}")
        seen[base] += 1
    return found


def source_files(folders: tuple[str, ...]) -> list[Path]:
    """The text files under ``folders`` of the repository (caches and build output excluded)."""
    out: list[Path] = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            if any(part.startswith(".") or part == "__pycache__" for part in path.parts):
                continue
            out.append(path)
    return out


def test_slug_follows_github() -> None:
    # Worked by hand from GitHub's rule, not from the function under test.
    assert slug("The order of checks in put") == "the-order-of-checks-in-put"
    assert slug("Recall@k") == "recallk"
    assert slug("nDCG@k") == "ndcgk"
    assert slug("Verify, repair, reindex") == "verify-repair-reindex"
    assert slug("if_hash") == "if_hash"
    assert slug("`memory_save`") == "memory_save"
    assert slug("WAL and the busy timeout") == "wal-and-the-busy-timeout"


def test_anchors_number_repeated_headings(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("# A\n\n## Notes\n\n```\n## Not a heading\n```\n\n### Notes\n", "utf-8")
    assert anchors(page) == {"a", "notes", "notes-1"}


def test_the_packages_are_found() -> None:
    assert {"agentmemory", "embedders", "recallers"} <= set(PACKAGES)


def test_the_docs_exist_with_an_index() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for page in sorted(DOCS.glob("*.md")):
        if page.name != "README.md":
            assert f"({page.name})" in index, f"docs/README.md does not link {page.name}"
    for name in ("contract.md", "recall.md", "storage.md"):
        assert (DOCS / name).is_file(), f"docs/{name} is missing"


def test_the_index_links_every_section() -> None:
    """docs/README.md links every ``## `` section of every page, so a reader finds it there."""
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    missing: list[str] = []
    for page in sorted(DOCS.glob("*.md")):
        if page.name == "README.md":
            continue
        fenced = False
        for line in page.read_text(encoding="utf-8").splitlines():
            if FENCE.match(line):
                fenced = not fenced
            elif not fenced and line.startswith("## "):
                target = f"({page.name}#{slug(line[3:])})"
                if target not in index:
                    missing.append(target[1:-1])
    assert not missing, "add these sections to the index in docs/README.md:\n" + "\n".join(missing)


def test_every_citation_in_the_code_resolves() -> None:
    pages = {p.name: anchors(p) for p in DOCS.glob("*.md")}
    broken: list[str] = []
    count = 0
    for path in source_files(CITING):
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in CITATION.finditer(text):
            count += 1
            page, anchor = m.groups()
            line = text.count("\n", 0, m.start()) + 1
            where = f"{path.relative_to(ROOT)}:{line}: docs/{page}#{anchor}"
            if page not in pages:
                broken.append(f"{where} (no such page in docs/)")
            elif anchor not in pages[page]:
                broken.append(f"{where} (no heading with that anchor)")
    assert not broken, "citations that do not resolve:\n" + "\n".join(broken)
    assert count > 0, "no docs/ citation found at all: the scan is looking in the wrong place"


def test_every_page_the_code_names_exists() -> None:
    """A citation of a whole page (``docs/kinds.md``, no anchor) names a page that exists."""
    missing: list[str] = []
    for path in source_files(CITING):
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in PAGE.finditer(text):
            if not (DOCS / m.group(1)).is_file():
                line = text.count("\n", 0, m.start()) + 1
                missing.append(f"{path.relative_to(ROOT)}:{line}: docs/{m.group(1)}")
    assert not missing, "pages that do not exist:\n" + "\n".join(missing)


def test_links_between_the_docs_resolve() -> None:
    pages = {p.name: anchors(p) for p in DOCS.glob("*.md")}
    broken: list[str] = []
    for page in sorted(DOCS.glob("*.md")):
        for m in RELATIVE_LINK.finditer(page.read_text(encoding="utf-8")):
            target, anchor = m.group(1) or page.name, m.group(2)
            if target not in pages or (anchor and anchor not in pages[target]):
                broken.append(f"docs/{page.name}: {target}#{anchor}")
    assert not broken, "links that do not resolve:\n" + "\n".join(broken)


@pytest.mark.parametrize("folders", [PACKAGES, ("tests", "benchmarks", "notebooks")])
def test_nothing_cites_notes_outside_the_repository(folders: tuple[str, ...]) -> None:
    words = FORBIDDEN_IN_PACKAGES if folders == PACKAGES else FORBIDDEN_ELSEWHERE
    me = Path(__file__).resolve()
    found: list[str] = []
    for path in source_files(folders):
        if path.resolve() == me:
            continue
        text = path.read_text("utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            hits = [w for w in words if w in line]
            if hits:
                found.append(f"{path.relative_to(ROOT)}:{number}: {', '.join(hits)}")
        # across the whole text: a docstring may wrap "SPEC" and "section N" onto two lines
        for m in FORBIDDEN_PHRASE.finditer(text):
            number = text.count("\n", 0, m.start()) + 1
            found.append(f"{path.relative_to(ROOT)}:{number}: SPEC section")
    assert not found, "cite docs/<file>.md#<anchor> instead:\n" + "\n".join(found)
