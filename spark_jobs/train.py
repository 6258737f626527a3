"""spark-submit spark_jobs/train.py --data prep/ --out /shared/run1 --workers 2 [--register NAME]

Synchronous data-parallel training on the executors: one barrier stage of --workers tasks, each a
TensorFlow MultiWorkerMirroredStrategy worker (or, with --backend jax, one process of a jax.distributed
job) running the core training loop. Rank 0 evaluates, checkpoints
to --out (shared storage), and with --register logs to the model store and registers the best model.
A retried stage resumes from the last checkpoint. Prints the summary JSON (also --out/summary.json).
A --data folder written by ``preprocess.py --corpora`` (it holds corpora.json) trains one multi-corpus model,
one CRF head per corpus, in the same barrier stage. --final and --seeds N run the recipes of
``nerservice train`` (``training/recipes.py``), one barrier stage per run; --final --distil adds the
cross-fitting teachers and one distilled student (``nerservice/distributed/distil_job.py``), each a barrier stage.
"""
from __future__ import annotations

import argparse
from typing import Any

from nerservice.distil.options import (
    add_student_options,
    add_teacher_options,
    check_student_options,
    check_teacher_options,
)
from nerservice.distributed.session import run_main
from nerservice.json_stdout import emit_json


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="train.py", description=__doc__.split("\n\n")[1])
    p.add_argument("--data", required=True, help="output folder of preprocess.py (train/, dev/, test/; or "
                   "<corpus>/ folders and corpora.json from preprocess.py --corpora)")
    p.add_argument("--out", required=True, help="training output: a POSIX path every executor sees")
    p.add_argument("--workers", type=int, default=1, help="barrier tasks = training processes (default 1)")
    p.add_argument("--config", help="config JSON")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override (repeatable)")
    p.add_argument("--embeddings", action="append", help="pretrained vectors file (shipped to executors) or "
                   "'glove-6b-50d'; repeat to concatenate sources (e.g. GloVe + preprocess.py's word2vec.txt); "
                   "'none' = no pretrained vectors. Default: the config's model.embeddings (glove-6b-50d)")
    p.add_argument("--register", metavar="NAME", help="register the best model in the model store as NAME")
    p.add_argument("--promote", metavar="ALIAS", help="with --register: move ALIAS (e.g. production) to the "
                   "new version unless its dev F1 is worse than the current holder's")
    p.add_argument("--final", action="store_true", help="final-model recipe (as `nerservice train --final`): one "
                   "stage trains on train with early stopping on dev to find the epoch count E (--out/phase1), a "
                   "second trains on train + dev for exactly E epochs and keeps --out/model-last (registered with "
                   "--register); both phases are recorded in its lineage.json")
    p.add_argument("--seeds", type=int, default=1, metavar="N", help="as `nerservice train --seeds`: N models "
                   "(seeds S..S+N-1, S = training.seed; with --final phase 1 runs once), one barrier stage each, "
                   "into --out/seed-S, then --out/ensemble, evaluated on dev and test by the driver")
    p.add_argument("--distil", action="store_true", help="with --final (as `nerservice train --final --distil`): "
                   "also cross-fit and distil the final model(s) into one student, --out/student (registered with "
                   "--register; nothing else is): train + dev is cut into --folds blocks, N models train on every "
                   "other block for phase 1's epoch count, each block's teachers label it, the final ensemble "
                   "(or --teacher) labels --unlabelled; the student trains on the targets mixed with gold "
                   "(distil.gold_weight=0.5) and one synthetic variant per sentence (distil.augment=1). Every "
                   "training is a barrier stage; --set distil.KEY=VALUE changes the distillation")
    p.add_argument("--folds", type=int, metavar="K", help="with --distil: cross-fitting blocks (default 2)")
    p.add_argument("--unlabelled", nargs="+", default=[], metavar="FILE", help="with --distil: unlabelled text "
                   "(one token per line, blank line between sentences; the first column of a TSV), read on the "
                   "driver and shipped to the workers, e.g. other corpora's train + dev files — never test text")
    add_teacher_options(p)  # the same text as `nerservice train`'s
    add_student_options(p)
    p.add_argument("--no-resume", action="store_true", help="ignore an existing --out/checkpoint")
    p.add_argument("--collective-timeout", type=float, default=600.0, metavar="S",
                   help="seconds a worker waits for its peers in one all-reduce before failing the stage")
    p.add_argument("--scaling", choices=("fixed", "grow"), default="fixed",
                   help="fixed: N workers split each global batch of training.batch_size (the model does not depend "
                   "on N); grow: every worker takes a full batch, global batch = N x batch_size, learning rate "
                   "scaled by --lr-rule with warm-up (faster with more workers; see README 'How training scales')")
    p.add_argument("--lr-rule", choices=("linear", "sqrt"), default="linear",
                   help="with --scaling grow: learning rate x N (default; measured up to N = 8) or x sqrt(N)")
    p.add_argument("--backend", choices=("tensorflow", "jax"), default="tensorflow",
                   help="Keras backend of the workers: tensorflow (tf.distribute, the CPU default) or jax "
                   "(jax.distributed; the path measured on GPUs)")
    p.add_argument("--inject-kill", metavar="RANK:EPOCH",
                   help="testing aid: SIGKILL RANK's training process once, after epoch EPOCH is checkpointed")
    return p.parse_args(argv)


