"""Multi-corpus on a real standalone cluster: preprocess.py --corpora, then train.py on its output in one
barrier stage of 2 workers (identical weights, one CRF head per corpus, label maps applied)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import write_two_corpora

from .job_helpers import check, last_json
from .test_spark_jobs import overrides

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_preprocess_and_train_several_corpora(spark_cluster, tmp_path: Path) -> None:
    from nerservice.artifacts.layout import MULTI_FORMAT
    from nerservice.inference import Extractor

    config = write_two_corpora(tmp_path / "corpora", sizes=(160, 40, 40))
    edited = json.loads(config.read_text())
    edited["corpora"][0]["weight"] = 1.5  # a sampling weight travels with the corpora config to the executors
    config.write_text(json.dumps(edited))
    prep = tmp_path / "prep"
    proc = spark_cluster.submit("spark_jobs/preprocess.py", "--corpora", str(config), "--out", str(prep), timeout=300)
    check(proc, "preprocess --corpora")
    prepared = json.loads((prep / "corpora.json").read_text())
    assert prepared["corpora"][1]["label_map"] == {"Chemical": "Drug"} and prepared["corpora"][0]["weight"] == 1.5
    assert all((prep / name / split).is_dir() for name in ("dis", "chem") for split in ("train", "dev", "test"))

    out = tmp_path / "run"
    proc = spark_cluster.submit("spark_jobs/train.py", "--data", str(prep), "--out", str(out), "--workers", "2",
                                *overrides(**{"training.epochs": 3, "model.embeddings": []}), timeout=420)
    check(proc, "train multi-corpus")
    summary = last_json(proc.stdout)
    assert summary["weights_identical"] and summary["corpora"] == ["dis", "chem"]
    assert set(summary["dev"]["per_corpus"]) == {"dis", "chem"}
    assert json.loads((out / "model-best" / "manifest.json").read_text())["format"] == MULTI_FORMAT
    assert Extractor.load(out / "model-best").labels == ["Disease", "Drug"]

    # --final on a multi-corpus data folder: phase 1 (early stopping on the mean dev F1) and phase 2 (every
    # corpus on its train + dev, model-last) as two barrier stages, as `nerservice train --final --corpora`.
    final = tmp_path / "final"
    proc = spark_cluster.submit("spark_jobs/train.py", "--data", str(prep), "--out", str(final), "--workers", "1",
                                "--final", *overrides(**{"training.epochs": 2, "model.embeddings": []}), timeout=420)
    check(proc, "train multi-corpus --final")
    summary = last_json(proc.stdout)
    epochs = summary["recipe"]["phase2"]["epochs"]
    assert epochs == summary["recipe"]["phase1"]["best_epoch"] >= 1
    assert summary["model_dir"].endswith("model-last") and set(summary["test"]["per_corpus"]) == {"dis", "chem"}
    assert (final / "phase1" / "model-best").is_dir() and not (final / "model-best").exists()
    lineage = json.loads((final / "model-last" / "lineage.json").read_text())
    assert lineage["recipe"]["phase"] == 2
    phase1 = json.loads((final / "phase1" / "model-best" / "lineage.json").read_text())
    assert lineage["corpus_fingerprints"]["dis/train"] != phase1["corpus_fingerprints"]["dis/train"]  # + dev
    assert len(json.loads((final / "model-last" / "history.json").read_text())) == epochs
    assert Extractor.load(final / "model-last").labels == ["Disease", "Drug"]
