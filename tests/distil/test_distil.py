"""`nerservice distil` end to end on a tiny fixture (a random-weight 2-model ensemble as the teacher), and
the pieces around it: targets, settings, coded errors."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers import agreement_with_teacher, save_random_model


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from nerservice.artifacts.ensemble_folder import save_ensemble
    from nerservice.data.writers import write_corpus
    from nerservice.demo_corpus import generate

    w = tmp_path_factory.mktemp("distil")
    members = [save_random_model(w / f"m{i}", {}, seed=i) for i in range(2)]
    paths = {"ensemble": save_ensemble(w / "ens", members), "member": members[0]}
    for name, n, seed in (("train", 40, 1), ("dev", 20, 2)):
        write_corpus(generate(n, seed=seed), w / f"{name}.tsv", fmt="tsv")
        paths[name] = w / f"{name}.tsv"
    # unlabelled: a token-per-line file, and an IOB file whose tags (another label set) are ignored
    (w / "u.txt").write_text("\n\n".join("\n".join(s.tokens) for s in generate(60, seed=3)) + "\n", encoding="utf-8")
    (w / "other.tsv").write_text("-DOCSTART-\tO\n\nZyxomab\tB-Gene\ntreats\tO\n.\tO\n", encoding="utf-8")
    paths["unlabelled"], paths["other"] = w / "u.txt", w / "other.tsv"
    paths["out"] = w / "out"
    return paths


def test_the_student_learns_the_teachers_tags(work: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Above chance: more of the teacher's tags on held-out sentences than the majority tag and than the
    same student before training; and the folder is an ordinary model recording its teacher and data."""
    from nerservice.artifacts.files import read_manifest
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.layout import FORMAT, LAST
    from nerservice.cli.main import main
    from nerservice.demo_corpus import generate
    from nerservice.inference import Extractor
    from nerservice.model.predictor import Predictor
    from nerservice.model.tagger import build_tagger

    args = ["distil", "--teacher", str(work["ensemble"]), "--train", str(work["train"]), "--dev", str(work["dev"]),
            "--unlabelled", str(work["unlabelled"]), str(work["other"]), "--out", str(work["out"]), "--quiet",
            "--keep", "last", "--set", "training.epochs=4", "--set", "training.learning_rate=0.01",
            "--set", "distil.gold_weight=0.0"]
    assert main(args) == 0
    assert "teacher: ensemble of 2 model(s)" in capsys.readouterr().out
    weights = load_model(work["out"] / LAST).model.get_weights()
    assert main(args) == 0  # a rerun resumes from OUT/checkpoint: all 4 epochs done, nothing retrained
    assert "resuming from" in capsys.readouterr().out
    for a, b in zip(weights, load_model(work["out"] / LAST).model.get_weights()):
        np.testing.assert_array_equal(a, b)
    student = load_model(work["out"] / LAST)
    teacher = load_model(work["ensemble"])
    assert read_manifest(work["out"] / LAST)["format"] == FORMAT
    assert student.vocabs.tags.tags == teacher.vocabs.tags.tags
    assert student.vocabs.words.id("zyxomab") != student.vocabs.words.id("qqqunseen"), "unlabelled words in vocab"
    d = student.lineage["distillation"]
    assert d["teacher"]["kind"] == "ensemble" and d["teacher"]["members"] == 2
    assert d["unlabelled"]["sentences"] == 61 and d["unlabelled"]["tokens"] > 600
    assert d["labelled"]["sentences"] == 40 and d["settings"]["gold_weight"] == 0.0
    soft = d["target_confidence"]  # how soft the targets were, per kind of text, counted over every token
    assert soft["labelled"]["tokens"] == d["labelled"]["tokens"]
    assert soft["unlabelled"]["tokens"] == d["unlabelled"]["tokens"]
    assert 0 < soft["unlabelled"]["mean_max"] <= 1 and 0 <= soft["labelled"]["soft_share"] <= 1
    per_file = soft["unlabelled"]["by_file"]  # the same figures per --unlabelled file, tokens adding up
    assert set(per_file) == {str(work["unlabelled"]), str(work["other"])} == set(d["unlabelled"]["files"])
    assert sum(f["tokens"] for f in per_file.values()) == d["unlabelled"]["tokens"]
    assert all(0 <= f["entity_share"] <= 1 for f in per_file.values())
    # --keep last: exactly training.epochs epochs, not stopped by the teacher's patience of 2
    assert teacher.config.training.patience == 2 and student.config.training.patience == 4
    assert len(json.loads((work["out"] / LAST / "history.json").read_text())) == 4

    # it serves like any model: the Extractor (REST, CLI, Spark) takes the folder as it is
    entities = Extractor.load(work["out"] / LAST).extract(["Patients with asthma took cisplatin ."])
    assert len(entities) == 1 and all(e.label in {"Disease", "Chemical"} for e in entities[0])

    held = [s.tokens for s in generate(80, seed=4)]
    cfg = student.config.model
    untrained = build_tagger(cfg, n_words=len(student.vocabs.words), n_chars=len(student.vocabs.chars),
                             n_tags=len(student.vocabs.tags), seed=student.config.training.seed)
    got, majority, before = agreement_with_teacher(
        student.predictor(), teacher.predictor(), Predictor(untrained, student.vocabs, max_word_length=cfg.max_word_length),
        held)
    assert got > max(majority, before) + 0.1, (got, majority, before)


