"""The per-epoch history as a PNG (loss and dev entity F1 by epoch) for people; the JSON copy for machines
is part of the saved model format (``artifacts/model_folder.py``).  Kept out of that format so matplotlib
stays a training-time dependency, not one of loading a model."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The last plot drawn, by its history: an epoch saves model-last and often model-best with the same history, and
# the run's end saves the kept model with it once more, so the same picture is asked for two or three times in a
# row. Drawing one costs ~0.2 s (matplotlib's layout and rasterising), a real share of a short run's epoch.
_last: tuple[str, bytes] | None = None


def plot_writer(history: list[dict[str, Any]]) -> Callable[[Path], None]:
    """A ``save_model(extra_files=...)`` writer for the plot of ``history`` (a copy: the list grows)."""
    frozen = [dict(h) for h in history]
    return lambda path: plot_history(frozen, path)


def plot_history(history: list[dict[str, Any]], path: str | Path) -> None:
    global _last
    key = json.dumps(history, sort_keys=True, default=str)
    last = _last  # one read: another thread's save may replace it meanwhile
    if last is None or last[0] != key:
        last = _last = (key, render_history(history))
    Path(path).write_bytes(last[1])


def render_history(history: list[dict[str, Any]]) -> bytes:
    """The PNG's bytes: train loss (left axis) and dev entity F1 (right axis) by epoch."""
    import io

    import matplotlib

    matplotlib.use("Agg")  # no display on servers and executors
    import matplotlib.pyplot as plt

    epochs = [h["epoch"] for h in history]
    fig, ax1 = plt.subplots(figsize=(7, 4), dpi=100)
    ax1.plot(epochs, [h["loss"] for h in history], "o-", color="tab:blue", label="train loss")
    ax1.set_xlabel("epoch")
    ax1.set_ylabel("train loss (NLL per sentence)", color="tab:blue")
    ax2 = ax1.twinx()
    ax2.plot(epochs, [h.get("dev_f1", float("nan")) for h in history], "s-", color="tab:red", label="dev entity F1")
    ax2.set_ylabel("dev entity F1 (strict)", color="tab:red")
    ax2.set_ylim(0, 1)
    fig.suptitle("nerservice training")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()
