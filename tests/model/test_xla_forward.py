"""Background XLA inference (``jit_compile="background"``): the graph function answers while a shape
compiles, later batches of that shape run XLA, and both give the same tags and (to float rounding) scores."""
from __future__ import annotations

import pytest


def test_background_xla_agrees_with_the_graph_and_takes_over(tiny_model_dir, demo_corpus) -> None:
    from nerservice.artifacts.formats import load_model
    from nerservice.data import read_corpus

    loaded = load_model(tiny_model_dir)
    sents = [s.tokens for s in read_corpus(demo_corpus["test"]).sentences][:60]
    graph = loaded.predictor(batch_size=16)
    xla = loaded.predictor(batch_size=16, jit_compile="background")
    assert graph.background_xla is None and xla.background_xla is not None
    want = graph.tag(sents)

    first = xla.tag(sents)  # every shape is new: all answered by the graph function, compiles queued
    fwd = xla.background_xla
    assert fwd.graph_calls > 0 and fwd.xla_calls == 0
    n_shapes = fwd.wait()
    assert 1 <= n_shapes <= fwd.graph_calls
    second = xla.tag(sents)  # the same shapes again: all compiled now
    assert fwd.xla_calls == fwd.graph_calls

    for got in (first, second):
        assert [t.tags for t in got] == [t.tags for t in want]
        for g, w in zip(got, want):
            assert g.scores == pytest.approx(w.scores, abs=1e-4)


def test_bounded_shapes_pad_rows_and_keep_results(tiny_model_dir) -> None:
    """The bounded policy pads the batch axis (1, 2, 4, ... 32, then multiples of 32) with empty sentences."""
    from nerservice.artifacts.formats import load_model
    from nerservice.text.features import EncodedCorpus, ShapePolicy

    loaded = load_model(tiny_model_dir)
    sents = [["Cisplatin", "-", "induced", "nephrotoxicity"]] * 5 + [["Asthma"]] * 30
    enc = EncodedCorpus(sents, loaded.vocabs, max_word_length=loaded.config.model.max_word_length)
    policy = ShapePolicy.bounded()
    sizes = {n: enc.batch(list(range(n)), policy, with_tags=False)["token_ids"].shape[0] for n in (1, 3, 5, 17, 33, 35)}
    assert sizes == {1: 1, 3: 4, 5: 8, 17: 32, 33: 64, 35: 64}
    b = enc.batch(list(range(5)), policy, with_tags=False)
    assert b["lengths"][5:].tolist() == [0, 0, 0] and b["word_chars"].shape[0] == 64
    assert b["word_chars"].shape[1] == enc.batch([0], policy, with_tags=False)["word_chars"].shape[1]