def test_targets_pad_and_mix_in_gold(work: dict[str, Path]) -> None:
    from nerservice.artifacts.formats import load_model
    from nerservice.demo_corpus import generate
    from nerservice.distil.targets import build_targets, gold_counts

    teacher = load_model(work["member"])
    sents = generate(5, seed=9)
    tags = teacher.vocabs.tags
    gold = [np.array([tags.id(t) for t in s.tags]) for s in sents]
    pure, _ = build_targets(teacher.predictor(), [s.tokens for s in sents], temperature=1.0, gold=gold,
                            gold_weight=0.0, chunk=2)
    mixed, _ = build_targets(teacher.predictor(), [s.tokens for s in sents], temperature=1.0,
                             gold=[gold[0], None, *gold[2:]], gold_weight=1.0, chunk=2)
    np.testing.assert_allclose(pure.unary.sum(axis=1), 1.0, atol=1e-5)  # marginals are distributions
    soft, _ = build_targets(teacher.predictor(), [s.tokens for s in sents], temperature=3.0, gold=gold,
                            gold_weight=0.0, chunk=8)

    def entropy(u: np.ndarray) -> float:
        return float(-(u * np.log(np.clip(u, 1e-12, 1))).sum())

    assert entropy(soft.unary) > entropy(pure.unary)  # a temperature above 1 softens the teacher
    np.testing.assert_allclose(soft.pairs.sum(axis=(1, 2)), pure.pairs.sum(axis=(1, 2)), atol=1e-4)  # T - 1 each
    g_node, g_pairs = gold_counts(gold[0], len(tags))
    np.testing.assert_allclose(mixed.unary[: len(gold[0])], g_node)
    np.testing.assert_allclose(mixed.pairs[0], g_pairs)
    np.testing.assert_allclose(mixed.pairs[1], pure.pairs[1])  # no gold: the teacher's, whatever the weight
    rows = np.array([3, 1])
    t = max(len(sents[3].tokens), len(sents[1].tokens)) + 3
    out = pure.batch(rows, {"token_ids": np.zeros((4, t), np.int32)})  # 2 padding rows, padded time axis
    assert out["teacher_unary"].shape == (4, t, len(tags)) and out["teacher_pairs"].shape == (4, len(tags), len(tags))
    n3 = len(sents[3].tokens)
    np.testing.assert_allclose(out["teacher_unary"][0, :n3], pure.unary[pure.offsets[3]:pure.offsets[4]])
    assert not out["teacher_unary"][0, n3:].any() and not out["teacher_unary"][2:].any()
    assert not out["teacher_pairs"][2:].any()


def test_bad_settings_and_corpora_are_coded_errors(work: dict[str, Path], tmp_path: Path) -> None:
    from nerservice.cli.main import main
    from nerservice.distil.config import DistilConfig, split_overrides
    from nerservice.errors import ConfigError

    with pytest.raises(ConfigError, match="distil.gold_wieght"):
        DistilConfig().with_overrides(split_overrides(["distil.gold_wieght=1"])[1])
    with pytest.raises(ConfigError, match="distil.gold_weight"):
        DistilConfig().with_overrides(split_overrides(["distil.gold_weight=2"])[1])
    bad = tmp_path / "genes.tsv"
    bad.write_text("BRCA1\tB-Gene\n", encoding="utf-8")
    args = ["distil", "--teacher", str(work["ensemble"]), "--train", str(bad), "--dev", str(work["dev"]),
            "--out", str(tmp_path / "o"), "--quiet"]
    assert main(args) == 2  # NER100: tags the teacher does not know
    assert not (tmp_path / "o").exists(), "nothing written"


