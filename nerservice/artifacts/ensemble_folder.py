"""An ensemble of saved models as one directory that loads, serves and registers like a single model.

    ensemble.json       format, how members are combined, and each member's folder and manifest sha256
    member-0/ ...       complete saved models (model_folder.py), copied in, each with its manifest
    metrics.json        the ensemble's own dev/test evaluation (when corpora were given)
    lineage.json        where each member came from, the members' lineages, and the fingerprints of the data
                        metrics.json was computed on (``evaluated_on``)
    manifest.json       sha256 and size of the top-level files (ensemble.json pins each member's manifest)

Verifying the top manifest verifies every member (each member's manifest is pinned by its sha256, and each
member verifies its own files), so the store's integrity checks cover an ensemble without knowing about it.
Members are copies, not links: an ensemble must not change when a member's source folder is retrained.
How predictions combine is in nerservice/model/ensemble.py (mean CRF scores, decoded exactly).
"""
from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nerservice.artifacts.files import (
    check_files,
    read_json,
    read_manifest,
    sha256_file,
    staged,
    write_json,
    write_manifest,
)
from nerservice.artifacts.layout import ENSEMBLE, LINEAGE, MANIFEST, METRICS
from nerservice.artifacts.layout import ENSEMBLE_FORMAT as FORMAT
from nerservice.artifacts.model_folder import (
    LoadedModel,
    load_model_folder,
    verify_model_folder,
)
from nerservice.artifacts.onnx_folder import (
    LoadedOnnx,
    is_onnx_manifest,
    load_onnx_folder,
    verify_onnx_folder,
)
from nerservice.config import NerConfig
from nerservice.errors import IntegrityError, ModelLoadError
from nerservice.text.vocab import Vocabularies

if TYPE_CHECKING:
    from nerservice.model.ensemble import EnsemblePredictor

COMBINE = "mean-crf-scores"
TOP_FILES = (ENSEMBLE, METRICS, LINEAGE)


def is_ensemble_dir(path: str | Path) -> bool:
    return (Path(path) / ENSEMBLE).is_file()


@dataclass
class LoadedEnsemble:
    """The ``LoadedModel`` interface the Extractor, evaluate and the API use, over several members."""

    path: Path
    members: list[LoadedModel | LoadedOnnx]
    metrics: dict[str, Any] = field(default_factory=dict)
    lineage: dict[str, Any] = field(default_factory=dict)

    @property
    def config(self) -> NerConfig:
        return self.members[0].config  # members may differ in anything but the tag set

    @property
    def vocabs(self) -> Vocabularies:
        return self.members[0].vocabs  # the Extractor reads the tag labels from it

    def predictor(self, **kwargs: Any) -> EnsemblePredictor:
        from nerservice.model.ensemble import EnsemblePredictor

        return EnsemblePredictor([m.predictor(**kwargs) for m in self.members])


def load_member(folder: str | Path, *, verify: bool = True) -> LoadedModel | LoadedOnnx:
    """One member folder (a saved model or an ONNX export), verified unless ``verify=False``."""
    d = Path(folder)
    if is_ensemble_dir(d):
        raise ModelLoadError(f"{d}: already an ensemble; pass its member models instead",
                             hint="an ensemble's members are single models")
    if (d / MANIFEST).is_file() and is_onnx_manifest(read_manifest(d)):
        return load_onnx_folder(d, verify=verify)
    return load_model_folder(d, verify=verify)


def member_sources(members: Sequence[str | Path], sources: Sequence[str] | None) -> list[str]:
    """How the lineage names each member: ``sources`` (e.g. store references), else the resolved folder paths."""
    return [str(s) for s in (sources or [str(Path(m).resolve()) for m in members])]


def save_ensemble(out_dir: str | Path, members: Sequence[str | Path], *, metrics: dict[str, Any] | None = None,
                  sources: Sequence[str] | None = None,
                  loaded: Sequence[LoadedModel | LoadedOnnx] | None = None,
                  evaluated_on: dict[str, Any] | None = None) -> Path:
    """Copy ``members`` (saved model folders, verified first) into a new ensemble folder, written under a
    temporary name and renamed into place.  ``sources``: how to name each member in the lineage (e.g. the
    store reference it was resolved from); defaults to the folder paths.  ``loaded``: ``load_model`` of each
    member already done by the caller (verified), so it is not done twice.  ``evaluated_on``: fingerprints of
    the data ``metrics`` were computed on, kept in the lineage (``evaluated_before`` compares them)."""
    if not members:
        raise ModelLoadError("an ensemble needs at least one member model", hint="pass two or more model folders")
    nested = [str(m) for m in members if is_ensemble_dir(m)]
    if nested:
        raise ModelLoadError(f"{', '.join(nested)}: already an ensemble; pass its member models instead",
                             hint="an ensemble's members are single models")
    if loaded is None:
        loaded = [load_member(m) for m in members]  # verifies every member and that each one loads
    tags = loaded[0].vocabs.tags.tags
    for i, m in enumerate(loaded[1:], start=1):
        if (other := m.vocabs.tags.tags) != tags:
            raise ModelLoadError(f"member {i} ({members[i]}) has tags {other}; member 0 has {tags}",
                                 hint="an ensemble's members must be trained on the same tag set")
    out = Path(out_dir)
    names = member_sources(members, sources)
    with staged(out) as tmp:
        entries = []
        for i, src in enumerate(members):
            dst = tmp / f"member-{i}"
            dst.mkdir()
            listed = json.loads((Path(src) / MANIFEST).read_text(encoding="utf-8"))["files"]
            for name in [*listed, MANIFEST]:  # exactly the verified files, nothing stray
                shutil.copy2(Path(src) / name, dst / name)
            entries.append({"dir": dst.name, "source": names[i], "manifest_sha256": sha256_file(dst / MANIFEST)})
        write_json(tmp / ENSEMBLE, {"format": FORMAT, "combine": COMBINE, "members": entries})
        write_json(tmp / METRICS, metrics or {})
        write_json(tmp / LINEAGE, {
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "members": [{"source": names[i], "lineage": m.lineage, "metrics": m.metrics} for i, m in enumerate(loaded)],
            **({"evaluated_on": evaluated_on} if evaluated_on is not None else {}),
        })
        write_manifest(tmp, FORMAT, TOP_FILES)
    return out


