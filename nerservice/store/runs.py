"""What we write into MLflow runs and version tags: flattened params, metrics, lineage tags.

Kept apart from the facade so the naming lives in one place: the REST API, ``models list`` and the MLflow
UI all read the same keys.
"""
from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

TAG_PREFIX = "nerservice."
TAG_MANIFEST = "nerservice.manifest_sha256"  # set last: its presence marks a version complete
TAG_ARTIFACT_PATH = "nerservice.artifact_path"
TAG_METRIC = "nerservice.metric."
TAG_LINEAGE = "nerservice.lineage."
TAG_MODEL_NAME = "nerservice.model_name"
GIT_COMMIT_TAG = "mlflow.source.git.commit"  # the MLflow UI shows this one on the run page

_KEY_BAD = re.compile(r"[^A-Za-z0-9_\-. /]")


def metric_key(text: str) -> str:
    """MLflow keys allow letters, digits, ``_ - . space /``; entity types can hold anything."""
    return _KEY_BAD.sub("_", text)


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in data.items():
        full = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{full}."))
        else:
            out[full] = json.dumps(value) if isinstance(value, (list, bool)) or value is None else str(value)
    return out


def summary_metrics(metrics: dict[str, Any]) -> dict[str, float]:
    """metrics.json of a saved model → flat figures: dev_f1, dev_precision, dev_recall, dev_token_f1,
    dev_nerdl_tag_f1, dev_f1.<TYPE>, the same for test, and best_epoch."""
    out: dict[str, float] = {}
    for split in ("dev", "test"):
        m = metrics.get(split)
        if not isinstance(m, dict) or not isinstance(m.get("micro"), dict):
            continue
        for k in ("f1", "precision", "recall"):
            if k in m["micro"]:
                out[f"{split}_{k}"] = float(m["micro"][k])
        for label, scores in sorted((m.get("per_type") or {}).items()):
            out[f"{split}_f1.{metric_key(label)}"] = float(scores["f1"])
        token = m.get("token_level")
        if isinstance(token, dict) and "micro" in token:
            out[f"{split}_token_f1"] = float(token["micro"]["f1"])
        tag = m.get("tag_level")
        if isinstance(tag, dict) and "micro" in tag:
            out[f"{split}_nerdl_tag_f1"] = float(tag["micro"]["f1"])
    if isinstance(metrics.get("epoch"), (int, float)):
        out["best_epoch"] = float(metrics["epoch"])
    return out


def epoch_metrics(record: dict[str, Any]) -> dict[str, float]:
    """One epoch record of the training loop → the curves the MLflow UI plots (step = epoch)."""
    out: dict[str, float] = {k: float(record[k]) for k in ("loss", "dev_f1", "dev_precision", "dev_recall", "lr",
                                          "train_tokens_per_s", "train_seconds", "eval_seconds") if k in record}
    for label, f1 in sorted((record.get("dev_per_type") or {}).items()):
        out[f"dev_f1.{metric_key(label)}"] = float(f1)
    return out


def lineage_tags(lineage: dict[str, Any]) -> dict[str, str]:
    tags: dict[str, str] = {}
    for key in ("config_hash", "git_sha", "keras_backend", "created_at"):
        if lineage.get(key) is not None:
            tags[f"{TAG_LINEAGE}{key}"] = str(lineage[key])
    for split, fp in sorted((lineage.get("corpus_fingerprints") or {}).items()):
        tags[f"{TAG_LINEAGE}corpus.{metric_key(split)}"] = str(fp)
    if lineage.get("packages"):
        tags[f"{TAG_LINEAGE}packages"] = json.dumps(lineage["packages"], sort_keys=True)
    return tags


def parse_lineage_tags(tags: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in sorted(tags.items()):
        if not key.startswith(TAG_LINEAGE):
            continue
        short = key[len(TAG_LINEAGE):]
        if short == "packages":
            try:
                out[short] = json.loads(value)
                continue
            except ValueError:
                pass
        out[short] = value
    return out


def read_saved_json(model_dir: Path, name: str) -> dict[str, Any]:
    try:
        data = json.loads((model_dir / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def log_metrics(client: Any, run_id: str, values: dict[str, float], *, step: int) -> None:
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, step) for k, v in values.items() if isinstance(v, float) and not math.isinf(v)]
    for i in range(0, len(metrics), 1000):  # MLflow caps a batch at 1000 metrics
        client.log_batch(run_id, metrics=metrics[i:i + 1000], synchronous=True)


def log_params(client: Any, run_id: str, params: dict[str, str]) -> None:
    from mlflow.entities import Param

    items = [Param(k, v[:6000]) for k, v in params.items()]
    for i in range(0, len(items), 100):  # and params at 100
        client.log_batch(run_id, params=items[i:i + 100], synchronous=True)


def log_tags(client: Any, run_id: str, tags: dict[str, str]) -> None:
    from mlflow.entities import RunTag

    items = [RunTag(k, v) for k, v in tags.items()]
    for i in range(0, len(items), 100):
        client.log_batch(run_id, tags=items[i:i + 100], synchronous=True)
