"""Run several ``train_gpu.py`` configurations at once on the GPUs of one host (configuration search for
issue 2's F1 targets: each run is ~2 min on a GPU instead of ~25 min on 2 CPU cores).

    python bench/gpu/sweep.py --corpus DIR --out RESULTS_DIR --per-gpu 4 \
        --run 'name: --embeddings glove-6b-50d --set model.dropout=0.3' --run 'name2: ...'

Runs share GPUs (``--per-gpu`` processes each, memory not preallocated), so their tokens/s are not
benchmark figures; F1 is what a sweep is for.  Prints one table row per run and writes RESULTS_DIR/NAME.json.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--run", action="append", required=True, help="'NAME: train_gpu.py arguments'")
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--per-gpu", type=int, default=4)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    queue = []
    for spec in args.run:
        name, _, rest = spec.partition(":")
        queue.append((name.strip(), shlex.split(rest)))
    slots = [g for g in range(args.gpus) for _ in range(args.per_gpu)]
    running: list[tuple[str, subprocess.Popen, int, float]] = []
    t_start = time.time()
    while queue or running:
        while queue and slots:
            name, extra = queue.pop(0)
            gpu = slots.pop(0)
            env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu), "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                   "KERAS_BACKEND": "jax"}
            cmd = [sys.executable, str(HERE / "train_gpu.py"), "--corpus", args.corpus, "--no-ceiling",
                   "--no-inference", "--out", f"/tmp/sweep-{name}", "--json-out", str(out / f"{name}.json"), *extra]
            log = open(out / f"{name}.log", "w")
            running.append((name, subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT), gpu,
                            time.time()))
        time.sleep(2)
        for item in list(running):
            name, proc, gpu, t0 = item
            if proc.poll() is None:
                continue
            running.remove(item)
            slots.append(gpu)
            row = {"name": name, "rc": proc.returncode, "minutes": round((time.time() - t0) / 60, 2)}
            if proc.returncode == 0:
                r = json.loads((out / f"{name}.json").read_text())
                row.update(test_f1=round(100 * r["test_f1"], 2), dev_f1=round(100 * r["dev_f1"], 2),
                           best_epoch=r["best_epoch"], epochs=r["epochs_run"])
            print(json.dumps(row), flush=True)
    print(f"sweep done in {(time.time() - t_start) / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()
