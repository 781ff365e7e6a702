"""The package's layers: no import cycle, one contract that `make lint` enforces, and no made-up module
for an old import path."""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "schedgate"

def test_no_old_import_path_is_made_up():
    """The flat layout's module names (``schedgate.waits``, ...) are gone with the shim that made them: an
    import of one fails as any missing module does, and ``import schedgate`` adds no import hook."""
    before = list(sys.meta_path)
    importlib.import_module("schedgate")
    assert sys.meta_path == before
    for old in ("schedgate.waits", "schedgate.builders", "schedgate.definitions"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def _imports() -> dict[str, set[str]]:
    """Module -> the schedgate modules it imports (every import, at any depth, type-checking ones too);
    ``from package import module`` counts as importing the module."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in paths.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("schedgate"):
                subs = {f"{node.module}.{a.name}" for a in node.names} & set(paths)
                graph[name] |= subs or {node.module}
            elif isinstance(node, ast.Import):
                graph[name] |= {a.name for a in node.names if a.name.startswith("schedgate")}
        graph.setdefault(name, set())
    return graph


def test_no_module_of_the_package_imports_itself_back_through_others():
    graph = _imports()
    known = set(graph)
    # An import of a package's name means its __init__; the root package (re-exports only) is left out.
    edges = {m: {t for t in ts if t in known and t != "schedgate"} for m, ts in graph.items() if m != "schedgate"}
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(m: str, stack: list[str]) -> bool:
        state[m] = 1
        for t in sorted(edges.get(m, ())):
            if state.get(t) == 1:
                cycle.extend(stack[stack.index(t):] + [m, t] if t in stack else [m, t])
                return True
            if state.get(t) is None and visit(t, [*stack, m]):
                return True
        state[m] = 2
        return False

    for m in sorted(edges):
        if state.get(m) is None and visit(m, []):
            break
    assert not cycle, " -> ".join(cycle)


def test_the_layers_contract_holds_and_can_fail(tmp_path):
    """lint-imports keeps the contract; a module that imports upward breaks it (the contract is not vacuous)."""
    lint = Path(sys.executable).parent / "lint-imports"
    ok = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "1 kept, 0 broken" in ok.stdout, ok.stdout[-2000:]
    copy = tmp_path / "tree"
    shutil.copytree(PACKAGE, copy / "schedgate", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    spec = copy / "schedgate" / "spec" / "upward.py"
    spec.write_text("from schedgate.cluster import Cluster  # a pure layer reaching up\n")
    broken = subprocess.run([str(lint)], cwd=copy, capture_output=True, text=True, timeout=300,
                            env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"})
    assert broken.returncode != 0, broken.stdout[-2000:]
    assert "schedgate.spec.upward -> schedgate.cluster" in broken.stdout, broken.stdout[-2000:]


def test_no_module_is_much_over_300_lines():
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 330}
    assert not long, long


def test_every_package_of_the_tree_is_in_the_wheel():
    """pyproject lists the packages by name (the shipped data maps folders into the package): a new
    subpackage missing there would be missing from the wheel, found only by the slow wheel test."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    tree = {".".join(p.parent.relative_to(ROOT).parts) for p in PACKAGE.rglob("__init__.py")}
    assert tree - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
