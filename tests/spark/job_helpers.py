"""Helpers for the Spark job tests: corpus damage, job output parsing."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path


def inject_bad_lines(path: Path) -> list[int]:
    """Break two sentences of a token<TAB>tag file: a third column, then an invalid tag. Returns the
    1-based line numbers broken (what the quarantine must name)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    data = [i for i, line in enumerate(lines) if line.strip()]
    first, second = data[3], data[len(data) // 2]
    lines[first] += "\tEXTRA"
    lines[second] = lines[second].split("\t")[0] + "\tB-"
    path.write_text("\n".join(lines), encoding="utf-8")
    return [first + 1, second + 1]


def last_json(stdout: str) -> dict:
    """The last top-level JSON object a job printed on stdout (jobs print their summary last)."""
    start = stdout.rfind("\n{") + 1
    return json.loads(stdout[start:])


def check(proc: subprocess.CompletedProcess, what: str) -> None:
    assert proc.returncode == 0, f"{what} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-8000:]}"
