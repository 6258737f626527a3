"""Files of a model folder: checksums, JSON, the manifest, and the staged write.

A folder is written under a temporary name beside its target and renamed into place (``staged``), so a
reader never sees half a model.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from nerservice.artifacts.layout import MANIFEST
from nerservice.errors import IntegrityError, ModelLoadError


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True), encoding="utf-8")


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"{path}: cannot read ({exc})", path=str(path)) from None


@contextlib.contextmanager
def staged(out: Path) -> Iterator[Path]:
    """A temporary folder beside ``out``, renamed into place when the block succeeds and removed when it
    fails: a reader never sees half a model."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        yield tmp
        _swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap_into_place(tmp: Path, out: Path) -> None:
    if out.exists():
        trash = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, trash)
        os.replace(tmp, out)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.replace(tmp, out)


def write_manifest(folder: Path, fmt: str, names: Sequence[str], **extra: Any) -> None:
    write_json(folder / MANIFEST, {
        "format": fmt, **extra,
        "files": {n: {"sha256": sha256_file(folder / n), "bytes": (folder / n).stat().st_size} for n in names},
    })


def read_manifest(folder: Path) -> Any:
    try:
        return json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise IntegrityError(f"{folder / MANIFEST}: unreadable manifest ({exc})", path=str(folder)) from None


def check_files(folder: Path, manifest: Any, *, required: Sequence[str]) -> dict[str, Any]:
    """The manifest's 'files' table is well formed, lists every ``required`` name, names only plain files in
    ``folder``, and each has its recorded size and sha256."""
    d = folder
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not all(
            isinstance(m, dict) and {"bytes", "sha256"} <= set(m) for m in files.values()):
        raise IntegrityError(f"{d / MANIFEST}: no valid 'files' table", path=str(d))
    # A manifest that stops listing a required file would otherwise let that file change unchecked.
    unlisted = [n for n in required if n not in files]
    if unlisted:
        raise IntegrityError(f"{d / MANIFEST}: does not list {', '.join(unlisted)}", path=str(d))
    for name, meta in files.items():
        p = d / name
        if Path(name).name != name:  # plain names only: a manifest must not point outside its folder
            raise IntegrityError(f"{d / MANIFEST}: bad file name {name!r}", path=str(d))
        if not p.is_file():
            raise IntegrityError(f"{p}: missing file listed in the manifest", path=str(p))
        if p.stat().st_size != meta["bytes"] or sha256_file(p) != meta["sha256"]:
            raise IntegrityError(f"{p}: checksum mismatch (file tampered with or truncated)", path=str(p))
    return manifest
