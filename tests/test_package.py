"""The package's shape: import direction, public surface, docstrings, lazy heavy imports."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["agentmemory", "embedders", "recallers"]
# What each package may import of ours (docs/README.md#layout-and-the-direction-of-imports): agentmemory -> recallers -> embedders.
ALLOWED = {
    "agentmemory": {"agentmemory", "recallers", "embedders"},
    "recallers": {"recallers", "embedders"},
    "embedders": {"embedders"},
}
HEAVY = ["torch", "sentence_transformers", "chromadb", "transformers", "onnxruntime"]


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _imported_top_levels(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.slow
@pytest.mark.parametrize("package", PACKAGES)
def test_imports_run_one_way(package: str) -> None:
    ours = set(PACKAGES)
    for path in _modules(package):
        wrong = (_imported_top_levels(path) & ours) - ALLOWED[package]
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_sorted_and_resolves(package: str) -> None:
    mod = importlib.import_module(package)
    names = list(mod.__all__)

    # isort style, as ruff's RUF022 sorts it: CONSTANTS, then Classes, then functions.
    def key(n: str) -> tuple[int, str]:
        return (0 if n.isupper() else 1 if n[:1].isupper() else 2, n)

    assert names == sorted(names, key=key), f"{package}.__all__ is not sorted"

    assert len(names) == len(set(names)), f"{package}.__all__ repeats a name"
    for name in names:
        assert hasattr(mod, name), f"{package}.__all__ names {name}, which it lacks"


def _public_members(package: str) -> list[tuple[str, object]]:
    mod = importlib.import_module(package)
    out: list[tuple[str, object]] = []
    for name in mod.__all__:
        obj = getattr(mod, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            out.append((f"{package}.{name}", obj))
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_"):
                        continue
                    if inspect.isfunction(member) or isinstance(member, property | classmethod):
                        out.append((f"{package}.{name}.{attr}", member))
    return out


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_function_class_and_method_is_documented(package: str) -> None:
    missing = []
    for qualname, obj in _public_members(package):
        target = obj.fget if isinstance(obj, property) else obj
        if isinstance(target, classmethod):
            target = target.__func__
        if not (inspect.getdoc(target) or "").strip():
            missing.append(qualname)
    assert not missing, f"undocumented: {missing}"


def test_every_module_imports() -> None:
    for package in PACKAGES:
        pkg = importlib.import_module(package)
        for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{package}."):
            if info.name.endswith("__main__"):
                continue
            importlib.import_module(info.name)


@pytest.mark.parametrize("package", PACKAGES)
def test_import_stays_light(package: str) -> None:
    code = f"import sys, {package}; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.strip()
    assert out == "", f"import {package} loaded {out}"


def test_make_install_says_what_it_does_before_pip_runs(tmp_path: Path) -> None:
    """``make``'s first install is about 70 s of quiet pip: its first line says what and how
    long, before anything runs (here the venv step fails on purpose, so nothing is installed)."""
    venv = tmp_path / "venv"
    r = subprocess.run(
        ["make", "-C", str(ROOT), "install", f"VENV={venv}", "PYTHON=false"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode != 0 and not venv.exists()
    lines = [x for x in r.stdout.splitlines() if "Entering directory" not in x]
    assert lines[0].startswith("make: installing torch (CPU build) and agentmemory"), r.stdout
    assert "about 70 s" in lines[0]
