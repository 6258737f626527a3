"""Recipes over several training runs: the final-model protocol (``--final``) and seeds → one ensemble.

``--final`` (``nerservice train``, ``spark_jobs/train.py``): phase 1 trains on train with early stopping on
dev; its best epoch E is the epoch count — the only thing chosen, and chosen on dev.  Phase 2 trains a fresh
model on train + dev for exactly E epochs (patience = E: no early stopping, and no selection, since dev is
then training data) and keeps model-last.  On BC5CDR, whose dev split is as large as train, this added
~3 entity-F1 points; on NCBI ~0.9 (BENCHMARKS.md).  The final model's lineage.json (hashed in its
manifest) has ``recipe`` = both phases: phase 1's folder, seed, best epoch, epochs run, why it stopped,
dev F1 and minutes; phase 2's epoch count and training data.

``--seeds N``: the run (plain or final) with seeds S, S+1, ..., S+N-1 (S = ``training.seed``), then the N
kept models saved as one ensemble folder (mean CRF scores, ``nerservice/model/ensemble.py``); the same for
one model over several corpora (``--corpora``: ``multi.trainer.multi_runner``).  With
``--final`` phase 1 runs once, with seed S: the epoch count belongs to the data and config, and N+1
trainings cost less than 2N.

Folders (OUT = ``--out``); a rerun with the same OUT resumes every run from its checkpoint, and a
finished run is not trained again:
    plain:             OUT/model-best (the model), OUT/model-last, OUT/checkpoint
    --final:           OUT/phase1/ (the train-only run), OUT/model-last (the model), OUT/checkpoint
    --seeds N:         OUT/seed-S/ (one run per seed, laid out as above), OUT/ensemble (the model)

The runs themselves are a ``Runner`` — the core trainer in one process, or a Spark barrier stage — so
this module decides only what to train, in which order, and what to record.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nerservice.config import NerConfig
from nerservice.errors import ConfigError

PHASE1 = "phase1"
ENSEMBLE_DIR = "ensemble"


@dataclass
class RunSummary:
    """What the recipe needs back from one training run."""

    model_dir: Path  # the kept model (model-best; model-last in phase 2)
    best_epoch: int  # the kept model's epoch
    epochs_run: int
    stopped_reason: str
    seconds: float
    dev: dict[str, Any]  # dev metrics of the kept model (a training-set figure in phase 2)
    test: dict[str, Any] | None

    @classmethod
    def of(cls, outcome: Any) -> "RunSummary":
        """From a ``TrainOutcome`` of the core trainer (one corpus or several)."""
        return cls(model_dir=outcome.best_dir, best_epoch=outcome.best_epoch, epochs_run=len(outcome.history),
                   stopped_reason=outcome.stopped_reason, seconds=outcome.seconds, dev=outcome.dev,
                   test=outcome.test)


@dataclass
class RunRequest:
    """One training run of a recipe: where, with which config, on which data, what to keep and record."""

    config: NerConfig
    out_dir: Path
    train_on_dev: bool = False  # train on train + dev (phase 2)
    keep: Literal["best", "last"] = "best"
    recipe: dict[str, Any] | None = None  # recorded in the run's lineage


Runner = Callable[[RunRequest], RunSummary]


@dataclass
class RecipeResult:
    model_dir: Path  # what to deploy: one model folder, or (--seeds N) the ensemble's member folders
    runs: list[RunSummary] = field(default_factory=list)  # every run, in order
    members: list[Path] = field(default_factory=list)  # --seeds N: the models to ensemble (caller saves)
    record: dict[str, Any] = field(default_factory=dict)  # the recipe as recorded (phase 1, epochs, seeds)
    seconds: float = 0.0


def phase2_config(config: NerConfig, epochs: int, seed: int) -> NerConfig:
    """Exactly ``epochs`` epochs: patience can never stop it (a time budget still can, and says so)."""
    return config.with_overrides({"training.epochs": epochs, "training.patience": epochs, "training.seed": seed})


def phase1_request(config: NerConfig, out: Path) -> RunRequest:
    """``--final``'s phase 1: train only, early stopping on dev, in OUT/phase1."""
    return RunRequest(config, out / PHASE1, recipe={"name": "final", "phase": 1})


def final_record(p1: RunSummary, seeds: Sequence[int]) -> dict[str, Any]:
    """What the final models' lineage records of the recipe: phase 1's run and phase 2's epoch count."""
    phase1 = {"out_dir": str(p1.model_dir.parent), "seed": seeds[0], "best_epoch": p1.best_epoch,
              "epochs_run": p1.epochs_run, "stopped_reason": p1.stopped_reason,
              "dev_f1": float(p1.dev["micro"]["f1"]), "minutes": round(p1.seconds / 60, 2)}
    return {"name": "final", "phase1": phase1,
            "phase2": {"epochs": max(p1.best_epoch, 1), "train": "train + dev", "keep": "model-last",
                       "seeds": list(seeds)}}


