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
    prep = tmp_path / "prep"
    proc = spark_cluster.submit("spark_jobs/preprocess.py", "--corpora", str(config), "--out", str(prep), timeout=300)
    check(proc, "preprocess --corpora")
    assert json.loads((prep / "corpora.json").read_text())["corpora"][1]["label_map"] == {"Chemical": "Drug"}
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

    # --final is the single-corpus recipe (the multi-corpus worker trains on train and keeps model-best): refused
    # with a coded error before any stage starts, as `nerservice train --final --corpora` is.
    final = tmp_path / "final"
    proc = spark_cluster.submit("spark_jobs/train.py", "--data", str(prep), "--out", str(final), "--workers", "1",
                                "--final", *overrides(**{"training.epochs": 1, "model.embeddings": []}), timeout=300)
    assert proc.returncode == 2, proc.stdout[-3000:]
    # spark-submit's Python runner merges the driver's stderr into its stdout.
    errors = [json.loads(line)["error"] for line in proc.stdout.splitlines() if line.startswith('{"error"')]
    assert len(errors) == 1, proc.stdout[-3000:]
    error = errors[0]
    assert error["code"] == "NER100" and "multi-corpus" in error["message"]
    assert not (final / "phase1").exists() and not (final / "model-last").exists()
