"""``nerservice distil --teacher-head NAME``: one head of a multi-corpus teacher (trained here on two tiny
corpora) as a single-corpus teacher — its targets are exactly that head's block of the multi-corpus targets,
the student is an ordinary one-head model, a single-corpus cross-fitting teacher may stand beside it — and the
coded errors for a head that does not exist or a teacher without heads."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers import agreement_with_teacher, tiny_sets, write_two_corpora
from nerservice.cli.main import main

pytestmark = [pytest.mark.slow]

TINY = tiny_sets(**{"training.epochs": 4, "model.lstm_layers": 1})


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    w = tmp_path_factory.mktemp("distil-head")
    config = write_two_corpora(w / "c", sizes=(60, 20, 20))
    assert main(["train", "--corpora", str(config), "--out", str(w / "teacher"), "--quiet", *TINY]) == 0
    dis = w / "c" / "dis"
    # a single-corpus model of the "dis" corpus trained on its train split only: a cross-fitting teacher for dev
    assert main(["train", "--train", str(dis / "train.tsv"), "--dev", str(dis / "test.tsv"), "--out",
                 str(w / "on-train"), "--quiet", *TINY]) == 0
    return {"teacher": w / "teacher" / "model-best", "on_train": w / "on-train" / "model-best", "dis": dis, "w": w}


def test_a_head_teachers_targets_are_that_heads_block_of_the_multi_corpus_targets(work: dict[str, Path]) -> None:
    from nerservice.demo_corpus import generate
    from nerservice.distil.head import head_teacher
    from nerservice.distil.targets import build_targets
    from nerservice.distil.teacher_ref import load_teacher
    from nerservice.model.heads import decode_head
    from nerservice.text.vocab import MultiTagVocabulary, TagVocabulary

    multi = load_teacher(str(work["teacher"]))
    tags = multi.tags
    assert isinstance(tags, MultiTagVocabulary)
    head = head_teacher(multi, "chem")
    assert not head.multi and isinstance(head.tags, TagVocabulary)
    assert head.tags.tags == ["O", "B-Drug", "I-Drug"]  # the head's tags, as its label map renamed them
    assert head.info["head"] == "chem" and head.info["teacher_heads"] == ["dis", "chem"]
    assert "heads" not in head.info

    sents = [s.tokens for s in generate(40, seed=11)]
    multi_pred, head_pred = multi.loaded.predictor(batch_size=16), head.loaded.predictor(batch_size=16)
    cols, _ = tags.head("chem")
    # the head's decode is the multi-corpus model's decode of that head
    expected = decode_head(multi_pred.emissions(sents), multi_pred.crf_params(), tags, "chem", with_scores=False,
                           batch_size=16, bucket_size=8)
    assert head_pred.predict_tags(sents) == [t.tags for t in expected]
    # and its distillation targets are that head's block of the multi-corpus targets, to float precision
    both, _ = build_targets(multi_pred, sents, temperature=1.0, gold=[None] * len(sents), gold_weight=0.0,
                            chunk=16, heads=tags.slices)
    one, _ = build_targets(head_pred, sents, temperature=1.0, gold=[None] * len(sents), gold_weight=0.0, chunk=16)
    np.testing.assert_allclose(one.unary, both.unary[:, cols], atol=1e-6)
    np.testing.assert_allclose(one.pairs, both.pairs[:, cols, cols], atol=1e-6)
    assert not np.allclose(one.unary[:, 0], 1.0)  # not a degenerate all-"O" distribution


def test_a_head_distils_into_a_single_corpus_student_beside_a_cross_fitting_teacher(work: dict[str, Path],
                                                                                    capsys) -> None:
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.layout import LAST
    from nerservice.demo_corpus import generate
    from nerservice.distil.head import head_teacher
    from nerservice.distil.teacher_ref import load_teacher
    from nerservice.model.predictor import Predictor
    from nerservice.model.tagger import build_tagger

    dis, out = work["dis"], work["w"] / "student"
    args = ["distil", "--teacher", str(work["teacher"]), "--teacher-head", "dis",
            "--train", str(dis / "train.tsv"), str(dis / "dev.tsv"), "--dev", str(dis / "dev.tsv"),
            "--test", str(dis / "test.tsv"), "--cross-fit", f"{dis / 'dev.tsv'}={work['on_train']}",
            "--keep", "last", "--out", str(out), "--quiet", "--json", "--set", "training.epochs=4", "--set", "training.learning_rate=0.01"]
    assert main(args) == 0
    stdout = capsys.readouterr().out
    printed = json.loads(stdout)
    student = load_model(out / LAST)
    assert student.vocabs.tags.tags == ["O", "B-Disease", "I-Disease"]  # one head: a single-corpus model
    d = student.lineage["distillation"]
    assert d["teacher"]["head"] == "dis" and d["teacher"]["kind"] == "model"
    assert d["teacher"]["tags"] == ["O", "B-Disease", "I-Disease"]
    assert d["labelled"]["sentences"] == 80
    assert [c["sentences"] for c in d["cross_fit"]] == [20]  # dev's rows from the train-only model
    assert d["cross_fit"][0]["teacher"]["kind"] == "model" and "head" not in d["cross_fit"][0]["teacher"]
    # the teacher's figure is its head's on the same test file
    assert set(printed["teacher_test"]["micro"]) >= {"f1", "precision", "recall"}

    head = head_teacher(load_teacher(str(work["teacher"])), "dis")
    held = [s.tokens for s in generate(80, seed=4)]
    cfg = student.config.model
    untrained = build_tagger(cfg, n_words=len(student.vocabs.words), n_chars=len(student.vocabs.chars),
                             n_tags=len(student.vocabs.tags), seed=student.config.training.seed)
    got, majority, before = agreement_with_teacher(
        student.predictor(), head.loaded.predictor(),
        Predictor(untrained, student.vocabs, max_word_length=cfg.max_word_length), held)
    print(f"agreement with the head: {got:.3f} (majority tag {majority:.3f}, untrained {before:.3f})")
    assert got > max(majority, before) + 0.02, (got, majority, before)


@pytest.mark.parametrize("case", ["no such head", "single-corpus teacher", "with --corpora"])
def test_a_head_that_cannot_be_taken_is_refused_before_training(work: dict[str, Path], case: str, capsys) -> None:
    dis, out = work["dis"], work["w"] / f"refused-{case.replace(' ', '-')}"
    teacher = work["on_train"] if case == "single-corpus teacher" else work["teacher"]
    head = "genes" if case == "no such head" else "dis"
    data = (["--corpora", str(work["w"] / "c" / "corpora.json")] if case == "with --corpora"
            else ["--train", str(dis / "train.tsv"), "--dev", str(dis / "dev.tsv")])
    assert main(["distil", "--teacher", str(teacher), "--teacher-head", head, *data, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "[NER100]" in err
    assert {"no such head": "its heads are ['dis', 'chem']", "single-corpus teacher": "single-corpus model",
            "with --corpora": "--corpora distils every head"}[case] in err
    assert not out.exists()  # nothing written
