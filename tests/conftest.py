"""Shared fixtures: a demo corpus written by us, a tiny model trained on it once per session (slow tier),
and a tiny random-weight model built without training (fast tier)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from helpers import TINY_OVERRIDES, tiny_config  # noqa: E402,F401  (re-exported for fixtures)


@pytest.fixture(scope="session")
def demo_corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from nerservice.demo_corpus import write_demo_corpus

    return write_demo_corpus(tmp_path_factory.mktemp("demo-corpus"), sizes=(400, 80, 80), seed=11)


@pytest.fixture(scope="session")
def tiny_random_model_dir(tmp_path_factory: pytest.TempPathFactory, demo_corpus: dict[str, Path]) -> Path:
    """A saved model folder with random weights, built in about a second and never trained: the fast tier's
    model for the Extractor, readers and API ``TestClient`` tests.  Its vocabularies come from the demo
    corpus (so it has that corpus' tag set); its predictions are arbitrary but deterministic (seeded)."""
    from nerservice.artifacts.model_folder import save_model
    from nerservice.data import read_corpus
    from nerservice.model.tagger import build_tagger
    from nerservice.training.trainer import build_vocabularies

    config = tiny_config()
    vocabs = build_vocabularies(read_corpus(demo_corpus["train"]).sentences)
    model = build_tagger(config.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                         n_tags=len(vocabs.tags), seed=config.training.seed)
    return save_model(tmp_path_factory.mktemp("random-model") / "model", model=model, vocabs=vocabs,
                      config=config, metrics={}, lineage={"note": "random weights, test fixture"})


@pytest.fixture(scope="session")
def tiny_training(tmp_path_factory: pytest.TempPathFactory, demo_corpus: dict[str, Path]):
    """A model trained for real on the demo corpus (TrainOutcome)."""
    from nerservice.data import read_corpus
    from nerservice.training.trainer import train

    out = tmp_path_factory.mktemp("tiny-run")
    return train(tiny_config(), train_data=read_corpus(demo_corpus["train"]).sentences,
                 dev_data=read_corpus(demo_corpus["dev"]).sentences,
                 test_data=read_corpus(demo_corpus["test"]).sentences, out_dir=out, progress=False)


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_training) -> Path:
    return tiny_training.best_dir


@pytest.fixture(scope="session")
def contrary_member_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second ensemble member that disagrees strongly with the tiny model: its weights with the emission
    layer scaled by -1.3, so the pair's mean emissions point the other way and the ensemble decides
    differently from either member alone (a random untrained member would be too quiet to change anything)."""
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.model_folder import save_model

    base = load_model(tiny_model_dir)
    layer = base.model.emission
    layer.set_weights([w * -1.3 for w in layer.get_weights()])
    return save_model(tmp_path_factory.mktemp("member") / "contrary", model=base.model, vocabs=base.vocabs,
                      config=base.config)


@pytest.fixture(scope="session")
def tiny_ensemble_dir(tiny_model_dir: Path, contrary_member_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from nerservice.artifacts.ensemble_folder import save_ensemble

    return save_ensemble(tmp_path_factory.mktemp("ensemble") / "ens", [tiny_model_dir, contrary_member_dir])


@pytest.fixture(scope="session")
def tiny_multi_corpora(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two synthetic corpora with different label sets and their corpora config (helpers.write_two_corpora)."""
    from helpers import write_two_corpora

    return write_two_corpora(tmp_path_factory.mktemp("two-corpora"))


@pytest.fixture(scope="session")
def tiny_multi_run(tiny_multi_corpora: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A multi-corpus model trained for real through `nerservice train --corpora` (the run folder)."""
    from nerservice.cli.main import main

    out = tmp_path_factory.mktemp("multi-run")
    sets = [x for k, v in {**TINY_OVERRIDES, "training.patience": 3}.items()
            for x in ("--set", f"{k}={json.dumps(v)}")]
    assert main(["train", "--corpora", str(tiny_multi_corpora), "--out", str(out), "--quiet", *sets]) == 0
    return out
