"""``nerservice distil --corpora``: a multi-corpus teacher (an ensemble of two multi-corpus models trained here
on two tiny corpora) into a multi-corpus student, every sentence training every head; its targets, and the
coded errors for a teacher and data that do not fit together."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers import agreement_with_teacher, save_random_model, tiny_sets, write_two_corpora
from nerservice.cli.main import main

pytestmark = [pytest.mark.slow]

TINY = tiny_sets(**{"training.epochs": 4, "model.lstm_layers": 1})


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from nerservice.demo_corpus import generate

    w = tmp_path_factory.mktemp("distil-multi")
    config = write_two_corpora(w / "c", sizes=(60, 20, 20))
    assert main(["train", "--corpora", str(config), "--out", str(w / "teacher"), "--quiet", "--seeds", "2",
                 *TINY]) == 0
    (w / "u.txt").write_text("\n\n".join("\n".join(s.tokens) for s in generate(50, seed=8)) + "\n", encoding="utf-8")
    return {"config": config, "teacher": w / "teacher" / "ensemble", "member": w / "teacher" / "seed-3" / "model-best",
            "unlabelled": w / "u.txt", "w": w}


def test_a_multi_corpus_ensemble_distils_into_one_multi_corpus_model(work: dict[str, Path], capsys) -> None:
    from nerservice.artifacts.files import read_manifest
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.layout import LAST, MULTI, MULTI_FORMAT
    from nerservice.demo_corpus import generate
    from nerservice.inference import Extractor
    from nerservice.model.predictor import Predictor
    from nerservice.multi.tagger import build_multi_tagger

    out = work["w"] / "student"
    args = ["distil", "--teacher", str(work["teacher"]), "--corpora", str(work["config"]), "--unlabelled",
            str(work["unlabelled"]), "--out", str(out), "--keep", "last", "--dev-in-train", "--quiet", "--json",
            "--set", "training.epochs=4", "--set", "training.learning_rate=0.01"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "heads ['dis', 'chem']" in captured.err  # --json: what is printed for people goes to stderr
    printed = json.loads(captured.out)
    student, teacher = load_model(out / LAST), load_model(work["teacher"])
    manifest = read_manifest(out / LAST)
    assert manifest["format"] == MULTI_FORMAT and MULTI in manifest["files"]
    assert student.vocabs.tags == teacher.vocabs.tags  # the teacher's heads, column for column
    assert len(json.loads((out / LAST / "history.json").read_text())) == 4  # --keep last: exactly 4 epochs
    d = student.lineage["distillation"]
    assert d["teacher"]["kind"] == "ensemble" and d["teacher"]["members"] == 2
    assert d["teacher"]["heads"] == ["dis", "chem"]
    assert d["labelled"]["per_corpus"] == {"dis": 80, "chem": 80}  # --dev-in-train: train 60 + dev 20 each
    assert d["unlabelled"]["sentences"] == 50
    assert d["target_confidence"]["unlabelled"]["tokens"] == d["unlabelled"]["tokens"]
    # scored per corpus on its own head, the teacher beside it on the same test splits
    assert set(printed["test"]["per_corpus"]) == set(printed["teacher_test"]["per_corpus"]) == {"dis", "chem"}
    metrics = json.loads((out / LAST / "metrics.json").read_text())
    assert metrics["test"]["per_corpus"]["chem"]["micro"]["f1"] == pytest.approx(
        printed["test"]["per_corpus"]["chem"]["micro"]["f1"])
    assert Extractor.load(out / LAST).labels == ["Disease", "Drug"]  # serves as any multi-corpus model

    held = [s.tokens for s in generate(80, seed=4)]
    cfg = student.config.model
    heads: Any = student.vocabs.tags
    untrained = build_multi_tagger(cfg, tags=heads, n_words=len(student.vocabs.words),
                                   n_chars=len(student.vocabs.chars), seed=student.config.training.seed)
    got, majority, before = agreement_with_teacher(
        student.predictor(), teacher.predictor(), Predictor(untrained, student.vocabs, max_word_length=cfg.max_word_length),
        held)
    print(f"agreement with the teacher: {got:.3f} (majority tag {majority:.3f}, untrained {before:.3f})")
    assert got > max(majority, before) + 0.05, (got, majority, before)
    assert got > 0.9, got


def test_every_sentence_gets_every_heads_targets(work: dict[str, Path]) -> None:
    """Each head's block of a token's target is a distribution; a gold path mixes into its own head only."""
    from nerservice.artifacts.formats import load_model
    from nerservice.data import read_corpus
    from nerservice.distil.targets import build_targets

    teacher = load_model(work["teacher"])
    tags: Any = teacher.vocabs.tags
    sents = read_corpus(work["config"].parent / "dis" / "dev.tsv").sentences[:6]
    gold = [np.array([tags.id(f"dis|{t}") for t in s.tags]) for s in sents]
    kw: dict[str, Any] = dict(temperature=1.0, chunk=4, heads=tags.slices)
    pure, _ = build_targets(teacher.predictor(), [s.tokens for s in sents], gold=gold, gold_weight=0.0, **kw)
    mixed, _ = build_targets(teacher.predictor(), [s.tokens for s in sents], gold=gold, gold_weight=1.0, **kw)
    dis, chem = tags.slices
    for block in (dis, chem):
        np.testing.assert_allclose(pure.unary[:, block].sum(axis=1), 1.0, atol=1e-5)
        np.testing.assert_allclose(pure.pairs[:, block, block].sum(axis=(1, 2)),
                                   [len(s.tokens) - 1 for s in sents], atol=1e-3)
    assert not pure.pairs[:, dis, chem].any() and not pure.pairs[:, chem, dis].any()
    np.testing.assert_allclose(mixed.unary[:, chem], pure.unary[:, chem])  # the other head keeps the teacher's
    n0 = len(sents[0].tokens)
    one_hot = np.zeros((n0, dis.stop - dis.start))
    one_hot[np.arange(n0), gold[0] - dis.start] = 1.0
    np.testing.assert_allclose(mixed.unary[:n0, dis], one_hot)


def test_teacher_and_data_that_do_not_fit_are_coded_errors(work: dict[str, Path], tmp_path: Path) -> None:
    from nerservice.errors import ConfigError

    out = tmp_path / "o"
    dis = work["config"].parent / "dis"
    base = ["--out", str(out), "--quiet"]
    # a multi-corpus teacher on plain --train/--dev, a single-corpus one with --corpora
    assert main(["distil", "--teacher", str(work["teacher"]), "--train", str(dis / "train.tsv"),
                 "--dev", str(dis / "dev.tsv"), *base]) == 2
    single = save_random_model(tmp_path / "single", {})
    assert main(["distil", "--teacher", str(single), "--corpora", str(work["config"]), *base]) == 2
    # corpora that are not the teacher's heads (order matters: it is the columns' order)
    swapped = json.loads(work["config"].read_text())
    swapped["corpora"].reverse()
    bad = work["config"].parent / "swapped.json"
    bad.write_text(json.dumps(swapped), encoding="utf-8")
    assert main(["distil", "--teacher", str(work["teacher"]), "--corpora", str(bad), *base]) == 2
    # --dev-in-train would let dev select on training data
    assert main(["distil", "--teacher", str(work["teacher"]), "--corpora", str(work["config"]), "--dev-in-train",
                 *base]) == 2
    assert not out.exists(), "nothing written"
    from nerservice.artifacts.formats import load_model
    from nerservice.distil.run import Teacher, check_heads
    from nerservice.multi.config import CorporaConfig
    from nerservice.multi.corpora import read_corpora

    tags = Teacher(load_model(work["member"]), {}).tags
    with pytest.raises(ConfigError, match="teacher's heads are"):
        check_heads(tags, read_corpora(CorporaConfig.load(bad)))  # type: ignore[arg-type]