def test_cross_fitting_takes_each_folds_targets_from_its_own_teacher(work: dict[str, Path], tmp_path: Path) -> None:
    """Rows of a fold get exactly what that fold's teacher alone gives them (gold mixed in as for any labelled
    sentence); the other rows and the unlabelled text keep the main teacher's; the lineage says which."""
    from nerservice.artifacts.formats import load_model
    from nerservice.config import NerConfig
    from nerservice.data import read_corpus
    from nerservice.distil.config import DistilConfig
    from nerservice.distil.run import FoldTeacher, plan_distillation, teacher_from
    from nerservice.distil.student import StudentTagger
    from nerservice.distil.targets import build_targets

    def teacher(path: Path) -> object:
        return teacher_from(load_model(path), ref=str(path), path=path, name="t", version="1")

    main_t, fold_t = teacher(work["ensemble"]), teacher(save_random_model(tmp_path / "f", {}, seed=7))
    labelled = read_corpus(work["train"]).sentences
    dconfig = DistilConfig(gold_weight=0.25)
    config = NerConfig()
    rows = list(range(10, 25))
    plan = plan_distillation(main_t, main_t.loaded.predictor(), config, dconfig, labelled=labelled, unlabelled=None,
                             loss="x", progress=False, tagger_cls=StudentTagger,
                             cross_fit=[FoldTeacher(fold_t, rows)])
    tags = main_t.tags
    gold = [np.array([tags.id(t) for t in s.tags]) for s in labelled]

    def alone(t: object, idx: list[int]) -> object:
        return build_targets(t.loaded.predictor(), [labelled[i].tokens for i in idx], temperature=1.0,  # type: ignore[attr-defined]
                             gold=[gold[i] for i in idx], gold_weight=0.25, chunk=64)[0]

    others = [i for i in range(len(labelled)) if i not in rows]
    for idx, t in ((rows, fold_t), (others, main_t)):
        ref = alone(t, idx)
        for j, i in enumerate(idx):
            got = plan.targets.unary[plan.targets.offsets[i]:plan.targets.offsets[i + 1]]
            np.testing.assert_allclose(got, ref.unary[ref.offsets[j]:ref.offsets[j + 1]], atol=1e-6)
            np.testing.assert_allclose(plan.targets.pairs[i], ref.pairs[j], atol=1e-5)
    # the two teachers differ (random weights), so the fold's rows really changed teacher
    main_only = alone(main_t, rows)
    assert not np.allclose(main_only.unary, plan.targets.unary[plan.targets.offsets[10]:plan.targets.offsets[25]])
    fold_record = plan.record["cross_fit"][0]
    assert fold_record["sentences"] == 15 and fold_record["teacher"]["ref"] == str(tmp_path / "f")
    assert fold_record["tokens"] == sum(len(labelled[i].tokens) for i in rows)


def test_cross_fitting_on_the_cli_and_its_coded_errors(work: dict[str, Path], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Two --train files, each labelled by the other's teacher; bad folds fail before anything is written."""
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.layout import LAST
    from nerservice.cli.main import main
    from nerservice.data.writers import write_corpus
    from nerservice.demo_corpus import generate

    second = tmp_path / "second.tsv"
    write_corpus(generate(30, seed=11), second, fmt="tsv")
    fold_a, fold_b = (save_random_model(tmp_path / n, {}, seed=s) for n, s in (("a", 5), ("b", 6)))
    base = ["distil", "--teacher", str(work["ensemble"]), "--train", str(work["train"]), str(second),
            "--dev", str(work["dev"]), "--quiet", "--keep", "last", "--set", "training.epochs=1"]
    out = tmp_path / "out"
    assert main([*base, "--out", str(out), "--cross-fit", f"{work['train']}={fold_a}",
                 "--cross-fit", f"{second}={fold_b}"]) == 0
    assert "cross-fitting: 40 labelled sentences take their targets from" in capsys.readouterr().out
    record = load_model(out / LAST).lineage["distillation"]["cross_fit"]
    assert [(r["sentences"], r["teacher"]["ref"]) for r in record] == [(40, str(fold_a)), (30, str(fold_b))]

    genes = save_gene_model(tmp_path / "g2")
    for extra, needle in (([f"{work['dev']}={fold_a}"], "not one of the --train files"),
                          ([f"{second}"], "is not FILE=TEACHER"),
                          ([f"{second}={genes}"], "cross-fitting teacher"),
                          ([f"{second}={fold_a}", f"{second}={fold_b}"], "overlaps an earlier fold")):
        bad_out = tmp_path / f"bad{len(needle)}"
        args = [*base, "--out", str(bad_out)]
        for e in extra:
            args += ["--cross-fit", e]
        assert main(args) == 2, extra
        assert needle in capsys.readouterr().err, extra
        assert not bad_out.exists(), "nothing written"


def save_gene_model(out: Path) -> Path:
    """A random-weight model of another tag set (Gene) than the demo corpus's (Disease, Chemical)."""
    from helpers import TINY_OVERRIDES, tiny_config
    from nerservice.artifacts.model_folder import save_model
    from nerservice.data import Sentence
    from nerservice.model.tagger import build_tagger
    from nerservice.training.trainer import build_vocabularies

    config = tiny_config().with_overrides(TINY_OVERRIDES)
    vocabs = build_vocabularies([Sentence(("BRCA1", "binds"), ("B-Gene", "O"))])
    model = build_tagger(config.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                         n_tags=len(vocabs.tags), seed=0)
    return save_model(out, model=model, vocabs=vocabs, config=config)
