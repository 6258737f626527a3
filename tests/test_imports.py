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
