"""Run several ``train_gpu.py`` configurations at once on the GPUs of one host (configuration search for
the F1 targets: each run is a few minutes on a GPU instead of ~25 min on 2 CPU cores).

    python bench/gpu/sweep.py --corpus DIR --out RESULTS_DIR --per-gpu 4 [--deadline-min 8] \
        --run 'name: --embeddings glove-6b-50d --set model.dropout=0.3' --run 'name2: --corpus DIR2 ...'

Runs share GPUs (``--per-gpu`` processes each, memory not preallocated), so their tokens/s are not
benchmark figures; F1 is what a sweep is for.  Prints one table row per run and writes RESULTS_DIR/NAME.json.
A run's own ``--corpus`` overrides the sweep's.  ``--deadline-min``: the whole sweep must end by then (a device
call's limit): each run gets ``training.max_minutes`` = the time left minus ``--margin-min`` (so a run the
budget stops still saves, evaluates and reports its best epoch, marked ``stopped: time budget``), no run
starts with less than ``--min-run-min`` left, and whatever still runs at the deadline is killed.
``{best_epoch:NAME}`` in a run's arguments makes it wait for run NAME and substitutes its best epoch (the
final-model protocol: train+devel for the epoch count that train-only early stopping found).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEP = re.compile(r"\{best_epoch:([\w.-]+)\}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", help="default corpus folder; a run's own --corpus overrides it")
    ap.add_argument("--out", required=True)
    ap.add_argument("--run", action="append", required=True, help="'NAME: train_gpu.py arguments'")
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--per-gpu", type=int, default=4)
    ap.add_argument("--deadline-min", type=float, help="end the whole sweep within this many minutes")
    ap.add_argument("--margin-min", type=float, default=1.5, help="time kept back per run for its final "
                    "evaluation and saving")
    ap.add_argument("--min-run-min", type=float, default=2.0, help="start no run with less time than this left")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    queue = []
    for spec in args.run:
        name, _, rest = spec.partition(":")
        queue.append((name.strip(), rest))
    slots = [g for g in range(args.gpus) for _ in range(args.per_gpu)]
    running: list[tuple[str, subprocess.Popen, int, float]] = []
    done: dict[str, dict] = {}
    t_start = time.time()

    def left_min() -> float:
        return float("inf") if args.deadline_min is None else args.deadline_min - (time.time() - t_start) / 60

    def ready(rest: str) -> bool | None:  # None: a dependency failed, the run can never start
        deps = DEP.findall(rest)
        if any(d in done and done[d].get("best_epoch") is None for d in deps):
            return None
        return all(d in done for d in deps)

    while queue or running:
        for item in list(queue):
            if not slots:
                break
            name, rest = item
            ok = ready(rest)
            if ok is None or left_min() < args.min_run_min:
                queue.remove(item)
                print(json.dumps({"name": name, "skipped": "dependency failed" if ok is None else "no time left"}),
                      flush=True)
                continue
            if not ok:
                continue
            queue.remove(item)
            extra = shlex.split(DEP.sub(lambda m: str(done[m.group(1)]["best_epoch"]), rest))
            if args.deadline_min is not None:
                extra += ["--set", f"training.max_minutes={max(left_min() - args.margin_min, 0.5):.2f}"]
            gpu = slots.pop(0)
            env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu), "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                   "KERAS_BACKEND": "jax"}
            corpus = ["--corpus", args.corpus] if args.corpus else []
            cmd = [sys.executable, str(HERE / "train_gpu.py"), *corpus, "--no-ceiling",
                   "--no-inference", "--out", f"/tmp/sweep-{name}", "--json-out", str(out / f"{name}.json"), *extra]
            log = open(out / f"{name}.log", "w")
            log.write(shlex.join(cmd) + "\n")
            log.flush()
            running.append((name, subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT), gpu,
                            time.time()))
        time.sleep(2)
        if left_min() < 0:
            for name, proc, _, _ in running:
                proc.kill()
        for item in list(running):
            name, proc, gpu, t0 = item
            if proc.poll() is None:
                continue
            running.remove(item)
            slots.append(gpu)
            row = {"name": name, "rc": proc.returncode, "minutes": round((time.time() - t0) / 60, 2)}
            if proc.returncode == 0:
                r = json.loads((out / f"{name}.json").read_text())
                row.update(corpus=r.get("corpus"), test_f1=round(100 * r["test_f1"], 2),
                           dev_f1=round(100 * r["dev_f1"], 2), best_epoch=r["best_epoch"], epochs=r["epochs_run"],
                           stopped=r.get("stopped"))
            done[name] = row
            print(json.dumps(row), flush=True)
    (out / "summary.json").write_text(json.dumps(list(done.values()), indent=2))
    print(f"sweep done in {(time.time() - t_start) / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()
