"""Every write into a training run folder, in one place (``artifacts/layout.py`` names the folders).

Per epoch: ``model-last`` once, ``model-best`` once when the epoch improved dev F1, then the resumable
``checkpoint``; at the end: ``model-best`` once more with the test score and the whole history.  Each is a
staged write (``artifacts.files.staged``: written aside, then atomically exchanged into place), so a
process killed at any point leaves every folder whole; opening a run folder first repairs and removes
what an earlier kill left behind (``recover_staged``).  Only the chief (rank 0) writes: other ranks get a
``Checkpointer`` with ``enabled=False`` that writes nothing.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from nerservice.artifacts.files import read_json, readable, recover_staged
from nerservice.artifacts.layout import BEST, CHECKPOINT, FORMAT, LAST, METRICS, PLOT
from nerservice.artifacts.model_folder import ExtraFile, LoadedModel, load_model_folder, save_model
from nerservice.config import NerConfig
from nerservice.model.tagger import NerTagger
from nerservice.text.vocab import Vocabularies
from nerservice.training.checkpoint import has_checkpoint, load_checkpoint, load_identity, save_checkpoint
from nerservice.training.history import plot_writer
from nerservice.training.loop import LoopState
from nerservice.training.resume import check_identity, run_identity


class Checkpointer:
    def __init__(self, out_dir: str | Path, *, vocabs: Vocabularies, config: NerConfig, lineage: dict[str, Any],
                 enabled: bool = True, fmt: str = FORMAT, extra_files: Mapping[str, ExtraFile] | None = None,
                 keep: Literal["best", "last"] = "best") -> None:
        """``fmt``/``extra_files``: the saved models' format and the files it adds (``save_model``).
        ``keep``: the model the run keeps: model-best (selected on dev), or model-last (no model-best is
        written: the final-model recipe's phase 2, where dev is training data)."""
        self.keep = keep
        self.out = Path(out_dir)
        self.vocabs, self.config, self.lineage, self.enabled = vocabs, config, lineage, enabled
        self.fmt, self.extra_files = fmt, dict(extra_files or {})
        self.identity = run_identity(config, lineage)
        self._best_dev: dict[str, Any] | None = None
        if enabled:
            self.out.mkdir(parents=True, exist_ok=True)
            for name in (BEST, LAST, CHECKPOINT):
                for p in recover_staged(self.out / name):
                    print(f"removed {p.name}, left by an interrupted save", flush=True)

    @property
    def best_dir(self) -> Path:
        """The kept model's folder (model-best, or model-last with ``keep="last"``)."""
        return self.out / (LAST if self.keep == "last" else BEST)

    def resume(self, model: NerTagger, optimizer: Any) -> LoopState | None:
        """The loop state of ``OUT/checkpoint`` with its weights and optimizer state loaded, or None.
        A checkpoint another run wrote (other data or model config) is refused first (``training/resume.py``)."""
        folder = readable(self.out / CHECKPOINT)  # another rank may be repairing an interrupted swap
        if not has_checkpoint(folder):
            return None
        check_identity(self.out / CHECKPOINT, load_identity(folder), self.identity)
        return load_checkpoint(folder, model=model, optimizer=optimizer)

    def save_epoch(self, model: NerTagger, state: LoopState, dev: dict[str, Any], *, is_best: bool) -> None:
        """model-last, and model-best when this epoch is the best so far (the model holds the weights to
        save: averaged ones when averaging is on)."""
        if not self.enabled:
            return
        self._save(self.out / LAST, model, state.history, {"dev": dev})
        if self.keep == "last":
            self._best_dev = dev
        elif is_best:
            self._save(self.out / BEST, model, state.history, {"dev": dev, "epoch": state.epoch})
            self._best_dev = dev

    def save_checkpoint(self, model: NerTagger, optimizer: Any, state: LoopState) -> None:
        if self.enabled:
            save_checkpoint(self.out / CHECKPOINT, model=model, optimizer=optimizer, state=state,
                            identity=self.identity)

    def kept_dev(self) -> dict[str, Any]:
        """The dev metrics of the kept model's epoch (from this process, or from its folder after a resume)."""
        if self._best_dev is None:
            path = self.best_dir / METRICS
            self._best_dev = dict(read_json(path).get("dev") or {}) if path.is_file() else {}
        return self._best_dev

    def load_kept(self) -> LoadedModel:
        return load_model_folder(self.best_dir)

    def finish(self, best: LoadedModel, state: LoopState, metrics: dict[str, Any]) -> None:
        """The kept model with its final metrics (dev of its epoch, and test if evaluated) and the whole
        run's history."""
        if self.enabled:
            self._save(self.best_dir, best.model, state.history, metrics)

    def _save(self, folder: Path, model: NerTagger, history: list[dict[str, Any]], metrics: dict[str, Any]) -> None:
        save_model(folder, model=model, vocabs=self.vocabs, config=self.config, history=history, metrics=metrics,
                   lineage=self.lineage, fmt=self.fmt, extra_files={**self.extra_files, PLOT: plot_writer(history)})
