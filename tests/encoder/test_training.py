"""A tagger trained with ``model.encoder``: the encoder stays frozen, the mix learns, the saved folder is
self-contained and serves through the Extractor (in-process, tiny models)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from encoder.encoder_fixture import LAYERS, write_encoder
from nerservice.errors import ModelError


def test_a_tagger_trained_with_an_encoder_keeps_it_frozen_saves_and_serves(
        demo_corpus: dict[str, Path], tmp_path: Path) -> None:
    from helpers import tiny_config
    from nerservice.artifacts.formats import load_model
    from nerservice.data import read_corpus
    from nerservice.encoder.folder import load_text_encoder
    from nerservice.inference import Extractor
    from nerservice.runtime.export import build_graphs
    from nerservice.training.trainer import train

    folder = tmp_path / "bert"
    write_encoder(folder)
    enc = load_text_encoder(str(folder))
    config = tiny_config().with_overrides({"model.encoder": str(folder), "training.epochs": 2})
    out = train(config, train_data=read_corpus(demo_corpus["train"]).sentences[:150],
                dev_data=read_corpus(demo_corpus["dev"]).sentences,
                test_data=read_corpus(demo_corpus["test"]).sentences, out_dir=tmp_path / "run", progress=False)
    # The encoder ran once per training sentence: in epoch 1; epoch 2 read what epoch 1 kept.
    cache = [r["encoder_cache"] for r in out.history]
    assert [c["encoded_sentences"] for c in cache] == [150, 150] and cache[-1]["kept_sentences"] == 150
    saved = json.loads((out.best_dir / "config.json").read_text())["model"]
    assert saved["encoder"] == str(folder) and saved["encoder_shape"]["layers"] == LAYERS
    assert saved["encoder_dropout"] == 0.5  # the default with an encoder (session 36)
    lineage = json.loads((out.best_dir / "lineage.json").read_text())
    assert lineage["encoder"]["weights_sha256"] == enc.fingerprint
    loaded = load_model(out.best_dir)
    assert loaded.vocabs.word_pieces is not None and loaded.vocabs.word_pieces.vocab == enc.tokenizer().vocab
    # Frozen: the tagger still holds exactly the pretrained weights; the mix moved away from its start.
    held = [np.asarray(v) for v in loaded.model.text_encoder.weights]
    for a, b in zip(held, enc.layer_arrays()):
        np.testing.assert_array_equal(a, b)
    mix = np.asarray(loaded.model.encoder_mix.w)
    assert mix.shape == (LAYERS + 1,) and np.abs(mix).max() > 0
    # The folder is not needed once the tagger is saved.
    shutil.rmtree(folder)
    extractor = Extractor.load(out.best_dir)
    assert extractor.runtime == "keras"  # 'auto' keeps it on Keras: the ONNX graphs do not cover the encoder
    text = "Cisplatin caused acute renal failure in two patients."
    assert extractor.extract([text]) == Extractor(load_model(out.best_dir)).extract([text])
    with pytest.raises(ModelError, match="encoder"):
        build_graphs(loaded.model)


def test_an_encoder_model_saved_before_encoder_dropout_existed_loads_as_trained(
        demo_corpus: dict[str, Path], tmp_path: Path) -> None:
    """Session 34's models have no ``encoder_dropout`` key: they load without the layer (and its seed variable)
    that today's default would add, so their weights file still matches."""
    from helpers import tiny_config
    from nerservice.artifacts.formats import load_model
    from nerservice.data import read_corpus
    from nerservice.inference import Extractor
    from nerservice.training.trainer import train

    folder = tmp_path / "bert"
    write_encoder(folder)
    config = tiny_config().with_overrides({"model.encoder": str(folder), "model.encoder_dropout": 0.0,
                                           "training.epochs": 1})
    out = train(config, train_data=read_corpus(demo_corpus["train"]).sentences[:60],
                dev_data=read_corpus(demo_corpus["dev"]).sentences, out_dir=tmp_path / "run", progress=False)
    text = "Cisplatin caused acute renal failure in two patients."
    before = Extractor(load_model(out.best_dir)).extract([text])
    path = out.best_dir / "config.json"
    saved = json.loads(path.read_text())
    del saved["model"]["encoder_dropout"]  # as session 34 wrote it
    path.write_text(json.dumps(saved))
    loaded = load_model(out.best_dir, verify=False)
    assert loaded.config.model.encoder_dropout == 0.0 and loaded.model.encoder_dropout is None
    assert Extractor(loaded).extract([text]) == before


