"""The epoch loop with a real tagger and a real train step: schedule, early stopping, time budget,
resumption from a LoopState, and the per-epoch record."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from helpers import tiny_model_config


def _config(**training):
    from nerservice.config import NerConfig

    # no warm-up (the product default has one): the asserted rates below are NerDL's decay alone
    base = {"epochs": 3, "batch_size": 8, "learning_rate": 0.01, "patience": 10, "seed": 1, "warmup_epochs": 0}
    return NerConfig(model=tiny_model_config(), training={**base, **training})


@pytest.fixture(scope="module")
def data():
    from nerservice.demo_corpus import generate
    from nerservice.training.trainer import build_vocabularies

    train, dev = generate(40, seed=1), generate(12, seed=2)
    return train, dev, build_vocabularies(train, also_tags=dev)


def _fresh(config, vocabs):
    from nerservice.model.tagger import build_tagger
    from nerservice.training.steps import make_train_step

    model = build_tagger(config.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                         n_tags=len(vocabs.tags), seed=config.training.seed)
    return model, make_train_step(model, config.training)


@pytest.fixture(scope="module")
def step(data):
    """One real train step shared by the tests that script dev F1 (tracing a step costs seconds)."""
    return _fresh(_config(), data[2])[1]


def _scripted(f1s):
    """An evaluate callback that reports the given dev F1 sequence (the loop's documented interface)."""
    it = iter(f1s)

    def evaluate():
        f = next(it)
        return {"micro": {"precision": f, "recall": f, "f1": f}, "per_type": {"X": {"f1": f}}}

    return evaluate


def test_learning_rate_schedule() -> None:
    from nerservice.training.loop import learning_rate

    cfg = _config(learning_rate=0.002, lr_decay=0.5)
    assert [learning_rate(cfg, e) for e in range(3)] == pytest.approx([0.002, 0.002 / 1.5, 0.001])


@pytest.mark.slow
def test_loop_trains_and_records_every_epoch(data) -> None:
    from nerservice.metrics import evaluate_predictor as evaluator
    from nerservice.model.predictor import Predictor
    from nerservice.training.loop import run_epochs

    train, dev, vocabs = data
    cfg = _config(epochs=4)
    model, step = _fresh(cfg, vocabs)
    before = [w.copy() for w in model.get_weights()]
    predictor = Predictor(model, vocabs, max_word_length=cfg.model.max_word_length)
    calls = []
    result = run_epochs(step, vocabs, cfg, train, evaluate=lambda: evaluator(predictor, dev),
                        on_epoch=lambda rec, best: calls.append((rec["epoch"], best)), progress=False)
    h = result.state.history
    assert [r["epoch"] for r in h] == [1, 2, 3, 4] and result.state.epoch == 4
    assert result.stopped_reason == "epochs"
    assert [c[0] for c in calls] == [1, 2, 3, 4] and calls[0][1] is True
    assert h[-1]["loss"] < h[0]["loss"]  # it learns
    assert all(math.isfinite(r["loss"]) and 0 <= r["dev_f1"] <= 1 for r in h)
    assert [r["lr"] for r in h] == pytest.approx([0.01 / (1 + 0.005 * e) for e in range(4)])
    assert {"dev_precision", "dev_recall", "dev_per_type", "train_tokens_per_s", "train_seconds"} <= set(h[0])
    assert result.state.best_f1 == max(r["dev_f1"] for r in h)
    assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    json.dumps(result.state.to_dict())  # the state is saved as JSON with checkpoints


def test_early_stopping_on_dev_f1_with_patience(data, step) -> None:
    from nerservice.training.loop import run_epochs

    train, _, vocabs = data
    cfg = _config(epochs=10, patience=2)
    flags = []
    result = run_epochs(step, vocabs, cfg, train[:16], evaluate=_scripted([0.5, 0.6, 0.6, 0.55, 0.9]),
                        on_epoch=lambda rec, best: flags.append(best), progress=False)
    assert result.stopped_reason == "patience"
    assert flags == [True, True, False, False]  # 0.6 again is not an improvement
    s = result.state
    assert (s.epoch, s.best_epoch, s.best_f1, s.bad_epochs) == (4, 2, 0.6, 2)


def test_min_delta_requires_a_real_gain(data, step) -> None:
    from nerservice.training.loop import run_epochs

    train, _, vocabs = data
    cfg = _config(epochs=3, patience=5, min_delta=0.05)
    flags = []
    run_epochs(step, vocabs, cfg, train[:16], evaluate=_scripted([0.5, 0.54, 0.56]),
               on_epoch=lambda rec, best: flags.append(best), progress=False)
    assert flags == [True, False, True]


def test_time_budget_stops_after_the_epoch_that_crosses_it(data, step) -> None:
    from nerservice.training.loop import run_epochs

    train, _, vocabs = data
    cfg = _config(epochs=5, max_minutes=1e-6)
    result = run_epochs(step, vocabs, cfg, train[:16], evaluate=_scripted([0.1] * 5), progress=False)
    assert result.stopped_reason == "time budget" and len(result.state.history) == 1


def test_resuming_from_a_state_runs_only_the_remaining_epochs(data, step) -> None:
    from nerservice.training.loop import LoopState, run_epochs

    train, _, vocabs = data
    cfg = _config(epochs=3)
    first = run_epochs(step, vocabs, cfg.with_overrides({"training.epochs": 2}), train[:16],
                       evaluate=_scripted([0.2, 0.3]), progress=False)
    saved = json.loads(json.dumps(first.state.to_dict()))
    state = LoopState.from_dict(saved)
    result = run_epochs(step, vocabs, cfg, train[:16], evaluate=_scripted([0.4]), state=state, progress=False)
    assert [r["epoch"] for r in result.state.history] == [1, 2, 3]
    assert result.state.history[:2] == saved["history"]
    assert result.state.history[2]["lr"] == pytest.approx(0.01 / (1 + 0.005 * 2))  # epoch 3's own rate
    assert (result.state.best_epoch, result.state.best_f1) == (3, 0.4)


def test_a_state_that_already_ran_out_of_patience_does_nothing(data, step) -> None:
    from nerservice.training.loop import LoopState, run_epochs

    train, _, vocabs = data
    cfg = _config(epochs=9, patience=2)
    state = LoopState(epoch=4, best_f1=0.5, best_epoch=2, bad_epochs=2, history=[{"epoch": i} for i in range(1, 5)])
    result = run_epochs(step, vocabs, cfg, train[:8], evaluate=_scripted([]), state=state, progress=False)
    assert result.stopped_reason == "patience" and result.state.epoch == 4 and len(result.state.history) == 4


def test_the_warm_up_step_leaves_training_unchanged_and_the_step_traces_once(data) -> None:
    """The loop runs one step before epoch 1's clock starts (trace, collectives' setup) and restores every
    variable: weights, Adam's moments and iteration count, the dropout seed state. So a run with the
    warm-up ends bit-identical to one without; and batches of every shape, the last partial one included,
    run through the one trace (dynamic signature: no retracing)."""
    from nerservice.training.loop import run_epochs

    train, _, vocabs = data
    cfg = _config(epochs=2, batch_size=6).with_overrides({"model.dropout": 0.3})
    weights, traces = {}, {}
    for warm in (False, True):
        model, step = _fresh(cfg, vocabs)
        result = run_epochs(step, vocabs, cfg, train[:27], evaluate=_scripted([0.1, 0.2]), progress=False,
                            warm_up=warm)
        weights[warm], traces[warm] = model.get_weights(), step.traces
        assert result.state.history[-1]["train_tokens"] == sum(len(s.tokens) for s in train[:27])
    assert all(np.array_equal(a, b) for a, b in zip(weights[False], weights[True]))
    assert traces == {False: 1, True: 1}
