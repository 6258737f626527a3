"""Lineage recorded with every model: what data, what config, what code, what libraries."""
from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterable
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from nerservice.data import Sentence

PACKAGES = ("nerservice", "keras", "tensorflow-cpu", "tensorflow", "jax", "jaxlib", "numpy", "seqeval", "pyspark",
            "mlflow")


def corpus_fingerprint(sentences: Iterable[Sentence]) -> str:
    """sha256 over tokens and tags (not file names or positions): the same data gives the same print."""
    h = hashlib.sha256()
    for s in sentences:
        for tok, tag in zip(s.tokens, s.tags):
            h.update(tok.encode("utf-8"))
            h.update(b"\t")
            h.update(tag.encode("utf-8"))
            h.update(b"\n")
        h.update(b"\n")
    return h.hexdigest()


def git_sha(path: str | Path | None = None) -> str:
    here = Path(path) if path else Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def build_lineage(*, corpora: dict[str, list[Sentence]], config_hash: str, sources: dict[str, Any],
                  backend: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "corpus_fingerprints": {k: corpus_fingerprint(v) for k, v in corpora.items()},
        "corpus_sources": sources,
        "config_hash": config_hash,
        "git_sha": git_sha(),
        "packages": package_versions(),
        "keras_backend": backend,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **(extra or {}),
    }
