"""How the global batch and the learning rate follow the number of data-parallel workers.

Two modes (``spark_jobs/train.py --scaling``):

``fixed`` (the default)
    The global batch stays ``training.batch_size``; N workers split every global batch (128/N sentences each
    at the default 128). The trained model does not depend on N, but each worker's share shrinks while the
    recurrent layers' sequential cost per step does not, so more workers buy little speed.
``grow``
    Every worker keeps a full per-worker batch of ``training.batch_size`` sentences: the global batch is
    ``N x batch_size``, an epoch has N times fewer steps, and the learning rate follows ``rule``:
    ``linear`` (lr x N, Goyal et al. 2017; the default) or ``sqrt`` (lr x sqrt(N), the rule derived for
    Adam by Malladi et al. 2022), both with a gradual warm-up from the single-worker starting rate (the base
    config's own warm-up start, ``warmup_start_factor`` x lr) over the first ``WARMUP_EPOCHS`` epochs (or the
    base config's ``warmup_epochs``, if longer). Measured on the H200 (BENCHMARKS.md, "How training scales";
    synchronous data parallelism over N workers computes exactly what one process computes on the N-times
    batch, so the accuracy side was measured in one process per N): at equal epochs ``linear`` gave higher dev F1 than
    ``sqrt`` at N = 4 and 8, hence the default. Those runs grew batch 32 at lr 1e-3, so global batches up to
    256 at lr 8e-3 are measured ground: from today's default (128 at 4e-3) that is N <= 2 with ``linear``; beyond
    it ``sqrt`` is the cautious choice (Adam at lr 16e-3 or more was never tried).

The returned config is the one the workers train with and the one saved with the model, so a grown run's
batch size and learning rate are on record; ``describe`` gives the job summary's ``scaling`` entry.
"""
from __future__ import annotations

import math
from typing import Any, Literal

from nerservice.config import NerConfig
from nerservice.errors import ConfigError

Mode = Literal["fixed", "grow"]
Rule = Literal["sqrt", "linear"]
MODES: tuple[Mode, ...] = ("fixed", "grow")
RULES: tuple[Rule, ...] = ("linear", "sqrt")
WARMUP_EPOCHS = 2


def lr_factor(workers: int, rule: Rule) -> float:
    if rule == "sqrt":
        return math.sqrt(workers)
    if rule == "linear":
        return float(workers)
    raise ConfigError(f"unknown learning-rate rule {rule!r}", hint=f"one of {', '.join(RULES)}")


def scale_config(config: NerConfig, workers: int, mode: Mode = "fixed", rule: Rule = "linear") -> NerConfig:
    """The config N workers train with. ``fixed`` and N = 1 return ``config`` unchanged."""
    if workers < 1:
        raise ConfigError(f"--workers {workers}: need at least 1")
    if mode not in MODES:
        raise ConfigError(f"unknown scaling mode {mode!r}", hint=f"one of {', '.join(MODES)}")
    factor = lr_factor(workers, rule)  # validates the rule in every mode
    if mode == "fixed" or workers == 1:
        return config
    t = config.training
    return config.with_overrides({
        "training.batch_size": t.batch_size * workers,
        "training.learning_rate": t.learning_rate * factor,
        "training.warmup_epochs": max(WARMUP_EPOCHS, t.warmup_epochs),
        # the grown run starts where one worker would start: its own warm-up start (1 when it has none)
        "training.warmup_start_factor": (t.warmup_start_factor if t.warmup_epochs else 1.0) / factor,
    })


def describe(base: NerConfig, scaled: NerConfig, workers: int, mode: Mode, rule: Rule) -> dict[str, Any]:
    """The ``scaling`` entry of a training job's summary."""
    b, s = base.training, scaled.training
    return {"mode": mode, "rule": rule if mode == "grow" else None, "workers": workers,
            "per_worker_batch": s.batch_size // workers if mode == "grow" else math.ceil(s.batch_size / workers),
            "global_batch": s.batch_size, "base_learning_rate": b.learning_rate, "learning_rate": s.learning_rate,
            "warmup_epochs": s.warmup_epochs, "warmup_start_factor": s.warmup_start_factor}
