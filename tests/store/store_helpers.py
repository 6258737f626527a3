"""Helpers for store tests: make valid model variants, tamper with files, compare trees."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from nerservice.artifacts.files import sha256_file
from nerservice.artifacts.layout import MANIFEST


def rewrite_manifest(model_dir: Path) -> None:
    """Re-list every file of ``model_dir`` in its manifest (after a test changed or added files)."""
    manifest = json.loads((model_dir / MANIFEST).read_text(encoding="utf-8"))
    manifest["files"] = {p.name: {"sha256": sha256_file(p), "bytes": p.stat().st_size}
                         for p in sorted(model_dir.iterdir()) if p.name != MANIFEST}
    (model_dir / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")


def clone_with_dev_f1(src: Path, dst: Path, dev_f1: float) -> Path:
    """A copy of a saved model whose recorded dev F1 is ``dev_f1`` (a consistent, valid model dir)."""
    shutil.copytree(src, dst)
    metrics = json.loads((dst / "metrics.json").read_text(encoding="utf-8"))
    metrics["dev"]["micro"]["f1"] = dev_f1
    (dst / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    rewrite_manifest(dst)
    return dst


def flip_byte(path: Path, offset: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    i = len(data) // 2 if offset is None else offset
    data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def tree_digest(model_dir: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(model_dir.iterdir()) if p.is_file()}
