"""Reading registry versions: complete or not, their metrics, and the dict describe/list return."""
from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from nerservice.store import runs


def is_complete(mv: Any) -> bool:
    return bool((mv.tags or {}).get(runs.TAG_MANIFEST)) and str(getattr(mv, "status", "READY")) == "READY"


def metric_of(mv: Any, metric: str) -> float | None:
    raw = (mv.tags or {}).get(f"{runs.TAG_METRIC}{metric}")
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


def _metrics(mv: Any) -> dict[str, float]:
    """Metric tags as numbers; a hand-edited unreadable or non-finite value is left out (JSON has no NaN)."""
    out = {}
    for key in sorted(mv.tags or {}):
        if key.startswith(runs.TAG_METRIC):
            value = metric_of(mv, key[len(runs.TAG_METRIC):])
            if value is not None and math.isfinite(value):
                out[key[len(runs.TAG_METRIC):]] = value
    return out


def version_info(mv: Any, aliases: dict[str, int]) -> dict[str, Any]:
    tags = dict(mv.tags or {})
    version = int(mv.version)
    created = datetime.fromtimestamp((mv.creation_timestamp or 0) / 1000, tz=timezone.utc)
    return {
        "name": mv.name,
        "version": version,
        "status": "complete" if is_complete(mv) else "incomplete",
        "aliases": sorted(a for a, v in aliases.items() if v == version),
        "metrics": _metrics(mv),
        "lineage": runs.parse_lineage_tags(tags),
        "tags": {k: v for k, v in sorted(tags.items()) if not k.startswith((runs.TAG_PREFIX, "mlflow."))},
        "run_id": mv.run_id,
        "created": created.isoformat(timespec="seconds"),
        "source": mv.source,
        "manifest_sha256": tags.get(runs.TAG_MANIFEST),
    }
