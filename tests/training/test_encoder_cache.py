"""The frozen encoder's states, computed once per training sentence (``training/encoder_cache.py``): the same
states the tagger's own encoder gives, kept within the bound, and the same training loss either way."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from encoder.encoder_fixture import HIDDEN, LAYERS, write_encoder


def _setup(demo_corpus: dict[str, Path], tmp_path: Path, n: int = 40) -> tuple[Any, Any, Any, Any, Any]:
    from helpers import tiny_config
    from nerservice.data import read_corpus
    from nerservice.encoder.attach import with_word_pieces
    from nerservice.encoder.folder import load_text_encoder
    from nerservice.model.tagger import build_tagger
    from nerservice.text.features import EncodedCorpus
    from nerservice.training.trainer import build_vocabularies

    write_encoder(tmp_path / "bert")
    enc = load_text_encoder(str(tmp_path / "bert"))
    sents = read_corpus(demo_corpus["train"]).sentences[:n]
    vocabs = with_word_pieces(build_vocabularies(sents), enc)
    cfg = tiny_config().with_overrides({"model.encoder_shape": enc.shape.model_dump(mode="json"),
                                        "model.dropout": 0.0, "model.word_dropout": 0.0,
                                        "model.encoder_dropout": 0.0})
    model = build_tagger(cfg.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars), n_tags=len(vocabs.tags),
                         encoder_arrays=enc.layer_arrays())
    corpus = EncodedCorpus([s.tokens for s in sents], vocabs, max_word_length=24, tags=[s.tags for s in sents])
    return cfg, model, corpus, sents, vocabs


def test_the_states_are_the_encoders_own_kept_once_and_zero_at_padding(
        demo_corpus: dict[str, Path], tmp_path: Path) -> None:
    from keras import ops

    from nerservice.text.features import ShapePolicy
    from nerservice.text.inputs import ENCODER_STATES
    from nerservice.training.encoder_cache import EncoderStates

    _, model, corpus, sents, _ = _setup(demo_corpus, tmp_path)
    cache = EncoderStates(model.text_encoder, len(sents), budget_mb=64)
    rows = np.array([3, 0, 7, 12, 5])
    batch = corpus.batch(rows, ShapePolicy(fixed_batch=8))
    got = cache(rows, batch)[ENCODER_STATES]
    want = np.asarray(ops.convert_to_numpy(model.text_encoder(batch["wp_ids"], batch["wp_index"])))
    assert got.shape == (8, batch["token_ids"].shape[1], LAYERS + 1, HIDDEN) and got.dtype == np.float32
    mask = (np.arange(got.shape[1])[None, :] < batch["lengths"][:, None])[:, :, None, None]
    np.testing.assert_allclose(got, np.where(mask, want, 0.0), rtol=2e-3, atol=2e-3)  # float16 kept
    assert not got[5:].any()  # padding rows
    assert cache.stats()["kept_sentences"] == 5 and cache.stats()["encoded_sentences"] == 5
    # Another batch shape with the same sentences: nothing is encoded again and the states are identical.
    again = corpus.batch(rows[::-1], ShapePolicy(fixed_batch=5))
    np.testing.assert_array_equal(cache(rows[::-1], again)[ENCODER_STATES][::-1][:, : got.shape[1]], got[:5])
    assert cache.stats()["encoded_sentences"] == 5


def test_past_the_bound_sentences_are_encoded_again_with_the_same_states(
        demo_corpus: dict[str, Path], tmp_path: Path) -> None:
    from nerservice.text.inputs import ENCODER_STATES
    from nerservice.training.encoder_cache import EncoderStates

    _, model, corpus, sents, _ = _setup(demo_corpus, tmp_path)
    rows = np.arange(len(sents))
    batch = corpus.batch(rows)
    roomy = EncoderStates(model.text_encoder, len(sents), budget_mb=64)
    none_kept = EncoderStates(model.text_encoder, len(sents), budget_mb=0)
    first = roomy(rows, batch)[ENCODER_STATES]
    for _ in range(2):
        np.testing.assert_array_equal(none_kept(rows, batch)[ENCODER_STATES], first)
    assert none_kept.stats()["kept_sentences"] == 0 and none_kept.stats()["encoded_sentences"] == 2 * len(sents)
    assert roomy.stats()["kept_sentences"] == len(sents) and roomy.stats()["kept_bytes"] > 0


def test_the_tagger_trains_on_the_kept_states_as_on_its_own_encoder(
        demo_corpus: dict[str, Path], tmp_path: Path) -> None:
    from keras import ops

    from nerservice.training.encoder_cache import EncoderStates
    from nerservice.training.steps import loss_inputs

    _, model, corpus, sents, _ = _setup(demo_corpus, tmp_path)
    assert "encoder_states" in loss_inputs(model)
    rows = np.arange(16)
    batch = corpus.batch(rows)
    nll_own = np.asarray(ops.convert_to_numpy(model.negative_log_likelihood(batch, training=False)))
    with_states = {**batch, **EncoderStates(model.text_encoder, len(sents), budget_mb=64)(rows, batch)}
    nll_kept = np.asarray(ops.convert_to_numpy(model.negative_log_likelihood(with_states, training=False)))
    np.testing.assert_allclose(nll_kept, nll_own, rtol=2e-3, atol=2e-3)
    # The tagger really reads them: other states give another loss.
    scrambled = {**with_states, "encoder_states": with_states["encoder_states"][::-1].copy()}
    nll_other = np.asarray(ops.convert_to_numpy(model.negative_log_likelihood(scrambled, training=False)))
    assert not np.allclose(nll_other, nll_own, atol=1e-2)


def test_a_changed_bound_without_an_encoder_is_a_config_error() -> None:
    from nerservice.config import NerConfig
    from nerservice.errors import ConfigError

    with pytest.raises(ConfigError, match="encoder_cache_mb"):
        NerConfig().with_overrides({"training.encoder_cache_mb": 10})
    assert NerConfig().training.encoder_cache_mb == 4096


JAX_SCRIPT = r"""
import json, sys
sys.path.insert(0, {tests!r})
import keras
assert keras.backend.backend() == "jax", keras.backend.backend()
from encoder.encoder_fixture import write_encoder
from helpers import tiny_config
from nerservice.data import read_corpus
from nerservice.inference import Extractor
from nerservice.training.trainer import train
from pathlib import Path

