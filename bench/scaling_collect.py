"""Gather the grow-mode Spark runs of several ``bench/spark_bench.py`` work folders into the one file the cost
model reads (``bench/scaling_model.py --spark``): the first folder's 1- and 2-worker runs become ``w1`` / ``w2``
(the model is fitted on them), the next ones ``w1_run2`` / ``w2_run2``, ... (checked against the model, not
fitted).

    .venv/bin/python bench/scaling_collect.py --out bench/results/scaling/spark-grow-s6.json \\
        --what "..." --command "..." /tmp/sb6a /tmp/sb6b
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any


def collect(folders: list[Path], *, what: str, command: str) -> dict[str, Any]:
    out: dict[str, Any] = {"what": what, "command": command, "date": time.strftime("%Y-%m-%d", time.gmtime())}
    for i, folder in enumerate(folders):
        results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        suffix = "" if i == 0 else f"_run{i + 1}"
        if i == 0 and "preprocess" in results:
            out["preprocess"] = results["preprocess"]
        for key, name in (("train_w1_grow", "w1"), ("train_w2_grow", "w2"), ("ratio_w2_vs_w1_grow", "ratio_w2_vs_w1")):
            if key not in results:
                raise SystemExit(f"{folder}/results.json has no {key}: run spark_bench.py --scaling grow there")
            out[name + suffix] = {**results[key], "work": str(folder)} if name != "ratio_w2_vs_w1" else results[key]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", type=Path, nargs="+", help="spark_bench.py --work folders, first = the fit's")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--what", default="")
    ap.add_argument("--command", default="")
    args = ap.parse_args()
    data = collect(args.folders, what=args.what, command=args.command)
    args.out.write_text(json.dumps(data, indent=2), encoding="utf-8")
    for key, value in data.items():
        if key.startswith("ratio"):
            print(key, json.dumps(value))
        elif key[:2] in ("w1", "w2"):
            print(key, "eval s", value["eval_seconds"], "epochs s", value["epoch_seconds"], "wall", round(value["wall_s"], 1),
                  "load", [round(x, 2) for x in value["loadavg_before"]], "->", [round(x, 2) for x in value["loadavg_after"]])


if __name__ == "__main__":
    main()
