"""Pure-Python parts of nerservice.distributed (no Spark, no TensorFlow): split hashing, stats merging,
per-file parsing and accounting, rendezvous messages and TF_CONFIG, GPU pinning with env restore, shard
arithmetic, executor environment forwarding. Fast; no markers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from nerservice.config import NerConfig
from nerservice.distributed.environ import scoped_environ
from nerservice.distributed.faults import KillPlan
from nerservice.distributed.gpu import gpu_addresses, gpu_env
from nerservice.distributed.preprocess import account, display_path, parse_file
from nerservice.distributed.rendezvous import agree, host_of, parse_peers, rendezvous, tf_config
from nerservice.distributed.session import executor_env, run_main
from nerservice.distributed.shards import shard_of_epoch
from nerservice.distributed.splits import assign_split, parse_ratios, sentence_unit
from nerservice.distributed.stats import CorpusStats, length_bucket
from nerservice.errors import ConfigError, DistributedError
from nerservice.json_stdout import emit_json

GOOD = "Aspirin\tB-Chemical\ncauses\tO\nulcers\tB-Disease\n\nNo\tO\neffect\tO\n\n"


def test_split_hash_is_stable_across_processes_and_hash_seeds() -> None:
    code = ("from nerservice.distributed.splits import sentence_unit;"
            "print(repr(sentence_unit(['BRCA1', 'mutation'], ['B-Gene', 'O'], seed=7)))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout.strip() for seed in ("1", "2")}
    assert outs == {repr(sentence_unit(["BRCA1", "mutation"], ["B-Gene", "O"], seed=7))}
    assert sentence_unit(["a"], ["O"], seed=1) != sentence_unit(["a"], ["O"], seed=2)
    assert sentence_unit(["a"], ["O"], seed=1) != sentence_unit(["a"], ["B-X"], seed=1)  # tags count too


def test_split_ratios_are_respected_roughly_and_validated() -> None:
    ratios = parse_ratios("0.8,0.1,0.1")
    names = [assign_split([f"w{i}", "x"], ["O", "O"], ratios=ratios, seed=3) for i in range(5000)]
    share = {n: names.count(n) / len(names) for n in ("train", "dev", "test")}
    assert abs(share["train"] - 0.8) < 0.03 and abs(share["dev"] - 0.1) < 0.02 and abs(share["test"] - 0.1) < 0.02
    assert set(names) == {"train", "dev", "test"}
    assert parse_ratios("0.9,0.1") == (0.9, 0.1)
    for bad in ("0.5,0.4", "1,0", "a,b", "0.5,0.2,0.2,0.1", "-0.1,1.1", "nan,0.5"):
        with pytest.raises(ConfigError):
            parse_ratios(bad)


def test_stats_merge_equals_one_pass() -> None:
    rows = [(["Aspirin", "causes", "ulcers"], ["B-Chemical", "O", "B-Disease"]),
            (["No", "effect", "7"], ["O", "O", "O"]),
            (["Breast", "cancer", "BRCA1", "BRCA2"] * 6, ["B-Disease", "I-Disease", "O", "O"] * 6)]
    one = CorpusStats()
    for toks, tags in rows:
        one.add(toks, tags)
    a, b = CorpusStats().add(*rows[0]), CorpusStats().add(*rows[1]).add(*rows[2])
    merged = a.merge(b).to_dict()
    assert merged == one.to_dict()
    assert merged["sentences"] == 3 and merged["tokens"] == 30
    assert merged["entities"] == {"Chemical": 1, "Disease": 7}
    assert merged["word_vocab_size"] == merged["vocab_size"] - 1  # brca1/brca2 → brca0
    assert merged["length_histogram"] == {"1-5": 2, "21-30": 1}
    assert [length_bucket(n) for n in (0, 1, 5, 6, 200, 201, 999)] == ["0", "1-5", "1-5", "6-10", "151-200",
                                                                        "201+", "201+"]


def test_parse_file_quarantines_and_accounts() -> None:
    bad = GOOD + "x\ty\tz\n\nok\tI-Disease\n\n"  # a 3-column line; an IOB2 sentence starting with I- (repaired)
    res = parse_file("train", "file:/data/a.tsv", bad.encode(), fmt="tsv", scheme="iob2")
    assert [r["line"] for r in res.rejected] == [8] and res.rejected[0]["file"] == "/data/a.tsv"
    assert [r["split"] for r in res.rows] == ["train"] * 3 and res.rows[0]["line"] == 1
    assert res.report["blocks"] == 4 and res.report["repaired"] == 1
    empty = parse_file("dev", "file:///data/e.tsv", b"\n\n")
    assert empty.rejected[0]["kind"] == "file" and "NER203" in empty.rejected[0]["reason"]
    acc = account([res.report, empty.report], {"train": 3}, quarantined=2)
    assert acc["adds_up"] and acc["sentence_blocks"] == 4
    assert not account([res.report], {"train": 2}, quarantined=1)["adds_up"]  # a lost sentence shows
    split = parse_file("train", "hdfs://nn/x.tsv", GOOD.encode(), ratios=(0.5, 0.5), seed=1)
    assert {r["split"] for r in split.rows} <= {"train", "dev"} and split.rows[0]["file"] == "hdfs://nn/x.tsv"
    assert display_path("file:/a/b") == "/a/b" and display_path("s3a://b/k") == "s3a://b/k"


class FakeBarrier:
    """Stands in for Spark's BarrierTaskContext (not one of our components): a real allGather across
    threads, so the rendezvous protocol runs as it does in a barrier stage."""

    def __init__(self, world: int) -> None:
        self.world, self.lock, self.barrier = world, threading.Lock(), threading.Barrier(world)
        self.rounds: dict[int, list[str | None]] = {}
        self.count: dict[int, int] = {}

    def context(self, rank: int, resources: dict | None = None):  # noqa: ANN201
        fake, seen = self, {"round": 0}

        class Info:
            address = "127.0.0.1:40000"

        class Ctx:
            def partitionId(self) -> int:  # noqa: N802
                return rank

            def getTaskInfos(self) -> list:  # noqa: N802
                return [Info() for _ in range(fake.world)]

            def resources(self) -> dict:
                return resources or {}

            def allGather(self, message: str) -> list[str]:  # noqa: N802
                r = seen["round"]
                seen["round"] += 1
                with fake.lock:
                    fake.rounds.setdefault(r, [None] * fake.world)[rank] = message
                fake.barrier.wait(timeout=10)
                return list(fake.rounds[r])  # type: ignore[arg-type]

        return Ctx()


def test_rendezvous_builds_consistent_tf_config_and_agree_detects_mismatch() -> None:
    fake = FakeBarrier(3)
    results: dict[int, object] = {}

    def run(rank: int) -> None:
        ctx = fake.context(rank)
        r, peers = rendezvous(ctx, world=3)
        results[rank] = (r, peers, json.loads(tf_config(peers, r)))
        try:
            agree(ctx, rank % 2, what="the epoch")
        except DistributedError as exc:
            results[f"err{rank}"] = str(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    workers = {tuple(results[i][2]["cluster"]["worker"]) for i in range(3)}
    assert len(workers) == 1 and len(next(iter(workers))) == 3  # everyone agrees on the cluster
    assert [results[i][2]["task"] for i in range(3)] == [{"type": "worker", "index": i} for i in range(3)]
    assert len({p.port for p in results[0][1]}) == 3
    assert all("disagree" in results[f"err{i}"] for i in range(3))  # 0,1,0 is not one value


def test_parse_peers_rejects_missing_ranks_and_host_parsing() -> None:
    msg = json.dumps({"rank": 0, "host": "h", "port": 1, "pid": 2})
    with pytest.raises(DistributedError):
        parse_peers([msg, msg], world=2)
    assert host_of("10.0.0.5:37000") == "10.0.0.5" and host_of("[::1]:7077") == "::1"


def test_gpu_pinning_and_env_restore() -> None:
    class Info:
        addresses = ["2", "3"]

    assert gpu_addresses({"gpu": Info()}) == ["2", "3"] and gpu_env({}) == {}
    os.environ["CUDA_VISIBLE_DEVICES"] = "0,1,2,3"
    os.environ.pop("TF_CONFIG", None)
    try:
        with scoped_environ({**gpu_env({"gpu": Info()}), "TF_CONFIG": "{}"}) as saved:
            assert os.environ["CUDA_VISIBLE_DEVICES"] == "2,3" and os.environ["TF_CONFIG"] == "{}"
            assert saved == {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "TF_CONFIG": None}
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "0,1,2,3" and "TF_CONFIG" not in os.environ
        with pytest.raises(RuntimeError), scoped_environ({"CUDA_VISIBLE_DEVICES": None}):
            assert "CUDA_VISIBLE_DEVICES" not in os.environ
            raise RuntimeError("task failed")
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"  # restored after a failure too
    finally:
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)


def test_shards_partition_every_global_batch() -> None:
    config = NerConfig().with_overrides({"training.batch_size": 5, "training.seed": 9})
    lengths = [3 + (i * 7) % 23 for i in range(101)]
    for world in (1, 2, 3):
        parts = [shard_of_epoch(lengths, config, epoch=2, rank=r, world=world) for r in range(world)]
        assert sum(p["sentences"] for p in parts) == parts[0]["global_sentences"]
        # Only the last, partial batch can be too small to give every worker a sentence (then all skip it).
        assert 101 - (world - 1) <= parts[0]["global_sentences"] <= 101
        assert sum(p["tokens"] for p in parts) == sum(lengths) or world > 1
        assert max(p["sentences"] for p in parts) - min(p["sentences"] for p in parts) <= parts[0]["steps"]


def test_kill_plan_and_executor_env(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    assert KillPlan.parse("1:2") == KillPlan(1, 2)
    for bad in ("1", "x:2", "1:0", "-1:2"):
        with pytest.raises(ConfigError):
            KillPlan.parse(bad)
    monkeypatch.chdir(tmp_path)
    env = executor_env({"NERSERVICE_STORE_DIR": "models", "KERAS_BACKEND": "tensorflow", "HOME": "/x"})
    assert env == {"NERSERVICE_STORE_DIR": str(tmp_path / "models"), "KERAS_BACKEND": "tensorflow"}
    assert executor_env({})["NERSERVICE_STORE_DIR"] == str(tmp_path / "models")  # the default store
    env = executor_env({"NERSERVICE_STORE_URI": "sqlite:///s/mlflow.db"})
    assert env == {"NERSERVICE_STORE_URI": f"sqlite:///{tmp_path}/s/mlflow.db"}
    assert executor_env({"NERSERVICE_STORE_URI": "http://h:5000"}) == {"NERSERVICE_STORE_URI": "http://h:5000"}


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "0"], "--seeds 0"),
    (["--seeds", "2", "--register", "ner"], "register the ensemble"),
    (["--seeds", "2", "--promote", "production"], "register the ensemble"),
    (["--distil"], "needs --final"),
    (["--final", "--folds", "3"], "belong to --distil"),
    (["--final", "--unlabelled", "u.txt"], "belong to --distil"),
    (["--final", "--distil", "--folds", "1"], "--folds 1"),
    (["--final", "--set", "distil.gold_weight=0.5"], "distil"),  # a distillation setting without --distil
    (["--final", "--teacher", "m"], "belong to --distil"),
    (["--final", "--distil", "--unlabelled", "u.txt", "--teacher-head", "ncbi"], "needs --teacher"),
    (["--final", "--distil", "--teacher", "m"], "without --unlabelled"),
    (["--final", "--student-set", "model.encoder=null"], "belongs to --distil"),
    (["--final", "--distil", "--student-set", "model.nope=1"], "model.nope"),
])
def test_train_job_refuses_bad_seeds_before_spark_starts(argv: list[str], message: str) -> None:
    """spark_jobs/train.py checks --seeds on the driver before a Spark session exists (none is running here)."""
    from spark_jobs.train import main

    with pytest.raises(ConfigError, match=message):
        main(["--data", "/nonexistent/prep", "--out", "/nonexistent/out", *argv])


def test_train_job_reads_the_unlabelled_text_before_spark_starts(tmp_path) -> None:  # noqa: ANN001
    """--final --distil --unlabelled: a file over the distillation's bounds fails on the driver, with its name
    and the setting that raises the bound, before a Spark session exists."""
    from nerservice.errors import NerServiceError
    from spark_jobs.train import main

    text = tmp_path / "u.txt"
    text.write_text("one\ntwo\nthree\nfour\n\nfive\nsix\n", encoding="utf-8")
    with pytest.raises(NerServiceError, match="distil.max_unlabelled_tokens") as info:
        main(["--data", "/nonexistent/prep", "--out", "/nonexistent/out", "--final", "--distil", "--unlabelled",
              str(text), "--set", "distil.max_unlabelled_tokens=3"])
    assert str(text) in info.value.message


def test_unlabelled_text_travels_as_rows_and_back(tmp_path) -> None:  # noqa: ANN001
    """The student's unlabelled text is shipped to the workers as rows without tags: the worker rebuilds the
    driver's ``UnlabelledText`` exactly (sentences, where each came from, per-file counts)."""
    from nerservice.data.unlabelled import read_unlabelled
    from nerservice.distributed.worker import unlabelled_from_rows, unlabelled_rows

    a, b = tmp_path / "a.tsv", tmp_path / "b.txt"
    a.write_text("Cystic\tB-Disease\nfibrosis\tI-Disease\n\nataxia\tO\n", encoding="utf-8")
    b.write_text("severe\nataxia\nwas\nseen\n", encoding="utf-8")
    text = read_unlabelled([a, b], max_tokens=100, max_sentence_tokens=10)
    back = unlabelled_from_rows(unlabelled_rows(text))
    assert (back.sentences, back.where, back.files) == (text.sentences, text.where, text.files)
    assert back.tokens == text.tokens == 7


