"""Resumable checkpoints: weights, optimizer state and loop state come back exactly; no pickle; atomic."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers import tiny_model_config


@pytest.fixture(scope="module")
def setup():
    from helpers import encode_batch
    from nerservice.config import NerConfig
    from nerservice.demo_corpus import generate
    from nerservice.training.trainer import build_vocabularies

    sents = generate(12, seed=4)
    vocabs = build_vocabularies(sents)
    config = NerConfig(model=tiny_model_config(dropout=0.3), training={"learning_rate": 0.01, "seed": 2})
    batches = [encode_batch([s.tokens for s in sents[i:i + 4]], vocabs, max_word_length=10,
                            tags=[s.tags for s in sents[i:i + 4]]) for i in range(0, 12, 4)]
    return config, vocabs, batches


def _model_and_step(config, vocabs, seed: int):
    from nerservice.model.tagger import build_tagger
    from nerservice.training.steps import make_train_step

    model = build_tagger(config.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                         n_tags=len(vocabs.tags), seed=seed)
    return model, make_train_step(model, config.training)


def _values(variables) -> list[np.ndarray]:
    from keras import ops

    return [np.asarray(ops.convert_to_numpy(v)) for v in variables]


@pytest.mark.slow  # traces a real training step: seconds of CPU
def test_save_load_restores_weights_optimizer_and_state_and_training_continues_identically(setup, tmp_path) -> None:
    from nerservice.training.checkpoint import has_checkpoint, load_checkpoint, save_checkpoint
    from nerservice.training.loop import LoopState

    config, vocabs, batches = setup
    model, step = _model_and_step(config, vocabs, seed=2)  # one traced step for the whole test (seconds each)
    for b in batches[:2]:
        step(b, 4)
    step.sync_to_model()
    state = LoopState(epoch=2, best_f1=0.75, best_epoch=1, bad_epochs=1,
                      history=[{"epoch": 1, "dev_f1": 0.75}, {"epoch": 2, "dev_f1": 0.5}])
    assert not has_checkpoint(tmp_path / "ckpt")
    save_checkpoint(tmp_path / "ckpt", model=model, optimizer=step.optimizer, state=state)
    assert has_checkpoint(tmp_path / "ckpt")
    saved_vars, saved_opt = _values(model.variables), _values(step.optimizer.variables)
    step(batches[2], 4)
    step.sync_to_model()
    after_third = _values(model.trainable_variables)

    # A fresh model (other initial weights) gets exactly the saved variables.
    other, other_step = _model_and_step(config, vocabs, seed=99)
    assert any(not np.array_equal(a, b) for a, b in zip(saved_vars, _values(other.variables)))
    assert load_checkpoint(tmp_path / "ckpt", model=other, optimizer=other_step.optimizer) == state
    for a, b in zip(saved_vars, _values(other.variables)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(saved_opt, _values(other_step.optimizer.variables)):
        np.testing.assert_array_equal(a, b)
    assert int(np.asarray(other_step.optimizer.iterations)) == 2

    # Rewind the first model to the checkpoint and replay step 3: the same weights come out, which needs
    # Adam's moments and step count back, not just the weights.
    restored = load_checkpoint(tmp_path / "ckpt", model=model, optimizer=step.optimizer)
    step.reload_from_model()
    assert restored.history == state.history
    step(batches[2], 4)
    step.sync_to_model()
    for a, b in zip(after_third, _values(model.trainable_variables)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-7)

    # Counter-check: weights restored but optimizer state reset → a different step 3.
    load_checkpoint(tmp_path / "ckpt", model=model, optimizer=step.optimizer)
    for v in step.optimizer.variables:
        if "iteration" not in v.path and "learning_rate" not in v.path:
            v.assign(np.zeros(v.shape, dtype=v.dtype))
    step.reload_from_model()
    step(batches[2], 4)
    step.sync_to_model()
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(after_third, _values(model.trainable_variables)))
    assert diff > 1e-5


def test_checkpoint_files_are_plain_arrays_and_json_never_pickles(setup, tmp_path) -> None:
    from nerservice.training import checkpoint
    from nerservice.training.loop import LoopState

    config, vocabs, _ = setup
    model, step = _model_and_step(config, vocabs, seed=2)
    d = checkpoint.save_checkpoint(tmp_path / "c", model=model, optimizer=step.optimizer, state=LoopState())
    assert sorted(p.name for p in d.iterdir()) == sorted([checkpoint.STATE, checkpoint.MODEL_VARS, checkpoint.OPT_VARS])
    json.loads((d / checkpoint.STATE).read_text())
    for name in (checkpoint.MODEL_VARS, checkpoint.OPT_VARS):
        with np.load(d / name, allow_pickle=False) as z:  # would raise on any object array
            assert all(z[k].dtype != object for k in z.files)
    src = Path(checkpoint.__file__).read_text()
    assert "allow_pickle=False" in src and "allow_pickle=True" not in src and "import pickle" not in src


def test_an_object_array_in_a_checkpoint_is_refused(setup, tmp_path) -> None:
    """A checkpoint crafted with a pickled object array must not be unpickled on load."""
    from nerservice.training import checkpoint
    from nerservice.training.loop import LoopState

    config, vocabs, _ = setup
    model, step = _model_and_step(config, vocabs, seed=2)
    d = checkpoint.save_checkpoint(tmp_path / "c", model=model, optimizer=step.optimizer, state=LoopState())
    arrays = dict(np.load(d / checkpoint.MODEL_VARS, allow_pickle=False))
    arrays["v0000"] = np.array([{"evil": 1}], dtype=object)
    np.savez(d / checkpoint.MODEL_VARS, **arrays)
    with pytest.raises(ValueError, match="pickle"):
        checkpoint.load_checkpoint(d, model=model, optimizer=step.optimizer)


def test_a_checkpoint_of_another_shape_is_refused(setup, tmp_path) -> None:
    from nerservice.training import checkpoint
    from nerservice.training.loop import LoopState

    config, vocabs, _ = setup
    model, step = _model_and_step(config, vocabs, seed=2)
    d = checkpoint.save_checkpoint(tmp_path / "c", model=model, optimizer=step.optimizer, state=LoopState())
    arrays = dict(np.load(d / checkpoint.MODEL_VARS, allow_pickle=False))
    arrays.pop(sorted(arrays)[-1])
    np.savez(d / checkpoint.MODEL_VARS, **arrays)
    with pytest.raises(ValueError, match="arrays for"):
        checkpoint.load_checkpoint(d, model=model, optimizer=step.optimizer)


def test_saving_over_an_existing_checkpoint_is_atomic_and_leaves_no_debris(setup, tmp_path) -> None:
    from nerservice.training import checkpoint
    from nerservice.training.loop import LoopState

    config, vocabs, _ = setup
    model, step = _model_and_step(config, vocabs, seed=2)
    for epoch in (1, 2):
        checkpoint.save_checkpoint(tmp_path / "c", model=model, optimizer=step.optimizer,
                                   state=LoopState(epoch=epoch))
    assert [p.name for p in tmp_path.iterdir()] == ["c"]
    assert json.loads((tmp_path / "c" / checkpoint.STATE).read_text())["epoch"] == 2
