"""Resuming a training run from its ``checkpoint`` folder (every entry point resumes the same way).

``train()`` resumes itself when ``OUT/checkpoint`` holds a complete checkpoint (``Checkpointer.resume``);
the distributed runner asks ``run_checkpoint_epoch`` first so that every worker agrees on the epoch it
resumes from.  Both read a checkpoint whose swap a kill interrupted from its set-aside copy
(``artifacts.files.readable``), so no rank depends on the chief having repaired the folder first.

A checkpoint only resumes the run that wrote it.  Each checkpoint records that run's identity (``run_identity``):
the model config and the fingerprints of the data it trains and selects on (train, dev; per corpus for a
multi-corpus model).  A rerun into the same OUT with another training file, another dev split or another
architecture used to load the old weights and optimizer state and carry on — or fail on a shape deep in
Keras — and the saved model's lineage then named data it was not trained on.  It is now refused with
``CheckpointMismatchError`` (NER120) before anything is loaded, naming what differs.  What may change on a
resume stays free: training settings (epochs, patience, time budget, learning rate, batch size — Spark's
``--scaling grow`` changes the last two with the worker count), test data, and the paths of the word vectors
or character LM (their content reaches the weights' shapes through the vocabulary, which the load checks).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nerservice.artifacts.files import readable
from nerservice.artifacts.layout import CHECKPOINT, STATE
from nerservice.config import NerConfig
from nerservice.errors import CheckpointMismatchError

# Model settings that name files rather than describe the network (see the module docstring).
_PATHS = ("embeddings", "char_lm")


def checkpoint_epoch(checkpoint_dir: Path) -> int:
    """The last completed epoch recorded in a checkpoint folder; 0 when there is none (or it is unreadable)."""
    try:
        return int(json.loads((checkpoint_dir / STATE).read_text(encoding="utf-8"))["epoch"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def run_checkpoint_epoch(out_dir: Path) -> int:
    """``checkpoint_epoch`` of a run folder's ``checkpoint``."""
    return checkpoint_epoch(readable(Path(out_dir) / CHECKPOINT))


def run_identity(config: NerConfig, lineage: dict[str, Any]) -> dict[str, Any]:
    """What a run trains: its model config (paths aside) and its data's fingerprints, test aside."""
    model = {k: v for k, v in config.model.model_dump(mode="json").items() if k not in _PATHS}
    data = {k: v for k, v in (lineage.get("corpus_fingerprints") or {}).items()
            if k != "test" and not k.endswith("/test")}
    return {"model": model, "data": data}


def check_identity(folder: Path, saved: dict[str, Any] | None, current: dict[str, Any]) -> None:
    """Refuse to resume ``folder`` (a checkpoint saved with identity ``saved``) for a run with ``current``."""
    if saved is None:  # written before identities were recorded: nothing to compare
        return
    differences = []
    for key in sorted(set(saved.get("data", {})) | set(current["data"])):
        a, b = saved.get("data", {}).get(key), current["data"].get(key)
        if a != b:
            differences.append(f"{key} data ({_short(a)} -> {_short(b)})")
    for key in sorted(set(saved.get("model", {})) | set(current["model"])):
        a, b = saved.get("model", {}).get(key), current["model"].get(key)
        if a != b:
            differences.append(f"model.{key} ({json.dumps(a)} -> {json.dumps(b)})")
    if differences:
        out = folder.parent
        raise CheckpointMismatchError(
            f"{out} holds a checkpoint of another run: {'; '.join(differences)}",
            hint=f"use another --out, or --no-resume to train from scratch in {out} (its models are replaced)")


def _short(fingerprint: Any) -> str:
    return "none" if fingerprint is None else str(fingerprint)[:12]
