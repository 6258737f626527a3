"""Multi-corpus training in the barrier task body (no Spark: ``run_local``'s FolderBarrier): two
TensorFlow workers with the synchronous all-reduce end with identical weights and the losses of one worker, and
rank 0 writes a multi-corpus model with one head per corpus; each worker's step is traced once and
all-reduces once per step."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run_side_by_side, tiny_config, write_two_corpora

pytestmark = [pytest.mark.slow]


def _rows(sentences):
    return [[list(s.tokens), list(s.tags), s.file, s.line] for s in sentences]


def test_two_workers_train_one_multi_corpus_model(tmp_path: Path) -> None:
    from nerservice.artifacts.layout import MULTI_FORMAT
    from nerservice.data import read_corpus
    from nerservice.distributed.worker import TrainSpec
    from nerservice.multi.config import CorporaConfig

    config_file = write_two_corpora(tmp_path / "c", sizes=(64, 16, 16))
    edited = json.loads(config_file.read_text())
    edited["corpora"][1]["weight"] = 2.0  # two passes over "chem" per epoch: the workers share one weighted plan
    config_file.write_text(json.dumps(edited))
    corpora = CorporaConfig.load(config_file)
    data = {spec.name: {split: _rows(read_corpus(path).sentences) for split, path in spec.paths().items()}
            for spec in corpora.corpora}
    config = tiny_config().with_overrides({"training.epochs": 2, "model.lstm_layers": 1, "model.dropout": 0.3})
    specs = {world: TrainSpec(config=config.model_dump(mode="json"), out_dir=str(tmp_path / f"world{world}"),
                              world=world, resume=False, collective_timeout_s=300,
                              corpora=corpora.model_dump(mode="json")) for world in (2, 1)}
    runs = run_side_by_side(specs, data)
    two, one = runs[2], runs[1]
    assert two[0]["weights_digest"] == two[1]["weights_digest"]
    # The same training as one process up to float summation order (all-reduce vs one batch sum).
    losses = [[h["loss"] for h in r["history"]] for r in (two[0], one[0])]
    assert losses[0] == pytest.approx(losses[1], rel=1e-4)
    # Each worker trained half of every global batch, and every batch came from one corpus.
    assert two[0]["shard_epoch1"]["steps"] == one[0]["shard_epoch1"]["steps"]
    assert two[0]["shard_epoch1"]["sentences"] + two[1]["shard_epoch1"]["sentences"] == \
        one[0]["shard_epoch1"]["sentences"] == 64 + 2 * 64
    assert set(two[0]["dev"]["per_corpus"]) == {"dis", "chem"}
    # One trace per worker, and one all-reduce per step in it (the gradients with the loss in one pack; Keras'
    # optimizer would otherwise all-reduce the gradients a second time inside apply()).
    assert [r["step"] for r in two] == [{"traces": 1, "allreduces_per_step": 1}] * 2
    assert one[0]["step"] == {"traces": 1, "allreduces_per_step": 0}
    assert all(r["timings"]["warmup_s"] > 0 and r["timings"]["train_s"] > 0 for r in two)
    manifest = json.loads((tmp_path / "world2" / "model-best" / "manifest.json").read_text())
    assert manifest["format"] == MULTI_FORMAT
