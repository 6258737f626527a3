"""Multi-corpus decoding: each head on its own CRF block, the overlap rule, and the training loss of a head
equal to that head's own CRF."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import brute_force_crf, tiny_model_config
from nerservice.model.decode import CrfParams, Tagged
from nerservice.model.heads import decode_head, decode_merged, merge_heads
from nerservice.text.vocab import MultiTagVocabulary, Vocabularies

TAGS = MultiTagVocabulary([("a", ["O", "B-Disease", "I-Disease"]), ("b", ["O", "B-Chemical", "I-Chemical",
                                                                        "B-Disease", "I-Disease"])])


def test_columns_run_head_by_head() -> None:
    assert TAGS.tags[:3] == ["a|O", "a|B-Disease", "a|I-Disease"]
    assert TAGS.id("b|B-Chemical") == 4 and len(TAGS) == 8
    assert TAGS.column_heads().tolist() == [0, 0, 0, 1, 1, 1, 1, 1]
    assert TAGS.labels == ["Chemical", "Disease"]  # Disease of both heads is one type
    assert MultiTagVocabulary.from_dict(TAGS.to_dict()) == TAGS


def test_overlap_rule_prefers_score_then_length_then_head_order() -> None:
    a = Tagged(["B-Disease", "I-Disease", "O", "O"], [0.9, 0.9, 0.99, 0.8])
    b = Tagged(["O", "B-Chemical", "O", "B-Chemical"], [0.7, 0.95, 0.97, 0.6])
    merged = merge_heads([a, b])
    # a's span (score 0.9) overlaps b's first (0.95): b wins it; b's second is alone and kept.
    assert merged.tags == ["O", "B-Chemical", "O", "B-Chemical"]
    assert merged.scores[1] == 0.95 and merged.scores[0] == 0.7  # O scored by the least confident head's O
    # Same score: the longer span wins; same span and label from two heads: one entity.
    c = Tagged(["B-Disease", "I-Disease", "O", "O"], [0.8, 0.8, 1.0, 1.0])
    d = Tagged(["O", "B-Chemical", "O", "O"], [1.0, 0.8, 1.0, 1.0])
    assert merge_heads([c, d]).tags[:2] == ["B-Disease", "I-Disease"]
    assert merge_heads([c, c]).tags == c.tags
    # Same score and length: the head listed first wins, whatever the order of evaluation.
    e = Tagged(["B-Chemical", "O"], [0.5, 1.0])
    f = Tagged(["B-Disease", "O"], [0.5, 1.0])
    assert merge_heads([e, f]).tags[0] == "B-Chemical" and merge_heads([f, e]).tags[0] == "B-Disease"


def test_each_head_decodes_with_its_own_crf_block() -> None:
    rng = np.random.default_rng(0)
    k = len(TAGS)
    crf = CrfParams(transitions=rng.normal(0, 1, (k, k)), start=rng.normal(0, 1, k), end=rng.normal(0, 1, k))
    em = [rng.normal(0, 2, (4, k)), rng.normal(0, 2, (2, k))]
    for name in TAGS.names:
        cols, vocab = TAGS.head(name)
        got = decode_head(em, crf, TAGS, name, with_scores=True, batch_size=8, bucket_size=8)
        for e, t in zip(em, got):
            ref = brute_force_crf(e[:, cols], crf.transitions[cols, cols], crf.start[cols], crf.end[cols])
            assert t.tags == [vocab.tag(int(i)) for i in ref["best"]]
            np.testing.assert_allclose(t.scores, ref["marginals"][np.arange(len(e)), ref["best"]], atol=1e-9)
    merged = decode_merged(em, crf, TAGS, with_scores=False, batch_size=8, bucket_size=8)
    assert all(len(m.tags) == len(e) for m, e in zip(merged, em))


@pytest.mark.parametrize("head", [0, 1])
def test_training_loss_of_a_sentence_is_its_heads_crf(head: int) -> None:
    from keras import ops

    from helpers import encode_batch
    from nerservice.multi.tagger import build_multi_tagger
    from nerservice.text.vocab import Vocabulary

    vocabs = Vocabularies(words=Vocabulary(["aspirin", "causes", "asthma"]), chars=Vocabulary(list("aspirncuthm")),
                          tags=TAGS)
    model = build_multi_tagger(tiny_model_config(), tags=TAGS, n_words=len(vocabs.words), n_chars=len(vocabs.chars))
    tokens = ["aspirin", "causes", "asthma"]
    tags = [["a|O", "a|O", "a|B-Disease"], ["b|B-Chemical", "b|O", "b|B-Disease"]][head]
    batch = encode_batch([tokens], vocabs, max_word_length=10, tags=[tags])
    nll = float(ops.convert_to_numpy(model.negative_log_likelihood(batch, training=False))[0])
    em = ops.convert_to_numpy(model(batch, training=False))[0].astype(np.float64)
    cols = TAGS.slices[head]
    p = model.crf_params()
    ref = brute_force_crf(em[:, cols], p.transitions[cols, cols], p.start[cols], p.end[cols])
    local = [TAGS.id(t) - cols.start for t in tags]
    assert nll == pytest.approx(ref["log_z"] - ref["score"](local), abs=1e-4)
