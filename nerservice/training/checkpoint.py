"""Resumable training checkpoints: model weights, optimizer state and loop state.

Arrays go into ``.npz`` written with ``allow_pickle=False`` and are read the same way (no unpickling);
the loop state is JSON.  The directory is written beside the target and renamed into place, so a
worker killed mid-write leaves the previous checkpoint intact.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from nerservice.artifacts.files import staged
from nerservice.artifacts.layout import MODEL_VARS, OPT_VARS, RUN_IDENTITY, STATE
from nerservice.training.loop import LoopState


def _values(variables: list[Any]) -> dict[str, np.ndarray]:
    from keras import ops

    return {f"v{i:04d}": np.asarray(ops.convert_to_numpy(v)) for i, v in enumerate(variables)}


def _assign(variables: list[Any], path: Path) -> None:
    with np.load(path, allow_pickle=False) as data:
        if len(data.files) != len(variables):
            raise ValueError(f"{path}: {len(data.files)} arrays for {len(variables)} variables")
        for i, var in enumerate(variables):
            var.assign(data[f"v{i:04d}"])


def save_checkpoint(directory: str | Path, *, model: Any, optimizer: Any, state: LoopState,
                    identity: dict[str, Any] | None = None) -> Path:
    """``identity``: what the run trains (``training.resume.run_identity``), checked when a rerun resumes."""
    target = Path(directory)
    with staged(target) as tmp:
        if identity is not None:
            (tmp / RUN_IDENTITY).write_text(json.dumps(identity, sort_keys=True), encoding="utf-8")
        # (numpy's stub types **kwds as allow_pickle's bool; the arrays are saved by name, never pickled)
        np.savez(tmp / MODEL_VARS, **_values(model.variables))  # type: ignore[arg-type]
        np.savez(tmp / OPT_VARS, **_values(optimizer.variables))  # type: ignore[arg-type]
        (tmp / STATE).write_text(json.dumps(state.to_dict()), encoding="utf-8")
    return target


def has_checkpoint(directory: str | Path) -> bool:
    d = Path(directory)
    return all((d / n).is_file() for n in (STATE, MODEL_VARS, OPT_VARS))


def load_checkpoint(directory: str | Path, *, model: Any, optimizer: Any) -> LoopState:
    d = Path(directory)
    _assign(model.variables, d / MODEL_VARS)
    _assign(optimizer.variables, d / OPT_VARS)
    return LoopState.from_dict(json.loads((d / STATE).read_text(encoding="utf-8")))


def load_identity(directory: str | Path) -> dict[str, Any] | None:
    """The identity a checkpoint was saved with; None for a checkpoint written before it was recorded."""
    path = Path(directory) / RUN_IDENTITY
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else None
