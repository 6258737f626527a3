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
    assert [learning_rate(base, e) for e in range(3)] == pytest.approx([1e-3, 1e-3 / 1.005, 1e-3 / 1.01])


@pytest.mark.parametrize("rule,factor", [("sqrt", math.sqrt(8)), ("linear", 8.0)])
def test_grow_mode_scales_batch_and_rate_with_a_warm_up_from_the_base_rate(rule: str, factor: float) -> None:
    base = NerConfig().with_overrides({"training.lr_decay": 0.0})
    grown = scale_config(base, 8, "grow", rule)  # type: ignore[arg-type]
    assert grown.training.batch_size == 8 * 32
    assert grown.training.learning_rate == pytest.approx(1e-3 * factor)
    lrs = [learning_rate(grown, e) for e in range(4)]
    # Epoch 0 starts at the single-worker rate and the ramp reaches the scaled rate at epoch 2.
    assert lrs == pytest.approx([1e-3, 1e-3 * (1 + factor) / 2, 1e-3 * factor, 1e-3 * factor])
    d = describe(base, grown, 8, "grow", rule)  # type: ignore[arg-type]
    assert d["per_worker_batch"] == 32 and d["global_batch"] == 256 and d["rule"] == rule
    assert describe(base, base, 2, "fixed", "sqrt")["per_worker_batch"] == 16


def test_bad_modes_are_coded_config_errors() -> None:
    for args in [(0, "grow", "sqrt"), (2, "shrink", "sqrt"), (2, "grow", "cubic")]:
        with pytest.raises(ConfigError) as err:
            scale_config(NerConfig(), *args)  # type: ignore[arg-type]
        assert err.value.code.startswith("NER")
