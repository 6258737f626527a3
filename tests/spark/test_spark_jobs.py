"""The three spark-submit jobs on a real standalone cluster (2 workers): preprocess with quarantine,
2-worker synchronous training (identical weights, GPU pinning, model store), batch inference equal to the
in-process Extractor, and a worker killed mid-training that the retried barrier stage recovers from."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import JAX_XLA_FLAGS, TINY_OVERRIDES  # tests/helpers.py

from .job_helpers import check, check_resumed_after_kill, job_json

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MODEL_NAME = "spark-demo"


def overrides(**extra: object) -> list[str]:
    """TINY_OVERRIDES for train.py --set; patience pinned high so the epoch counts asserted below are exact.
    One residual BiLSTM layer instead of two: every barrier stage's TensorFlow workers trace the step anew,
    and one layer traces in ~3/4 of the time (12.0 -> 8.8 s in one process here), while nothing asserted
    depends on the depth (the demo corpus' dev F1 is 1.0 from epoch 3 with either)."""
    args: list[str] = []
    for key, value in {**TINY_OVERRIDES, "training.patience": 50, "model.lstm_layers": 1, **extra}.items():
        args += ["--set", f"{key}={json.dumps(value)}"]
    return args


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("store")


@pytest.fixture(scope="module")
def prepared(spark_cluster, bad_corpus, tmp_path_factory):  # noqa: ANN001
    out = tmp_path_factory.mktemp("prep") / "prep"
    p = bad_corpus["paths"]
    proc = spark_cluster.submit(
        "spark_jobs/preprocess.py", "--train", str(p["train"]), str(bad_corpus["empty"]), "--dev", str(p["dev"]),
        "--test", str(p["test"]), "--out", str(out), "--word2vec", "8", timeout=240)
    check(proc, "preprocess")
    return out, proc


def test_preprocess_quarantines_bad_lines_and_counts_add_up(prepared, bad_corpus) -> None:  # noqa: ANN001
    import pandas as pd

    from nerservice.embeddings import load_vectors

    out, _ = prepared
    stats = json.loads((out / "stats.json").read_text())
    quarantine = pd.concat([pd.read_json(f, lines=True) for f in sorted((out / "quarantine").glob("*.json"))
                            if f.stat().st_size])
    train_file = str(bad_corpus["paths"]["train"])
    rejected = quarantine[quarantine.kind == "sentence"]
    assert sorted(zip(rejected.file, rejected.line)) == [(train_file, n) for n in bad_corpus["broken_lines"]]
    assert any("3 tab-separated column" in r for r in rejected.reason)
    assert any("invalid tag 'B-'" in r for r in rejected.reason)
    files = quarantine[quarantine.kind == "file"]
    assert list(files.file) == [str(bad_corpus["empty"])] and "NER203" in files.reason.iloc[0]

    written = {s: len(pd.read_parquet(out / s)) for s in ("train", "dev", "test")}
    assert written == {"train": 398, "dev": 80, "test": 80}
    acc = stats["accounting"]
    assert acc["sentence_blocks"] == bad_corpus["blocks"] == sum(written.values()) + len(rejected)
    assert acc["adds_up"] and acc["sentences_rejected"] == 2 and acc["files_rejected"] == 1
    train = pd.read_parquet(out / "train")
    assert stats["splits"]["train"]["tokens"] == int(train.tokens.map(len).sum())
    assert sum(stats["splits"]["train"]["length_histogram"].values()) == 398
    assert set(stats["splits"]["train"]["entities"]) == {"Chemical", "Disease"}
    assert (train.file == train_file).all() and train.line.min() >= 1
    vectors = load_vectors(out / "word2vec.txt", progress=False)
    assert vectors.dim == 8 and "cisplatin" in vectors.words and stats["word2vec"]["words"] == len(vectors.words)


@pytest.fixture(scope="module")
def trained(spark_cluster, prepared, store_dir, tmp_path_factory):  # noqa: ANN001

    out = tmp_path_factory.mktemp("run") / "two-workers"
    proc = spark_cluster.submit(
        "spark_jobs/train.py", "--data", str(prepared[0]), "--out", str(out), "--workers", "2",
        "--register", MODEL_NAME, "--promote", "production", *overrides(**{"training.epochs": 4}),
        conf={"spark.executor.resource.gpu.amount": "1", "spark.task.resource.gpu.amount": "1"},
        env={"NERSERVICE_STORE_DIR": str(store_dir)}, timeout=420)
    check(proc, "train")
    return out, job_json(proc.stdout)


def test_two_workers_train_identical_weights_pinned_and_registered(trained, prepared, store_dir) -> None:  # noqa: ANN001
    import pyarrow.parquet as pq

    from nerservice.artifacts.formats import load_model, verify_manifest
    from nerservice.data import Sentence
    from nerservice.metrics import evaluate_predictor
    from nerservice.store import ModelStore

    out, summary = trained
    assert json.loads((out / "summary.json").read_text()) == summary
    workers = summary["workers"]
    assert [w["rank"] for w in workers] == [0, 1] and len({w["pid"] for w in workers}) == 2
    assert workers[0]["weights_digest"] == workers[1]["weights_digest"] and summary["weights_identical"]
    # Each task's TensorFlow-generated sources went into its own temporary folder and left with it: the worker
    # ends with os._exit, where TensorFlow's own atexit clean-up never runs (distributed/task_tempdir.py).
    scratch = [w["task_tempdir"] for w in workers]
    assert all(t["generated_removed"] > 0 and not t["left"] and not Path(t["path"]).exists() for t in scratch)
    # Each task pinned to the fake GPU its worker advertised (a different one per worker).
    assert sorted(w["cuda_visible_devices"] for w in workers) == ["0", "1"]
    # The shards partition every global batch: together they are the whole epoch.
    shards = [w["shard_epoch1"] for w in workers]
    assert shards[0]["global_sentences"] == sum(s["sentences"] for s in shards) == 398
    assert summary["epochs_completed"] == 4 and summary["resumed_from_epoch"] == 0
    # The training phase counts every epoch's tokens over the timed steps only; the warm-up and the other
    # fixed costs are reported beside it, for every rank.
    phase, phases = summary["training_phase"], summary["phases"]
    assert phase["tokens"] == 4 * summary["data"]["train"]["tokens"] and phase["warmup_s"] > 0
    assert phase["tokens_per_s"] == pytest.approx(phase["tokens"] / phase["seconds"], rel=1e-3)
    assert summary["step"] == {"traces": 1, "allreduces_per_step": 1}
    assert len(phases["setup_s"]) == 2 and all(s > phase["warmup_s"] / 2 for s in phases["setup_s"])
    assert phases["read_splits_s"] > 0 and phases["stage_s"] > phases["rank0"]["train_s"] + phases["rank0"]["eval_s"]
    assert summary["dev"]["micro"]["f1"] > 0.8
    # Each worker decoded half of dev and the two summed their counts on the TF ring (not Spark's barrier
    # allGather): the kept epoch's dev scores are exactly those of model-best on the whole dev split here.
    assert summary["dev_eval"] == "sharded-all-reduce"
    table = pq.read_table(prepared[0] / "dev", columns=["tokens", "tags"]).to_pydict()
    dev = [Sentence(tuple(t), tuple(g), "dev", i + 1) for i, (t, g) in enumerate(zip(table["tokens"], table["tags"]))]
    assert summary["dev"]["sentences"] == len(dev) == summary["data"]["dev"]["sentences"]
    assert summary["dev"] == evaluate_predictor(load_model(out / "model-best").predictor(), dev)
    assert summary["registered"]["name"] == MODEL_NAME and summary["registered"]["version"] == 1
    assert summary["promoted"]["done"]
    resolved = ModelStore.embedded(store_dir).resolve(f"{MODEL_NAME}@production")
    assert verify_manifest(resolved)["files"] == verify_manifest(out / "model-best")["files"]


def test_predict_equals_in_process_extractor(spark_cluster, trained, store_dir, tmp_path) -> None:  # noqa: ANN001
    import pandas as pd

    from nerservice.inference import Extractor

    texts = ["Patients with breast cancer were treated with cisplatin .",
             "No cases of asthma were reported. Lithium - induced renal failure was seen in 3 rats.",
             "", "The association between leukemia and melanoma remains unclear.",
             "A 45-year-old woman with hepatitis developed seizures after receiving ketamine."] * 4
    src = tmp_path / "texts.jsonl"
    src.write_text("".join(json.dumps({"doc": f"d{i}", "body": t}) + "\n" for i, t in enumerate(texts)))
    out = tmp_path / "preds"
    proc = spark_cluster.submit(
        "spark_jobs/predict.py", "--model", f"{MODEL_NAME}@production", "--input", str(src), "--id-col", "doc",
        "--text-col", "body", "--output", str(out), "--partitions", "6",
        env={"NERSERVICE_STORE_DIR": str(store_dir)}, timeout=240)
    check(proc, "predict")
    summary = job_json(proc.stdout)
    assert summary["texts"] == len(texts) and summary["errors"] == 0
    # Loaded once per executor Python worker, not once per partition.
    assert 1 <= summary["extractor_loads"] < summary["partitions"] == 6

    got = pd.read_parquet(out).set_index("id")
    expected = Extractor.load(trained[0] / "model-best").extract(texts)
    assert sum(len(e) for e in expected) == summary["entities"] > 0
    for i, ents in enumerate(expected):
        row = [dict(e) for e in got.loc[f"d{i}", "entities"]]
        assert [(e["start"], e["end"], e["label"], e["text"]) for e in row] == \
               [(e.start, e.end, e.label, e.text) for e in ents]
        assert all(abs(a["score"] - b.score) < 1e-5 for a, b in zip(row, ents))


@pytest.fixture(scope="module")
def final_with_a_kill(spark_cluster, prepared, tmp_path_factory):  # noqa: ANN001
    """One job for two properties (each stage of it starts a fresh pair of TensorFlow workers, ~15 s each,
    and a job ~10 s more): train.py --final on 2 workers with the undisturbed `trained` run's data and config
    (4 epochs), rank 1 killed after epoch 2 of phase 1. Phase 1 is the killed-worker run; phase 2 trains
    train + dev for phase 1's best epoch count.

    The fault fires once per output folder (its marker says it has fired), and phase 2 trains in OUT itself:
    the marker written there beforehand keeps phase 2 undisturbed, so the kill is phase 1's alone."""
    from nerservice.distributed.faults import MARKER

    out = tmp_path_factory.mktemp("final") / "final"
    out.mkdir()
    (out / MARKER).write_text(json.dumps({"note": "the test's: phase 2 is not to be killed"}), encoding="utf-8")
    proc = spark_cluster.submit(
        "spark_jobs/train.py", "--data", str(prepared[0]), "--out", str(out), "--workers", "2", "--final",
        "--inject-kill", "1:2", "--collective-timeout", "120", *overrides(**{"training.epochs": 4}), timeout=540)
    check(proc, "train --final with a killed worker")
    return out, job_json(proc.stdout), proc.stderr


def test_killed_worker_resumes_from_checkpoint(spark_cluster, trained, final_with_a_kill) -> None:  # noqa: ANN001
    """Phase 1 of `final_with_a_kill`: same data and config as the undisturbed `trained` run (4 epochs, 2
    workers), but rank 1 dies after epoch 2."""
    from nerservice.distributed.faults import MARKER

    out = final_with_a_kill[0] / "phase1"
    summary = json.loads((out / "summary.json").read_text())  # run_training's summary of phase 1's stage
    marker = json.loads((out / MARKER).read_text())
    assert marker["rank"] == 1 and marker["after_epoch"] == 2
    attempts = summary["attempts"]
    check_resumed_after_kill(attempts, final_with_a_kill[2])  # ran twice: from 0, then from a checkpoint
    assert summary["resumed_from_epoch"] == attempts[-1]["resumed_from_epoch"]
    assert marker["pid"] not in {w["pid"] for w in summary["workers"]}  # rank 1 is a new process
    assert [h["epoch"] for h in summary["history"]] == [1, 2, 3, 4] and summary["weights_identical"]
    assert "resuming from" in spark_cluster.executor_logs()
    # Issue 8: the disturbed run's F1 stays within 0.5 points of the undisturbed run's.
    undisturbed = trained[1]["dev"]["micro"]["f1"]
    assert abs(summary["dev"]["micro"]["f1"] - undisturbed) <= 0.005, (summary["dev"]["micro"], undisturbed)


@pytest.mark.jax
def test_jax_workers_grow_and_resume_from_checkpoint_after_a_kill(spark_cluster, prepared, tmp_path) -> None:  # noqa: ANN001
    """Issue 20: --backend jax makes the two barrier tasks one jax.distributed job (Gloo on CPU); rank 1 dies
    after epoch 2's checkpoint and the retried stage resumes from it, as under TensorFlow. Issue 19: in
    --scaling grow every worker keeps a full batch, so the global batch is 2 x 16."""
    from nerservice.distributed.faults import MARKER

    out = tmp_path / "jax-run"
    proc = spark_cluster.submit(
        "spark_jobs/train.py", "--data", str(prepared[0]), "--out", str(out), "--workers", "2", "--backend", "jax",
        "--scaling", "grow", "--inject-kill", "1:2", "--collective-timeout", "120",
        *overrides(**{"training.epochs": 3, "training.bucket_size": 32, "model.lstm_layers": 1}),
        # helpers.JAX_XLA_FLAGS; and a compilation cache of this run's own (empty at the start): the retried
        # stage's new processes compile exactly what the killed ones did, and read it back instead.
        conf={"spark.executorEnv.XLA_FLAGS": JAX_XLA_FLAGS,
              "spark.executorEnv.JAX_COMPILATION_CACHE_DIR": str(tmp_path / "jax-cache"),
              "spark.executorEnv.JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}, timeout=600)
    check(proc, "jax train with a killed worker")
    summary = job_json(proc.stdout)
    assert json.loads((out / MARKER).read_text())["rank"] == 1
    check_resumed_after_kill(summary["attempts"], proc.stderr)
    assert [h["epoch"] for h in summary["history"]] == [1, 2, 3] and summary["weights_identical"]
    assert summary["backend"] == "jax" and "resuming from" in spark_cluster.executor_logs()
    scaling = summary["scaling"]
    assert scaling["mode"] == "grow" and scaling["global_batch"] == 32 and scaling["per_worker_batch"] == 16
    assert summary["history"][0]["lr"] == pytest.approx(0.005)  # warm-up starts at the 1-worker rate
    assert summary["dev"]["micro"]["f1"] > 0.5


def test_final_recipe_runs_two_stages_and_records_both(final_with_a_kill) -> None:  # noqa: ANN001
    """train.py --final: stage 1 on train with dev selection finds E, stage 2 trains train+dev for E epochs
    and keeps model-last; its lineage records both phases (as `nerservice train --final`)."""
    from nerservice.artifacts.model_folder import load_model_folder as load_model

    out, summary, _ = final_with_a_kill
    phase1 = load_model(out / "phase1" / "model-best")
    epochs = phase1.metrics["epoch"]
    final = load_model(out / "model-last")
    assert summary["model_dir"] == str(out / "model-last") and not (out / "model-best").exists()
    assert summary["recipe"]["phase1"]["best_epoch"] == epochs == final.config.training.epochs
    assert final.lineage["recipe"]["phase"] == 2 and final.lineage["recipe"]["phase2"]["epochs"] == epochs
    assert [r["epochs_run"] for r in summary["runs"]][1] == epochs
    assert summary["test"]["micro"]["f1"] == pytest.approx(final.metrics["test"]["micro"]["f1"])
    # Phase 2 (its stage's summary in OUT) ran once, undisturbed: the kill was phase 1's.
    assert len(json.loads((out / "summary.json").read_text())["attempts"]) == 1


def test_seeds_make_an_ensemble_that_the_driver_scores(spark_cluster, prepared, bad_corpus, tmp_path) -> None:  # noqa: ANN001
    """train.py --seeds 2 (single corpus): one barrier stage per seed into OUT/seed-S, then the driver saves
    OUT/ensemble and scores it on the data folder's test rows — the figure the CLI gets from the test file."""
    from nerservice.artifacts.ensemble_folder import is_ensemble_dir
    from nerservice.artifacts.formats import load_model
    from nerservice.data import read_corpus
    from nerservice.metrics import evaluate_predictor

    out = tmp_path / "seeds"
    proc = spark_cluster.submit("spark_jobs/train.py", "--data", str(prepared[0]), "--out", str(out), "--workers", "1",
                                "--seeds", "2", *overrides(**{"training.epochs": 1}), timeout=300)
    check(proc, "train --seeds 2")
    summary = job_json(proc.stdout)
    seed = int(TINY_OVERRIDES["training.seed"])
    members = [out / f"seed-{s}" / "model-best" for s in (seed, seed + 1)]
    assert summary["members"] == [str(m) for m in members] and summary["model_dir"] == str(out / "ensemble")
    assert [load_model(m).config.training.seed for m in members] == [seed, seed + 1]
    assert is_ensemble_dir(out / "ensemble") and summary["recipe"] is None
    ens = load_model(out / "ensemble")
    assert ens.metrics["test"]["micro"] == pytest.approx(summary["test"]["micro"])
    from_file = evaluate_predictor(ens.predictor(), read_corpus(bad_corpus["paths"]["test"]).sentences)
    assert from_file["micro"] == pytest.approx(summary["test"]["micro"])
    # The same command again: both runs are read back on the driver (no barrier stage starts: each run's
    # attempt log keeps its lines) and so is the ensemble's score; the job reports what the first did.
    from nerservice.distributed.worker import read_attempts

    attempts = {s: read_attempts(out / f"seed-{s}") for s in (seed, seed + 1)}
    assert all(attempts.values())
    ensemble_files = {p.name: p.read_bytes() for p in (out / "ensemble").iterdir() if p.is_file()}
    again = spark_cluster.submit("spark_jobs/train.py", "--data", str(prepared[0]), "--out", str(out), "--workers",
                                 "1", "--seeds", "2", *overrides(**{"training.epochs": 1}), timeout=300)
    check(again, "train --seeds 2, rerun")
    # under spark-submit the driver's stderr may come out on stdout (job_helpers.job_json)
    assert (again.stdout + again.stderr).count("read back from its folder; no barrier stage") == 2
    assert {s: read_attempts(out / f"seed-{s}") for s in (seed, seed + 1)} == attempts
    rerun = job_json(again.stdout)
    assert rerun["test"] == summary["test"] and rerun["members"] == summary["members"]
    assert [r["epochs_run"] for r in rerun["runs"]] == [r["epochs_run"] for r in summary["runs"]]
    assert {p.name: p.read_bytes() for p in (out / "ensemble").iterdir() if p.is_file()} == ensemble_files


def test_final_distil_trains_every_model_on_the_executors_and_registers_the_student(  # noqa: ANN201
        spark_cluster, prepared, tmp_path):  # noqa: ANN001
    """train.py --final --distil on 2 workers: phase 1, the final model and two cross-fitting teachers (each on
    the block it does not label) are barrier stages, then the student's stage, where both workers compute the
    teachers' targets themselves and end with identical weights; only the student goes to the store.  The
    unlabelled text's teacher is one head of a multi-corpus model (``--teacher --teacher-head``), which every
    worker builds from the folder the driver resolved."""
    import pyarrow.parquet as pq
    from random_model import build_random_multi_model  # tests/random_model.py

    from nerservice.artifacts.formats import load_model, verify_manifest
    from nerservice.data import Sentence
    from nerservice.distil.recipe import recipe_distil_config
    from nerservice.distil.run import augmented_sentences
    from nerservice.lineage import corpus_fingerprint
    from nerservice.store import ModelStore

    out, store = tmp_path / "fd", tmp_path / "store"
    unlabelled = tmp_path / "unlabelled.txt"
    unlabelled.write_text("the\ncystic\nfibrosis\npatients\n\nsevere\nataxia\nseen\n", encoding="utf-8")
    # "both" has the demo corpus's types exactly; "dis" lacks Chemical
    multi = build_random_multi_model(tmp_path / "multi", heads=(
        ("dis", ["O", "B-Disease", "I-Disease"]), ("both", ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"])))
    proc = spark_cluster.submit(
        "spark_jobs/train.py", "--data", str(prepared[0]), "--out", str(out), "--workers", "2", "--final",
        "--distil", "--unlabelled", str(unlabelled), "--register", "fd-demo", "--teacher", str(multi),
        "--teacher-head", "both",
        *overrides(**{"training.epochs": 2}), env={"NERSERVICE_STORE_DIR": str(store)}, timeout=600)
    check(proc, "train --final --distil")
    summary = job_json(proc.stdout)
    student = load_model(out / "student" / "model-last")
    assert summary["model_dir"] == str(out / "student" / "model-last")
    assert summary["test"]["micro"] == pytest.approx(student.metrics["test"]["micro"])
    recipe, distil = student.lineage["recipe"], student.lineage["distillation"]
    labelled = 398 + 80  # train (two broken sentences quarantined by preprocess) + dev
    assert recipe["name"] == "final-distil" and [f["fold"] for f in recipe["folds"]] == ["1of2", "2of2"]
    assert student.config.training.epochs == recipe["phase2"]["epochs"] == recipe["phase1"]["best_epoch"]
    assert distil["labelled"]["sentences"] == labelled and distil["unlabelled"]["sentences"] == 2
    assert sum(f["sentences"] for f in distil["cross_fit"]) == labelled
    assert distil["settings"]["gold_weight"] == 0.5 and distil["unlabelled"]["files"] == {str(unlabelled): {
        "sentences": 2, "tokens": 7}}
    # the unlabelled text's teacher: the multi-corpus model's "both" head, not the run's own final model
    assert (recipe["unlabelled_teacher"]["head"], recipe["unlabelled_teacher"]["path"]) == ("both", str(multi.resolve()))
    assert (distil["teacher"]["head"], distil["teacher"]["path"]) == ("both", str(multi.resolve()))
    assert distil["teacher"]["teacher_heads"] == ["dis", "both"] and recipe["teacher"]["path"] != str(multi.resolve())
    rows = {}
    for split in ("train", "dev"):  # the order the driver gives them (read_splits): by file, then line
        t = pq.read_table(prepared[0] / split, columns=["tokens", "tags", "file", "line"]).to_pylist()
        rows[split] = [Sentence(tuple(r["tokens"]), tuple(r["tags"])) for r in sorted(t, key=lambda r: (r["file"], r["line"]))]
    text = [*rows["train"], *rows["dev"]]
    assert len(text) == labelled
    # distil.augment=1: one variant per sentence, less those equal to their source — as the core recipe makes them
    variants, _ = augmented_sentences(text, recipe_distil_config({}), seed=student.config.training.seed)
    assert distil["augmented"]["sentences"] == len(variants) > labelled / 2
    for fold in recipe["folds"]:  # each fold teacher trained on the other block and was scored on its own
        a, b = fold["held_out_rows"]
        teacher = load_model(fold["teacher"])
        prints = teacher.lineage["corpus_fingerprints"]
        assert teacher.lineage["recipe"]["fold"] == fold["fold"]
        assert prints["train"] == corpus_fingerprint([*text[:a], *text[b:]])
        assert prints["dev"] == corpus_fingerprint(text[a:b])
    assert len(summary["runs"]) == 5  # phase 1, the final model, two fold teachers, the student
    store_ = ModelStore.embedded(store)
    assert summary["registered"]["name"] == "fd-demo" and len(store_.list("fd-demo")) == 1
    assert verify_manifest(store_.resolve("fd-demo/1"))["files"] == verify_manifest(out / "student" / "model-last")["files"]
