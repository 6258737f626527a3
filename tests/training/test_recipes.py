"""Multi-run recipes (``nerservice train --final`` / ``--seeds N``): what is trained, kept and recorded."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import TINY_OVERRIDES
from nerservice.cli.main import main
from nerservice.config import NerConfig
from nerservice.training.recipes import phase2_config

# One residual layer: tracing the train step is most of a run this small, two layers trace ~1.5x as long, and
# nothing here depends on the depth (the demo corpus' dev F1 is 1.0 from epoch 3 with either).
TINY = [x for k, v in {**TINY_OVERRIDES, "training.epochs": 6, "training.patience": 2, "model.lstm_layers": 1}.items()
        for x in ("--set", f"{k}={v}")]


def _train(demo_corpus, out: Path, *extra: str) -> list[str]:
    return ["train", "--train", str(demo_corpus["train"]), "--dev", str(demo_corpus["dev"]),
            "--test", str(demo_corpus["test"]), "--out", str(out), "--quiet", *TINY, *extra]



def test_phase2_trains_exactly_the_epoch_count() -> None:
    c = phase2_config(NerConfig(), 13, seed=7)
    assert (c.training.epochs, c.training.patience, c.training.seed) == (13, 13, 7)


@pytest.mark.parametrize(("extra", "message"), [
    (["--seeds", "0"], "--seeds 0"),
    (["--seeds", "2", "--register", "ner"], "register the ensemble"),
    (["--final", "--register", "ner", "--promote", "production"], "training-set figure"),
])
def test_bad_recipe_options_are_coded_errors_before_training(demo_corpus, tmp_path: Path, capsys, extra,
                                                            message) -> None:
    assert main(_train(demo_corpus, tmp_path / "o", *extra)) == 2
    err = capsys.readouterr().err
    assert message in err and "NER" in err
    assert not (tmp_path / "o").exists()


# `train --final` (phase 2 on train + dev for phase 1's best epoch count, its lineage, the rerun) is checked in
# tests/store/test_cli.py::test_final_recipe_trains_on_train_plus_dev_for_phase1s_epoch_count_and_registers_phase2s_config,
# on the same run that checks what its `--register` sends to the store (one training instead of two).
