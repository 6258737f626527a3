"""A process SIGKILLed at any point of a staged folder write leaves the folder whole (old or new), and the
next start removes the debris (issue 16, item 3).  Fast: no model, a subprocess per kill point."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO
from nerservice.artifacts.files import recover_staged

WRITER = """
import os, signal, sys
from pathlib import Path
from nerservice.artifacts import files

out, point, exchange = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "exchange"

def write(version):
    with files.staged(out) as tmp:
        (tmp / "a.json").write_text(f'{{"version": {version}}}')
        (tmp / "b.json").write_text(f'{{"version": {version}}}')
        if point == "staging" and version == 2:
            os.kill(os.getpid(), signal.SIGKILL)  # killed while writing the new folder

write(1)
if not exchange:
    files._exchange = lambda a, b: False  # a filesystem without RENAME_EXCHANGE: the two-rename path
files.crash_hook = lambda name: os.kill(os.getpid(), signal.SIGKILL) if name == point else None
write(2)
"""


def _kill_at(out: Path, point: str, how: str) -> None:
    proc = subprocess.run([sys.executable, "-c", WRITER, str(out), point, how], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def _version(out: Path) -> int:
    versions = {json.loads((out / n).read_text())["version"] for n in ("a.json", "b.json")}
    assert len(versions) == 1, f"a mixed folder: {versions}"
    return versions.pop()


@pytest.mark.parametrize("point,how,expect", [
    ("staging", "exchange", 1),  # killed before the swap: the old folder, untouched
    ("exchanged", "exchange", 2),  # killed after the atomic exchange, before the old one was removed
    ("staging", "rename", 1),
])
def test_a_kill_anywhere_leaves_a_whole_folder_and_the_next_start_cleans_up(
        tmp_path: Path, point: str, how: str, expect: int) -> None:
    out = tmp_path / "model-best"
    _kill_at(out, point, how)
    assert _version(out) == expect  # readable right after the kill, with no recovery step
    debris = list(tmp_path.glob(".model-best.*"))
    assert debris, "the kill should have left a staging folder behind"
    assert sorted(recover_staged(out)) == sorted(debris)
    assert not list(tmp_path.glob(".model-best.*")) and _version(out) == expect


def test_a_kill_between_the_two_renames_is_repaired_at_the_next_start(tmp_path: Path) -> None:
    """Without RENAME_EXCHANGE there is a moment with no folder at all: the old one is aside. The next
    start (training's Checkpointer calls recover_staged) puts it back before anything reads it."""
    out = tmp_path / "model-best"
    _kill_at(out, "set-aside", "rename")
    assert not out.exists()
    recover_staged(out)
    assert _version(out) == 1 and not list(tmp_path.glob(".model-best.*"))


def test_recovery_leaves_other_folders_alone(tmp_path: Path) -> None:
    for name in ("model-best", "model-last", ".model-last.abc123", ".model-best.x"):
        (tmp_path / name).mkdir()
    assert recover_staged(tmp_path / "model-best") == [tmp_path / ".model-best.x"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model-last.abc123", "model-best", "model-last"]
