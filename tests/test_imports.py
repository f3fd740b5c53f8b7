"""What ``import agentmemory`` loads, and the import graph of our modules (in the manner of click's
``tests/test_imports.py``: a fresh interpreter imports the package and reports ``sys.modules``)."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agentmemory", "embedders", "recallers")

# Every module of ours that `import agentmemory` loads. A module joins this list on purpose: the CLI,
# the MCP server, eval, the demo and the JSON Lines transfer are imported by whoever uses them.
OURS_ON_IMPORT = {
    "agentmemory",
    "agentmemory.stores",
    "agentmemory.stores.chroma",
    "agentmemory.stores.markdown",
    "agentmemory.stores.sqlite",
    "agentmemory.stores.markdown.atomic_write",
    "agentmemory.stores.chroma.files",
    "agentmemory.stores.chroma.index",
    "agentmemory.stores.chroma.options",
    "agentmemory.stores.chroma.clients",
    "agentmemory.stores.chroma.loaded",
    "agentmemory.stores.chroma.folder_lock",
    "agentmemory.stores.chroma.probe",
    "agentmemory.stores.chroma.damage",
    "agentmemory.stores.chroma.store",
    "agentmemory.stores.chroma.core",
    "agentmemory.stores.chroma.purge",
    "agentmemory.stores.chroma.upkeep",
    "agentmemory.duplicates",
    "agentmemory.entries",
    "agentmemory.purge",
    "agentmemory.stores.markdown.entry_file",
    "agentmemory.errors",
    "agentmemory.stores.markdown.files",
    "agentmemory.stores.markdown.index_file",
    "agentmemory.stores.markdown.lexicon",
    "agentmemory.stores.markdown.purge",
    "agentmemory.stores.markdown.reconcile",
    "agentmemory.stores.markdown.store",
    "agentmemory.stores.markdown.writes",
    "agentmemory.forget_session",
    "agentmemory.stores.base",
    "agentmemory.stores.processes",
    "agentmemory.stores.space",
    "agentmemory.stores.chroma.cursor",
    "agentmemory.stores.chroma.follow",
    "agentmemory.stores.chroma.erase",
    "agentmemory.stores.chroma.sync",
    "agentmemory.lost_updates",
    "agentmemory.stores.markdown.journal_file",
    "agentmemory.stores.markdown.journal_rewrite",
    "agentmemory.stores.chroma.journal_source",
    "agentmemory.kinds",
    "agentmemory.stores.markdown.lock_file",
    "agentmemory.stores.markdown.links",
    "agentmemory.manifest",
    "agentmemory.stores.mem",
    "agentmemory.recall",
    "agentmemory.recalled",
    "agentmemory.render",
    "agentmemory.rules",
    "agentmemory.save_entry",
    "agentmemory.session",
    "agentmemory.stores.sqlite.core",
    "agentmemory.stores.sqlite.faults",
    "agentmemory.stores.sqlite.migrations",
    "agentmemory.stores.sqlite.purge",
    "agentmemory.stores.sqlite.recovery",
    "agentmemory.stores.sqlite.store",
    "agentmemory.store",
    "agentmemory.opening",
    "agentmemory.tools",
    "agentmemory.tools.adapters",
    "agentmemory.tools.arguments",
    "agentmemory.tools.handlers",
    "agentmemory.tools.schemas",
    "agentmemory.tools.texts",
    "agentmemory.tools.tool",
    "agentmemory.tools.toolset",
    "agentmemory.tools.usage",
    "agentmemory.validity",
    "agentmemory.wire",
    "agentmemory.wording",
    "agentmemory.progress",
    "embedders",
    "embedders.chroma_adapter",
    "embedders.errors",
    "embedders.fingerprint",
    "embedders.hashing",
    "embedders.model_folder",
    "embedders.onnx_embedder",
    "embedders.preload",
    "embedders.protocol",
    "embedders.recent",
    "embedders.registry",
    "embedders.sentence_transformer",
    "embedders.torch_runtime",
    "embedders.windows",
    "recallers",
    "recallers.bm25",
    "recallers.cross_encoder",
    "recallers.errors",
    "agentmemory.stores.sqlite.lexicon",
    "agentmemory.stores.lexicon_state",
    "recallers.hits",
    "recallers.hybrid",
    "recallers.lexical_query",
    "recallers.protocol",
    "recallers.rerank",
    "recallers.reranker_registry",
    "recallers.tokenizer",
    "recallers.vector",
    "recallers.vector_query",
}

# The third-party top-level packages `import agentmemory` may load: numpy (vectors are numpy arrays
# in every signature). Not PyStemmer (loaded on the first text to stem), not chromadb, torch,
# sentence-transformers, onnxruntime, jsonschema, click or the mcp SDK (loaded on first use).
THIRD_PARTY_ON_IMPORT = {"numpy"}

_REPORT = """
import json, sys
before = set(sys.modules)
import agentmemory
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def _loaded_by_import() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _REPORT], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    loaded: list[str] = json.loads(out)
    return loaded


