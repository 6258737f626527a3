"""Multi-corpus vs single-corpus models, same recipe, side by side on one GPU (issue 14, item 3).

For every seed: one single-corpus model per corpus (``nerservice.training.trainer.train``) and one
multi-corpus model over all of them (``nerservice.multi.trainer.train_multi``), each in its own process
(``XLA_PYTHON_CLIENT_PREALLOCATE=false``), all at once; every run gets the same config and the same
wall-clock cap (``training.max_minutes``). Test F1 of each corpus: the single model vs the multi model's
head for that corpus (model-best by dev F1: the corpus's own for a single model, the mean over corpora
for the multi model).

    KERAS_BACKEND=jax python bench/gpu/multi_corpus.py --corpora CONFIG.json --embeddings VECTORS \
        --seeds 42 1 2 [--mixed-seeds 42] --set training.batch_size=64 ... --json-out RESULT.json

One run alone: ``--one single:NAME`` / ``--one multi`` / ``--one mixed`` (what the launcher starts).
``--one multi --final-epochs E``: the final recipe's phase 2 alone, E epochs chosen elsewhere on dev (a
phase 1 run's best epoch): every corpus trains on train + dev, model-last is kept and evaluated on test.
``--fold CORPUS:IofK`` (with ``--final-epochs``): a cross-fitting teacher — CORPUS trains on the blocks of its
train + dev other than block I (``bench/gpu/folds.py``, the blocks ``distil_gpu.py --kfold K`` hands to fold
teachers) and its dev is block I, held out (so its dev F1 is the teacher's held-out F1); the other corpora train on
their train + dev as in phase 2.  ``--resume``: go on from ``--out``'s checkpoint (a run the call's end killed).
Speed figures of runs sharing a GPU are not benchmarks; F1 is what this is for.
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

os.environ.setdefault("KERAS_BACKEND", "jax")


def run_one(args: argparse.Namespace) -> dict:
    from nerservice.config import NerConfig
    from nerservice.multi.config import CorporaConfig
    from nerservice.multi.corpora import read_corpora

    config = NerConfig().with_overrides([*args.set, f"training.seed={args.seed}"])
    cc = CorporaConfig.load(args.corpora)
    if args.fold and (args.fold.partition(":")[0] not in cc.names or not args.final_epochs):
        raise SystemExit(f"--fold {args.fold}: CORPUS:IofK with CORPUS one of {cc.names}, and --final-epochs")
    corpora = read_corpora(cc)
    out = Path(args.out)
    t0 = time.perf_counter()
    kind, _, name = args.one.partition(":")
    partial = Partial(args, kind)
    if kind == "single":
        from nerservice.training.trainer import train

        c = next(c for c in corpora if c.name == name)
        o = train(config, train_data=c.train, dev_data=c.dev, test_data=c.test, embeddings=args.embeddings,
                  out_dir=out, resume=False, progress=False, callbacks=[partial])
        per = {name: {"dev_f1": o.dev["micro"]["f1"], "test_f1": o.test["micro"]["f1"] if o.test else None}}
    else:
        from nerservice.multi.trainer import train_multi

        if kind == "mixed":
            cc = cc.model_copy(update={"batching": "mixed"})
        final: dict = {}
        if args.final_epochs:  # the final recipe's phase 2 (what `nerservice train --corpora --final` runs second)
            from nerservice.multi.corpora import with_dev_in_train
            from nerservice.training.recipes import phase2_config

            corpora = [fold_splits(c, args.fold) if args.fold else with_dev_in_train([c])[0] for c in corpora]
            config = phase2_config(config, args.final_epochs, args.seed)
            final = {"keep": "last", "recipe": {"name": "final", "phase": 2,
                                                "phase2": {"epochs": args.final_epochs, "train": "train + dev"}}}
        o = train_multi(config, cc, corpora, embeddings=args.embeddings, out_dir=out, resume=args.resume, progress=False,
                        callbacks=[partial], **final)
        per = {c: {"dev_f1": o.dev["per_corpus"][c]["micro"]["f1"],
                   "test_f1": o.test["per_corpus"][c]["micro"]["f1"] if o.test else None} for c in cc.names}
    from runtime import runtime  # bench/gpu/, the script's own folder

    return {"run": args.one, "seed": args.seed, **runtime(), "per_corpus": per, "best_epoch": o.best_epoch,
            "epochs_run": len(o.history), "stopped": o.stopped_reason, "seconds": time.perf_counter() - t0,
            "epoch_seconds": [round(h["train_seconds"] + h["eval_seconds"], 2) for h in o.history],
            "dev_f1_by_epoch": [round(h["dev_f1"], 4) for h in o.history],
            # each head's own curve: an epoch count for one corpus can be read from its head (session 33)
            **({"dev_f1_by_epoch_per_corpus": {c: [round(h["dev_f1_per_corpus"][c], 4) for h in o.history]
                                               for c in per}} if kind != "single" else {})}


def fold_splits(c: Any, fold: str) -> Any:
    """Corpus ``c`` as a fold teacher (``fold`` = ``NAME:IofK``) trains on it: the named corpus on the blocks of
    train + dev other than I, evaluated on block I; any other corpus on train + dev (phase 2)."""
    from folds import split_fold  # bench/gpu/, the script's own folder

    from nerservice.multi.corpora import CorpusSplits, with_dev_in_train

    name, _, which = fold.partition(":")
    if c.name != name:
        return with_dev_in_train([c])[0]
    kept, held = split_fold(which, c.train, c.dev)
    return CorpusSplits(c.name, kept, held, c.test)


class Partial:
    """Writes the dev curve after every epoch: a run cut off by the deadline still reports how far it got."""

    def __init__(self, args: argparse.Namespace, kind: str) -> None:
        self.args, self.kind, self.history = args, kind, []

    def on_start(self, config: object) -> None:
        return None

    def on_epoch(self, record: dict, is_best: bool) -> None:
        self.history.append({"epoch": record["epoch"], "dev_f1": record["dev_f1"], "best": is_best,
                             "per_corpus": record.get("dev_f1_per_corpus"),
                             "seconds": record["train_seconds"] + record["eval_seconds"]})
        if self.args.json_out:
            Path(self.args.json_out).write_text(json.dumps({"run": self.args.one, "seed": self.args.seed,
                                                            "partial": True, "history": self.history}))

    def on_end(self, outcome: object) -> None:
        return None


def launch(args: argparse.Namespace) -> dict:
    from nerservice.multi.config import CorporaConfig

    names = CorporaConfig.load(args.corpora).names
    jobs = [(f"single:{n}", s) for s in args.seeds for n in names] + [("multi", s) for s in args.seeds]
    jobs += [("mixed", s) for s in args.mixed_seeds]
    env = {**os.environ, "XLA_PYTHON_CLIENT_PREALLOCATE": "false", "KERAS_BACKEND": "jax"}
    logs = Path(args.log_dir)
    logs.mkdir(parents=True, exist_ok=True)
    procs = []
    for one, seed in jobs:
        tag = f"{one.replace(':', '-')}-{seed}"
        cmd = [sys.executable, __file__, "--one", one, "--seed", str(seed), "--corpora", args.corpora,
               "--out", f"/tmp/multi-bench/{tag}", "--json-out", str(logs / f"{tag}.json"),
               *[x for e in (args.embeddings or []) for x in ("--embeddings", e)],
               *[x for s in args.set for x in ("--set", s)]]
        log = open(logs / f"{tag}.log", "w")
        procs.append((tag, subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)))
    # Results are rewritten every few seconds while runs go on, so a command cut off by its own time limit
    # still leaves what had finished (and every run's dev curve so far) in --json-out.
    deadline = time.time() + args.deadline_s
    while any(p.poll() is None for _, p in procs) and time.time() < deadline:
        time.sleep(3)
        write(args, collect(procs, logs, names))
    for _, p in procs:
        if p.poll() is None:
            p.kill()
    for _, p in procs:
        p.wait()
    return collect(procs, logs, names)


def write(args: argparse.Namespace, result: dict) -> None:
    if args.json_out:
        tmp = Path(args.json_out + ".tmp")
        tmp.write_text(json.dumps(result, indent=2))
        tmp.replace(args.json_out)


def collect(procs: list, logs: Path, names: list[str]) -> dict:
    results = []
    for tag, p in procs:
        f = logs / f"{tag}.json"
        if f.is_file():
            try:
                results.append({**json.loads(f.read_text()), "rc": p.returncode})
            except json.JSONDecodeError:  # being rewritten right now
                results.append({"run": tag, "rc": p.returncode})
        elif p.returncode is not None:
            tail = (logs / f"{tag}.log").read_text(errors="replace")[-1500:]
            results.append({"run": tag, "failed": True, "rc": p.returncode, "log_tail": tail})
    return {"runs": results, "summary": summarize(results, names)}


def summarize(results: list[dict], names: list[str]) -> dict:
    def mean(xs: list[float]) -> float | None:
        return round(100 * sum(xs) / len(xs), 2) if xs else None

    table = {}
    for n in names:
        single = [r["per_corpus"][n]["test_f1"] for r in results if r.get("run") == f"single:{n}" and "per_corpus" in r]
        multi = [r["per_corpus"][n]["test_f1"] for r in results if r.get("run") == "multi" and "per_corpus" in r]
        mixed = [r["per_corpus"][n]["test_f1"] for r in results if r.get("run") == "mixed" and "per_corpus" in r]
        table[n] = {"single": mean(single), "multi": mean(multi), "mixed": mean(mixed),
                    "single_seeds": [round(100 * x, 2) for x in single], "multi_seeds": [round(100 * x, 2) for x in multi],
                    "mixed_seeds": [round(100 * x, 2) for x in mixed]}
        if table[n]["single"] is not None and table[n]["multi"] is not None:
            table[n]["delta"] = round(table[n]["multi"] - table[n]["single"], 2)
    return table


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpora", required=True, help="corpora config (nerservice.corpora.v1)")
    ap.add_argument("--embeddings", action="append")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--seeds", type=int, nargs="+", default=[42])
    ap.add_argument("--mixed-seeds", type=int, nargs="*", default=[])
    ap.add_argument("--deadline-s", type=float, default=170)
    ap.add_argument("--log-dir", default="/tmp/multi-bench/logs")
    ap.add_argument("--one")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--final-epochs", type=int, default=0, help="with --one multi: the final recipe's phase 2")
    ap.add_argument("--fold", metavar="CORPUS:IofK", help="with --final-epochs: a cross-fitting teacher (see above)")
    ap.add_argument("--resume", action="store_true", help="with --one: go on from --out's checkpoint")
    ap.add_argument("--out")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    result = run_one(args) if args.one else launch(args)
    write(args, result)
    print(json.dumps(result.get("summary", result), indent=2), flush=True)


if __name__ == "__main__":
    main()
