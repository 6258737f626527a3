"""The local download cache: one verified copy per (store, name, version).

Layout: ``<cache>/<store key>/<name>/<version>/model/`` plus ``source.json`` recording the manifest sha256
the copy was downloaded for.  A copy is built in a temporary folder beside its slot, verified, and renamed
into place, so a reader never sees half a download; concurrent resolvers race harmlessly (the loser
discards its copy).  Every resolve re-verifies the copy against the manifest, so a file changed on disk
after download is caught before a model is loaded from it.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from nerservice.artifacts.files import sha256_file
from nerservice.artifacts.formats import verify_manifest
from nerservice.artifacts.layout import MANIFEST
from nerservice.errors import IntegrityError
from nerservice.store.contents import refuse_unlisted

MARKER = "source.json"
MODEL = "model"


def verify_model_dir(model_dir: Path, manifest_sha256: str, *, what: str, hint: str | None = None) -> None:
    """The manifest must be the one recorded at registration, every file must match the manifest, and no
    file the manifest does not list may sit beside them."""
    manifest = model_dir / MANIFEST
    if not manifest.is_file():
        raise IntegrityError(f"{what}: {MANIFEST} is missing from {model_dir}", path=str(model_dir), hint=hint)
    got = sha256_file(manifest)
    if got != manifest_sha256:
        raise IntegrityError(
            f"{what}: {manifest} has sha256 {got[:12]}…, but {manifest_sha256[:12]}… was recorded at "
            "registration (manifest tampered with or truncated)", path=str(manifest), hint=hint)
    try:
        verify_manifest(model_dir)
        refuse_unlisted(model_dir, what=what)
    except IntegrityError as exc:
        raise IntegrityError(f"{what}: {exc.message}", hint=hint or exc.hint, **exc.context) from None


class DownloadCache:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def slot(self, name: str, version: int) -> Path:
        return self.root / name / str(version)

    def fetch(self, name: str, version: int, manifest_sha256: str, *,
              download: Callable[[Path], Path]) -> Path:
        """The verified local model dir of ``name/version``; ``download(dst)`` puts the stored artifact
        folder somewhere under ``dst`` and returns its path."""
        slot = self.slot(name, version)
        ref = f"{name}/{version}"
        if (slot / MODEL).is_dir() and _marker_sha(slot) == manifest_sha256:
            verify_model_dir(slot / MODEL, manifest_sha256, what=f"{ref}: cached copy",
                             hint=f"the local copy changed after download; delete {slot} to download it again")
            return slot / MODEL
        if slot.exists():
            # Downloaded for a different registration under the same name/version (the model was deleted
            # and registered again) or left by an older layout: replace it, never trust it.
            _remove(slot)
        slot.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{version}.download-", dir=slot.parent))
        try:
            got = Path(download(tmp / "dl"))
            verify_model_dir(got, manifest_sha256, what=f"{ref}: stored artifact",
                             hint="the copy in the model store does not match what was registered; "
                                  "register the model again from its training output")
            os.replace(got, tmp / MODEL)
            (tmp / MARKER).write_text(json.dumps({"name": name, "version": version,
                                                  "manifest_sha256": manifest_sha256}), encoding="utf-8")
            try:
                os.replace(tmp, slot)
                return slot / MODEL
            except OSError:
                if not (slot / MODEL).is_dir():  # no concurrent winner: a real error
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        # Another process put its copy in place first: use it, after checking it like any cached copy.
        verify_model_dir(slot / MODEL, manifest_sha256, what=f"{ref}: cached copy",
                         hint=f"delete {slot} to download it again")
        return slot / MODEL


def _marker_sha(slot: Path) -> str | None:
    try:
        return json.loads((slot / MARKER).read_text(encoding="utf-8")).get("manifest_sha256")
    except (OSError, ValueError, AttributeError):
        return None


def _remove(path: Path) -> None:
    # Rename first so a concurrent reader never walks into a half-deleted folder under the live name.
    trash = path.with_name(f".{path.name}.stale-{os.getpid()}")
    try:
        os.replace(path, trash)
    except OSError:
        return
    shutil.rmtree(trash, ignore_errors=True)
