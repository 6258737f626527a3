"""nerservice distil"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from nerservice.cli.common import add_corpus_options, print_corpus_scores, print_scores, read
from nerservice.json_stdout import emit_json

if TYPE_CHECKING:
    from nerservice.distil.run import Teacher


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "distil", help="train one model on a teacher's (an ensemble's) CRF scores: ensemble accuracy, one model's cost",
        description="Distil a teacher (an ensemble folder, a model folder or a store reference) into one student "
        "model: the student's CRF is trained to match the teacher's distribution over tag paths (exact "
        "sequence-level distillation: the teacher's node and pairwise marginals) on the labelled --train text "
        "and on --unlabelled text (token-per-line files; IOB files' tags are ignored). Writes a normal run "
        "folder (OUT/model-best or OUT/model-last, OUT/checkpoint: a rerun resumes); the student's "
        "lineage.json records the teacher and the data. Settings: --set distil.gold_weight=W (mix the gold "
        "path into labelled sentences' targets), distil.temperature, distil.augment=N (N synthetic variants of "
        "each labelled sentence, mentions and words swapped, labelled by the teacher — a --cross-fit file's variants "
        "by that file's teacher), distil.max_unlabelled_tokens, "
        "distil.max_sentence_tokens; any other --set is the student's config (default: the teacher's). A "
        "multi-corpus teacher (one head per corpus, or an ensemble of such models) is distilled on its corpora "
        "config (--corpora) into a multi-corpus student: every sentence of every corpus, and the unlabelled "
        "text, trains every head.")
    p.add_argument("--teacher", required=True, help="teacher: ensemble folder, model folder, run folder or store ref")
    p.add_argument("--teacher-head", metavar="NAME", help="a multi-corpus teacher's head NAME (its corpus name) as a "
                   "single-corpus teacher: a one-head student on --train/--dev files of that corpus's tags, learning "
                   "what the multi-corpus model knows of them; also picks that head of any multi-corpus --cross-fit "
                   "teacher")
    p.add_argument("--train", nargs="+", help="labelled corpus file(s) of the teacher's tag set")
    p.add_argument("--dev", nargs="+", help="labelled corpus file(s) evaluated each epoch (early "
                   "stopping and model-best with --keep best)")
    p.add_argument("--corpora", metavar="FILE", help="instead of --train/--dev/--test, for a multi-corpus teacher: "
                   "its corpora config (the teacher's heads, in order); each corpus's train split is labelled "
                   "text, its dev split selects (per-corpus F1, mean over corpora), its test split is scored")
    p.add_argument("--dev-in-train", action="store_true", help="with --corpora and --keep last: every corpus's "
                   "labelled text is its train + dev (the final protocol, for teachers trained on train + dev)")
    p.add_argument("--test", nargs="+", help="test corpus file(s): the student and the teacher are evaluated")
    p.add_argument("--unlabelled", nargs="+", default=[], metavar="FILE", help="unlabelled text, one token per "
                   "line, blank lines between sentences (e.g. other corpora's train/devel files: tags ignored)")
    p.add_argument("--cross-fit", action="append", default=[], metavar="FILE=TEACHER",
                   help="cross-fitting: the labelled sentences of FILE (one of the --train files) take their targets "
                   "from TEACHER (model/ensemble folder or store ref, the teacher's tag set), a teacher NOT trained "
                   "on FILE — e.g. --train train.tsv devel.tsv --cross-fit devel.tsv=ENSEMBLE_ON_TRAIN --cross-fit "
                   "train.tsv=ENSEMBLE_ON_DEVEL; on its own training text a teacher's targets are just the gold "
                   "tags. --teacher labels the other sentences and the unlabelled text (repeatable)")
    p.add_argument("--keep", choices=["best", "last"], default="best", help="best: model-best by dev F1 (dev held "
                   "out); last: exactly training.epochs epochs, model-last (when dev is also the teacher's "
                   "training data, its F1 is a training-set figure and must not select)")
    p.add_argument("--embeddings", action="append", help="as for train; default: the student config's")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--config", help="student config JSON (default: the teacher's config)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="student config override (e.g. training.epochs=25) or distil.KEY=VALUE (repeatable)")
    p.add_argument("--no-resume", action="store_true", help="start fresh even if OUT/checkpoint exists")
    p.add_argument("--register", metavar="NAME", help="register the student in the model store under NAME")
    p.add_argument("--json", action="store_true", help="print the final metrics as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_corpus_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from nerservice.config import NerConfig
    from nerservice.distil.config import DistilConfig, split_overrides
    from nerservice.embeddings import resolve_sources
    from nerservice.errors import ConfigError

    if args.corpora and (args.train or args.dev or args.test):
        raise ConfigError("--corpora names every split itself; drop --train/--dev/--test")
    if not args.corpora and not (args.train and args.dev):
        raise ConfigError("distil needs --train and --dev (or --corpora for a multi-corpus teacher)")
    if args.cross_fit and args.corpora:
        raise ConfigError("--cross-fit is for a single-corpus teacher's --train files")
    if args.dev_in_train and not (args.corpora and args.keep == "last"):
        raise ConfigError("--dev-in-train needs --corpora and --keep last (dev would select on training data)")
    if args.teacher_head and args.corpora:
        raise ConfigError("--teacher-head distils one head into a single-corpus student on --train/--dev; --corpora "
                          "distils every head", hint="drop one of them")
    from nerservice.distil.teacher_ref import load_teacher

    teacher = load_teacher(args.teacher, head=args.teacher_head)  # a single-corpus one with a head: refused here
    if teacher.multi != bool(args.corpora):
        raise ConfigError(f"{args.teacher} is a {'multi' if teacher.multi else 'single'}-corpus model; "
                          + ("distil it on its corpora config" if teacher.multi else "--corpora is for a "
                             "multi-corpus teacher"),
                          hint="nerservice distil --corpora CORPORA.json" if teacher.multi else "use --train/--dev")
    ner_sets, distil_sets = split_overrides(list(args.set))
    dconfig = DistilConfig().with_overrides(distil_sets)
    config = NerConfig.load(args.config) if args.config else teacher.loaded.config
    config = config.with_overrides(ner_sets) if ner_sets else config
    sources = resolve_sources(config.model.embeddings, args.embeddings)
    if sources != config.model.embeddings:
        config = config.with_overrides({"model.embeddings": sources})
    unlabelled = dconfig.read_unlabelled(args.unlabelled)
    if args.corpora:
        return run_multi(args, teacher, config, dconfig, unlabelled)
    return run_single(args, teacher, config, dconfig, unlabelled)


def run_single(args: argparse.Namespace, teacher: Teacher, config: Any, dconfig: Any, unlabelled: Any) -> int:
    from nerservice.cli.train_cmd import store_callbacks
    from nerservice.distil.run import distil

    train_c, dev_c = read(args.train, args), read(args.dev, args)
    test_c = read(args.test, args) if args.test else None
    cross_fit = fold_teachers(args.cross_fit, args.train, train_c.sentences, head=args.teacher_head)
    describe(teacher, f"labelled: {len(train_c.sentences)} sentences; dev {len(dev_c.sentences)}", unlabelled)
    for fold in cross_fit:
        print(f"cross-fitting: {len(fold.rows)} labelled sentences take their targets from {fold.teacher.info['ref']} "
              f"({fold.teacher.info['kind']} of {fold.teacher.info['members']} model(s))")
    callbacks = store_callbacks(args, config)
    result = distil(config, dconfig, teacher=teacher, train_data=train_c.sentences, dev_data=dev_c.sentences,
                    test_data=test_c.sentences if test_c else None, unlabelled=unlabelled, out_dir=args.out,
                    sources={"teacher": args.teacher, "train": args.train, "dev": args.dev, "test": args.test,
                             "unlabelled": args.unlabelled, "embeddings": config.model.embeddings,
                             **({"cross_fit": args.cross_fit} if args.cross_fit else {})},
                    callbacks=callbacks, resume=not args.no_resume, progress=not args.quiet, keep=args.keep,
                    cross_fit=cross_fit)
    return report(args, teacher, result, print_scores)


def run_multi(args: argparse.Namespace, teacher: Teacher, config: Any, dconfig: Any, unlabelled: Any) -> int:
    """``--corpora``: the corpora are read and checked against the teacher's heads before anything trains."""
    from nerservice.cli.train_cmd import store_callbacks
    from nerservice.distil.run import distil_multi
    from nerservice.multi.config import CorporaConfig
    from nerservice.multi.corpora import read_corpora, with_dev_in_train

    corpora_config = CorporaConfig.load(args.corpora)
    corpora = read_corpora(corpora_config, lenient=args.lenient)
    if args.dev_in_train:
        corpora = with_dev_in_train(corpora)
    describe(teacher, "labelled: " + ", ".join(f"{c.name} {len(c.train)}" for c in corpora) + " sentences"
             + (" (train + dev)" if args.dev_in_train else ""), unlabelled)
    callbacks = store_callbacks(args, config)
    result = distil_multi(config, dconfig, teacher=teacher, corpora_config=corpora_config, corpora=corpora,
                          unlabelled=unlabelled, out_dir=args.out,
                          sources={"teacher": args.teacher, "corpora": args.corpora, "dev_in_train": args.dev_in_train,
                                   "unlabelled": args.unlabelled, "embeddings": config.model.embeddings},
                          callbacks=callbacks, resume=not args.no_resume, progress=not args.quiet, keep=args.keep)
    return report(args, teacher, result, print_corpus_scores)