def test_no_encoder_means_no_layer_no_pieces_and_placeholder_inputs(demo_corpus: dict[str, Path]) -> None:
    from helpers import tiny_config
    from nerservice.data import read_corpus
    from nerservice.model.tagger import build_tagger
    from nerservice.text.features import EncodedCorpus
    from nerservice.training.trainer import build_vocabularies

    sents = read_corpus(demo_corpus["dev"]).sentences[:4]
    vocabs = build_vocabularies(sents)
    assert vocabs.word_pieces is None and "word_pieces" not in vocabs.to_dict()
    enc = EncodedCorpus([s.tokens for s in sents], vocabs, max_word_length=24)
    batch = enc.batch(range(4))
    assert batch["wp_ids"].shape == (4, 1) and not batch["wp_index"].any()
    model = build_tagger(tiny_config().model, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                         n_tags=len(vocabs.tags))
    assert model.text_encoder is None and not any("text_encoder" in v.path for v in model.weights)


def test_a_multi_corpus_model_takes_the_encoder_through_the_cli(tiny_multi_corpora: Path, tmp_path: Path) -> None:
    from helpers import tiny_sets
    from nerservice.artifacts.formats import load_model
    from nerservice.cli.main import main
    from nerservice.inference import Extractor

    folder = tmp_path / "bert"
    write_encoder(folder, seed=1)
    out = tmp_path / "multi"
    assert main(["train", "--corpora", str(tiny_multi_corpora), "--out", str(out), "--quiet", "--encoder", str(folder),
                 *tiny_sets(**{"training.epochs": 1})]) == 0
    best = out / "model-best"
    assert json.loads((best / "config.json").read_text())["model"]["encoder_shape"]["layers"] == LAYERS
    loaded = load_model(best)
    assert loaded.model.text_encoder is not None and loaded.vocabs.word_pieces is not None
    ents = Extractor(loaded).extract_one("Patients with breast cancer were treated with cisplatin .")
    assert all(e.label in {"Disease", "Drug"} for e in ents)



