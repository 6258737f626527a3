"""Resuming a training run from its ``checkpoint`` folder (every entry point resumes the same way).

``train()`` resumes itself when ``OUT/checkpoint`` holds a complete checkpoint (``Checkpointer.resume``);
the distributed runner asks ``run_checkpoint_epoch`` first so that every worker agrees on the epoch it
resumes from.  Both read a checkpoint whose swap a kill interrupted from its set-aside copy
(``artifacts.files.readable``), so no rank depends on the chief having repaired the folder first.
"""
from __future__ import annotations

import json
from pathlib import Path

from nerservice.artifacts.files import readable
from nerservice.artifacts.layout import CHECKPOINT, STATE


def checkpoint_epoch(checkpoint_dir: Path) -> int:
    """The last completed epoch recorded in a checkpoint folder; 0 when there is none (or it is unreadable)."""
    try:
        return int(json.loads((checkpoint_dir / STATE).read_text(encoding="utf-8"))["epoch"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def run_checkpoint_epoch(out_dir: Path) -> int:
    """``checkpoint_epoch`` of a run folder's ``checkpoint``."""
    return checkpoint_epoch(readable(Path(out_dir) / CHECKPOINT))
