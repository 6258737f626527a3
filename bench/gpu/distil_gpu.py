"""Ensemble -> one model by distillation (issue 14, item 2), on the GPU: student vs teacher vs members.

1. Teachers: ``--teachers DIR ...`` (saved model folders), or ``--train-teachers N``: N trainings of
   ``bench/gpu/train_gpu.py`` side by side (one process each, seeds 42, 1, 2, ...), on the labelled corpus's
   train+devel for a fixed number of epochs (``--protocol final``, model-last) or on train with early
   stopping on devel (``--protocol select``, model-best).
2. The teachers become one ensemble folder (mean CRF scores); it and every member are evaluated on test.
3. For each ``--gold-weights`` value a student is distilled (``nerservice.distil.run.distil``, the code
   ``nerservice distil`` runs) on the labelled corpus (final: train+devel; select: train) plus the train and
   devel tokens of every ``--unlabelled-corpora`` corpus (their tags are never read; never test text).
   final: fixed epochs, model-last, devel is training data (its F1 is not a held-out figure);
   select: model-best by devel F1 — the protocol that may choose the gold weight.
4. Test F1 (entity, strict) of the students, the ensemble and its members, inference tokens/s of the
   student vs the ensemble, wall time of every stage. The JSON is rewritten after every stage, so a run
   cut off by a time limit still reports what it finished.

Cross-fitting (``--cross-fit``, final protocol): besides the N teachers on train + devel (or the --teachers
given), N teachers per fold (``bench/gpu/folds.py``, ``train_gpu.py --fold``, the same fixed epochs, model-last,
all side by side): by default the corpus's halves, N on train only and N on devel only; with ``--kfold K``, N
on each K-1 of K blocks of train + devel.  Each fold's ensemble gives the targets of the labelled sentences its
members never saw (``nerservice.distil.run.FoldTeacher``), so the student's labelled text is labelled by
teachers that did not train on it (on their own training text a teacher's targets are the gold tags again:
BENCHMARKS.md, session 14); the --teachers ensemble labels the unlabelled text as before.
``--fold-teachers FOLD=DIR,...`` passes such teachers (fold names: ``train``, ``devel`` or ``IofK``) instead.

Runs with KERAS_BACKEND=jax and only keras, pydantic, numpy, seqeval (no TensorFlow):

    KERAS_BACKEND=jax python bench/gpu/distil_gpu.py --data DIR --embeddings FILE --train-teachers 3 \
        --json-out OUT.json [--teacher-set k=v ...] [--set k=v ...]  # --set: the student's config
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from folds import fold_names, held_out_rows  # bench/gpu/, the script's own folder
from runtime import runtime

os.environ.setdefault("KERAS_BACKEND", "jax")
# Several processes share the GPU while the teachers train (and this one holds a client): none may take 75 %.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def train_teachers(args: argparse.Namespace, out: Path, result: dict[str, Any]) -> tuple[list[Path], dict[str, list[Path]]]:
    """N train_gpu.py processes side by side (and, with --cross-fit, N per fold); each one's model folder."""
    corpus = Path(args.data) / args.corpus
    seeds = [42, 1, 2, 3, 4, 5, 6, 7][: args.train_teachers]
    # with --teachers, --cross-fit trains only the fold teachers
    jobs = ([] if args.teachers else [("", s) for s in seeds]) + [(f, s) for f in fold_names(args.kfold) for s in seeds
                                                                    if args.cross_fit]
    procs: list[dict[str, Any]] = []
    pending = list(jobs)
    t0 = time.perf_counter()
    running: list[tuple[tuple[str, int], subprocess.Popen[bytes], Any]] = []

    def name(job: tuple[str, int]) -> str:
        return f"teacher-{job[0] + '-' if job[0] else ''}{job[1]}"

    while pending or running:
        while pending and len(running) < args.teacher_jobs:
            job = pending.pop(0)
            fold, seed = job
            cmd = [sys.executable, str(REPO / "bench/gpu/train_gpu.py"), "--corpus", str(corpus),
                   "--out", str(out / name(job)), "--no-ceiling", "--no-inference",
                   "--json-out", str(out / f"{name(job)}.json"),
                   "--set", f"training.seed={seed}", *sum((["--set", s] for s in args.teacher_set), [])]
            if args.embeddings:
                cmd += ["--embeddings", args.embeddings]
            if fold:
                cmd += ["--fold", fold]
            elif args.protocol == "final":
                cmd.append("--train-on-dev")
            log = open(out / f"{name(job)}.log", "wb")
            running.append((job, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log))
        for item in list(running):
            job, proc, log = item
            if proc.poll() is not None:
                log.close()
                running.remove(item)
                if proc.returncode != 0:
                    for _, other, _ in running:
                        other.kill()
                    tail = (out / f"{name(job)}.log").read_text(errors="replace")[-3000:]
                    raise SystemExit(f"{name(job)} failed (rc {proc.returncode}):\n{tail}")
                info = json.loads((out / f"{name(job)}.json").read_text())
                info["epochs_run"] = len(info.get("dev_f1_by_epoch", [])) or info["epochs_run"]
                last = args.protocol == "final" or bool(job[0])
                kept = out / name(job) / ("model-last" if last else "model-best")
                procs.append({"fold": job[0] or None, "seed": job[1], "dir": str(kept), "wall_s": info["wall_s"],
                              "epochs_run": info["epochs_run"], "best_epoch": info["best_epoch"],
                              "train_tokens_per_s": info["train_tokens_per_s_steady"],
                              # a fold teacher's dev is the other split, held out from it
                              **({"held_out_f1_last": info["dev_f1_by_epoch"][-1]} if job[0] else {})})
        time.sleep(1)
    procs.sort(key=lambda p: jobs.index((p["fold"] or "", p["seed"])))
    result["teachers"] = [p for p in procs if not p["fold"]]
    result["fold_teachers"] = [p for p in procs if p["fold"]]
    result["stages_s"]["teachers"] = time.perf_counter() - t0
    return ([Path(p["dir"]) for p in result["teachers"]],
            {f: [Path(p["dir"]) for p in result["fold_teachers"] if p["fold"] == f] for f in fold_names(args.kfold)
             if args.cross_fit})


