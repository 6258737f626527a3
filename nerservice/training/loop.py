"""The epoch loop: bucketed batches, lr decay, dev entity-F1 early stopping; a generator of epoch records.

It is backend-neutral (it calls a ``TrainStep``) and distribution-aware without knowing about Spark:
every worker builds the *same* global batch plan from the seed and trains on its slice of each global
batch (``rank``/``world``), so N workers apply exactly the gradients a single process would.
Evaluation is a callback; saving is the caller's (``training/checkpointer.py``), so rank 0 alone can do it.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nerservice.config import NerConfig
from nerservice.data import Sentence
from nerservice.model.batching import bucketed_batches
from nerservice.text.features import EncodedCorpus, ShapePolicy, round_up
from nerservice.text.vocab import Vocabularies
from nerservice.training.averaging import WeightAverager
from nerservice.training.encoder_cache import EncoderStates
from nerservice.training.steps import TrainStep

EpochCallback = Callable[[dict[str, Any], bool], None]  # (epoch record, is_best)
ExtraBatch = Callable[[np.ndarray, dict[str, np.ndarray]], dict[str, np.ndarray]]  # (rows, batch) -> arrays


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


class EpochLoop:
    """The epochs of one training run, spaCy's shape: iterate to train; each step yields
    ``(record, is_best)`` once the epoch is trained and evaluated on dev, while the weights to save
    (averaged, if enabled) are in the model, so the caller saves model-last / model-best then.  When the
    caller asks for the next epoch, the raw weights are restored and ``on_checkpoint()`` runs (a
    checkpoint must hold the raw trajectory, not the averaged weights).  After the loop,
    ``stopped_reason`` and ``seconds`` say how it ended; ``state`` is updated in place throughout.

    ``evaluate`` returns dev metrics (``{"micro": {"f1": ...}, ...}``) and must give the same answer on
    every worker (every worker computes it, or rank 0 computes it and the runner broadcasts it).
    ``plan_fn(epoch)``: that epoch's global batches instead of ``epoch_plan`` (multi-corpus training batches
    corpus by corpus).  A loop runs once; a second phase (e.g. a final run on train+dev) is a second
    ``EpochLoop``.  ``extra_batch(rows, batch)``: more arrays for the batch of training sentences ``rows``
    (indices into ``train``), padded to the batch's shape (a distillation student's teacher targets)."""

    def __init__(self, step: TrainStep, vocabs: Vocabularies, config: NerConfig, train: Sequence[Sentence], *,
                 evaluate: Callable[[], dict[str, Any]], state: LoopState | None = None, rank: int = 0,
                 world: int = 1, progress: bool = True, shape_policy: ShapePolicy | None = None,
                 on_checkpoint: Callable[[], None] | None = None,
                 plan_fn: Callable[[int], list[np.ndarray]] | None = None,
                 extra_batch: ExtraBatch | None = None, warm_up: bool = True,
                 gazetteer_ids: np.ndarray | None = None) -> None:
        """``gazetteer_ids``: with a gazetteer in ``vocabs``, the training sentences' ids as
        ``GazetteerBuild.training_ids`` gives them (flat, in ``train``'s order)."""
        self.step, self.vocabs, self.config, self.train = step, vocabs, config, train
        self.gazetteer_ids = gazetteer_ids
        self.plan_fn, self.extra_batch = plan_fn, extra_batch
        self.warm_up = warm_up
        self.warmup_seconds = 0.0  # the step's one-time costs, paid before the first timed epoch
        self.epochs_run = 0  # epochs trained by this loop (a resumed state's history holds earlier ones too)
        self.evaluate, self.on_checkpoint = evaluate, on_checkpoint
        self.state = state or LoopState()
        self.rank, self.world, self.progress = rank, world, progress
        self.shape_policy = shape_policy
        self.stopped_reason = "epochs"
        self.seconds = 0.0
        self.last_dev: dict[str, Any] = {}  # the dev metrics of the latest epoch
        self.encoder_states: EncoderStates | None = None  # set when training starts, for a model with an encoder

    def __iter__(self) -> Iterator[tuple[dict[str, Any], bool]]:
        t = self.config.training
        state, step, rank, world = self.state, self.step, self.rank, self.world
        lengths = [len(s.tokens) for s in self.train]
        if self.vocabs.gazetteer is not None and self.gazetteer_ids is None:
            # Matched against the whole gazetteer, every training entity would carry the feature.
            raise ValueError("a model with a gazetteer needs the training text's jackknifed ids (text/gazetteer.py)")
        encoded = EncodedCorpus([s.tokens for s in self.train], self.vocabs,
                                max_word_length=self.config.model.max_word_length, tags=[s.tags for s in self.train],
                                gazetteer_ids=self.gazetteer_ids)
        # A step over a multi-process JAX job takes the whole global batch on every worker (it keeps its
        # own rows); otherwise each worker encodes its slice.
        part, parts = (0, 1) if step.global_batch else (rank, world)
        # A frozen pretrained encoder runs once per training sentence, not once per epoch.
        states = self.encoder_states = (
            EncoderStates(step.model.text_encoder, len(self.train), budget_mb=t.encoder_cache_mb)
            if step.model.text_encoder is not None else None)
        policy = self.shape_policy or _default_policy(self.config, parts)
        started = time.perf_counter()
        # Snapshots are not checkpointed: a resumed run averages from its first epoch after the resume.
        averager = WeightAverager(t.average_epochs)
        if state.bad_epochs >= t.patience:
            self.stopped_reason = "patience"
            return

        def plan_of(epoch: int) -> list[np.ndarray]:
            return self.plan_fn(epoch) if self.plan_fn is not None else epoch_plan(lengths, self.config, epoch, world)

        def worker_batch(global_idx: np.ndarray) -> dict[str, Any]:
            rows = global_idx[part::parts]
            batch: dict[str, Any] = encoded.batch(rows, policy)
            if self.extra_batch is not None:
                batch.update(self.extra_batch(rows, batch))
            if states is not None:
                batch.update(states(rows, batch))
            batch.update(replica_rows(global_idx, part, parts, encoded.lengths, policy,
                                      n_rows=batch["lengths"].shape[0]))
            return batch

        first = plan_of(state.epoch)[:1] if self.warm_up and state.epoch < t.epochs else []
        if first:  # trace, set up the collectives and meet every peer before the clock of epoch 1 starts
            w0 = time.perf_counter()
            step.warm_up(worker_batch(first[0]), len(first[0]))
            self.warmup_seconds = time.perf_counter() - w0
        for epoch in range(state.epoch, t.epochs):
            lr = learning_rate(self.config, epoch)
            step.set_learning_rate(lr)
            plan = plan_of(epoch)
            bar = _progress(len(plan), epoch + 1, t.epochs, enabled=self.progress and rank == 0)
            tokens = 0
            losses = []
            t0 = time.perf_counter()
            for global_idx in plan:
                loss = step(worker_batch(global_idx), len(global_idx))
                losses.append(loss)
                tokens += int(sum(lengths[i] for i in global_idx))
                if bar is not None:
                    bar.update(1)
                    if len(losses) % 20 == 0:  # reading the loss synchronises with the device: not every step
                        bar.set_postfix(loss=f"{float(losses[-1]):.3f}",
                                        tok_s=f"{tokens / max(time.perf_counter() - t0, 1e-9):,.0f}")
            loss_values = [float(x) for x in losses]  # waits for the last step: the timing below is honest
            if bar is not None:
                bar.close()
            train_seconds = time.perf_counter() - t0
            step.sync_to_model()
            averager.push(step.model)
            with averager.applied(step.model):  # dev F1 and saved models use the averaged weights (if enabled)
                dev = self.last_dev = self.evaluate()
                record = _record(epoch, lr, loss_values, dev, tokens=tokens, train_seconds=train_seconds,
                                 eval_seconds=time.perf_counter() - t0 - train_seconds)
                if averager.enabled:
                    record["averaged_epochs"] = len(averager)
                if states is not None:
                    record["encoder_cache"] = states.stats()
                improved = record["dev_f1"] > state.best_f1 + t.min_delta
                state.history.append(record)
                state.epoch = epoch + 1
                self.epochs_run += 1
                if improved:
                    state.best_f1, state.best_epoch, state.bad_epochs = record["dev_f1"], epoch + 1, 0
                else:
                    state.bad_epochs += 1
                if rank == 0 and self.progress:
                    print(f"epoch {epoch + 1}: loss {record['loss']:.4f}  dev entity F1 {record['dev_f1']:.4f}"
                          f"{' (best)' if improved else ''}  {record['train_tokens_per_s']:,.0f} tok/s", flush=True)
                yield record, improved
            if self.on_checkpoint is not None:  # raw weights: resuming continues the training trajectory itself
                self.on_checkpoint()
            self.seconds = time.perf_counter() - started
            if state.bad_epochs >= t.patience:
                self.stopped_reason = "patience"
                break
            if t.max_minutes is not None and self.seconds / 60 >= t.max_minutes:
                self.stopped_reason = "time budget"
                break
        self.seconds = time.perf_counter() - started


def _record(epoch: int, lr: float, losses: list[float], dev: dict[str, Any], *, tokens: int, train_seconds: float,
            eval_seconds: float) -> dict[str, Any]:
    return {
        "epoch": epoch + 1, "loss": float(np.mean(losses)) if losses else math.nan, "lr": lr,
        "dev_f1": float(dev["micro"]["f1"]), "dev_precision": float(dev["micro"]["precision"]),
        "dev_recall": float(dev["micro"]["recall"]),
        "dev_per_type": {k: v["f1"] for k, v in dev.get("per_type", {}).items()},
        "train_tokens": tokens, "train_tokens_per_s": tokens / max(train_seconds, 1e-9), "train_seconds": train_seconds,
        "eval_seconds": eval_seconds,
    }


def run_epochs(step: TrainStep, vocabs: Vocabularies, config: NerConfig, train: Sequence[Sentence], *,
               evaluate: Callable[[], dict[str, Any]], on_epoch: EpochCallback | None = None,
               state: LoopState | None = None, rank: int = 0, world: int = 1, progress: bool = True,
               shape_policy: ShapePolicy | None = None,
               on_checkpoint: Callable[[], None] | None = None,
               plan_fn: Callable[[int], list[np.ndarray]] | None = None, warm_up: bool = True) -> LoopResult:
    """Drive an ``EpochLoop`` to the end, calling ``on_epoch(record, is_best)`` for each epoch."""
    loop = EpochLoop(step, vocabs, config, train, evaluate=evaluate, state=state, rank=rank, world=world,
                     progress=progress, shape_policy=shape_policy, on_checkpoint=on_checkpoint, plan_fn=plan_fn,
                     warm_up=warm_up)
    for record, is_best in loop:
        if on_epoch is not None:
            on_epoch(record, is_best)
    return LoopResult(loop.state, loop.stopped_reason, loop.seconds)


def replica_rows(global_idx: np.ndarray, rank: int, world: int, lengths: np.ndarray, policy: ShapePolicy,
                 *, n_rows: int) -> dict[str, np.ndarray | np.int32]:
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
