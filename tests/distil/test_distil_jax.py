"""Distillation under KERAS_BACKEND=jax, with TensorFlow (and tqdm) made unimportable — what the GPU machine
has — through the GPU benchmark script itself on a tiny fixture (teachers: a random-weight 2-model
ensemble). Not an accuracy figure: it proves the JAX train step takes the teacher targets and the script
runs end to end without TensorFlow."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, TINY_OVERRIDES, jax_env, save_random_model

pytestmark = [pytest.mark.jax, pytest.mark.slow]


def test_the_gpu_bench_distils_under_jax_without_tensorflow(tmp_path: Path) -> None:
    from nerservice.data.writers import write_corpus
    from nerservice.demo_corpus import generate

    data = tmp_path / "data"
    for c, base in (("NCBI-disease", 1), ("OTHER", 50)):
        (data / c).mkdir(parents=True)
        for i, (split, n) in enumerate((("train", 80), ("devel", 30), ("test", 60))):
            write_corpus(generate(n, seed=base + i), data / c / f"{split}.tsv", fmt="tsv")
    teachers = [str(save_random_model(tmp_path / f"t{i}", {}, seed=i)) for i in range(2)]
    block = tmp_path / "block"
    for name in ("tensorflow", "tqdm"):
        (block / name).mkdir(parents=True)
        (block / name / "__init__.py").write_text("raise ImportError('not on the GPU machine')\n")
    # bucket_size 32: one time length, so XLA compiles the step once (compiles dominate a run this small)
    sets = ["--set", "training.epochs=4", "--set", "training.learning_rate=0.01", "--set", "training.bucket_size=32"]
    assert TINY_OVERRIDES["model.embeddings"] == []  # the teachers' config: no vectors file needed
    env = {**os.environ, **jax_env(), "PYTHONPATH": f"{block}{os.pathsep}{REPO}",
           "TF_CPP_MIN_LOG_LEVEL": "2"}
    out = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench/gpu/distil_gpu.py"), "--data", str(data),
                           "--unlabelled-corpora", "OTHER", "--teachers", *teachers, *sets, "--gold-weights", "0",
                           # cross-fitting's plumbing: each fold "ensemble" is the same two teachers, so the
                           # targets are the main ensemble's (tests/distil/test_distil.py checks that folds
                           # really take their own teacher's targets)
                           # (three blocks of train + devel: bench/gpu/folds.py)
                           "--kfold", "3", *sum((["--fold-teachers", f"{i}of3=" + ",".join(teachers)] for i in (1, 2, 3)), []),
                           "--out", str(tmp_path / "run"), "--json-out", str(out)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    r = json.loads(out.read_text())
    assert r["backend"] == "jax" and r["tensorflow_imported"] is False
    # what ran it (bench/gpu/runtime.py), so two sessions' figures can be told apart by more than the date
    from importlib import metadata
    assert r["packages"]["jax"] == metadata.version("jax") and r["packages"]["jaxlib"] == metadata.version("jaxlib")
    assert r["packages"]["keras"] == metadata.version("keras") and r["device_kind"] == "cpu"
    assert r["ensemble"]["members"] == 2 and r["data"]["unlabelled_tokens"] > 500
    # train + devel = 110 sentences in blocks of 36 / 37 / 37, each labelled by its own fold's ensemble
    assert [r["folds"][f"{i}of3"]["rows"] for i in (1, 2, 3)] == [[0, 36], [36, 73], [73, 110]]
    assert r["folds"]["2of3"]["labels"] == "block 2of3" and r["folds"]["2of3"]["held_out_confidence"]["sentences"] == 37
    (student,) = r["students"]
    assert student["cross_fit"] is True and student["target_confidence"]["labelled"]["tokens"] > 0
    assert student["epochs_run"] == 4 and student["dev_is_training_data"] is True
    assert student["test_tag_agreement_with_teacher"] > r["ensemble"]["test_majority_tag_rate"] + 0.05, student
