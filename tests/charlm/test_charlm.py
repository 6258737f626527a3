"""Pretraining a character LM, its folder, and the tagger that uses it (``model.char_lm``)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from nerservice.errors import ConfigError, IntegrityError, ModelError, ModelLoadError

TINY_LM = ["units=8", "embedding_dim=4", "window=24", "batch_size=16", "epochs=2", "learning_rate=0.01",
           "min_count=1"]


@pytest.fixture(scope="module")
def demo_text(demo_corpus: dict[str, Path]) -> list[tuple[str, ...]]:
    from nerservice.data import read_corpus

    return [s.tokens for s in read_corpus(demo_corpus["train"]).sentences]


@pytest.fixture(scope="module")
def tiny_lm(demo_text: list[tuple[str, ...]]):  # type: ignore[no-untyped-def]
    from nerservice.charlm.config import CharLMConfig
    from nerservice.charlm.pretrain import pretrain

    return pretrain(demo_text[:200], CharLMConfig().with_overrides(TINY_LM), dev=demo_text[300:], log=lambda _: None)


@pytest.fixture(scope="module")
def lm_dir(tiny_lm, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    from nerservice.charlm.folder import save_char_lm

    return save_char_lm(tmp_path_factory.mktemp("charlm") / "lm", tiny_lm)


def test_pretraining_lowers_held_out_bits_per_character(tiny_lm) -> None:  # type: ignore[no-untyped-def]
    history = tiny_lm.record["history"]
    assert len(history) == 2
    for d in ("forward", "backward"):
        # Uniform guessing over the characters costs log2(V) bits; the LM must do better and keep improving.
        assert history[-1][f"{d}_dev_bpc"] < history[0][f"{d}_dev_bpc"] < np.log2(len(tiny_lm.vocab))
        assert history[-1][f"{d}_train_bpc"] < history[0][f"{d}_train_bpc"]


def test_folder_round_trips_and_refuses_tampering(lm_dir: Path, tiny_lm) -> None:  # type: ignore[no-untyped-def]
    from nerservice.charlm.folder import load_char_lm

    back = load_char_lm(lm_dir)
    assert back.vocab == tiny_lm.vocab and back.config == tiny_lm.config
    for d in ("forward", "backward"):
        for a, b in zip(back.weights[d], tiny_lm.weights[d]):
            np.testing.assert_array_equal(a, b)
    assert len(back.fingerprint) == 64
    bad = lm_dir.parent / "tampered"
    bad.mkdir()
    for p in lm_dir.iterdir():
        (bad / p.name).write_bytes(p.read_bytes())
    meta = json.loads((bad / "charlm.json").read_text())
    meta["config"]["units"] = 9
    (bad / "charlm.json").write_text(json.dumps(meta))
    with pytest.raises(IntegrityError):
        load_char_lm(bad)
    with pytest.raises(ModelLoadError, match="no character LM folder"):
        load_char_lm(lm_dir.parent / "missing")


def test_bad_settings_and_too_little_text_are_coded_errors(demo_text: list[tuple[str, ...]]) -> None:
    from nerservice.charlm.config import CharLMConfig
    from nerservice.charlm.pretrain import pretrain

    with pytest.raises(ConfigError, match="unknown character LM setting"):
        CharLMConfig().with_overrides(["unitz=3"])
    with pytest.raises(ConfigError, match="units"):
        CharLMConfig().with_overrides(["units=0"])
    with pytest.raises(ConfigError, match="too little"):
        pretrain(demo_text[:2], CharLMConfig().with_overrides(["window=500"]))


def test_layer_features_do_not_depend_on_padding_or_the_other_sentences(tiny_lm) -> None:  # type: ignore[no-untyped-def]
    """A sentence's LM features are the same alone and batched beside a longer one (right padding never
    reaches a real position, the backward LM reads within each sentence's length), and they are the
    pretrained LSTMs' states at the positions of ``sentence_positions``."""
    import keras
    from keras import ops

    from nerservice.model.char_lm_layer import ContextualCharEmbedding
    from nerservice.text.char_stream import sentence_positions

    layer = ContextualCharEmbedding(len(tiny_lm.vocab), embedding_dim=4, units=8)
    layer.build()
    layer.set_direction_weights(tiny_lm.encoder_weights())
    short, long_ = ["Acute", "renal", "failure"], ["The", "cyclophosphamide", "dose", "was", "high", "."]

    def arrays(sents: list[list[str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pos = [sentence_positions(s) for s in sents]
        s_max, t_max = max(len(p[0]) for p in pos) + 5, max(len(s) for s in sents) + 2
        chars = np.zeros((len(sents), s_max), np.int32)
        fwd = np.zeros((len(sents), t_max), np.int32)
        bwd = np.zeros((len(sents), t_max), np.int32)
        for r, (text, f, b) in enumerate(pos):
            chars[r, : len(text)] = tiny_lm.vocab.ids(text)
            fwd[r, : f.size], bwd[r, : b.size] = f, b
        return chars, fwd, bwd

    alone = ops.convert_to_numpy(layer(*arrays([short])))[0, :3]
    batched = ops.convert_to_numpy(layer(*arrays([long_, short])))[1, :3]
    np.testing.assert_allclose(alone, batched, atol=1e-5)
    # The forward half is the pretrained forward LM's state after reading up to each token's end.
    text, f, _ = sentence_positions(short)
    lm = keras.Sequential([keras.Input((None,), dtype="int32"), keras.layers.Embedding(len(tiny_lm.vocab), 4),
                           keras.layers.LSTM(8, return_sequences=True)])
    lm.set_weights(tiny_lm.encoder_weights()["forward"])
    states = ops.convert_to_numpy(lm(np.asarray([tiny_lm.vocab.ids(text)], np.int32)))[0]
    np.testing.assert_allclose(alone[:, :8], states[f], atol=1e-5)


@pytest.mark.slow
def test_a_tagger_trained_with_the_lm_keeps_it_frozen_saves_serves_and_records_it(
        lm_dir: Path, tiny_lm, demo_corpus: dict[str, Path], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from helpers import tiny_config
    from nerservice.artifacts.formats import load_model
    from nerservice.charlm.folder import load_char_lm
    from nerservice.data import read_corpus
    from nerservice.inference import Extractor
    from nerservice.runtime.export import build_graphs
    from nerservice.training.trainer import train

    config = tiny_config().with_overrides({"model.char_lm": str(lm_dir), "training.epochs": 1})
    out = train(config, train_data=read_corpus(demo_corpus["train"]).sentences[:150],
                dev_data=read_corpus(demo_corpus["dev"]).sentences,
                test_data=read_corpus(demo_corpus["test"]).sentences, out_dir=tmp_path / "run", progress=False)
    saved = json.loads((out.best_dir / "config.json").read_text())["model"]
    assert saved["char_lm_units"] == 8 and saved["char_lm_embedding_dim"] == 4
    lineage = json.loads((out.best_dir / "lineage.json").read_text())
    assert lineage["char_lm"]["weights_sha256"] == load_char_lm(lm_dir).fingerprint
    assert out.test is not None and out.test["sentences"] == len(read_corpus(demo_corpus["test"]).sentences)
    loaded = load_model(out.best_dir)
    assert loaded.vocabs.lm_chars == tiny_lm.vocab
    # Frozen: after training, the tagger still holds exactly the pretrained encoder weights.
    held = loaded.model.char_lm.direction_weights()
    for d, arrays in tiny_lm.encoder_weights().items():
        for a, b in zip(held[d], arrays):
            np.testing.assert_array_equal(a, b)
    # The saved folder predicts what the trained model predicted (no LM folder needed any more).
    lm_dir_moved = lm_dir.parent / "moved-away"
    lm_dir.rename(lm_dir_moved)
    try:
        extractor = Extractor.load(out.best_dir)
        assert extractor.runtime == "keras"  # 'auto' keeps an LM model on Keras: ONNX does not cover it
        text = "Cisplatin caused acute renal failure in two patients."
        assert extractor.extract([text]) == Extractor(load_model(out.best_dir)).extract([text])
        with pytest.raises(ModelError, match="character LM"):
            build_graphs(loaded.model)
    finally:
        lm_dir_moved.rename(lm_dir)


def test_the_folder_keeps_the_epoch_of_lowest_held_out_bpc_and_patience_stops(
        demo_text: list[tuple[str, ...]]) -> None:
    import math

    from nerservice.charlm.config import CharLMConfig
    from nerservice.charlm.folder import DIRECTIONS
    from nerservice.charlm.pretrain import build_direction, pretrain, windows
    from nerservice.text.char_stream import encode_stream

    # A learning rate far too high makes held-out bpc turn up after a few epochs (seeded: epoch 6 is the low).
    cfg = CharLMConfig().with_overrides(["units=32", "embedding_dim=4", "window=24", "batch_size=8", "epochs=12",
                                         "learning_rate=1.0", "min_count=1", "patience=2"])
    dev = demo_text[300:]
    lm = pretrain(demo_text[:60], cfg, dev=dev, log=lambda _: None)
    rec = lm.record
    scores = [sum(h[f"{d}_dev_bpc"] for d in DIRECTIONS) / 2 for h in rec["history"]]
    kept = rec["kept_epoch"]
    assert kept == 1 + int(np.argmin(scores)) and rec["kept_dev_bpc"] == pytest.approx(min(scores))
    assert kept < len(scores), "the run must have gone past its best epoch for this test to mean anything"
    assert rec["stopped"] == "patience" and len(scores) == kept + cfg.patience
    # The weights in the result are the kept epoch's: they score the held-out text as that epoch did.
    stream = encode_stream(dev, lm.vocab)
    for d, s in (("forward", stream), ("backward", stream[::-1].copy())):
        model = build_direction(len(lm.vocab), cfg, d)
        model.set_weights(lm.weights[d])
        dx, dy = windows(s, cfg.window, 0)
        bpc = float(model.evaluate(dx, dy, batch_size=cfg.batch_size, verbose=0)) / math.log(2)
        assert bpc == pytest.approx(rec["history"][kept - 1][f"{d}_dev_bpc"], rel=1e-4)
