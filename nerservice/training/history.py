"""The per-epoch history as a PNG (loss and dev entity F1 by epoch) for people; the JSON copy for machines
is part of the saved model format (``artifacts/model_folder.py``).  Kept out of that format so matplotlib
stays a training-time dependency, not one of loading a model."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def plot_writer(history: list[dict[str, Any]]) -> Callable[[Path], None]:
    """A ``save_model(extra_files=...)`` writer for the plot of ``history`` (a copy: the list grows)."""
    frozen = [dict(h) for h in history]
    return lambda path: plot_history(frozen, path)


def plot_history(history: list[dict[str, Any]], path: str | Path) -> None:
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
    fig.savefig(path)
    plt.close(fig)
