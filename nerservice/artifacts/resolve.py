"""Which model folder a reference names — the one owner, called by every shell (CLI, API, Spark jobs,
benches).

A reference is one of:

* a saved model folder (``models/ncbi``) or a training run folder (``runs/ncbi`` → its ``model-best``);
* a model-store reference (``name``, ``name@alias``, ``name@latest``, ``name/3``), when the store extra is
  installed.  The version is pinned first (an alias that moves while we resolve cannot mix versions).

A folder has no version number: its manifest's content hash stands in (a retrain into the same folder
changes it).  The store is imported only for a store reference: it is an optional extra (MLflow) and the
only module on this floor that reaches up to it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nerservice.artifacts.files import manifest_fingerprint
from nerservice.artifacts.layout import BEST, RUN_MODELS
from nerservice.errors import InvalidModelRefError, ModelLoadError

FOLDER_HINT = "pass a folder written by `nerservice train --out` or a store reference like name@production"


@dataclass(frozen=True)
class Resolved:
    """A reference resolved to a concrete folder and a pinned version."""

    ref: str
    path: Path
    name: str
    version: str
    kind: Literal["directory", "store"]
    aliases: tuple[str, ...] = ()  # store: the aliases this version held when resolved
    store_metrics: dict[str, Any] = field(default_factory=dict)


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # e.g. ENAMETOOLONG: not a folder; the store reference parser gives the coded error
        return False


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:
        return False


def run_model_dir(folder: Path) -> Path:
    """A training run folder's deployable model (``model-best``), or the folder itself."""
    return folder / BEST if _is_dir(folder / BEST) else folder


def resolve(ref: str) -> Resolved:
    """``ref`` → folder, name and pinned version; a coded ``ModelLoadError``/store error otherwise."""
    p = Path(ref)
    if _is_dir(p):
        path = run_model_dir(p)
        name = path.parent.name if path.name in RUN_MODELS else path.name
        return Resolved(ref, path, name, manifest_fingerprint(path)[:12], "directory")
    store = _store_for(ref)
    info = store.describe(ref)
    # Pin the version read by describe(): an alias moving between the two calls must not mix versions.
    pinned = f"{info['name']}/{info['version']}"
    return Resolved(ref, Path(store.resolve(pinned)), str(info["name"]), str(info["version"]), "store",
                    aliases=tuple(info.get("aliases") or ()), store_metrics=dict(info.get("metrics") or {}))


def resolve_dir(ref: str) -> Path:
    """Just the folder of ``ref`` (no fingerprint, one store call): what ``resolve(ref).path`` names."""
    p = Path(ref)
    if _is_dir(p):
        return run_model_dir(p)
    return Path(_store_for(ref).resolve(ref))


def _store_for(ref: str) -> Any:
    """The model store for a reference that is not a folder; a clear error when it cannot be one."""
    if ref.startswith(("/", "./", "../", "~")) or _exists(Path(ref)):  # meant as a folder, and there is none
        raise ModelLoadError(f"{ref}: no such model directory", path=ref, ref=ref, hint=FOLDER_HINT)
    try:
        from nerservice.store import ModelStore
        from nerservice.store.refs import parse_ref
    except ImportError:
        raise ModelLoadError(f"{ref}: no such model directory (and the model store is not installed)",
                             path=ref, ref=ref) from None
    try:
        parse_ref(ref)
    except InvalidModelRefError:
        # Neither a folder nor a valid store reference: most likely a mistyped path ("data/modle").
        raise ModelLoadError(f"{ref}: no such model directory", path=ref, ref=ref, hint=FOLDER_HINT) from None
    return ModelStore.from_env()
