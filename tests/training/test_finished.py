"""A recipe's rerun reads a finished run back from its folder (training/finished.py) — and only a run that is
finished on the same data and config: anything else goes through train() and resumes as before."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import tiny_model_config

pytestmark = pytest.mark.slow


def _spec(out: Path, **training):
    from nerservice.config import NerConfig
    from nerservice.demo_corpus import generate
    from nerservice.training.recipes import RunRequest
    from nerservice.training.run_pool import RunSpec

    # One residual layer: tracing is most of a run this small, and nothing here depends on the depth.
    cfg = NerConfig(model=tiny_model_config(lstm_layers=1),
                    training={"epochs": 2, "batch_size": 8, "learning_rate": 0.01, "seed": 5, "patience": 5,
                              **training})
    return RunSpec(RunRequest(cfg, out), generate(40, seed=1), generate(10, seed=2), generate(10, seed=3),
                   sources={})


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One tiny run trained to its end: (its spec, the summary train() gave)."""
    from nerservice.training.run_pool import run_spec

    spec = _spec(tmp_path_factory.mktemp("finished") / "run")
    return spec, run_spec(spec, resume=True, progress=False)


def test_a_finished_run_is_read_back_as_train_summarised_it(finished) -> None:
    from nerservice.training.finished import finished_run

    spec, trained = finished
    back = finished_run(spec.request, spec.train, spec.dev, spec.test)
    assert back is not None
    assert (back.model_dir, back.best_epoch, back.epochs_run) == (trained.model_dir, trained.best_epoch, 2)
    assert back.dev == json.loads(json.dumps(trained.dev)) and back.test == json.loads(json.dumps(trained.test))
    assert back.stopped_reason == trained.stopped_reason == "epochs"
    # The epochs' own seconds, not the ~0 s of a resumed loop that trains nothing.
    assert 0 < back.seconds <= trained.seconds


def test_a_rerun_does_not_train_a_finished_run_again(finished, monkeypatch, capsys) -> None:
    from nerservice.training import trainer
    from nerservice.training.run_pool import run_spec

    def no_training(*args, **kwargs):
        raise AssertionError("train() called for a finished run")

    spec, trained = finished
    monkeypatch.setattr(trainer, "train", no_training)
    assert run_spec(spec, resume=True, progress=True).test == json.loads(json.dumps(trained.test))
    assert "read back from its folder" in capsys.readouterr().out
    # Without resume (--no-resume), or with callbacks that must see the run, it goes through train().
    with pytest.raises(AssertionError, match="finished run"):
        run_spec(spec, resume=False, progress=False)
    with pytest.raises(AssertionError, match="finished run"):
        run_spec(spec, resume=True, progress=False, callbacks=[object()])  # type: ignore[list-item]


@pytest.mark.parametrize("change", ["more epochs", "other config", "other train", "other test", "no test",
                                    "train on dev", "keep last"])
def test_a_run_on_other_data_or_config_or_with_epochs_left_is_not_read_back(finished, change: str) -> None:
    import dataclasses

    from nerservice.demo_corpus import generate
    from nerservice.training.finished import finished_run

    spec, _ = finished
    req, train, test = spec.request, spec.train, spec.test
    if change == "more epochs":
        req = dataclasses.replace(req, config=req.config.with_overrides({"training.epochs": 3}))
    elif change == "other config":
        req = dataclasses.replace(req, config=req.config.with_overrides({"training.learning_rate": 0.02}))
    elif change == "other train":
        train = train[:-1]
    elif change == "other test":
        test = generate(10, seed=4)
    elif change == "no test":
        test = None
    elif change == "train on dev":
        req = dataclasses.replace(req, train_on_dev=True)
    else:
        req = dataclasses.replace(req, keep="last")  # model-last has no test score: it was not the kept model
    assert finished_run(req, train, spec.dev, test) is None


def test_a_run_stopped_by_its_time_budget_is_not_finished(tmp_path: Path) -> None:
    from nerservice.training.finished import finished_run
    from nerservice.training.run_pool import run_spec

    spec = _spec(tmp_path / "run", epochs=3, max_minutes=1e-6)  # stops after its first epoch
    summary = run_spec(spec, resume=True, progress=False)
    assert summary.stopped_reason == "time budget" and summary.epochs_run == 1
    assert finished_run(spec.request, spec.train, spec.dev, spec.test) is None  # a rerun trains on


def test_a_run_killed_before_its_final_save_is_not_finished(finished, tmp_path: Path) -> None:
    import dataclasses
    import shutil

    from nerservice.training.finished import finished_run

    spec, _ = finished
    copy = tmp_path / "run"
    shutil.copytree(spec.request.out_dir, copy)
    req = dataclasses.replace(spec.request, out_dir=copy)
    assert finished_run(req, spec.train, spec.dev, spec.test) is not None
    # The kept model as the last epoch saved it: no test score yet (train() writes it last).
    metrics_path = copy / "model-best" / "metrics.json"
    metrics = json.loads(metrics_path.read_text())
    metrics_path.write_text(json.dumps({k: v for k, v in metrics.items() if k != "test"}))
    assert finished_run(req, spec.train, spec.dev, spec.test) is None
    # A checkpoint that is not whole: no loop state to read.
    metrics_path.write_text(json.dumps(metrics))
    (copy / "checkpoint" / "state.json").unlink()
    assert finished_run(req, spec.train, spec.dev, spec.test) is None


def test_with_jobs_only_unfinished_runs_reach_worker_processes(finished, monkeypatch, tmp_path: Path) -> None:
    import dataclasses

    from nerservice.training import run_pool

    spec, trained = finished
    sent: list[list] = []

    def pool(specs, **kwargs):
        sent.append(list(specs))
        return [dataclasses.replace(trained, model_dir=s.request.out_dir) for s in specs]

    monkeypatch.setattr(run_pool, "_pool", pool)
    other = _spec(tmp_path / "not-yet")
    got = run_pool.run_specs([spec, other, spec], jobs=2, resume=True, progress=False)
    assert sent == [[other]]  # the finished run never reaches a worker process
    assert [g.model_dir for g in got] == [trained.model_dir, other.request.out_dir, trained.model_dir]
    sent.clear()
    run_pool.run_specs([spec, spec], jobs=2, resume=True, progress=False)
    assert sent == []  # nothing to train: no pool at all
    run_pool.run_specs([spec, spec], jobs=2, resume=False, progress=False)
    assert sent == [[spec, spec]]  # --no-resume trains everything