work = Path({work!r})
write_encoder(work / "bert")
config = tiny_config().with_overrides({{"model.encoder": str(work / "bert"), "training.epochs": 2}})
out = train(config, train_data=read_corpus({train!r}).sentences[:60], dev_data=read_corpus({dev!r}).sentences,
            out_dir=work / "run", progress=False)
ents = Extractor.load(out.best_dir).extract(["Cisplatin caused acute renal failure ."])
print(json.dumps({{"cache": [r["encoder_cache"] for r in out.history], "texts": len(ents)}}))
"""


@pytest.mark.jax
@pytest.mark.slow
def test_under_jax_the_states_are_computed_once_and_the_model_trains(
        demo_corpus: dict[str, Path], tmp_path: Path) -> None:
    from helpers import REPO, jax_env, last_json_line, run_python

    code = JAX_SCRIPT.format(tests=str(REPO / "tests"), work=str(tmp_path), train=str(demo_corpus["train"]),
                             dev=str(demo_corpus["dev"]))
    result = last_json_line(run_python(code, env=jax_env(), timeout=600).stdout)
    assert [c["encoded_sentences"] for c in result["cache"]] == [60, 60]
    assert result["cache"][-1]["kept_sentences"] == 60 and result["texts"] == 1


def test_the_dev_forward_keeps_its_states_and_scores_as_the_plain_one(
        demo_corpus: dict[str, Path], tmp_path: Path) -> None:
    from nerservice.model.forward import KeptStatesForward
    from nerservice.model.predictor import Predictor

    _, model, _, sents, vocabs = _setup(demo_corpus, tmp_path, n=60)
    texts = [s.tokens for s in sents]
    plain = Predictor(model, vocabs, max_word_length=24, batch_size=16)
    kept = Predictor(model, vocabs, max_word_length=24, batch_size=16, keep_encoder_states_mb=64)
    forward = kept._forward
    assert isinstance(forward, KeptStatesForward) and not isinstance(plain._forward, KeptStatesForward)
    want = plain.emissions(texts)
    first = kept.emissions(texts)
    held = forward.kept_bytes
    assert held > 0 and len(forward._kept) == len(plain.forward_batches([len(t) for t in texts]))
    again = kept.emissions(texts)  # the same batches: every one found, nothing added
    assert forward.kept_bytes == held
    for a, b, c in zip(want, first, again):
        np.testing.assert_allclose(b, a, rtol=2e-3, atol=2e-3)
        np.testing.assert_array_equal(c, b)
    # Without room it still scores the same, keeping nothing.
    none = Predictor(model, vocabs, max_word_length=24, batch_size=16, keep_encoder_states_mb=0)
    assert not isinstance(none._forward, KeptStatesForward)
