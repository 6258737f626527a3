"""The figures of `nerservice train --final --distil` run folders, as one JSON object (BENCHMARKS.md, session 23).

    python bench/final_distil_figures.py RUN [RUN ...] > figures.json

Per run: phase 1 (epochs run, kept epoch, dev F1, minutes), phase 2's epoch count, the final teacher's test
F1, each fold teacher's F1 on the block it never saw, the student's test F1 and NerDL's tag F1, minutes per stage.
Every figure is read from the saved folders (metrics.json, lineage.json, history.json), nothing is recomputed.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def f1(metrics: dict[str, Any] | None) -> float | None:
    return None if not metrics else round(100 * float(metrics["micro"]["f1"]), 2)


def tag_f1(metrics: dict[str, Any] | None) -> float | None:
    tags = (metrics or {}).get("tag_level")  # NerDL's logged figure: per IOB tag micro F1, O excluded
    return None if not tags else round(100 * float(tags["micro"]["f1"]), 2)


def minutes(folder: Path) -> float:
    history = json.loads((folder / "history.json").read_text(encoding="utf-8"))
    return round(sum(float(h.get("train_seconds", 0)) + float(h.get("eval_seconds", 0)) for h in history) / 60, 1)


def figures(run: Path) -> dict[str, Any]:
    student = run / "student" / "model-last"
    lineage = json.loads((student / "lineage.json").read_text(encoding="utf-8"))
    recipe = lineage["recipe"]
    s_metrics = json.loads((student / "metrics.json").read_text(encoding="utf-8"))
    teacher = Path(recipe["teacher"]["path"])
    t_metrics = json.loads((teacher / "metrics.json").read_text(encoding="utf-8"))
    return {
        "run": str(run), "seed": recipe["student"]["seed"],
        "phase1": recipe["phase1"], "epochs": recipe["phase2"]["epochs"],
        "teacher": {"path": str(teacher), "members": recipe["teacher"]["members"], "test_f1": f1(t_metrics.get("test")),
                    "test_tag_f1": tag_f1(t_metrics.get("test")),
                    "minutes": minutes(teacher) if (teacher / "history.json").exists() else None},
        "folds": [{"fold": f["fold"], "held_out_rows": f["held_out_rows"], "held_out_f1": round(100 * f["held_out_f1"], 2),
                   "minutes": f["minutes"]} for f in recipe["folds"]],
        "student": {"test_f1": f1(s_metrics.get("test")), "test_tag_f1": tag_f1(s_metrics.get("test")),
                    "test_precision_recall": [round(100 * s_metrics["test"]["micro"][k], 2)
                                              for k in ("precision", "recall")],
                    "test_per_type": {k: round(100 * v["f1"], 2) for k, v in s_metrics["test"]["per_type"].items()},
                    "minutes": minutes(student),
                    "targets_seconds": lineage["distillation"]["targets_seconds"],
                    "target_confidence": lineage["distillation"]["target_confidence"]},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path)
    print(json.dumps([figures(r) for r in parser.parse_args().runs], indent=1))


if __name__ == "__main__":
    main()