def test_a_jobs_stdout_is_its_summary_json_alone(capsys) -> None:
    """run_main (every spark_jobs/ script): what the job and the library print for people goes to stderr, so
    a plain `python spark_jobs/train.py ... | jq` reads one document (spark-submit merges stderr into stdout)."""
    def job() -> None:
        print("fold 1of2: teachers on 3 sentences")  # as distil/recipe.py prints on the driver
        emit_json({"model_dir": "/out/model-best", "dev": {"f1": 0.5}})

    run_main(job)
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"model_dir": "/out/model-best", "dev": {"f1": 0.5}}
    assert captured.err == "fold 1of2: teachers on 3 sentences\n"


def test_a_failing_job_leaves_stdout_empty_and_its_coded_error_on_stderr(capsys) -> None:
    def job() -> None:
        print("reading corpora")
        raise ConfigError("--folds 1: cross-fitting needs at least 2 blocks")

    with pytest.raises(SystemExit) as exit_info:
        run_main(job)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    error = json.loads(captured.err.strip().splitlines()[-1])["error"]
    assert error["code"] == ConfigError("x").code and "--folds 1" in error["message"]
    assert captured.err.startswith("reading corpora\nerror: ")


def test_a_jobs_help_stays_on_stdout(monkeypatch, capsys) -> None:
    import argparse

    def job() -> None:
        argparse.ArgumentParser(prog="train.py").parse_args()

    monkeypatch.setattr(sys, "argv", ["train.py", "--help"])
    with pytest.raises(SystemExit) as exit_info:
        run_main(job)
    assert exit_info.value.code == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("usage: train.py") and captured.err == ""