def infer_speed(predictor: Any, sentences: list[tuple[str, ...]], passes: int = 2) -> float:
    predictor.predict_tags(sentences)  # compiles
    t0 = time.perf_counter()
    for _ in range(passes):
        predictor.predict_tags(sentences)
    return passes * sum(len(s) for s in sentences) / (time.perf_counter() - t0)


def f1s(metrics: dict[str, Any]) -> dict[str, Any]:
    return {"f1": metrics["micro"]["f1"], "precision": metrics["micro"]["precision"],
            "recall": metrics["micro"]["recall"], "per_type": {k: v["f1"] for k, v in metrics["per_type"].items()},
            "nerdl_tag_f1": metrics["tag_level"]["micro"]["f1"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="folder of corpus folders, each with train/devel/test.tsv")
    ap.add_argument("--corpus", default="NCBI-disease", help="the labelled corpus (teachers, student, test)")
    ap.add_argument("--unlabelled-corpora", nargs="*", default=["BC5CDR", "BC2GM", "linnaeus"],
                    help="corpora whose train+devel tokens are the student's unlabelled text")
    ap.add_argument("--embeddings", help="word vectors file (teachers and student)")
    ap.add_argument("--protocol", choices=["final", "select"], default="final")
    ap.add_argument("--teachers", nargs="*", default=[], help="teacher model folders (instead of training them)")
    ap.add_argument("--train-teachers", type=int, default=0, metavar="N", help="train N teachers (seeds 42, 1, 2, ..)")
    ap.add_argument("--teacher-jobs", type=int, default=3, help="teacher trainings at once on the GPU")
    ap.add_argument("--teacher-set", action="append", default=[], metavar="K=V", help="teachers' config overrides")
    ap.add_argument("--set", action="append", default=[], metavar="K=V",
                    help="the student's config overrides (over the teachers' config); distil.K=V for DistilConfig")
    ap.add_argument("--export-teachers", metavar="DIR", help="copy the teachers' kept model folders to DIR/teacher-S "
                    "(e.g. under $OUT, to carry them into a second call with --teachers)")
    ap.add_argument("--teacher-head", metavar="NAME", help="multi-corpus --teachers (and fold teachers): their head "
                    "NAME (e.g. ncbi) as the single-corpus teacher of --corpus (nerservice/distil/head.py)")
    ap.add_argument("--teachers-only", action="store_true", help="stop after the teachers and their ensemble")
    ap.add_argument("--target-stats", type=float, nargs="*", default=[], metavar="T",
                    help="the ensemble's target confidence on labelled, unlabelled and test text at these "
                         "temperatures (bench/gpu/teacher_confidence.py)")
    ap.add_argument("--cross-fit", action="store_true", help="with --train-teachers N (final protocol): also N "
                    "teachers per fold; each fold's ensemble labels the text its members never saw")
    ap.add_argument("--kfold", type=int, default=0, metavar="K", help="cross-fitting folds: K blocks of train + "
                    "devel (fold IofK trains on all blocks but I); 0 = the corpus's halves, folds train and devel")
    ap.add_argument("--fold-teachers", action="append", default=[], metavar="FOLD=DIR,DIR..",
                    help="cross-fitting teachers of FOLD (train, devel or IofK: bench/gpu/folds.py)")
    ap.add_argument("--no-teacher-eval", action="store_true", help="score no member, fold ensemble or inference "
                    "speed, only what the students need (the ensemble's test tags): a --teachers-only run on the "
                    "same teachers reports those, and side-by-side students keep their time for training")
    ap.add_argument("--gold-weights", type=float, nargs="+", default=[0.0], help="one student per value")
    ap.add_argument("--deadline-s", type=float, help="wall-clock budget of the whole run: each student's "
                    "training.max_minutes is cut to what is left (minus --margin-s), and the run says so")
    # The student's time cap bounds its epochs only: the teacher's targets over every sentence (computed first,
    # inside distil) and the test evaluation come on top. Session 12's BC5CDR call (1.2M tokens) lost its
    # student's figure with a 45-s margin: the script was killed after epoch 20, before the evaluation.
    ap.add_argument("--margin-s", type=float, default=150.0, help="kept back for the teacher's targets, the "
                    "student's evaluation and the JSON")
    ap.add_argument("--resume", action="store_true", help="a student whose folder holds a checkpoint continues from it "
                    "(e.g. a second call on the warm machine after the first one's --deadline-s stopped it; the "
                    "teacher's targets are recomputed, deterministically); default: start fresh")
    ap.add_argument("--out", default="/tmp/distil-gpu")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    if bool(args.teachers) == bool(args.train_teachers) and not (args.teachers and args.cross_fit):
        raise SystemExit("give --teachers DIR ... or --train-teachers N (both: --cross-fit trains only the folds)")
    if (args.cross_fit or args.fold_teachers) and args.protocol != "final":
        raise SystemExit("cross-fitting is for the final protocol (labelled text = train + devel)")
    if args.cross_fit and not args.train_teachers:
        raise SystemExit("--cross-fit trains the fold teachers: with --train-teachers N (or pass --fold-teachers)")

    import keras

    from nerservice.artifacts.ensemble_folder import save_ensemble
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.resolve import resolve
    from nerservice.data import read_corpus
    from nerservice.data.unlabelled import read_unlabelled
    from nerservice.distil.config import DistilConfig, split_overrides
    from nerservice.distil.head import head_teacher
    from nerservice.distil.run import FoldTeacher, distil, teacher_from
    from nerservice.metrics import evaluate_predictor
    from nerservice.multi.head_view import HeadArtifact
    from nerservice.text.vocab import MultiTagVocabulary

    started = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"backend": keras.backend.backend(), "protocol": args.protocol, "corpus": args.corpus,
                              "unlabelled_corpora": args.unlabelled_corpora, "teacher_set": args.teacher_set,
                              "student_set": args.set, "stages_s": {}, "students": [], **runtime()}

    def save() -> None:
        result["wall_s"] = time.perf_counter() - started
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(result, indent=2))

    fold_dirs: dict[str, list[Path]] = {}
    for item in args.fold_teachers:
        fold, _, dirs = item.partition("=")
        if fold not in fold_names(args.kfold) or not dirs:
            raise SystemExit(f"--fold-teachers {item!r}: FOLD=DIR,DIR.. with FOLD one of {fold_names(args.kfold)}")
        fold_dirs[fold] = [Path(d) for d in dirs.split(",")]
    if args.train_teachers:
        trained, trained_folds = train_teachers(args, out, result)
        fold_dirs.update(trained_folds)
    teacher_dirs = [Path(t) for t in args.teachers] or trained
    if fold_dirs and set(fold_dirs) != set(fold_names(args.kfold)):
        raise SystemExit(f"cross-fitting needs teachers for every fold {fold_names(args.kfold)}; got {sorted(fold_dirs)}")
    if args.export_teachers:
        import shutil

        for d, t in zip(teacher_dirs, result.get("teachers", [{"seed": i} for i in range(len(teacher_dirs))])):
            shutil.copytree(d, Path(args.export_teachers) / f"teacher-{t['seed']}", dirs_exist_ok=True)
    save()

    corpus = Path(args.data) / args.corpus
    tr, dv, te = (read_corpus(corpus / f"{s}.tsv").sentences for s in ("train", "devel", "test"))
    t0 = time.perf_counter()
    def ensemble_teacher(folder: Path, members: list[Path]) -> Any:
        """The members saved as one ensemble folder, loaded as a distillation teacher."""
        ens_dir = save_ensemble(folder, members)
        resolved = resolve(str(ens_dir))
        t = teacher_from(load_model(resolved.path), ref=str(ens_dir), path=resolved.path, name=resolved.name,
                         version=resolved.version)
        return head_teacher(t, args.teacher_head) if args.teacher_head and t.multi else t

    teacher = ensemble_teacher(out / "ensemble", teacher_dirs)
    ens_pred = teacher.loaded.predictor(batch_size=256)
    result["ensemble"] = {"test": f1s(evaluate_predictor(ens_pred, te)), "members": len(teacher_dirs)}
    test_tokens = [s.tokens for s in te]
    if not args.no_teacher_eval:
        def member_predictor(d: Path) -> Any:  # a multi-corpus member as its --teacher-head head
            loaded = load_model(d)
            if args.teacher_head and isinstance(loaded.vocabs.tags, MultiTagVocabulary):
                loaded = HeadArtifact(loaded, args.teacher_head)
            return loaded.predictor(batch_size=256)

        result["members_test"] = [f1s(evaluate_predictor(member_predictor(d), te)) for d in teacher_dirs]
        result["ensemble"]["infer_tokens_per_s"] = infer_speed(ens_pred, test_tokens)
    teacher_tags = [t for tags in ens_pred.predict_tags(test_tokens) for t in tags]
    counts: dict[str, int] = {}
    for t in teacher_tags:
        counts[t] = counts.get(t, 0) + 1
    # what agreeing with the teacher by always answering its most frequent tag would score
    result["ensemble"]["test_majority_tag_rate"] = max(counts.values()) / len(teacher_tags)
    result["stages_s"]["ensemble_eval"] = time.perf_counter() - t0
    print(f"ensemble test F1 {result['ensemble']['test']['f1']:.4f}; members "
          f"{[round(m['f1'], 4) for m in result.get('members_test', [])]}", flush=True)
    save()
    ner_sets, distil_sets = split_overrides(list(args.set))
    base = DistilConfig().with_overrides(distil_sets)
    files = [Path(args.data) / c / f"{s}.tsv" for c in args.unlabelled_corpora for s in ("train", "devel")]
    unlabelled = (read_unlabelled(files, max_tokens=base.max_unlabelled_tokens,
                                  max_sentence_tokens=base.max_sentence_tokens) if files else None)
    labelled = [*tr, *dv] if args.protocol == "final" else tr
    if args.target_stats:
        from teacher_confidence import confidence_stats

        t0 = time.perf_counter()
        groups = {"labelled": ([s.tokens for s in labelled], [s.tags for s in labelled]), "test": (test_tokens, [s.tags for s in te])}
        if args.protocol == "select":
            groups["devel (held out)"] = ([s.tokens for s in dv], [s.tags for s in dv])
        if unlabelled:
            groups["unlabelled"] = (unlabelled.sentences, None)
        result["target_stats"] = confidence_stats(ens_pred, groups, args.target_stats)
        result["stages_s"]["target_stats"] = time.perf_counter() - t0
        print(json.dumps(result["target_stats"], indent=1), flush=True)
        save()
    cross_fit = []
    if fold_dirs:
        # each fold's teachers as one ensemble, labelling the rows of train + devel they were not trained on
        t0 = time.perf_counter()
        result["folds"] = {}
        from teacher_confidence import confidence_stats

        for fold, dirs in fold_dirs.items():
            f_teacher = ensemble_teacher(out / f"ensemble-{fold}", dirs)
            rows = held_out_rows(fold, len(tr), len(dv))
            cross_fit.append(FoldTeacher(f_teacher, rows))
            labels = {"train": "devel", "devel": "train"}.get(fold, f"block {fold}")
            result["folds"][fold] = {"labels": labels, "members": len(dirs), "rows": [rows.start, rows.stop]}
            if args.no_teacher_eval:
                continue
            f_pred = f_teacher.loaded.predictor(batch_size=256)
            held_out = [labelled[j] for j in rows]
            result["folds"][fold].update({
                "test": f1s(evaluate_predictor(f_pred, te)), "held_out": f1s(evaluate_predictor(f_pred, held_out)),
                "held_out_confidence": confidence_stats(
                    f_pred, {labels: ([s.tokens for s in held_out], [s.tags for s in held_out])}, [1.0])[labels]})
            print(f"fold ensemble {fold}: F1 on {labels} (held out) {result['folds'][fold]['held_out']['f1']:.4f}, "
                  f"test {result['folds'][fold]['test']['f1']:.4f}", flush=True)
        result["stages_s"]["folds_eval"] = time.perf_counter() - t0
        save()
    if args.teachers_only:
        print(json.dumps(result, indent=2))
        return

    result["data"] = {"labelled_sentences": len(labelled), "labelled_tokens": sum(len(s.tokens) for s in labelled),
                      "unlabelled": unlabelled.files if unlabelled else {},
                      "unlabelled_tokens": unlabelled.tokens if unlabelled else 0}
    # the teachers' own time cap is theirs: the student's comes from --set or --deadline-s
    config = teacher.loaded.config.with_overrides({"training.max_minutes": None})
    config = config.with_overrides(ner_sets) if ner_sets else config
    result["student_config"] = config.model_dump(mode="json")
    for w in args.gold_weights:
        dconfig = base.with_overrides({"gold_weight": w})
        t0 = time.perf_counter()
        run_config = config
        if args.deadline_s is not None:
            left_min = (args.deadline_s - args.margin_s - (t0 - started)) / 60
            if left_min <= 0.2:
                result["skipped_gold_weights"] = [*result.get("skipped_gold_weights", []), w]
                save()
                continue
            cap = min(left_min, config.training.max_minutes or left_min)
            run_config = config.with_overrides({"training.max_minutes": round(cap, 2)})
        progress: dict[str, Any] = {"gold_weight": w, "running": True, "epochs": []}
        result["students"].append(progress)

        class EpochLog:  # the student's curve in the JSON as it trains: a run cut off still shows it
            def on_start(self, config: Any) -> None:
                return None

            def on_epoch(self, record: dict[str, Any], is_best: bool) -> None:
                progress["epochs"].append({k: record.get(k) for k in ("epoch", "dev_f1", "loss", "train_seconds",
                                                                     "train_tokens_per_s")})
                save()

            def on_end(self, outcome: Any) -> None:
                return None

        r = distil(run_config, dconfig, callbacks=[EpochLog()], teacher=teacher, train_data=labelled, dev_data=dv, test_data=te,
                   unlabelled=unlabelled, out_dir=out / f"student-w{w:g}", resume=args.resume, progress=False,
                   keep="last" if args.protocol == "final" else "best", cross_fit=cross_fit)
        o = r.outcome
        student_pred = load_model(o.best_dir).predictor(batch_size=256)
        hist = o.history
        tps = sorted(h["train_tokens_per_s"] for h in hist)
        student_tags = [t for tags in student_pred.predict_tags(test_tokens) for t in tags]
        agreement = sum(a == b for a, b in zip(student_tags, teacher_tags)) / len(teacher_tags)
        lineage = json.loads((Path(o.best_dir) / "lineage.json").read_text()).get("distillation", {})
        entry = {"gold_weight": w, "test_tag_agreement_with_teacher": agreement, "cross_fit": bool(cross_fit),
                 "resumed": args.resume and len(hist) > len(progress["epochs"]),
                 "target_confidence": lineage.get("target_confidence"),
                 "max_minutes": run_config.training.max_minutes, "dir": str(o.best_dir),
                 "test": f1s(o.test) if o.test else None,
                 "dev": f1s(o.dev), "dev_is_training_data": args.protocol == "final",
                 "epochs_run": len(hist), "kept_epoch": o.best_epoch, "stopped": o.stopped_reason,
                 "targets_s": r.targets_seconds, "train_s": o.seconds, "wall_s": time.perf_counter() - t0,
                 "train_tokens_per_s_median": tps[len(tps) // 2] if tps else None,
                 "dev_f1_by_epoch": [h["dev_f1"] for h in hist],
                 "infer_tokens_per_s": infer_speed(student_pred, test_tokens)}
        progress.clear()
        progress.update(entry)
        print(f"student gold_weight={w:g}: test F1 {entry['test']['f1'] if entry['test'] else None}, "
              f"{entry['wall_s']:.0f} s", flush=True)
        save()
    result["tensorflow_imported"] = "tensorflow" in sys.modules
    save()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
