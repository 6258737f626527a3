"""What a stored model folder may hold: its manifest, the files the manifest lists and, for an ensemble,
its member folders (each held to the same rule).  Anything else (an ``evil.py`` dropped beside the
weights, a stray ``.DS_Store``) was never checksummed, so the store refuses to take it in and refuses a
downloaded or cached copy that has grown one.
"""
from __future__ import annotations

import json
from pathlib import Path

from nerservice.artifacts.layout import ENSEMBLE, ENSEMBLE_FORMAT, MANIFEST


def unlisted_files(folder: Path) -> list[str]:
    """Paths (relative to ``folder``, folders with a trailing ``/``) that no manifest accounts for."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []  # no readable manifest: the manifest check itself refuses the folder
    files = manifest.get("files") if isinstance(manifest, dict) else None
    listed = set(files) if isinstance(files, dict) else set()
    members: set[str] = set()
    if manifest.get("format") == ENSEMBLE_FORMAT:
        try:
            spec = json.loads((folder / ENSEMBLE).read_text(encoding="utf-8"))
            members = {str(m.get("dir")) for m in spec.get("members", []) if isinstance(m, dict)}
        except (OSError, ValueError, AttributeError):
            pass
    out: list[str] = []
    for entry in sorted(folder.iterdir()):
        if entry.is_symlink():
            out.append(entry.name)
        elif entry.is_dir():
            if entry.name in members:
                out.extend(f"{entry.name}/{sub}" for sub in unlisted_files(entry))
            else:
                out.append(entry.name + "/")
        elif entry.name != MANIFEST and entry.name not in listed:
            out.append(entry.name)
    return out


def refuse_unlisted(folder: Path, *, what: str) -> None:
    from nerservice.errors import IntegrityError

    extra = unlisted_files(folder)
    if extra:
        shown = ", ".join(extra[:10]) + (f" and {len(extra) - 10} more" if len(extra) > 10 else "")
        raise IntegrityError(f"{what}: {folder} holds files its manifest does not list: {shown}",
                             path=str(folder), files=extra[:50],
                             hint="remove them: the store keeps exactly what the manifest lists and verifies")
