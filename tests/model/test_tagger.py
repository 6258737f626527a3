"""The whole NerTagger: padding independence, batch-composition independence, config round-trip, NLL."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import assert_config_roundtrip, tiny_model_config

SENTENCES = [
    ["Patients", "with", "breast", "cancer", "were", "treated", "with", "cisplatin", "."],
    ["Cisplatin", "-", "induced", "nephrotoxicity"],
    ["Aspirin"],
    ["Patients", "with", "asthma"],  # alone, "Patients" fills the whole char axis (8): no padding after it
    ["A", "supercalifragilisticexpialidocious", "word", "and", "an", "unknownword", "here", "."],
]
TAGS = [
    ["O", "O", "B-Disease", "I-Disease", "O", "O", "O", "B-Chemical", "O"],
    ["B-Chemical", "O", "O", "B-Disease"],
    ["B-Chemical"],
    ["O", "O", "B-Disease"],
    ["O"] * 8,
]


@pytest.fixture(scope="module")
def setup():
    from nerservice.data import Sentence
    from nerservice.model.tagger import build_tagger
    from nerservice.training.trainer import build_vocabularies

    train = [Sentence(tuple(s), tuple(t)) for s, t in zip(SENTENCES[:3], TAGS[:3])]
    vocabs = build_vocabularies(train)
    # dropout > 0 so a test would notice dropout leaking into inference.
    config = tiny_model_config(dropout=0.3, max_word_length=12)
    model = build_tagger(config, n_words=len(vocabs.words), n_chars=len(vocabs.chars), n_tags=len(vocabs.tags),
                         seed=0)
    return model, vocabs, config


def _encode(sentences, vocabs, config, tags=None):
    from helpers import encode_batch

    return encode_batch(sentences, vocabs, max_word_length=config.max_word_length, tags=tags)


def _pad(batch: dict[str, np.ndarray], extra_t: int, extra_c: int) -> dict[str, np.ndarray]:
    out = dict(batch)
    for k in ("token_ids", "word_index", "tag_ids"):
        if k in batch:
            out[k] = np.pad(batch[k], ((0, 0), (0, extra_t)))
    out["word_chars"] = np.pad(batch["word_chars"], ((0, 0), (0, extra_c)))
    return out


def _emissions(model, batch) -> np.ndarray:
    from keras import ops

    return np.asarray(ops.convert_to_numpy(model(batch, training=False)))


def test_emissions_on_real_tokens_do_not_depend_on_padding(setup) -> None:
    model, vocabs, config = setup
    batch = _encode(SENTENCES, vocabs, config)
    base = _emissions(model, batch)
    assert base.shape == (5, batch["token_ids"].shape[1], len(vocabs.tags))
    padded = _emissions(model, _pad(batch, 7, 5))
    for b, n in enumerate(batch["lengths"]):
        np.testing.assert_allclose(padded[b, :n], base[b, :n], atol=1e-5)


def test_emissions_do_not_depend_on_the_other_sentences_of_the_batch(setup) -> None:
    """Alone, a sentence gets different T, char width and word rows; its emissions must not change."""
    model, vocabs, config = setup
    batch = _encode(SENTENCES, vocabs, config)
    together = _emissions(model, batch)
    for b, sent in enumerate(SENTENCES):
        alone = _emissions(model, _encode([sent], vocabs, config))
        np.testing.assert_allclose(alone[0, :len(sent)], together[b, :len(sent)], atol=1e-5)


def test_inference_is_deterministic_and_dropout_free(setup) -> None:
    model, vocabs, config = setup
    batch = _encode(SENTENCES, vocabs, config)
    np.testing.assert_array_equal(_emissions(model, batch), _emissions(model, batch))
    from keras import ops

    train_a = ops.convert_to_numpy(model(batch, training=True))
    assert not np.allclose(train_a, _emissions(model, batch))  # dropout is live in training only


def test_negative_log_likelihood_is_positive_and_finite(setup) -> None:
    from keras import ops

    model, vocabs, config = setup
    batch = _encode(SENTENCES, vocabs, config, tags=TAGS)
    nll = np.asarray(ops.convert_to_numpy(model.negative_log_likelihood(batch, training=False)))
    assert nll.shape == (5,)
    assert np.all(np.isfinite(nll)) and np.all(nll > 0)


def test_tagger_config_roundtrip(setup) -> None:
    from nerservice.model.tagger import NerTagger

    model, vocabs, config = setup
    batch = _encode(SENTENCES, vocabs, config)
    fresh = NerTagger(**{k: v for k, v in model.get_config().items()})
    clone = assert_config_roundtrip(fresh, lambda m: m(batch, training=False), atol=1e-6)
    assert clone.get_config()["model_config"] == config.model_dump(mode="json")


def test_tagger_sizes_follow_data_and_config(setup) -> None:
    model, vocabs, config = setup
    assert model.word_embedding.embeddings.shape == (len(vocabs.words), config.word_embedding_dim)
    assert model.crf.transitions.shape == (len(vocabs.tags), len(vocabs.tags))
    assert model.emission.units == len(vocabs.tags)
    assert len(model.stack.layers_) == config.lstm_layers
    assert model.char_encoder.output_dim == config.char_cnn_filters + 2 * config.char_lstm_units


def test_pretrained_vectors_are_used_and_frozen_by_default() -> None:
    from nerservice.model.tagger import build_tagger

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(20, 7)).astype("float32")
    frozen = build_tagger(tiny_model_config(), n_words=20, n_chars=10, n_tags=3, word_vectors=vectors)
    np.testing.assert_array_equal(np.asarray(frozen.word_embedding.embeddings), vectors)
    assert frozen.word_embedding.embeddings.shape == (20, 7)
    assert not any(v is frozen.word_embedding.embeddings for v in frozen.trainable_variables)
    trainable = build_tagger(tiny_model_config(embeddings_trainable=True), n_words=20, n_chars=10, n_tags=3,
                             word_vectors=vectors)
    assert any(v is trainable.word_embedding.embeddings for v in trainable.trainable_variables)


def test_same_seed_builds_identical_weights() -> None:
    from nerservice.model.tagger import build_tagger

    a = build_tagger(tiny_model_config(), n_words=15, n_chars=9, n_tags=5, seed=4)
    b = build_tagger(tiny_model_config(), n_words=15, n_chars=9, n_tags=5, seed=4)
    c = build_tagger(tiny_model_config(), n_words=15, n_chars=9, n_tags=5, seed=5)
    for x, y in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(x, y)
    assert any(not np.array_equal(x, y) for x, y in zip(a.get_weights(), c.get_weights()))


def test_word_dropout_replaces_words_with_unk_only_in_training(setup) -> None:
    """model.word_dropout: in training a token's word vector is sometimes <unk>'s; inference never is."""
    from keras import ops

    from nerservice.model.tagger import build_tagger

    _, vocabs, config = setup
    n = dict(n_words=len(vocabs.words), n_chars=len(vocabs.chars), n_tags=len(vocabs.tags), seed=0)
    # dropout 0 isolates word dropout; rate 0.999 makes (almost) every word <unk>.
    plain = build_tagger(tiny_model_config(dropout=0.0, max_word_length=12), **n)
    wd = build_tagger(tiny_model_config(dropout=0.0, word_dropout=0.999, max_word_length=12), **n)
    wd.set_weights(plain.get_weights() + [w for w in wd.get_weights()[len(plain.get_weights()):]])
    batch = _encode(SENTENCES[:3], vocabs, config)
    unk = dict(batch, token_ids=np.where(batch["token_ids"] > 0, 1, 0).astype(batch["token_ids"].dtype))
    np.testing.assert_allclose(_emissions(wd, batch), _emissions(plain, batch), atol=1e-6)  # inference: off
    trained = np.asarray(ops.convert_to_numpy(wd(batch, training=True)))
    lens = batch["lengths"]
    real = [trained[b, :n] for b, n in enumerate(lens)]
    want = [_emissions(plain, unk)[b, :n] for b, n in enumerate(lens)]
    for a, b in zip(real, want):
        np.testing.assert_allclose(a, b, atol=1e-5)
    assert not np.allclose(_emissions(plain, unk), _emissions(plain, batch))  # the test can tell