def phase2_request(config: NerConfig, out_dir: Path, record: dict[str, Any], seed: int) -> RunRequest:
    return RunRequest(phase2_config(config, int(record["phase2"]["epochs"]), seed), out_dir, train_on_dev=True,
                      keep="last", recipe={**record, "phase": 2})


def run_recipe(run: Runner, config: NerConfig, out: str | Path, *, final: bool = False,
               seeds: int = 1, run_many: Callable[[list[RunRequest]], list[RunSummary]] | None = None,
               ) -> RecipeResult:
    """``run_many``: how the independent runs (the seeds; with ``final``, phase 2's) are run together —
    default one after another with ``run``; ``training.run_pool`` runs them in worker processes."""
    if seeds < 1:
        raise ConfigError(f"--seeds {seeds}: need at least 1")
    many = run_many or (lambda requests: [run(r) for r in requests])
    out = Path(out)
    first = config.training.seed
    seed_list = [first + i for i in range(seeds)]

    def home(seed: int) -> Path:
        return out if seeds == 1 else out / f"seed-{seed}"

    result = RecipeResult(model_dir=out)
    if not final:
        recipe = {"name": "seeds", "seeds": seed_list} if seeds > 1 else None
        result.runs += many([RunRequest(config if seed == first else config.with_overrides({"training.seed": seed}),
                                        home(seed), recipe=recipe) for seed in seed_list])
    else:
        p1 = run(phase1_request(config, out))
        result.runs.append(p1)
        result.record = final_record(p1, seed_list)
        result.runs += many([phase2_request(config, home(seed), result.record, seed) for seed in seed_list])
    kept = result.runs[-seeds:]
    result.seconds = sum(r.seconds for r in result.runs)
    if seeds == 1:
        result.model_dir = kept[0].model_dir
    else:
        result.members = [r.model_dir for r in kept]
        result.model_dir = out / ENSEMBLE_DIR
    return result


def save_evaluated_ensemble(out: str | Path, members: Sequence[str | Path], corpora: Mapping[str, Any],
                            *, sources: Sequence[str] | None = None,
                            evaluate: Callable[[Any, Any], dict[str, Any]] | None = None,
                            ) -> tuple[Path, dict[str, Any]]:
    """Members → one ensemble folder whose metrics.json holds its scores on ``corpora`` (e.g. dev, test).
    ``evaluate(predictor, data)`` scores one entry of ``corpora``: by default ``data`` is a list of sentences;
    a multi-corpus ensemble passes ``multi.evaluation.evaluate_heads`` and corpus name → sentences per entry.
    Everything is evaluated before anything is written: a failure leaves no half-made ensemble behind.
    When ``out`` already holds this ensemble scored on this data (a recipe's rerun: every member read back
    unchanged, ``training/finished.py``), its metrics are returned and nothing is loaded, scored or written
    (``ensemble_folder.evaluated_before``)."""
    from nerservice.artifacts.ensemble_folder import LoadedEnsemble, evaluated_before, load_member, save_ensemble
    from nerservice.metrics import evaluate_predictor

    evaluated_on = evaluation_fingerprints(corpora)
    before = evaluated_before(out, members, sources=sources, evaluated_on=evaluated_on)
    if before is not None:
        return Path(out), before
    evaluator = evaluate or evaluate_predictor
    loaded = [load_member(m) for m in members]  # verified here once; save_ensemble reuses them
    metrics: dict[str, Any] = {}
    if corpora:
        predictor = LoadedEnsemble(Path(out), loaded).predictor()
        metrics = {name: evaluator(predictor, corpus) for name, corpus in corpora.items()}
    return save_ensemble(out, list(members), metrics=metrics, sources=sources, loaded=loaded,
                         evaluated_on=evaluated_on), metrics


def evaluation_fingerprints(corpora: Mapping[str, Any]) -> dict[str, Any]:
    """``corpora`` as ``save_evaluated_ensemble`` takes them (split → sentences, or split → corpus name →
    sentences for a multi-corpus ensemble), each list of sentences as its ``lineage.corpus_fingerprint``."""
    from nerservice.lineage import corpus_fingerprint

    return {name: {c: corpus_fingerprint(s) for c, s in data.items()} if isinstance(data, Mapping)
            else corpus_fingerprint(data) for name, data in corpora.items()}
