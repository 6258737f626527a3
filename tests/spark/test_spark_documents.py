"""Document formats through the Spark jobs on the real standalone cluster: preprocess reads PubTator
(detected) and BRAT folders with counts that add up, predict streams documents through the executors
and writes PubTator / BioC XML / BRAT equal to the in-process Extractor's predictions."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from nerservice.data import read_corpus
from nerservice.documents import read_documents, write_documents
from nerservice.documents.annotate import annotate
from nerservice.documents.from_sentences import sentences_to_documents

from .job_helpers import check, job_json

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def doc_corpus(bad_corpus, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("doc-corpus")
    p = bad_corpus["paths"]
    train = sentences_to_documents(read_corpus(p["dev"]).sentences, per_document=8, id_prefix="tr")
    dev = sentences_to_documents(read_corpus(p["test"]).sentences, per_document=8, id_prefix="dv")
    write_documents(train, root / "train.pubtator", "pubtator")
    write_documents(sentences_to_documents(read_corpus(p["test"]).sentences, per_document=8, layout="lines",
                                           id_prefix="dv"), root / "brat", "brat")
    (root / "brat" / "orphan.ann").write_text("T1\tDisease 0 3\tabc\n", encoding="utf-8")
    return {"train": root / "train.pubtator", "brat": root / "brat", "n_train": len(train), "n_dev": len(dev)}


def test_preprocess_reads_pubtator_and_brat_and_accounts_for_every_annotation(spark_cluster, doc_corpus,
                                                                              tmp_path) -> None:
    out = tmp_path / "prep"
    proc = spark_cluster.submit("spark_jobs/preprocess.py", "--train", str(doc_corpus["train"]), "--dev",
                                str(doc_corpus["train"]), "--out", str(out),
                                "--label-map", "Chemical=O", timeout=240)
    check(proc, "preprocess pubtator")
    acc = json.loads((out / "stats.json").read_text())["accounting"]
    assert acc["adds_up"] and acc["documents"] == 2 * doc_corpus["n_train"]
    assert acc["annotations"] == acc["annotations_tagged"] + acc["annotations_excluded"] > 0
    assert acc["annotations_excluded"] > 0 and acc["annotation_cases"] == 0
    stats = json.loads((out / "stats.json").read_text())
    assert set(stats["splits"]["train"]["entities"]) == {"Disease"}

    out2 = tmp_path / "prep-brat"
    proc = spark_cluster.submit("spark_jobs/preprocess.py", "--train", str(doc_corpus["brat"] / "*"), "--split",
                                "0.5,0.5", "--format", "brat", "--sentences", "lines", "--out", str(out2),
                                timeout=240)
    check(proc, "preprocess brat")
    stats = json.loads((out2 / "stats.json").read_text())
    acc = stats["accounting"]
    assert acc["adds_up"] and acc["documents"] == doc_corpus["n_dev"] and acc["files_rejected"] == 1
    assert stats["overall"]["sentences"] == 80  # the 80 test sentences, one per line, none lost


@pytest.mark.parametrize("fmt", ["bioc-xml", "brat"])  # the other formats: test_documents_units.py
def test_predict_streams_documents_and_matches_the_extractor(fmt, spark_cluster, doc_corpus, tiny_model_dir,
                                                             tmp_path) -> None:
    from nerservice.inference import Extractor

    out = tmp_path / "pred"
    proc = spark_cluster.submit("spark_jobs/predict.py", "--model", str(tiny_model_dir), "--input",
                                str(doc_corpus["train"]), "--input-format", "pubtator", "--output", str(out),
                                "--output-format", fmt, "--partitions", "3", timeout=240)
    check(proc, "predict documents")
    summary = job_json(proc.stdout)
    assert summary["documents"] == doc_corpus["n_train"] and summary["errors"] == []
    if fmt == "brat":
        got = read_documents(out, fmt="brat")
    else:
        got = [d for f in sorted(out.glob("part-*")) if f.stat().st_size for d in read_documents(f, fmt=fmt)]
    docs = read_documents(doc_corpus["train"])
    expected = {d.id: d for d in annotate(Extractor.load(tiny_model_dir), docs)}
    assert sorted(d.id for d in got) == sorted(expected)
    for d in got:
        e = expected[d.id]
        assert [(a.start, a.end, a.label, a.text) for a in d.annotations] == \
               [(a.start, a.end, a.label, a.text) for a in e.annotations]
    assert summary["entities"] == sum(len(d.annotations) for d in expected.values()) > 0
