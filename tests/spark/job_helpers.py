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


def job_json(stdout: str) -> dict:
    """A job's summary: the last top-level JSON document on its stdout. run_main sends the job's own prints to
    stderr, but under spark-submit Spark's PythonRunner merges the Python driver's stderr into stdout (TF's
    absl lines among them), so the summary is only guaranteed to come last."""
    start = stdout.rfind("\n{") + 1
    return json.loads(stdout[start:])


def check(proc: subprocess.CompletedProcess, what: str) -> None:
    assert proc.returncode == 0, f"{what} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-8000:]}"


def lost_tasks(driver_log: str) -> list[str]:
    """The driver's lines on failed tasks and stage attempts (its log is at WARN: ``session.get_session``)."""
    keys = ("Lost task", "TaskSetManager", "DAGScheduler", "Exception in task")
    return [line.strip()[:400] for line in driver_log.splitlines() if any(k in line for k in keys)]


def check_resumed_after_kill(attempts: list[dict], driver_log: str) -> None:
    """A barrier stage whose worker was killed mid-run: its first attempt started from epoch 0 and the retry
    after the kill resumed from a checkpoint. Spark may rerun the stage again for reasons outside the job's
    code (up to spark.stage.maxConsecutiveAttempts; seen once in CI under load, cause not in its output:
    two more attempts, both resuming from the last checkpoint); a further attempt must never start over
    or go back, and why it happened is reported as a warning from the driver's own log."""
    import warnings

    epochs = [a["resumed_from_epoch"] for a in attempts]
    assert len(epochs) >= 2 and epochs[0] == 0 and epochs[1] >= 1, (attempts, lost_tasks(driver_log)[-20:])
    assert epochs[1:] == sorted(epochs[1:]), (attempts, lost_tasks(driver_log)[-20:])
    if len(epochs) > 2:
        warnings.warn(f"the barrier stage ran {len(epochs)} times (resumed from epochs {epochs}); the driver's "
                      "task failures:\n" + "\n".join(lost_tasks(driver_log)[-20:]), stacklevel=2)
