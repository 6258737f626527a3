"""Multi-corpus on a real standalone cluster: preprocess.py --corpora, then train.py --final --seeds 2 on its
output, each stage a barrier stage of 2 workers (identical weights, one CRF head per corpus, label maps
applied), then predict.py --head on the ensemble it made (one head's types, as the in-process Extractor)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import write_two_corpora

from .job_helpers import check, job_json
from .test_spark_jobs import overrides

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_preprocess_and_train_several_corpora(spark_cluster, tmp_path: Path, capsys) -> None:
    import pandas as pd

    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.layout import MULTI_FORMAT
    from nerservice.cli.main import main
    from nerservice.data import read_corpus
    from nerservice.inference import Extractor

    # 80/20/20 sentences per corpus (as tests/multi/test_final.py): nothing below depends on the size, and a
    # barrier stage's time is mostly its processes' start-up.
    config = write_two_corpora(tmp_path / "corpora", sizes=(80, 20, 20))
    edited = json.loads(config.read_text())
    edited["corpora"][0]["weight"] = 1.5  # a sampling weight travels with the corpora config to the executors
    config.write_text(json.dumps(edited))
    prep = tmp_path / "prep"
    proc = spark_cluster.submit("spark_jobs/preprocess.py", "--corpora", str(config), "--out", str(prep), timeout=300)
    check(proc, "preprocess --corpora")
    prepared = json.loads((prep / "corpora.json").read_text())
    assert prepared["corpora"][1]["label_map"] == {"Chemical": "Drug"} and prepared["corpora"][0]["weight"] == 1.5
    assert all((prep / name / split).is_dir() for name in ("dis", "chem") for split in ("train", "dev", "test"))

    # --final --seeds 2 on a multi-corpus data folder, 2 workers: phase 1 (early stopping on the mean dev F1)
    # once, then phase 2 (every corpus on its train + dev, model-last) per seed, each a barrier stage, and the
    # driver saves and scores their ensemble per corpus — as `nerservice train --corpora --final --seeds 2`.
    # (One job for both properties: each Spark job and stage starts fresh TensorFlow workers.)
    final = tmp_path / "final"
    proc = spark_cluster.submit("spark_jobs/train.py", "--data", str(prep), "--out", str(final), "--workers", "2",
                                "--final", "--seeds", "2", *overrides(**{"training.epochs": 2, "model.embeddings": []}),
                                timeout=540)
    check(proc, "train multi-corpus --final --seeds 2")
    summary = job_json(proc.stdout)
    # Phase 1's barrier stage (its own summary): 2 workers, identical weights, one CRF head per corpus.
    stage = json.loads((final / "phase1" / "summary.json").read_text())
    assert stage["weights_identical"] and len(stage["workers"]) == 2 and stage["corpora"] == ["dis", "chem"]
    assert set(stage["dev"]["per_corpus"]) == {"dis", "chem"}
    assert json.loads((final / "phase1" / "model-best" / "manifest.json").read_text())["format"] == MULTI_FORMAT
    assert Extractor.load(final / "phase1" / "model-best").labels == ["Disease", "Drug"]
    epochs = summary["recipe"]["phase2"]["epochs"]
    assert epochs == summary["recipe"]["phase1"]["best_epoch"] >= 1
    assert len(summary["runs"]) == 3  # phase 1 once, phase 2 per seed
    seed = summary["recipe"]["phase1"]["seed"]
    assert summary["recipe"]["phase2"]["seeds"] == [seed, seed + 1]
    members = [final / f"seed-{s}" / "model-last" for s in (seed, seed + 1)]
    assert summary["members"] == [str(m) for m in members] and summary["model_dir"] == str(final / "ensemble")
    assert (final / "phase1" / "model-best").is_dir() and not (final / "model-best").exists()
    phase1 = json.loads((final / "phase1" / "model-best" / "lineage.json").read_text())
    for m in members:
        lineage = json.loads((m / "lineage.json").read_text())
        assert lineage["recipe"]["phase"] == 2
        assert lineage["corpus_fingerprints"]["dis/train"] != phase1["corpus_fingerprints"]["dis/train"]  # + dev
        assert len(json.loads((m / "history.json").read_text())) == epochs
        assert Extractor.load(m).labels == ["Disease", "Drug"]  # each member serves as a multi model does
    ens = load_model(final / "ensemble")
    assert set(summary["test"]["per_corpus"]) == {"dis", "chem"}
    assert summary["test"]["per_corpus"]["chem"]["micro"] == pytest.approx(
        ens.metrics["test"]["per_corpus"]["chem"]["micro"])
    # the driver's figures are what the CLI computes from the saved folder and the same files
    assert main(["evaluate", str(final / "ensemble"), "--corpora", str(config), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["per_corpus"]["dis"]["micro"] == pytest.approx(summary["test"]["per_corpus"]["dis"]["micro"])
    assert Extractor.load(final / "ensemble").labels == ["Disease", "Drug"]
    # The command again: phase 1 and both final models are read back on the driver (their per-corpus lineage
    # matches the data folder's), so no barrier stage starts, and the job reports the first one's figures.
    rerun = spark_cluster.submit("spark_jobs/train.py", "--data", str(prep), "--out", str(final), "--workers", "2",
                                 "--final", "--seeds", "2", *overrides(**{"training.epochs": 2, "model.embeddings": []}),
                                 timeout=300)
    check(rerun, "train multi-corpus --final --seeds 2, rerun")
    assert (rerun.stdout + rerun.stderr).count("read back from its folder; no barrier stage") == 3
    assert job_json(rerun.stdout)["test"] == summary["test"]

    # Batch inference of one head (predict.py --head) on the model trained above, rather than a job of its own:
    # the "chem" head alone answers, exactly as the in-process Extractor of that head does.
    texts = [" ".join(s.tokens) for name in ("chem", "dis")
             for s in read_corpus(config.parent / name / "test.tsv").sentences]
    src = tmp_path / "texts.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))
    proc = spark_cluster.submit("spark_jobs/predict.py", "--model", str(final / "ensemble"), "--head", "chem",
                                "--input", str(src), "--output", str(tmp_path / "preds"), "--partitions", "2",
                                timeout=240)
    check(proc, "predict --head chem")
    summary = job_json(proc.stdout)
    assert summary["head"] == "chem" and summary["texts"] == len(texts) and summary["errors"] == 0
    got = pd.read_parquet(tmp_path / "preds").set_index("id")
    expected = Extractor.load(final / "ensemble", head="chem").extract(texts)
    assert sum(len(e) for e in expected) == summary["entities"] > 0
    for i, ents in enumerate(expected):
        row = list(got.loc[i, "entities"])
        assert [(e["start"], e["end"], e["label"]) for e in row] == [(e.start, e.end, e.label) for e in ents]
        assert all(abs(a["score"] - b.score) < 1e-5 for a, b in zip(row, ents))
    assert {e["label"] for row in got["entities"] for e in row} == {"Drug"}  # no other head's types
