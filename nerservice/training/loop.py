"""The epoch loop: bucketed batches, lr decay, dev entity-F1 early stopping, best/last checkpoints.

It is backend-neutral (it calls a ``TrainStep``) and distribution-aware without knowing about Spark:
every worker builds the *same* global batch plan from the seed and trains on its slice of each global
batch (``rank``/``world``), so N workers apply exactly the gradients a single process would.
Evaluation and checkpointing are callbacks, so rank 0 alone can do them.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nerservice.config import NerConfig
from nerservice.data import Sentence
from nerservice.text.features import EncodedCorpus, ShapePolicy, round_up
from nerservice.text.vocab import Vocabularies
from nerservice.training.averaging import WeightAverager
from nerservice.model.batching import bucketed_batches
from nerservice.training.steps import TrainStep

EpochCallback = Callable[[dict[str, Any], bool], None]  # (epoch record, is_best)


@dataclass
class LoopState:
    """Everything needed to resume: saved with checkpoints."""

    epoch: int = 0  # epochs completed
    best_f1: float = -1.0
    best_epoch: int = 0
    bad_epochs: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "best_f1": self.best_f1, "best_epoch": self.best_epoch,
                "bad_epochs": self.bad_epochs, "history": list(self.history)}  # a snapshot, not an alias

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LoopState":
        return cls(**{**d, "history": list(d.get("history", []))})  # the caller's dict is not mutated later


@dataclass
class LoopResult:
    state: LoopState
    stopped_reason: str
    seconds: float


def learning_rate(config: NerConfig, epoch: int) -> float:
    """NerDL's schedule: lr / (1 + po * epoch), epoch counted from 0, times the warm-up ramp (1 when
    ``warmup_epochs`` is 0, the default)."""
    t = config.training
    ramp = 1.0
    if t.warmup_epochs:
        ramp = t.warmup_start_factor + (1.0 - t.warmup_start_factor) * min(1.0, epoch / t.warmup_epochs)
    return ramp * t.learning_rate / (1.0 + t.lr_decay * epoch)


def epoch_plan(lengths: Sequence[int], config: NerConfig, epoch: int, world: int = 1) -> list[np.ndarray]:
    """Global batches of one epoch. Identical on every worker; batches too small to give every worker a
    sentence are dropped on all workers alike (collectives need every worker in every step)."""
    t = config.training
    batches = bucketed_batches(lengths, batch_size=t.batch_size, bucket_size=t.bucket_size, seed=t.seed + epoch)
    return [b for b in batches if len(b) >= world]


def run_epochs(
    step: TrainStep,
    vocabs: Vocabularies,
    config: NerConfig,
    train: Sequence[Sentence],
    *,
    evaluate: Callable[[], dict[str, Any]],
    on_epoch: EpochCallback | None = None,
    state: LoopState | None = None,
    rank: int = 0,
    world: int = 1,
    progress: bool = True,
    shape_policy: ShapePolicy | None = None,
    on_checkpoint: Callable[[], None] | None = None,
    plan_fn: Callable[[int], list[np.ndarray]] | None = None,
) -> LoopResult:
    """Train until ``epochs``, patience or ``max_minutes`` runs out. ``evaluate`` returns dev metrics
    (``{"micro": {"f1": ...}, ...}``) and must give the same answer on every worker (rank 0 computes it and
    the distributed runner broadcasts it, or every worker computes it). ``plan_fn(epoch)``: that epoch's
    global batches instead of ``epoch_plan`` (multi-corpus training batches corpus by corpus)."""
    t = config.training
    state = state or LoopState()
    lengths = [len(s.tokens) for s in train]
    encoded = EncodedCorpus([s.tokens for s in train], vocabs, max_word_length=config.model.max_word_length,
                            tags=[s.tags for s in train])
    # A step over a multi-process JAX job takes the whole global batch on every worker (it keeps its
    # own rows); otherwise each worker encodes its slice.
    part, parts = (0, 1) if step.global_batch else (rank, world)
    policy = shape_policy or _default_policy(config, parts)
    started = time.perf_counter()
    reason = "epochs"
    # Snapshots are not checkpointed: a resumed run averages from its first epoch after the resume.
    averager = WeightAverager(t.average_epochs)
    if state.bad_epochs >= t.patience:
        return LoopResult(state, "patience", 0.0)
    for epoch in range(state.epoch, t.epochs):
        lr = learning_rate(config, epoch)
        step.set_learning_rate(lr)
        plan = plan_fn(epoch) if plan_fn is not None else epoch_plan(lengths, config, epoch, world)
        bar = _progress(len(plan), epoch + 1, t.epochs, enabled=progress and rank == 0)
        tokens = 0
        losses = []
        t0 = time.perf_counter()
        for global_idx in plan:
            batch = encoded.batch(global_idx[part::parts], policy)
            batch.update(replica_rows(global_idx, part, parts, encoded.lengths, policy,
                                      n_rows=batch["lengths"].shape[0]))
            loss = step(batch, len(global_idx))
            losses.append(loss)
            tokens += int(sum(lengths[i] for i in global_idx))
            if bar is not None:
                bar.update(1)
                if len(losses) % 20 == 0:  # reading the loss synchronises with the device: not every step
                    bar.set_postfix(loss=f"{float(losses[-1]):.3f}",
                                    tok_s=f"{tokens / max(time.perf_counter() - t0, 1e-9):,.0f}")
        losses = [float(x) for x in losses]  # waits for the last step: the timing below is honest
        if bar is not None:
            bar.close()
        train_seconds = time.perf_counter() - t0
        step.sync_to_model()
        averager.push(step.model)
        with averager.applied(step.model):  # dev F1 and saved models use the averaged weights (if enabled)
            dev = evaluate()
            f1 = float(dev["micro"]["f1"])
            record = {
                "epoch": epoch + 1, "loss": float(np.mean(losses)) if losses else math.nan, "lr": lr,
                "dev_f1": f1, "dev_precision": float(dev["micro"]["precision"]), "dev_recall": float(dev["micro"]["recall"]),
                "dev_per_type": {k: v["f1"] for k, v in dev.get("per_type", {}).items()},
                "train_tokens_per_s": tokens / max(train_seconds, 1e-9), "train_seconds": train_seconds,
                "eval_seconds": time.perf_counter() - t0 - train_seconds,
            }
            if averager.enabled:
                record["averaged_epochs"] = len(averager)
            improved = f1 > state.best_f1 + t.min_delta
            state.history.append(record)
            state.epoch = epoch + 1
            if improved:
                state.best_f1, state.best_epoch, state.bad_epochs = f1, epoch + 1, 0
            else:
                state.bad_epochs += 1
            if on_epoch is not None:
                on_epoch(record, improved)
            if rank == 0 and progress:
                print(f"epoch {epoch + 1}: loss {record['loss']:.4f}  dev entity F1 {f1:.4f}"
                      f"{' (best)' if improved else ''}  {record['train_tokens_per_s']:,.0f} tok/s", flush=True)
        if on_checkpoint is not None:  # raw weights: resuming continues the training trajectory itself
            on_checkpoint()
        if state.bad_epochs >= t.patience:
            reason = "patience"
            break
        if t.max_minutes is not None and (time.perf_counter() - started) / 60 >= t.max_minutes:
            reason = "time budget"
            break
    return LoopResult(state, reason, time.perf_counter() - started)


def replica_rows(global_idx: np.ndarray, rank: int, world: int, lengths: np.ndarray, policy: ShapePolicy,
                 *, n_rows: int) -> dict[str, np.ndarray]:
    """Where this worker's rows sit in the global batch, and the global batch's (rows, time) size: the
    model draws dropout noise for the global batch and keeps these rows (``layers.keep_mask``), so the
    masks do not depend on how many workers share the batch."""
    ids = np.arange(rank, len(global_idx), world, dtype=np.int32)
    ids = np.pad(ids, (0, n_rows - ids.size))  # rows a fixed-batch policy pads on are empty sentences
    t_global = round_up(int(lengths[global_idx].max(initial=1)), policy.time_multiple)
    return {"row_ids": ids, "rows_total": np.int32(len(global_idx)), "time_total": np.int32(t_global)}


def _default_policy(config: NerConfig, world: int) -> ShapePolicy:
    from nerservice import backend

    t = config.training
    return ShapePolicy.for_backend(backend.current(), batch_size=-(-t.batch_size // world),
                                   time_multiple=t.bucket_size)


def _progress(total: int, epoch: int, epochs: int, *, enabled: bool) -> Any:
    if not enabled:
        return None
    import sys

    from tqdm import tqdm

    return tqdm(total=total, desc=f"epoch {epoch}/{epochs}", unit="batch", leave=False,
                disable=not sys.stderr.isatty())
