"""The accelerator shape policy (fixed batch, power-of-two word rows, fixed char axis) must not change
results on real tokens: padding sentences contribute zero loss and emissions on real tokens are equal."""
from __future__ import annotations

import numpy as np
import pytest

from nerservice.text.features import EncodedCorpus, ShapePolicy


@pytest.fixture(scope="module")
def setup(tiny_model_dir):
    from nerservice.artifacts.formats import load_model
    from nerservice.data import read_corpus

    loaded = load_model(tiny_model_dir)
    from nerservice.demo_corpus import generate

    sents = generate(23, seed=5)
    enc = EncodedCorpus([s.tokens for s in sents], loaded.vocabs, max_word_length=loaded.config.model.max_word_length,
                        tags=[s.tags for s in sents])
    del read_corpus
    return loaded, enc


def test_fixed_shapes_give_the_same_emissions_and_loss(setup) -> None:
    from keras import ops

    loaded, enc = setup
    idx = np.arange(len(enc))
    dynamic = enc.batch(idx, ShapePolicy(time_multiple=1))
    fixed = enc.batch(idx, ShapePolicy(time_multiple=16, fixed_batch=40, fixed_chars=True, rows_pow2=True))
    rows = fixed["word_chars"].shape[0]
    assert fixed["token_ids"].shape[0] == 40
    assert rows >= dynamic["word_chars"].shape[0] and rows & (rows - 1) == 0  # a power of two
    assert fixed["word_chars"].shape[1] >= loaded.config.model.max_word_length
    em_d = ops.convert_to_numpy(loaded.model(dynamic, training=False))
    em_f = ops.convert_to_numpy(loaded.model(fixed, training=False))
    for i, n in enumerate(dynamic["lengths"]):
        np.testing.assert_allclose(em_f[i, :n], em_d[i, :n], atol=2e-5)
    nll_d = ops.convert_to_numpy(loaded.model.negative_log_likelihood(dynamic, training=False))
    nll_f = ops.convert_to_numpy(loaded.model.negative_log_likelihood(fixed, training=False))
    np.testing.assert_allclose(nll_f[: len(idx)], nll_d, rtol=1e-5, atol=1e-4)
    assert np.all(nll_f[len(idx):] == 0.0), "padding sentences must add nothing to the loss"


def test_batch_assembly_matches_the_sentences(setup) -> None:
    loaded, enc = setup
    batch = enc.batch([3, 0], ShapePolicy(time_multiple=8))
    vocabs = loaded.vocabs
    from nerservice.demo_corpus import generate
    from nerservice.text.vocab import normalize_word

    sents = generate(23, seed=5)
    for row, i in enumerate([3, 0]):
        toks = sents[i].tokens
        assert batch["lengths"][row] == len(toks)
        assert list(batch["token_ids"][row, : len(toks)]) == [vocabs.words.id(normalize_word(t)) for t in toks]
        assert np.all(batch["token_ids"][row, len(toks):] == 0)
        for j, tok in enumerate(toks):  # every token's char row spells the token
            chars = batch["word_chars"][batch["word_index"][row, j]]
            assert [vocabs.chars.item(c) for c in chars if c] == list(tok)
        assert [vocabs.tags.tag(t) for t in batch["tag_ids"][row, : len(toks)]] == list(sents[i].tags)
