"""The barrier task body on the JAX backend without Spark (issue 20): two local processes run
``run_worker`` with a real rendezvous (``FolderBarrier``) and form one ``jax.distributed`` job on CPU
devices (Gloo all-reduce). After a few steps, with dropout on, both workers hold identical weights, and
those equal one process trained on the whole global batches; dev is evaluated in shards summed over the
job's collective."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers import jax_env, run_side_by_side, tiny_config

pytestmark = [pytest.mark.jax, pytest.mark.slow]


def _rows(sentences):
    return [[list(s.tokens), list(s.tags), "demo.tsv", i + 1] for i, s in enumerate(sentences)]


def test_two_jax_processes_equal_one_process_on_the_whole_batch(tmp_path: Path) -> None:
    from nerservice.artifacts.formats import load_model
    from nerservice.demo_corpus import generate
    from nerservice.distributed.worker import TrainSpec

    # bucket 32 and one residual layer keep the XLA compiles few and short; dropout stays on.
    config = tiny_config().with_overrides({"model.dropout": 0.3, "training.bucket_size": 32, "model.lstm_layers": 1,
                                           "training.epochs": 2})
    data = {"train": _rows(generate(96, seed=5)), "dev": _rows(generate(24, seed=6)), "test": []}
    specs = {world: TrainSpec(config=config.model_dump(mode="json"), out_dir=str(tmp_path / f"world{world}"),
                              world=world, backend="jax", resume=False, collective_timeout_s=300) for world in (2, 1)}
    runs = run_side_by_side(specs, data, env=jax_env())  # helpers.JAX_XLA_FLAGS

    two, one = runs[2], runs[1]
    assert [r["rank"] for r in two] == [0, 1] and len({r["pid"] for r in two}) == 2
    assert all(r["backend"] == "jax" for r in two + one)
    # Identical across workers, bit for bit (the step state is one replicated array).
    assert two[0]["weights_digest"] == two[1]["weights_digest"]
    assert two[0]["shard_epoch1"]["steps"] == one[0]["shard_epoch1"]["steps"] == 6
    # Equal to one process on the whole batch, to float rounding (summation order of the all-reduce).
    for h2, h1 in zip(two[0]["history"], one[0]["history"]):
        assert h2["loss"] == pytest.approx(h1["loss"], abs=1e-4)
    w2 = load_model(tmp_path / "world2" / "model-last").model.get_weights()
    w1 = load_model(tmp_path / "world1" / "model-last").model.get_weights()
    assert max(float(np.max(np.abs(a - b))) for a, b in zip(w1, w2)) < 1e-5
    # ... and training moved them (not a comparison of two initialisations).
    assert two[0]["history"][1]["loss"] < two[0]["history"][0]["loss"]
    # Dev was evaluated in shards whose counts were summed on the JAX job's collective: every sentence and
    # token once, and the scores of one process (the weights agree to 1e-5).
    assert [r["dev_eval"] for r in two] == ["sharded-all-reduce"] * 2 and one[0]["dev_eval"] == "whole"
    assert two[0]["dev"]["sentences"] == one[0]["dev"]["sentences"] == 24
    assert two[0]["dev"]["tokens"] == one[0]["dev"]["tokens"]
    assert [h["dev_f1"] for h in two[0]["history"]] == pytest.approx([h["dev_f1"] for h in one[0]["history"]])
