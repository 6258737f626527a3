"""A checkpoint resumes only the run that wrote it (training/resume.py): a rerun into the same OUT with other
training data, another dev split or another architecture is a coded error before anything is loaded, and the
folder is left as it was; training settings and test data may change."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import tiny_model_config


def _identity(**change):
    from nerservice.config import NerConfig
    from nerservice.training.resume import run_identity

    config = NerConfig(model=tiny_model_config(**change.pop("model", {})))
    prints = {"train": "a" * 16, "dev": "b" * 16, "test": "c" * 16, **change}
    return run_identity(config, {"corpus_fingerprints": prints})


def test_identity_is_the_model_and_the_training_data_not_test_or_paths() -> None:
    base = _identity()
    assert set(base["data"]) == {"train", "dev"} and "embeddings" not in base["model"]
    assert _identity(test="d" * 16) == base
    assert _identity(model={"embeddings": ["/elsewhere/glove.txt"]}) == base
    assert _identity(train="e" * 16) != base and _identity(model={"lstm_units": 7}) != base


def test_a_mismatch_names_what_differs() -> None:
    from nerservice.errors import CheckpointMismatchError, ConfigError
    from nerservice.training.resume import check_identity

    folder = Path("/runs/o/checkpoint")
    check_identity(folder, _identity(), _identity())
    check_identity(folder, None, _identity())  # a checkpoint from before identities: nothing to compare
    with pytest.raises(CheckpointMismatchError) as e:
        check_identity(folder, _identity(), _identity(train="e" * 16, model={"lstm_units": 7}))
    assert isinstance(e.value, ConfigError) and e.value.code == "NER120"
    assert "train data (aaaaaaaaaaaa -> eeeeeeeeeeee)" in e.value.message and "model.lstm_units" in e.value.message
    assert "dev data" not in e.value.message and "/runs/o" in e.value.message and "--no-resume" in str(e.value)


def _train(out: Path, *, train_seed: int = 1, epochs: int = 1, test=None, **model):
    from nerservice.config import NerConfig
    from nerservice.demo_corpus import generate
    from nerservice.training.trainer import train

    cfg = NerConfig(model=tiny_model_config(lstm_layers=1, **model),
                    training={"epochs": epochs, "batch_size": 8, "learning_rate": 0.01, "seed": 5, "patience": 5})
    return train(cfg, train_data=generate(32, seed=train_seed), dev_data=generate(8, seed=2), test_data=test,
                 out_dir=out, progress=False)


def _snapshot(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def one_epoch_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`_train(out)` once for the module (a run of its own is ~10 s, mostly tracing the step): each test
    starts from a copy of its folder, which is what its own first `_train(out)` wrote (nothing in a run folder
    names the folder: identities are the model and the data, not paths)."""
    out = tmp_path_factory.mktemp("one-epoch") / "o"
    _train(out)
    return out


def _copy_of(run: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(run, tmp_path / "o"))


@pytest.mark.slow
def test_a_rerun_on_other_data_or_model_is_refused_and_changes_nothing(one_epoch_run: Path, tmp_path: Path) -> None:
    from nerservice.demo_corpus import generate
    from nerservice.errors import CheckpointMismatchError

    out = _copy_of(one_epoch_run, tmp_path)
    saved = json.loads((out / "checkpoint" / "run.json").read_text())
    assert set(saved) == {"model", "data"}
    before = _snapshot(out)
    with pytest.raises(CheckpointMismatchError, match="train data"):
        _train(out, train_seed=9)
    with pytest.raises(CheckpointMismatchError, match="model.lstm_units"):
        _train(out, lstm_units=8)
    assert _snapshot(out) == before
    # Training settings and test data may change: more epochs resume after the saved one.
    outcome = _train(out, epochs=2, test=generate(8, seed=4))
    assert [h["epoch"] for h in outcome.history] == [1, 2]


@pytest.mark.slow
def test_a_checkpoint_saved_before_identities_still_resumes(one_epoch_run: Path, tmp_path: Path) -> None:
    out = _copy_of(one_epoch_run, tmp_path)
    (out / "checkpoint" / "run.json").unlink()
    outcome = _train(out, epochs=2)  # nothing recorded to compare: resumed as before
    assert [h["epoch"] for h in outcome.history] == [1, 2]
    assert (out / "checkpoint" / "run.json").is_file()  # and recorded from now on
