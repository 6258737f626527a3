"""One model trained for real on two tiny corpora with different label sets, through the CLI; then
everything a single model does: save/load, evaluate per corpus and type, the Extractor, ensembles, the store."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from nerservice.cli.main import main

TEXT = "Patients with breast cancer were treated with cisplatin ."


@pytest.fixture(scope="module")
def corpora_file(tiny_multi_corpora: Path) -> Path:
    return tiny_multi_corpora


@pytest.fixture(scope="module")
def multi_run(tiny_multi_run: Path) -> Path:
    return tiny_multi_run


def test_each_corpus_learns_its_own_labels(multi_run: Path) -> None:
    from nerservice.artifacts.layout import MULTI, MULTI_FORMAT

    best = multi_run / "model-best"
    manifest = json.loads((best / "manifest.json").read_text())
    assert manifest["format"] == MULTI_FORMAT and MULTI in manifest["files"]
    metrics = json.loads((best / "metrics.json").read_text())
    per = metrics["test"]["per_corpus"]
    assert set(per) == {"dis", "chem"}
    assert set(per["dis"]["per_type"]) == {"Disease"} and set(per["chem"]["per_type"]) == {"Drug"}
    assert min(per["dis"]["micro"]["f1"], per["chem"]["micro"]["f1"]) > 0.85
    mean = (per["dis"]["micro"]["f1"] + per["chem"]["micro"]["f1"]) / 2
    assert metrics["test"]["micro"]["f1"] == pytest.approx(mean)
    assert set(metrics["test"]["per_type"]) == {"dis/Disease", "chem/Drug"}
    multi = json.loads((best / MULTI).read_text())
    assert multi["corpora"]["corpora"][1]["label_map"] == {"Chemical": "Drug"}


def test_one_forward_pass_returns_every_type(multi_run: Path) -> None:
    from nerservice.inference import Extractor

    ex = Extractor.load(multi_run / "model-best")
    assert ex.labels == ["Disease", "Drug"]
    ents = ex.extract_one(TEXT)
    assert [(e.text, e.label) for e in ents] == [("breast cancer", "Disease"), ("cisplatin", "Drug")]
    assert all(0 < e.score <= 1 for e in ents)
    assert ex.extract(["", TEXT])[0] == []


def test_evaluate_reports_per_corpus_and_type(multi_run: Path, corpora_file: Path, capsys) -> None:
    assert main(["evaluate", str(multi_run), "--corpora", str(corpora_file), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    saved = json.loads((multi_run / "model-best" / "metrics.json").read_text())["test"]
    assert got["per_corpus"]["chem"]["micro"] == saved["per_corpus"]["chem"]["micro"]
    assert main(["evaluate", str(multi_run), "--corpora", str(corpora_file), "--split", "dev"]) == 0
    text = capsys.readouterr().out
    assert "dev / dis" in text and "dev / chem" in text and "Drug" in text and "mean entity F1 over 2 corpora" in text
    chem_dev = json.loads(corpora_file.read_text())["corpora"][1]["dev"]
    assert main(["evaluate", str(multi_run), str(corpora_file.parent / chem_dev), "--head", "chem", "--json"]) == 0
    head = json.loads(capsys.readouterr().out)
    assert set(head["per_corpus"]) == {"chem"}


def test_predict_cli_gives_all_types(multi_run: Path, tmp_path: Path, capsys) -> None:
    f = tmp_path / "in.txt"
    f.write_text(TEXT + "\n", encoding="utf-8")
    assert main(["predict", str(multi_run), str(f)]) == 0
    labels = {e["label"] for e in json.loads(capsys.readouterr().out.strip())["entities"]}
    assert labels == {"Disease", "Drug"}


def test_ensemble_of_multi_models(multi_run: Path, tmp_path: Path) -> None:
    from nerservice.artifacts.ensemble_folder import save_ensemble
    from nerservice.artifacts.formats import load_model
    from nerservice.inference import Extractor

    out = save_ensemble(tmp_path / "ens", [multi_run / "model-best", multi_run / "model-last"])
    ens = load_model(out)
    assert ens.vocabs.tags == load_model(multi_run / "model-best").vocabs.tags
    assert {e.label for e in Extractor(ens).extract_one(TEXT)} == {"Disease", "Drug"}
    # An ensemble of one model twice is that model.
    twice = Extractor(load_model(save_ensemble(tmp_path / "twice", [multi_run / "model-best"] * 2)))
    assert twice.extract_one(TEXT) == Extractor.load(multi_run / "model-best").extract_one(TEXT)


def test_store_registers_and_serves_a_multi_model(multi_run: Path, tmp_path: Path) -> None:
    from nerservice.inference import Extractor
    from nerservice.store import ModelStore

    store = ModelStore(f"sqlite:///{(tmp_path / 'mlflow.db').as_posix()}", cache_dir=tmp_path / "cache")
    version = store.register(multi_run / "model-best", "multi-ner")
    resolved = store.resolve(f"multi-ner/{version}")
    assert Extractor.load(resolved).extract_one(TEXT) == Extractor.load(multi_run / "model-best").extract_one(TEXT)
    assert store.describe(f"multi-ner/{version}")["metrics"]["test_f1"] > 0.85


def test_a_multi_folder_with_its_corpora_file_removed_does_not_load(multi_run: Path, tmp_path: Path) -> None:
    import shutil

    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.layout import MULTI
    from nerservice.errors import IntegrityError

    broken = tmp_path / "broken"
    shutil.copytree(multi_run / "model-best", broken)
    (broken / MULTI).unlink()
    with pytest.raises(IntegrityError):
        load_model(broken)


def test_per_corpus_batches_sample_corpora_in_proportion() -> None:
    from nerservice.config import NerConfig
    from nerservice.multi.trainer import corpus_plan

    groups = [np.arange(0, 300), np.arange(300, 400)]
    lengths = np.random.default_rng(0).integers(1, 40, 400)
    config = NerConfig().with_overrides({"training.batch_size": 10})
    plan = corpus_plan(groups, lengths, config, epoch=0)
    assert sorted(np.concatenate(plan).tolist()) == list(range(400))  # every sentence once
    assert all((b < 300).all() or (b >= 300).all() for b in plan)  # one corpus per batch
    first = [bool((b < 300).all()) for b in plan]
    assert first[:10] != [True] * 10 and 0 < sum(first) < len(first)  # corpora interleaved, not in blocks
    assert [b.tolist() for b in corpus_plan(groups, lengths, config, epoch=0)] == [b.tolist() for b in plan]
    assert corpus_plan(groups, lengths, config, epoch=1)[0].tolist() != plan[0].tolist()


def test_a_multi_corpus_model_exports_and_serves_on_onnx_runtime(multi_run: Path, tmp_path: Path) -> None:
    from nerservice.inference import Extractor

    assert main(["export", str(multi_run), "--format", "onnx", "--out", str(tmp_path / "onnx")]) == 0
    onnx = Extractor.load(tmp_path / "onnx")
    keras = Extractor.load(multi_run / "model-best", runtime="keras")
    assert onnx.runtime == "onnx" and onnx.labels == keras.labels == ["Disease", "Drug"]
    got, want = onnx.extract_one(TEXT), keras.extract_one(TEXT)
    assert [(e.start, e.end, e.label) for e in got] == [(e.start, e.end, e.label) for e in want]
    assert [e.score for e in got] == pytest.approx([e.score for e in want], abs=1e-4)


def test_corpus_weights_give_a_corpus_whole_passes_and_shares_of_one() -> None:
    from collections import Counter

    from nerservice.config import NerConfig
    from nerservice.multi.trainer import corpus_plan

    groups = [np.arange(0, 300), np.arange(300, 400)]
    lengths = np.random.default_rng(0).integers(1, 40, 400)
    config = NerConfig().with_overrides({"training.batch_size": 10})
    plain = corpus_plan(groups, lengths, config, epoch=3)
    assert [b.tolist() for b in corpus_plan(groups, lengths, config, 3, weights=[1.0, 1.0])] == \
        [b.tolist() for b in plain]  # weight 1 is the unweighted plan, batch for batch
    plan = corpus_plan(groups, lengths, config, epoch=3, weights=[0.5, 2.0])
    seen = Counter(np.concatenate(plan).tolist())
    assert all(seen[i] == 2 for i in range(300, 400))  # two whole passes over the second corpus
    firsts = [i for i in range(300) if seen[i]]
    assert all(seen[i] == 1 for i in firsts) and 140 <= len(firsts) <= 160  # half of the first corpus's batches
    second = [b for b in plan if (b >= 300).all()]
    assert len(second) == 20 and [b.tolist() for b in second[:10]] != [b.tolist() for b in second[10:]]
    other_epoch = corpus_plan(groups, lengths, config, epoch=4, weights=[0.5, 2.0])
    assert {i for b in other_epoch for i in b.tolist() if i < 300} != set(firsts)  # another half next epoch
