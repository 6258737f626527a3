"""Machine-readable output on stdout, everything for people on stderr: the rule of every ``--json`` CLI command
(``cli/main.py`` wraps each in ``json_stdout``) and of every Spark job (``distributed/session.run_main``), so
``nerservice train ... --json | jq`` works (under spark-submit Spark merges the driver's stderr into stdout, so
there the job's summary is only the last document). Library code
keeps printing its progress with plain ``print``; under ``json_stdout`` that lands on stderr."""
from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

_JSON_STDOUT: list[TextIO] = []  # the stdout that json_stdout() set aside, innermost last


@contextlib.contextmanager
def json_stdout(reserve: bool) -> Iterator[None]:
    """With ``reserve``: stdout holds nothing but what ``emit_json`` writes, and everything else printed inside
    (reading reports, progress, score tables, warnings) goes to stderr instead. The worker processes of
    ``training/run_pool.py`` see ``sys.stdout is sys.stderr`` and send their fd 1 to stderr too."""
    if not reserve:
        yield
        return
    _JSON_STDOUT.append(sys.stdout)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _JSON_STDOUT.pop()


def emit_json(obj: Any, *, indent: int | None = 2) -> None:
    """The JSON document: onto the stdout that ``json_stdout`` reserved (plain stdout outside it)."""
    out = json_out()
    out.write(json.dumps(obj, indent=indent) + "\n")
    out.flush()


def json_out() -> TextIO:
    """Where machine-readable output goes: the reserved stdout under ``json_stdout``, else the current stdout."""
    return _JSON_STDOUT[-1] if _JSON_STDOUT else sys.stdout