@pytest.mark.slow
def test_import_agentmemory_loads_only_the_allow_listed_modules() -> None:
    loaded = _loaded_by_import()
    ours = {m for m in loaded if m.split(".")[0] in PACKAGES}
    assert ours == OURS_ON_IMPORT, (
        f"import agentmemory now also loads {sorted(ours - OURS_ON_IMPORT)} "
        f"and no longer loads {sorted(OURS_ON_IMPORT - ours)}"
    )
    tops = {m.split(".")[0] for m in loaded}
    third_party = {
        t
        for t in tops
        if t not in sys.stdlib_module_names and t not in PACKAGES and not t.startswith("_")
    }
    assert third_party <= THIRD_PARTY_ON_IMPORT, (
        f"import agentmemory loads {sorted(third_party - THIRD_PARTY_ON_IMPORT)}"
    )
    assert "Stemmer" not in tops


_CLI_REPORT = """
import json, sys
import agentmemory
before = set(sys.modules)
import agentmemory.cli
print(json.dumps(sorted(set(sys.modules) - before)))
"""


@pytest.mark.slow
def test_the_command_line_loads_its_modules_and_nothing_heavy() -> None:
    # `agentmemory --help` imports the CLI: each command imports what it needs when it runs
    out = subprocess.run(
        [sys.executable, "-c", _CLI_REPORT], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    loaded = set(json.loads(out))
    cli = {m for m in loaded if m.startswith("agentmemory.cli")}
    modules = {f"agentmemory.cli.{p.stem}" for p in (ROOT / "agentmemory" / "cli").glob("*.py")}
    assert cli == (modules - {"agentmemory.cli.__init__"}) | {"agentmemory.cli"}
    ours = {m for m in loaded if m.split(".")[0] in PACKAGES} - cli
    assert ours == {"agentmemory.jsonl"}  # IMPORT_BATCH, the default of import --batch
    heavy = {"torch", "chromadb", "sentence_transformers", "onnxruntime", "mcp", "tqdm"}
    assert not heavy & {m.split(".")[0] for m in loaded}


def _module_name(path: Path) -> str:
    if not path.is_relative_to(ROOT):  # a module written by a test
        return path.stem
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, *, in_functions: bool = False) -> set[str]:
    """The modules ``path`` imports: top-level statements (and the bodies of top-level
    ``if``/``try`` other than ``if TYPE_CHECKING``); with ``in_functions``, also the imports
    inside function and method bodies, which run on the first call (a circle through them is a
    circle all the same, only found later)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def add(node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
            return
        if node.level:
            base = package.split(".")
            base = base[: len(base) - node.level + 1]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        found.add(mod)
        # `from . import x` and `from .pkg import sub` may name submodules
        found.update(f"{mod}.{a.name}" for a in node.names)

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and _is_type_checking(node):
                continue
            if isinstance(node, ast.Import | ast.ImportFrom):
                add(node)
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(node.orelse)
                if isinstance(node, ast.Try):
                    for handler in node.handlers:
                        visit(handler.body)
                    visit(node.finalbody)
            elif in_functions:
                # every nested statement: function and class bodies, with, for, while, match
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.stmt):
                        visit([child])
                for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                    for child in getattr(node, field, []) or []:
                        if isinstance(child, ast.excepthandler | ast.match_case):
                            visit(child.body)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return found


def _graph(*, in_functions: bool = False) -> dict[str, set[str]]:
    paths = [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]
    modules = {_module_name(p): p for p in paths}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported = _imports(path, in_functions=in_functions)
        # importing a.b.c runs a/__init__ and a/b/__init__ first: edges to those packages too
        implied = {".".join(m.split(".")[:i]) for m in imported for i in range(1, m.count(".") + 1)}
        targets = {m for m in imported | implied if m in modules and m != name}
        # importing a.b.c runs a and a.b first, so a package's own __init__ is not an edge
        graph[name] = {t for t in targets if not name.startswith(t + ".")}
    return graph


# The bottom of the graph: what each of these may import of ours when imported.
BOTTOM = {
    "agentmemory.entries": set(),  # Entry, Change, content_hash: the records
    # the error tree; EmptyQueryError's base is in recallers.errors, whose package runs first
    "agentmemory.errors": {"recallers", "recallers.errors"},
    "agentmemory.wire": {"agentmemory.entries"},  # the Go module's wire forms
    "agentmemory.rules": {"agentmemory.entries", "agentmemory.errors", "agentmemory.wire"},
    "agentmemory.lost_updates": {"agentmemory.entries"},  # lost updates
    "recallers.tokenizer": set(),
    "recallers.errors": set(),
}


@pytest.mark.slow
@pytest.mark.parametrize("module", sorted(BOTTOM))
def test_the_bottom_modules_import_only_what_they_are_allowed(module: str) -> None:
    assert _graph()[module] == BOTTOM[module]


@pytest.mark.slow
@pytest.mark.parametrize("in_functions", [False, True], ids=["at-import", "with-function-bodies"])
def test_our_import_graph_is_acyclic(in_functions: bool) -> None:
    graph = _graph(in_functions=in_functions)
    state: dict[str, int] = {}  # 1 visiting, 2 done
    cycles: list[list[str]] = []

    def walk(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                walk(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node, [node])
    assert not cycles, f"import cycles: {cycles}"


def test_no_folder_of_the_tests_is_named_as_one_of_our_packages() -> None:
    # tests/ has no __init__.py, so a script run from it (tests/purge_proc.py) has tests/ first on
    # sys.path, and a folder tests/recallers/ would be imported as the namespace package
    # `recallers`, hiding the real one (an editable install finds it only after the path)
    folders = {p.name for p in (ROOT / "tests").rglob("*") if p.is_dir()}
    assert folders & {*PACKAGES, "agentmemory"} == set()


def test_a_cycle_through_a_function_body_is_found(tmp_path: Path) -> None:
    # the reader the acyclic test relies on sees an import inside a method, a with and a try
    src = tmp_path / "mod.py"
    src.write_text(
        "import os\n"
        "class A:\n"
        "    def f(self):\n"
        "        with open('x'):\n"
        "            try:\n"
        "                from agentmemory.opening import open_store\n"
        "            except ImportError:\n"
        "                import recallers.bm25\n"
        "if TYPE_CHECKING:\n"
        "    import embedders\n",
        encoding="utf-8",
    )
    seen = _imports(src, in_functions=True)
    assert {"agentmemory.opening", "agentmemory.opening.open_store", "recallers.bm25"} <= seen
    assert "embedders" not in seen
    assert _imports(src) == {"os"}


@pytest.mark.slow
def test_recallers_ranks_only_it_imports_no_store_driver_and_none_of_agentmemory() -> None:
    # docs/README.md#layout-and-the-direction-of-imports: each store owns its lexical index
    forbidden = {"sqlite3", "psycopg", "psycopg_pool", "chromadb", "agentmemory"}
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "recallers").rglob("*.py")):
        tops = {m.split(".")[0] for m in _imports(path, in_functions=True)}
        if tops & forbidden:
            found[path.name] = tops & forbidden
    assert found == {}


def _init_public_names(path: Path) -> set[str]:
    """Public names an ``__init__.py`` defines or imports from our packages."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and (
            node.level >= 1 or (node.module or "").split(".")[0] in PACKAGES
        ):
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


FACES = [
    *PACKAGES,
    "agentmemory.eval",
    "agentmemory.tools",
    "agentmemory.stores.sqlite",
    "agentmemory.stores.postgres",
    "agentmemory.stores.markdown",
    "agentmemory.stores.chroma",
]


@pytest.mark.parametrize("package", FACES)
def test_all_lists_every_public_name_the_package_defines_or_re_exports(package: str) -> None:
    # httpx's test_all_imports_are_exported: __all__ is the package's public surface, exactly
    mod = importlib.import_module(package)
    path = Path(mod.__file__ or "")
    public = _init_public_names(path)
    listed = set(mod.__all__)
    assert public - listed == set(), f"{package} exports {sorted(public - listed)} without __all__"
    assert listed - public == set(), f"{package}.__all__ lists {sorted(listed - public)}"