def test_the_final_distil_recipe_takes_the_encoder_into_every_model_and_encodes_each_student_sentence_once(
        tmp_path: Path) -> None:
    """`train --final --distil --encoder`: phase 1, the final model, the fold teachers and the student all carry
    the encoder (the recipe a user would run for the one-model target with it), and the student, whose training
    text includes the synthetic variants, reads each sentence's kept states after its first epoch."""
    from helpers import tiny_sets
    from nerservice.cli.main import main
    from nerservice.demo_corpus import write_demo_corpus

    corpus = write_demo_corpus(tmp_path / "corpus", sizes=(200, 40, 40), seed=11)
    folder = tmp_path / "bert"
    write_encoder(folder)
    out = tmp_path / "fd"
    assert main(["train", "--train", str(corpus["train"]), "--dev", str(corpus["dev"]), "--test", str(corpus["test"]),
                 "--out", str(out), "--quiet", "--encoder", str(folder), "--final", "--seeds", "1", "--distil",
                 *tiny_sets(**{"training.epochs": 3, "training.patience": 2, "model.lstm_layers": 1})]) == 0
    kept = ["phase1/model-best", "model-last", "fold-1of2/model-last", "fold-2of2/model-last", "student/model-last"]
    for name in kept:
        assert json.loads((out / name / "config.json").read_text())["model"]["encoder"] == str(folder), name
    student = out / "student" / "model-last"
    assert json.loads((student / "lineage.json").read_text())["encoder"]["weights_sha256"]
    cache = [r["encoder_cache"] for r in json.loads((student / "history.json").read_text())]
    n = cache[0]["sentences"]
    assert len(cache) == 3 and n > 240  # the 240 labelled sentences and their synthetic variants
    assert all(c["encoded_sentences"] == n and c["kept_sentences"] == n for c in cache)

    # The same run with --student-set model.encoder=null: the finished teachers are read back from their folders
    # (not rebuilt or rewritten: finished.py, the encoder's weights hashed, not loaded), and the student alone
    # trains again, without the encoder (the fast model to deploy), on the encoder teachers' targets
    teachers = {name: (out / name / "model.weights.h5").stat().st_mtime_ns for name in kept[:-1]}
    shutil.rmtree(out / "student")
    assert main(["train", "--train", str(corpus["train"]), "--dev", str(corpus["dev"]), "--test", str(corpus["test"]),
                 "--out", str(out), "--quiet", "--encoder", str(folder), "--final", "--seeds", "1", "--distil",
                 "--student-set", "model.encoder=null",
                 *tiny_sets(**{"training.epochs": 3, "training.patience": 2, "model.lstm_layers": 1})]) == 0
    assert {name: (out / name / "model.weights.h5").stat().st_mtime_ns for name in kept[:-1]} == teachers
    config = json.loads((student / "config.json").read_text())["model"]
    assert config["encoder"] is None and config["encoder_shape"] is None
    lineage = json.loads((student / "lineage.json").read_text())
    assert "encoder" not in lineage and lineage["recipe"]["student"]["overrides"] == ["model.encoder=null"]
    assert not any("encoder_cache" in r for r in json.loads((student / "history.json").read_text()))
    assert json.loads((out / "fold-1of2" / "model-last" / "config.json").read_text())["model"]["encoder"] == str(folder)

    # ... but not once the encoder's weights have changed (same sizes, other values): that run trains again
    from nerservice.config import NerConfig
    from nerservice.data.readers import read_corpus
    from nerservice.training.finished import finished_run
    from nerservice.training.recipes import RunRequest

    phase1 = RunRequest(NerConfig.load(out / "phase1" / "model-best" / "config.json"), out / "phase1")
    splits = [read_corpus(corpus[s]).sentences for s in ("train", "dev", "test")]
    assert finished_run(phase1, *splits) is not None
    write_encoder(folder, seed=1)
    assert finished_run(phase1, *splits) is None

@pytest.mark.parametrize("rate", [0.0, 0.5])
def test_encoder_dropout_drops_only_the_encoder_features_and_only_in_training(rate: float, tmp_path: Path) -> None:
    from helpers import tiny_config
    from nerservice.encoder.folder import load_text_encoder
    from nerservice.model.tagger import build_tagger, dummy_batch

    write_encoder(tmp_path / "bert")
    enc = load_text_encoder(str(tmp_path / "bert"))
    # Every other dropout off, so any difference between training and inference is the encoder's.
    cfg = tiny_config().with_overrides({"model.encoder_shape": enc.shape.model_dump(mode="json"),
                                        "model.encoder_dropout": rate, "model.dropout": 0.0,
                                        "model.word_dropout": 0.0}).model
    model = build_tagger(cfg, n_words=8, n_chars=8, n_tags=3, encoder_arrays=enc.layer_arrays())
    assert (model.encoder_dropout is not None) == (rate > 0)  # no layer (and no seed variable) when off
    batch = {**dummy_batch(), "token_ids": np.array([[2, 3, 4]], dtype=np.int32),
             "lengths": np.array([3], dtype=np.int32), "word_index": np.array([[1, 1, 1]], dtype=np.int32),
             "wp_ids": np.array([[2, 6, 7, 8, 3]], dtype=np.int32),
             "wp_index": np.array([[1, 2, 3]], dtype=np.int32),
             "gazetteer": np.zeros((1, 3), dtype=np.int32)}
    inference = np.asarray(model(batch, training=False))
    np.testing.assert_array_equal(inference, np.asarray(model(batch, training=False)))
    trained = np.asarray(model(batch, training=True))
    assert np.array_equal(trained, inference) == (rate == 0.0)