def describe(teacher: Teacher, labelled: str, unlabelled: Any) -> None:
    heads = f", heads {teacher.info['heads']}" if teacher.multi else ""
    print(f"teacher: {teacher.info['kind']} of {teacher.info['members']} model(s), tags {teacher.info['tags']}{heads}")
    print(labelled + (f"; unlabelled {len(unlabelled.sentences)} sentences, {unlabelled.tokens} tokens from "
                      f"{len(unlabelled.files)} file(s)" if unlabelled else ""))


def report(args: argparse.Namespace, teacher: Teacher, result: Any, print_metrics: Any) -> int:
    o = result.outcome
    if args.json:
        emit_json({"dev": o.dev, "test": o.test, "teacher_test": result.teacher_test,
                   "best_epoch": o.best_epoch, "model_dir": str(o.best_dir),
                   "minutes": round(o.seconds / 60, 2), "targets_seconds": round(result.targets_seconds, 2)})
        return 0
    print(f"\nstopped: {o.stopped_reason}; kept epoch {o.best_epoch}; {o.seconds / 60:.1f} min "
          f"(+ {result.targets_seconds:.0f} s for the teacher's targets)")
    if args.keep == "last":
        print("(--keep last: no selection on dev; if dev is the teacher's training data, its F1 is a "
              "training-set figure)")
    print_metrics("dev (student)", o.dev)
    if o.test:
        print_metrics("test (student)", o.test)
    if result.teacher_test:
        print_metrics(f"test (teacher, {teacher.info['members']} model(s))", result.teacher_test)
    print(f"\nmodel: {o.best_dir}")
    return 0


def fold_teachers(items: list[str], train_files: list[str], sentences: Any, *, head: str | None = None) -> list[Any]:
    """``--cross-fit FILE=TEACHER`` items -> ``FoldTeacher``s over the rows of ``sentences`` read from FILE
    (every sentence records the file it came from); a multi-corpus TEACHER as its ``head``."""
    from pathlib import Path

    from nerservice.distil.run import FoldTeacher
    from nerservice.distil.teacher_ref import load_teacher
    from nerservice.errors import ConfigError

    folds = []
    known = {Path(f).resolve() for f in train_files}
    for item in items:
        file, sep, ref = item.partition("=")
        if not sep or not file or not ref:
            raise ConfigError(f"--cross-fit {item!r} is not FILE=TEACHER", hint="e.g. --cross-fit devel.tsv=ens-train")
        path = Path(file).resolve()
        if path not in known:
            raise ConfigError(f"--cross-fit names {file}, which is not one of the --train files {train_files}",
                              hint="cross-fitting labels part of the labelled text: name a --train file")
        rows = [i for i, s in enumerate(sentences) if s.file is not None and Path(s.file).resolve() == path]
        folds.append(FoldTeacher(load_teacher(ref, head=head, single_as_is=True), rows))
    return folds

