"""``nerservice train --final --seeds N --distil`` (``nerservice/distil/recipe.py``): the final ensemble, K
cross-fitting teachers that never see the block they label, and one student — what is trained, on which
rows, what is kept and recorded; ``--teacher REF --teacher-head NAME`` (a random multi-corpus model's head)
labelling the unlabelled text; and the coded errors before anything trains."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from random_model import build_random_multi_model  # tests/random_model.py

from helpers import TINY_OVERRIDES, json_tail
from nerservice.cli.main import main
from nerservice.distil.folds import fold_name, held_out_blocks
from nerservice.distil.recipe import RECIPE_DISTIL, recipe_distil_config
from nerservice.errors import ConfigError

# One residual layer, as tests/training/test_recipes.py: the demo corpus is learnt in 2-3 epochs either way.
TINY = [x for k, v in {**TINY_OVERRIDES, "training.epochs": 6, "training.patience": 2, "model.lstm_layers": 1}.items()
        for x in ("--set", f"{k}={v}")]


def _train(demo_corpus: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return ["train", "--train", str(demo_corpus["train"]), "--dev", str(demo_corpus["dev"]),
            "--test", str(demo_corpus["test"]), "--out", str(out), "--quiet", *TINY, *extra]


# A --teacher for the demo corpus (Chemical + Disease): random weights (built in a second, never trained), so its
# targets differ from any trained model's; "both" has exactly the corpus's types, "dis" fewer, "wide" more.
HEADS = (("dis", ["O", "B-Disease", "I-Disease"]),
         ("both", ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]),
         ("wide", ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease", "B-Gene", "I-Gene"]))


@pytest.fixture(scope="module")
def multi_teacher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_random_multi_model(tmp_path_factory.mktemp("multi") / "model", heads=HEADS)


@pytest.fixture(scope="module")
def unlabelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from nerservice.demo_corpus import generate

    path = tmp_path_factory.mktemp("unlabelled") / "u.txt"
    path.write_text("".join("\n".join(s.tokens) + "\n\n" for s in generate(12, seed=99)), encoding="utf-8")
    return path



@pytest.mark.parametrize("n", [2, 3, 10, 11, 97])
@pytest.mark.parametrize("k", [2, 3, 4, 10])
def test_the_blocks_partition_the_rows_in_order(n: int, k: int) -> None:
    if n < k:
        with pytest.raises(ConfigError, match="cannot make"):
            held_out_blocks(n, k)
        return
    blocks = held_out_blocks(n, k)
    assert [r for b in blocks for r in b] == list(range(n))  # contiguous, in corpus order, each row once
    assert max(map(len, blocks)) - min(map(len, blocks)) <= 1
    assert [fold_name(i, k) for i in range(k)][-1] == f"{k}of{k}"


@pytest.mark.parametrize("k", [0, 1, 11])
def test_fold_counts_outside_2_to_10_are_refused(k: int) -> None:
    with pytest.raises(ConfigError, match="need 2 to 10"):
        held_out_blocks(100, k)


def test_the_recipes_distillation_settings_yield_to_the_users() -> None:
    assert recipe_distil_config({}).model_dump().items() >= RECIPE_DISTIL.items()
    mine = recipe_distil_config({"gold_weight": 0.25, "temperature": 2.0})
    assert (mine.gold_weight, mine.augment, mine.temperature) == (0.25, RECIPE_DISTIL["augment"], 2.0)
    with pytest.raises(ConfigError, match="unknown distillation setting"):
        recipe_distil_config({"gold": 1})


@pytest.mark.parametrize(("extra", "message"), [
    (["--distil"], "it needs --final"),
    (["--final", "--folds", "3"], "belong to --distil"),
    (["--final", "--unlabelled", "u.txt"], "belong to --distil"),
    (["--final", "--distil", "--folds", "1"], "need 2 to 10"),
    (["--final", "--distil", "--set", "distil.gold=1"], "unknown distillation setting"),
    (["--final", "--distil", "--set", "distil.augment=99"], "distil.augment"),
    (["--final", "--distil", "--set", "model.nope=1"], "model.nope"),
    (["--final", "--distil", "--unlabelled", "/no/such/file.txt"], "file.txt"),
    (["--distil", "--set", "distil.gold_weight=0.5"], "it needs --final"),
    (["--set", "distil.gold_weight=0.5"], "distil.gold_weight"),  # without --distil: an unknown config key
    (["--final", "--distil", "--jobs", "0"], "--jobs 0"),
    (["--final", "--student-set", "model.encoder=null"], "belongs to --distil"),
    (["--final", "--distil", "--student-set", "model.nope=1"], "model.nope"),
    (["--final", "--distil", "--student-set", "model.dropout=7"], "dropout"),
    (["--final", "--distil", "--student-set", "distil.augment=1"], "distil.KEY settings go to --set"),
    (["--seeds", "2", "--jobs", "65"], "--jobs 65"),
    (["--seeds", "2", "--jobs", "2", "--data-parallel", "2"], "not with --corpora or --data-parallel"),
])
def test_bad_distil_options_are_coded_errors_before_training(demo_corpus, tmp_path: Path, capsys, extra,
                                                             message) -> None:
    assert main(_train(demo_corpus, tmp_path / "o", *extra)) == 2
    err = capsys.readouterr().err
    assert message in err and "NER" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("extra", "message"), [
    (["--final", "--distil", "--unlabelled", "{u}", "--teacher-head", "both"], "it needs --teacher"),
    (["--final", "--teacher", "{m}"], "belong to --distil"),
    (["--final", "--teacher", "{m}", "--teacher-head", "both"], "belong to --distil"),
    (["--final", "--distil", "--teacher", "{m}", "--teacher-head", "both"], "without --unlabelled"),
    (["--final", "--distil", "--unlabelled", "{u}", "--teacher", "{m}"], "is a multi-corpus model"),
    (["--final", "--distil", "--unlabelled", "{u}", "--teacher", "{m}", "--teacher-head", "genes"],
     "its heads are ['dis', 'both', 'wide']"),
    (["--final", "--distil", "--unlabelled", "{u}", "--teacher", "{s}", "--teacher-head", "both"],
     "a single-corpus model has no heads"),
    (["--final", "--distil", "--unlabelled", "{u}", "--teacher", "{m}", "--teacher-head", "dis"],
     "the teacher does not know"),  # the head lacks Chemical: check_tags's message
    (["--final", "--distil", "--unlabelled", "{u}", "--teacher", "{m}", "--teacher-head", "wide"],
     "the corpus's (train + dev) are"),  # it covers them, but the fold teachers' columns are the corpus's
    (["--final", "--distil", "--unlabelled", "{u}", "--teacher", "/no/such/teacher"], "no such model directory"),
])
def test_a_teacher_that_cannot_label_the_unlabelled_text_is_refused_before_training(
        demo_corpus, multi_teacher: Path, unlabelled: Path, tiny_random_model_dir: Path, tmp_path: Path, capsys,
        extra: list[str], message: str) -> None:
    paths = {"{m}": str(multi_teacher), "{s}": str(tiny_random_model_dir), "{u}": str(unlabelled)}
    assert main(_train(demo_corpus, tmp_path / "o", *(paths.get(x, x) for x in extra))) == 2
    err = capsys.readouterr().err
    assert message in err and "[NER" in err
    assert not (tmp_path / "o").exists()


def test_distil_with_a_corpora_config_says_what_to_run_instead(tmp_path: Path, capsys) -> None:
    corpora = tmp_path / "c.json"
    corpora.write_text("{}", encoding="utf-8")
    assert main(["train", "--corpora", str(corpora), "--final", "--distil", "--out", str(tmp_path / "o")]) == 2
    assert "nerservice distil --corpora" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_final_distil_trains_teachers_that_never_see_their_block_and_one_student(demo_corpus, tmp_path: Path,
                                                                                 capsys) -> None:
    from nerservice.artifacts.ensemble_folder import is_ensemble_dir
    from nerservice.artifacts.formats import load_model, verify_manifest
    from nerservice.data import read_corpus
    from nerservice.lineage import corpus_fingerprint

    out = tmp_path / "fd"
    args = _train(demo_corpus, out, "--final", "--seeds", "2", "--distil", "--json")
    assert main([*args, "--jobs", "2"]) == 0  # phase 2 and the fold teachers: 6 runs, 2 worker processes
    printed = json_tail(capsys.readouterr().out)
    train_s, dev_s = (read_corpus(demo_corpus[k]).sentences for k in ("train", "dev"))
    labelled = [*train_s, *dev_s]
    seeds = [TINY_OVERRIDES["training.seed"], TINY_OVERRIDES["training.seed"] + 1]
    epochs = load_model(out / "phase1" / "model-best").metrics["epoch"]

    # The final recipe as without --distil: phase 1, two members on train + dev, their ensemble.
    assert is_ensemble_dir(out / "ensemble") and printed["teacher_dir"] == str(out / "ensemble")
    # Each fold's teachers: phase 1's epoch count on the other block only, scored on theirs.
    blocks = held_out_blocks(len(labelled), 2)
    for name, rows in zip(("1of2", "2of2"), blocks):
        rest, held = [*labelled[:rows.start], *labelled[rows.stop:]], labelled[rows.start:rows.stop]
        for seed in seeds:
            m = load_model(out / f"fold-{name}" / f"seed-{seed}" / "model-last")
            assert m.config.training.seed == seed and m.config.training.epochs == epochs
            assert m.lineage["corpus_fingerprints"]["train"] == corpus_fingerprint(rest)
            assert m.lineage["corpus_fingerprints"]["dev"] == corpus_fingerprint(held)
            assert m.lineage["recipe"]["held_out_rows"] == [rows.start, rows.stop]
        ens = load_model(out / f"fold-{name}" / "ensemble")
        assert ens.metrics["held_out"]["micro"]["f1"] == pytest.approx(printed["folds"][name]["micro"]["f1"])

    # The student: one model, phase 1's epochs on train + dev, each labelled row's targets from its fold.
    student_dir = out / "student" / "model-last"
    assert printed["model_dir"] == str(student_dir) and not is_ensemble_dir(student_dir)
    verify_manifest(student_dir)
    student = load_model(student_dir)
    assert student.config.training.epochs == epochs and student.config.training.seed == seeds[0]
    recipe = student.lineage["recipe"]
    assert recipe["name"] == "final-distil" and recipe["phase2"]["epochs"] == epochs
    assert [f["held_out_rows"] for f in recipe["folds"]] == [[b.start, b.stop] for b in blocks]
    distilled = student.lineage["distillation"]
    assert distilled["teacher"]["path"] == str((out / "ensemble").resolve())
    assert [(f["teacher"]["path"], f["sentences"]) for f in distilled["cross_fit"]] == [
        (str((out / f"fold-{n}" / "ensemble").resolve()), len(b)) for n, b in zip(("1of2", "2of2"), blocks)]
    assert distilled["settings"]["gold_weight"] == 0.5 and distilled["settings"]["augment"] == 1
    assert distilled["augmented"]["sentences"] > 0 and distilled["labelled"]["sentences"] == len(labelled)
    assert student.lineage["corpus_fingerprints"]["dev"] == corpus_fingerprint(dev_s)
    # It learnt the demo corpus, as its teachers did.
    assert printed["test"]["micro"]["f1"] >= 0.9 and printed["teacher_test"]["micro"]["f1"] >= 0.9
    assert student.metrics["test"]["micro"]["f1"] == pytest.approx(printed["test"]["micro"]["f1"])

    # A rerun (in this process: no --jobs) trains nothing again: every run resumes finished, and the ensembles,
    # targets and student are the same.
    weights = student.model.get_weights()
    assert main(args) == 0
    again = json_tail(capsys.readouterr().out)
    assert again["test"] == printed["test"] and again["folds"] == printed["folds"]
    for a, b in zip(weights, load_model(student_dir).model.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_a_worker_processs_error_reaches_the_caller_with_its_code(demo_corpus, tmp_path: Path) -> None:
    from nerservice.config import NerConfig
    from nerservice.data import read_corpus
    from nerservice.errors import EmbeddingsError
    from nerservice.training.recipes import RunRequest
    from nerservice.training.run_pool import RunSpec, run_specs

    train_s = read_corpus(demo_corpus["train"]).sentences
    config = NerConfig().with_overrides({**TINY_OVERRIDES, "model.embeddings": [str(tmp_path / "missing.vec")]})
    specs = [RunSpec(RunRequest(config, tmp_path / f"r{i}"), train_s, train_s[:10], None, {}) for i in range(2)]
    with pytest.raises(EmbeddingsError) as caught:  # raised in a spawned worker, pickled back with its fields
        run_specs(specs, jobs=2, resume=False, progress=False)
    assert "missing.vec" in str(caught.value) and caught.value.to_dict()["code"] == EmbeddingsError.code
    assert not any((tmp_path / f"r{i}" / "model-last").exists() for i in range(2))


@pytest.mark.slow
def test_one_seed_one_model_per_fold_and_a_teacher_head_for_the_unlabelled_text(
        demo_corpus, multi_teacher: Path, unlabelled: Path, tmp_path: Path, capsys) -> None:
    from nerservice.artifacts.formats import load_model
    from nerservice.distil.confidence import confidence
    from nerservice.distil.run import Teacher, folder_teacher
    from nerservice.distil.targets import build_targets
    from nerservice.distil.teacher_ref import load_teacher

    out = tmp_path / "fd1"
    assert main(_train(demo_corpus, out, "--final", "--distil", "--folds", "3", "--json", "--unlabelled",
                       str(unlabelled), "--teacher", str(multi_teacher), "--teacher-head", "both")) == 0
    printed = json_tail(capsys.readouterr().out)
    assert printed["teacher_dir"] == str(out / "model-last")  # the final model itself, no ensemble
    assert not (out / "ensemble").exists()
    student = load_model(out / "student" / "model-last")
    cross_fit = student.lineage["distillation"]["cross_fit"]
    assert [f["teacher"]["path"] for f in cross_fit] == [
        str((out / f"fold-{i}of3" / "model-last").resolve()) for i in (1, 2, 3)]
    for i, fold in enumerate(student.lineage["recipe"]["folds"], start=1):
        teacher = load_model(out / f"fold-{i}of3" / "model-last")  # its dev: the block it never trained on
        assert fold["members"] == 1
        assert fold["held_out_f1"] == pytest.approx(teacher.metrics["dev"]["micro"]["f1"])
        assert fold["held_out_f1"] == pytest.approx(printed["folds"][f"{i}of3"]["micro"]["f1"])

    # --teacher: the final model still trained and is still the recipe's scored teacher, but the unlabelled
    # text's targets are the "both" head's, and both lineage records name it (reference, folder, head)
    head = load_teacher(str(multi_teacher), head="both")
    recipe, distilled = student.lineage["recipe"], student.lineage["distillation"]
    assert recipe["teacher"] == {"path": str(out / "model-last"), "members": 1}
    assert recipe["unlabelled_teacher"] == distilled["teacher"] == head.info
    assert (head.info["head"], head.info["path"], head.info["teacher_heads"]) == (
        "both", str(multi_teacher.resolve()), ["dis", "both", "wide"])
    assert printed["unlabelled_teacher_test"]["micro"]["f1"] is not None
    settings = student.lineage["distillation"]["settings"]
    tokens = [s.split("\n") for s in unlabelled.read_text(encoding="utf-8").strip().split("\n\n")]

    def soft(teacher: Teacher) -> dict:
        targets, _ = build_targets(teacher.loaded.predictor(batch_size=16), tokens,
                                   temperature=settings["temperature"], gold=[None] * len(tokens), gold_weight=0.0,
                                   chunk=settings["teacher_chunk"])
        return confidence(targets.unary, [slice(0, targets.n_tags)])

    assert distilled["unlabelled"]["sentences"] == len(tokens) == 12
    pooled = dict(distilled["target_confidence"]["unlabelled"])
    assert pooled.pop("by_file") == {str(unlabelled): pooled}  # one --unlabelled file: its figures are the pool's
    assert pooled == pytest.approx(soft(head), abs=1e-5)
    assert pooled != pytest.approx(soft(folder_teacher(out / "model-last")), abs=1e-3)  # not the run's own teacher
