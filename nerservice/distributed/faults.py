"""Fault injection for tests and drills: SIGKILL one worker's training process once, mid-run.  (Not on
the resume path: resuming is ``training/resume.py``.)

The victim watches the shared checkpoint; when rank 0 has checkpointed epoch ``after_epoch`` it creates
a marker file (so the retried stage does not die again) and kills its own process with SIGKILL — the
same death an OOM kill or a lost executor causes: no Python cleanup, no exception, the Spark task just
loses its worker.  The barrier stage then fails and Spark reruns it, and the rerun resumes from the
checkpoint.
"""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from nerservice.errors import ConfigError
from nerservice.training.resume import run_checkpoint_epoch

MARKER = ".fault-injected"


@dataclass(frozen=True)
class KillPlan:
    rank: int
    after_epoch: int

    @classmethod
    def parse(cls, spec: str) -> "KillPlan":
        """``"RANK:EPOCH"``, e.g. ``"1:2"``."""
        try:
            rank, epoch = (int(x) for x in spec.split(":"))
        except ValueError:
            raise ConfigError(f"fault spec {spec!r} is not RANK:EPOCH", hint="e.g. 1:2") from None
        if rank < 0 or epoch < 1:
            raise ConfigError(f"fault spec {spec!r}: rank must be >= 0 and epoch >= 1")
        return cls(rank, epoch)


def arm(plan: KillPlan | None, *, rank: int, out_dir: Path, poll_s: float = 0.05) -> bool:
    """Start the watcher thread on the victim rank unless the fault already fired. Returns True if armed."""
    marker = out_dir / MARKER
    if plan is None or plan.rank != rank or marker.exists():
        return False

    def watch() -> None:
        while run_checkpoint_epoch(out_dir) < plan.after_epoch:
            time.sleep(poll_s)
        marker.write_text(json.dumps({"rank": rank, "pid": os.getpid(), "after_epoch": plan.after_epoch,
                                      "time": time.time()}), encoding="utf-8")
        print(f"fault injection: SIGKILL rank {rank} (pid {os.getpid()}) after checkpoint of epoch "
              f"{plan.after_epoch}", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="nerservice-fault", daemon=True).start()
    return True
