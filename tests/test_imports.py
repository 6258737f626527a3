"""DESIGN: ``nerservice`` never imports pyspark or fastapi at module level (Spark executors and the CLI
must not pay for, or depend on, the service stack and vice versa)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from helpers import last_json_line, run_python

PACKAGE = Path(__file__).resolve().parents[1] / "nerservice"
FORBIDDEN = ("pyspark", "fastapi")


def _module_level_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """Imports executed when the module is imported: everything except bodies of functions."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Import):
                found.extend((child.lineno, a.name) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                found.append((child.lineno, child.module))
            visit(child)

    visit(tree)
    return found


def test_no_forbidden_module_level_import_in_the_source() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 20
    bad = []
    for path in files:
        for line, name in _module_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if name.split(".")[0] in FORBIDDEN:
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line}: import {name}")
    assert not bad, "module-level imports of the service/Spark stack:\n" + "\n".join(bad)


def test_the_ast_check_would_catch_one() -> None:
    tree = ast.parse("import os\ntry:\n    import pyspark.sql\nexcept ImportError:\n    pass\n"
                     "def f():\n    import fastapi\nclass C:\n    from fastapi import FastAPI\n")
    names = [n for _, n in _module_level_imports(tree)]
    assert names == ["os", "pyspark.sql", "fastapi"]  # the class body runs at import; the function does not


@pytest.mark.slow
def test_importing_every_module_in_a_fresh_process_loads_neither() -> None:
    code = """
import importlib, json, pkgutil, sys
import nerservice
names = sorted(m.name for m in pkgutil.walk_packages(nerservice.__path__, "nerservice."))
for name in names:
    importlib.import_module(name)
print(json.dumps({"modules": names, "loaded": sorted({m.split(".")[0] for m in sys.modules})}))
"""
    out = last_json_line(run_python(code).stdout)
    assert {"nerservice.inference", "nerservice.model.tagger", "nerservice.training.trainer",
            "nerservice.cli.main"} <= set(out["modules"])
    for name in FORBIDDEN:
        assert name not in out["loaded"], f"{name} was imported by a nerservice module"


# --- import direction: floors, no circles (docs/ARCHITECTURE.md) --------------------------------------
# A module may import modules of its own floor or below, never above. Within a floor, no circles. The
# floors are prefixes of module names; the longest matching prefix decides.
FLOORS: dict[str, int] = {
    "nerservice": 0, "nerservice.errors": 0, "nerservice.config": 0, "nerservice.backend": 0,
    "nerservice.metrics": 0,
    "nerservice.text": 1, "nerservice.data": 1, "nerservice.embeddings": 1, "nerservice.lineage": 1,
    "nerservice.demo_corpus": 1, "nerservice.documents": 1, "nerservice.error_analysis": 1,
    # A pretrained encoder's files and word pieces (the vocabularies hold the pieces); attach is train()'s.
    "nerservice.encoder": 1,
    "nerservice.model": 2,
    # The ONNX runtime: graphs from weights, the ORT forward, the predictor over it (beside model/).
    "nerservice.runtime": 2,
    "nerservice.artifacts": 3,
    "nerservice.inference": 4, "nerservice.training": 4, "nerservice.multi": 4, "nerservice.distil": 4,
    "nerservice.charlm": 4, "nerservice.encoder.attach": 4,
    # Export reads saved folders and writes an ONNX folder; runtime selection loads any folder.
    "nerservice.runtime.export": 4, "nerservice.runtime.select": 4,
    "nerservice.store": 5,
    # Resolving a reference may reach the (optional) store; nothing below it may.
    "nerservice.artifacts.resolve": 6,
    # Which teacher a reference names: resolve, load, a head (every shell's --teacher).
    "nerservice.distil.teacher_ref": 6,
    "nerservice.cli": 7, "nerservice.distributed": 7,
}


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def import_graph() -> dict[str, set[str]]:
    """Every import of a nerservice module by another, wherever it is written (module level, inside
    functions, under TYPE_CHECKING: a lazy or type-only import is still an arrow)."""
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                targets.update(f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names)
        edges = set()
        for t in targets:
            while t and t not in mods:
                t = t.rsplit(".", 1)[0] if "." in t else ""
            if t and t != name:
                edges.add(t)
        graph[name] = edges
    return graph


def floor_of(module: str) -> int:
    best = max((p for p in FLOORS if module == p or module.startswith(p + ".")), key=len)
    return FLOORS[best]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_floor() -> None:
    graph = import_graph()
    assert "nerservice.artifacts.formats" in graph and "nerservice.store.registration" in graph
    for m in graph:
        floor_of(m)  # raises ValueError (max of nothing) for a module outside every floor


def test_imports_point_down_the_floors() -> None:
    up = [f"{a} (floor {floor_of(a)}) imports {b} (floor {floor_of(b)})"
          for a, targets in sorted(import_graph().items()) for b in sorted(targets) if floor_of(b) > floor_of(a)]
    assert not up, "upward imports (see docs/ARCHITECTURE.md):\n" + "\n".join(up)


def test_no_import_circles() -> None:
    graph = {a: {b for b in targets if not a.startswith(b + ".")}  # a package's own __init__ is not a circle
             for a, targets in import_graph().items()}
    assert not cycles(graph), f"import circles: {cycles(graph)}"


def test_the_direction_checks_would_catch_a_circle_and_an_upward_arrow() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert floor_of("nerservice.model.predictor") < floor_of("nerservice.training.batching")
    assert floor_of("nerservice.artifacts.files") < floor_of("nerservice.store.cache") < floor_of(
        "nerservice.artifacts.resolve")


def test_other_shells_do_not_lean_on_the_cli() -> None:
    """The API, the Spark jobs and the benches call the library (e.g. ``artifacts.resolve``), not the CLI."""
    root = PACKAGE.parent
    bad = []
    for folder in ("api", "spark_jobs", "bench"):
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                bad.extend(f"{path.relative_to(root)}:{node.lineno}: {n}" for n in names
                           if n == "nerservice.cli" or n.startswith("nerservice.cli."))
    assert not bad, "shells importing the CLI:\n" + "\n".join(bad)