def recipe(spark: Any, args: argparse.Namespace, config: Any, embeddings: list[str], kill: Any) -> dict[str, Any]:
    """--final and/or --seeds N: ``training/recipes.py`` decides the runs, each one barrier stage."""
    from nerservice.distributed.train_job import ensemble_on_driver, local_out_dir, spark_runner
    from nerservice.training.recipes import run_recipe

    runner = spark_runner(spark, data_dir=args.data, world=args.workers, register=args.register, final=args.final,
                          embeddings=embeddings, resume=not args.no_resume,
                          collective_timeout_s=args.collective_timeout, kill=kill, backend=args.backend,
                          scaling=args.scaling, rule=args.lr_rule)
    result = run_recipe(runner, config, local_out_dir(args.out), final=args.final, seeds=args.seeds)
    last = result.runs[-1]
    dev, test = last.dev, last.test
    if result.members:
        metrics = ensemble_on_driver(spark, args.data, result.model_dir, result.members)
        dev, test = metrics["dev"], metrics.get("test")
    return {"recipe": result.record or None, "model_dir": str(result.model_dir), "dev": dev, "test": test,
            "members": [str(m) for m in result.members],
            "runs": [{"model_dir": str(r.model_dir), "epochs_run": r.epochs_run, "kept_epoch": r.best_epoch,
                      "stopped_reason": r.stopped_reason, "minutes": round(r.seconds / 60, 2)} for r in result.runs]}


def distil_recipe(spark: Any, args: argparse.Namespace, config: Any, dconfig: Any, unlabelled: Any,
                  teacher: Any, embeddings: list[str], kill: Any) -> dict[str, Any]:
    """--final --seeds N --distil: ``nerservice/distributed/distil_job.py``."""
    from nerservice.distil.recipe import DEFAULT_FOLDS
    from nerservice.distributed.distil_job import final_distil_job

    return final_distil_job(spark, data_dir=args.data, out=args.out, world=args.workers, config=config,
                            distil_config=dconfig, seeds=args.seeds,
                            folds=DEFAULT_FOLDS if args.folds is None else args.folds, unlabelled=unlabelled,
                            unlabelled_files=args.unlabelled, teacher=teacher, register=args.register,
                            student_overrides=args.student_set, embeddings=embeddings,
                            resume=not args.no_resume, collective_timeout_s=args.collective_timeout, kill=kill,
                            backend=args.backend, scaling=args.scaling, rule=args.lr_rule)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from nerservice.config import NerConfig
    from nerservice.distil.config import split_overrides
    from nerservice.distributed.faults import KillPlan
    from nerservice.distributed.session import get_session
    from nerservice.distributed.train_job import TRAIN_DEFAULTS, run_training
    from nerservice.embeddings import resolve_sources
    from nerservice.errors import ConfigError

    config = NerConfig.load(args.config) if args.config else NerConfig()
    # --distil: distil.KEY=VALUE items are the distillation's; without it they are unknown config keys
    overrides, distil_sets = split_overrides(list(args.set)) if args.distil else (list(args.set), {})
    if overrides:
        config = config.with_overrides(overrides)
    embeddings = resolve_sources(config.model.embeddings, args.embeddings)  # defaults: the same as `nerservice train`
    kill = KillPlan.parse(args.inject_kill) if args.inject_kill else None
    if args.final and args.promote:
        raise ConfigError("--promote with --final: the final model's dev F1 is a training-set figure",
                          hint="promote it by hand: nerservice models promote")
    if args.seeds < 1:
        raise ConfigError(f"--seeds {args.seeds}: need at least 1")
    if args.seeds > 1 and not args.distil and (args.register or args.promote):
        raise ConfigError("--register/--promote with --seeds: register the ensemble when it is written",
                          hint="nerservice models register NAME OUT/ensemble")
    check_teacher_options(distil=args.distil, teacher=args.teacher, head=args.teacher_head, unlabelled=args.unlabelled)
    args.student_set = check_student_options(distil=args.distil, items=args.student_set, config=config)
    dconfig = unlabelled = teacher = None
    if args.distil:
        from nerservice.distil.recipe import recipe_distil_config

        if not args.final:
            raise ConfigError("--distil distils the final model(s): it needs --final",
                              hint="spark-submit spark_jobs/train.py --final --seeds 3 --distil ...")
        if args.folds is not None and args.folds < 2:
            raise ConfigError(f"--folds {args.folds}: cross-fitting needs at least 2 blocks")
        dconfig = recipe_distil_config(distil_sets)
        # read (and bounded) before anything trains: a bad file fails the job at once, with its line
        unlabelled = dconfig.read_unlabelled(args.unlabelled)
        if args.teacher:
            from nerservice.distil.teacher_ref import load_teacher

            # on the driver, before the session: a store ref pinned to one folder (the executors load that one),
            # its manifest verified, a missing or wrong head refused; its tags are checked against the corpus
            # once the splits are read, before any stage (distil_job.final_distil_job)
            teacher = load_teacher(args.teacher, head=args.teacher_head)
    elif args.folds is not None or args.unlabelled:
        raise ConfigError("--folds and --unlabelled belong to --distil", hint="train.py --final --distil")
    spark = get_session("nerservice-train", defaults=TRAIN_DEFAULTS)
    try:
        if args.distil:
            summary = distil_recipe(spark, args, config, dconfig, unlabelled, teacher, embeddings, kill)
        elif args.final or args.seeds > 1:
            summary = recipe(spark, args, config, embeddings, kill)
        else:
            summary = run_training(spark, data_dir=args.data, out_dir=args.out, world=args.workers, config=config,
                                   embeddings=embeddings, register=args.register, promote=args.promote,
                                   resume=not args.no_resume, collective_timeout_s=args.collective_timeout,
                                   kill=kill, backend=args.backend, scaling=args.scaling, rule=args.lr_rule)
    finally:
        spark.stop()
    emit_json(summary)


if __name__ == "__main__":
    run_main(main)
