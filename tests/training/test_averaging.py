"""training.average_epochs: dev evaluation and saved models see the mean of the last k epoch-end weights;
training continues from the raw weights; checkpoints hold the raw weights."""
from __future__ import annotations

import numpy as np

from helpers import tiny_model_config


class _Vars:
    def __init__(self, values):
        self.trainable_variables = [_Var(v) for v in values]


class _Var:
    def __init__(self, value):
        self.value = np.asarray(value, dtype=np.float32)

    def numpy(self):
        return self.value

    def assign(self, value):
        self.value = np.asarray(value, dtype=np.float32)


def test_window_mean_and_restore() -> None:
    from nerservice.training.averaging import WeightAverager

    avg = WeightAverager(2)
    m = _Vars([[0.0, 0.0]])
    for x in (1.0, 2.0, 4.0):  # the window keeps the last two: 2 and 4
        m.trainable_variables[0].assign([x, -x])
        avg.push(m)
    with avg.applied(m):
        np.testing.assert_array_equal(m.trainable_variables[0].numpy(), [3.0, -3.0])
    np.testing.assert_array_equal(m.trainable_variables[0].numpy(), [4.0, -4.0])
    off = WeightAverager(0)
    off.push(m)
    with off.applied(m):
        np.testing.assert_array_equal(m.trainable_variables[0].numpy(), [4.0, -4.0])
    assert len(off) == 0 and not off.enabled


def test_loop_evaluates_and_saves_the_average_and_checkpoints_raw_weights() -> None:
    from nerservice.config import NerConfig
    from nerservice.demo_corpus import generate
    from nerservice.model.tagger import build_tagger
    from nerservice.training.loop import run_epochs
    from nerservice.training.steps import make_train_step
    from nerservice.training.trainer import build_vocabularies

    train = generate(40, seed=1)
    vocabs = build_vocabularies(train)
    config = NerConfig(model=tiny_model_config(),
                       training={"epochs": 4, "batch_size": 8, "learning_rate": 0.01, "seed": 1, "average_epochs": 3})
    model = build_tagger(config.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                         n_tags=len(vocabs.tags), seed=1)
    step = make_train_step(model, config.training)
    raw_ends, seen_by_eval, seen_by_checkpoint = [], [], []
    weights = lambda: [np.array(v.numpy(), copy=True) for v in model.trainable_variables]  # noqa: E731

    def evaluate():
        seen_by_eval.append(weights())
        return {"micro": {"precision": 0.5, "recall": 0.5, "f1": 0.5}, "per_type": {}}

    class Spy:  # the raw epoch-end weights, captured before the loop swaps in the average
        def __init__(self, inner):
            self.inner, self.model = inner, inner.model

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def __call__(self, batch, n_global):
            return self.inner(batch, n_global)

        def sync_to_model(self):
            self.inner.sync_to_model()
            raw_ends.append(weights())

    result = run_epochs(Spy(step), vocabs, config, train, evaluate=evaluate, progress=False,
                        on_checkpoint=lambda: seen_by_checkpoint.append(weights()))
    assert [h["averaged_epochs"] for h in result.state.history] == [1, 2, 3, 3]
    for epoch in range(4):
        window = raw_ends[max(0, epoch - 2): epoch + 1]
        expected = [np.mean(np.stack(p), axis=0) for p in zip(*window)]
        for got, want in zip(seen_by_eval[epoch], expected):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
        for got, raw in zip(seen_by_checkpoint[epoch], raw_ends[epoch]):
            np.testing.assert_array_equal(got, raw)
    # The average really differs from the raw weights (the test could tell them apart).
    assert any(not np.allclose(a, b) for a, b in zip(seen_by_eval[3], raw_ends[3]))
    for got, raw in zip(weights(), raw_ends[-1]):  # training state after the loop: raw
        np.testing.assert_array_equal(got, raw)