def evaluated_before(out_dir: str | Path, members: Sequence[str | Path], *, sources: Sequence[str] | None,
                     evaluated_on: dict[str, Any]) -> dict[str, Any] | None:
    """The metrics of the ensemble folder already at ``out_dir`` when saving ``members`` there again would give
    the same folder and the same scores, else None: it verifies, holds exactly these members in this order
    (each copy's manifest byte-identical to the member's own, so every weight and vocabulary file is the same),
    names them by the same ``sources``, and its metrics were computed on data with the fingerprints
    ``evaluated_on``.  A recipe's rerun uses it so that an unchanged ensemble is not loaded and scored again;
    ensembles saved before ``evaluated_on`` was recorded are never matched."""
    d = Path(out_dir)
    if not is_ensemble_dir(d):
        return None
    try:
        verify_ensemble(d, read_manifest(d))
        spec, lineage, metrics = (read_json(d / n) for n in (ENSEMBLE, LINEAGE, METRICS))
    except (IntegrityError, ModelLoadError, OSError, ValueError):
        return None  # damaged or foreign: saving again replaces it
    entries = spec.get("members", []) if isinstance(spec, dict) else []
    if not isinstance(lineage, dict) or lineage.get("evaluated_on") != evaluated_on or \
            not isinstance(metrics, dict) or set(metrics) != set(evaluated_on) or len(entries) != len(members):
        return None
    for entry, member, name in zip(entries, members, member_sources(members, sources)):
        own = Path(member) / MANIFEST
        if entry.get("source") != name or not own.is_file() or sha256_file(own) != entry.get("manifest_sha256"):
            return None
    return metrics


def verify_ensemble(path: str | Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """Top-level files against the manifest, each member's manifest against its pinned sha256, then each
    member's own files (``verify_manifest``)."""
    d = Path(path)
    check_files(d, manifest, required=TOP_FILES)
    spec = read_json(d / ENSEMBLE)
    members = spec.get("members") if isinstance(spec, dict) else None
    if spec.get("format") != FORMAT or not isinstance(members, list) or not members:
        raise IntegrityError(f"{d / ENSEMBLE}: not a {FORMAT} member list", path=str(d))
    for m in members:
        sub = d / str(m.get("dir", ""))
        if Path(str(m.get("dir", ""))).name != m.get("dir") or not (sub / MANIFEST).is_file():
            raise IntegrityError(f"{d / ENSEMBLE}: member folder {m.get('dir')!r} is missing", path=str(d))
        if sha256_file(sub / MANIFEST) != m.get("manifest_sha256"):
            raise IntegrityError(f"{sub / MANIFEST}: checksum mismatch (member replaced or tampered with)",
                                 path=str(sub))
        # Members are single models (save_ensemble refuses nesting): Keras folders, or ONNX exports of them
        # (`nerservice export` of an ensemble exports each member).
        member = read_manifest(sub)
        (verify_onnx_folder if is_onnx_manifest(member) else verify_model_folder)(sub, member)
    return manifest


def load_ensemble(path: str | Path, *, verify: bool = True,
                  onnx_options: dict[str, Any] | None = None) -> LoadedEnsemble:
    """``onnx_options``: ``load_onnx_folder`` keywords (threads, word cache) for members that are exports."""
    d = Path(path)
    if verify:
        verify_ensemble(d, read_manifest(d))
    spec = read_json(d / ENSEMBLE)
    if not isinstance(spec, dict) or spec.get("format") != FORMAT or spec.get("combine") != COMBINE:
        raise ModelLoadError(f"{d / ENSEMBLE}: unsupported ensemble format or combination", path=str(d),
                             hint=f"this version reads {FORMAT} with combine={COMBINE!r}")
    members: list[LoadedModel | LoadedOnnx] = [  # verified above
        load_onnx_folder(d / m["dir"], verify=False, **(onnx_options or {}))
        if is_onnx_manifest(read_manifest(d / m["dir"])) else load_model_folder(d / m["dir"], verify=False)
        for m in spec["members"]]
    metrics = read_json(d / METRICS) if (d / METRICS).is_file() else {}
    lineage = read_json(d / LINEAGE) if (d / LINEAGE).is_file() else {}
    return LoadedEnsemble(d, members, metrics=metrics, lineage=lineage)
