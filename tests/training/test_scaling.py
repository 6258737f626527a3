"""Scaling modes: the global batch and learning rate N workers train with (nerservice.training.scaling)."""
from __future__ import annotations

import math

import pytest

from nerservice.config import NerConfig
from nerservice.errors import ConfigError
from nerservice.training.loop import learning_rate
from nerservice.training.scaling import describe, scale_config


def test_fixed_mode_and_one_worker_leave_the_config_alone() -> None:
    base = NerConfig()
    assert scale_config(base, 4, "fixed") == base
    assert scale_config(base, 1, "grow", "linear") == base
    # the default's own warm-up: from 0.25 x 4e-3 to 4e-3 over 2 epochs, under NerDL's decay
    assert [learning_rate(base, e) for e in range(3)] == pytest.approx([1e-3, 2.5e-3 / 1.005, 4e-3 / 1.01])


@pytest.mark.parametrize("rule,factor", [("sqrt", math.sqrt(8)), ("linear", 8.0)])
def test_grow_mode_scales_batch_and_rate_with_a_warm_up_from_the_base_rate(rule: str, factor: float) -> None:
    base = NerConfig().with_overrides({"training.lr_decay": 0.0, "training.batch_size": 32,
                                       "training.learning_rate": 1e-3, "training.warmup_epochs": 0})
    grown = scale_config(base, 8, "grow", rule)  # type: ignore[arg-type]
    assert grown.training.batch_size == 8 * 32
    assert grown.training.learning_rate == pytest.approx(1e-3 * factor)
    lrs = [learning_rate(grown, e) for e in range(4)]
    # Epoch 0 starts at the single-worker rate and the ramp reaches the scaled rate at epoch 2.
    assert lrs == pytest.approx([1e-3, 1e-3 * (1 + factor) / 2, 1e-3 * factor, 1e-3 * factor])
    d = describe(base, grown, 8, "grow", rule)  # type: ignore[arg-type]
    assert d["per_worker_batch"] == 32 and d["global_batch"] == 256 and d["rule"] == rule
    assert describe(base, base, 2, "fixed", "sqrt")["per_worker_batch"] == 16


def test_grow_mode_starts_where_one_worker_with_its_own_warm_up_starts() -> None:
    base = NerConfig().with_overrides({"training.lr_decay": 0.0})  # the default: 128 at 4e-3, from 0.25x over 2
    grown = scale_config(base, 2, "grow", "linear")
    assert (grown.training.batch_size, grown.training.learning_rate) == (256, pytest.approx(8e-3))
    assert [learning_rate(grown, e) for e in range(3)] == pytest.approx([1e-3, 4.5e-3, 8e-3])
    longer = scale_config(base.with_overrides({"training.warmup_epochs": 4}), 2, "grow", "linear")
    assert longer.training.warmup_epochs == 4 and learning_rate(longer, 0) == pytest.approx(1e-3)


def test_bad_modes_are_coded_config_errors() -> None:
    for args in [(0, "grow", "sqrt"), (2, "shrink", "sqrt"), (2, "grow", "cubic")]:
        with pytest.raises(ConfigError) as err:
            scale_config(NerConfig(), *args)  # type: ignore[arg-type]
        assert err.value.code.startswith("NER")
