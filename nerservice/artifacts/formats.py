"""The one table of model folder formats: ``{format: (loader, verifier)}``.

``load_model`` and ``verify_manifest`` look a folder's format up here, so a format never dispatches to its
own extensions (the ensemble format used to be called from inside the single-model format) and a new one
(e.g. a multi-corpus model, an exported graph) plugs in with one entry: write ``<name>_folder.py`` beside
the others, with a loader returning something that satisfies ``LoadedArtifact`` and a verifier, and add
it to ``FORMATS``.  Which format a folder has is read from its manifest's ``format`` field (an ensemble
is also recognised by its ``ensemble.json``, as before).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from nerservice.artifacts.ensemble_folder import is_ensemble_dir, load_ensemble, verify_ensemble
from nerservice.artifacts.files import read_manifest
from nerservice.artifacts.layout import ENSEMBLE_FORMAT, FORMAT, MANIFEST, MULTI_FORMAT, ONNX_FORMAT
from nerservice.artifacts.model_folder import load_model_folder, verify_model_folder
from nerservice.artifacts.onnx_folder import load_onnx_folder, verify_onnx_folder
from nerservice.config import NerConfig
from nerservice.errors import IntegrityError, ModelLoadError
from nerservice.text.vocab import Vocabularies

if TYPE_CHECKING:
    from nerservice.model.predictor import TagPredictor


class LoadedArtifact(Protocol):
    """What the Extractor, ``evaluate``, the trainer and the API use of a loaded model folder, whatever its
    format (``LoadedModel``, ``LoadedEnsemble``)."""

    @property
    def path(self) -> Path: ...

    @property
    def config(self) -> NerConfig: ...

    @property
    def vocabs(self) -> Vocabularies: ...  # the Extractor reads the tag labels from it

    @property
    def metrics(self) -> dict[str, Any]: ...

    @property
    def lineage(self) -> dict[str, Any]: ...

    def predictor(self, **kwargs: Any) -> TagPredictor: ...


@dataclass(frozen=True)
class Format:
    load: Callable[..., LoadedArtifact]  # (folder, *, verify: bool) -> LoadedArtifact
    verify: Callable[[Path, Any], dict[str, Any]]  # (folder, parsed manifest) -> the manifest, or IntegrityError


FORMATS: dict[str, Format] = {
    FORMAT: Format(load_model_folder, verify_model_folder),
    ENSEMBLE_FORMAT: Format(load_ensemble, verify_ensemble),
    MULTI_FORMAT: Format(load_model_folder, verify_model_folder),  # a model folder with one head per corpus
    ONNX_FORMAT: Format(load_onnx_folder, verify_onnx_folder),  # an export: ONNX Runtime, no TensorFlow
}


def known_formats() -> Sequence[str]:
    return tuple(FORMATS)


def verify_manifest(model_dir: str | Path) -> dict[str, Any]:
    """Check every file listed in the manifest exists with its recorded size and sha256 (for an ensemble,
    every member's files too)."""
    d = Path(model_dir)
    manifest = read_manifest(d)
    fmt = manifest.get("format") if isinstance(manifest, dict) else None
    entry = FORMATS.get(fmt) if isinstance(fmt, str) else None
    # A manifest without a known format is checked as the base format's (what older code did).
    return (entry or FORMATS[FORMAT]).verify(d, manifest)


def _format_of(d: Path) -> str:
    if is_ensemble_dir(d):
        return ENSEMBLE_FORMAT
    try:
        fmt = read_manifest(d).get("format") if (d / MANIFEST).is_file() else None
    except (IntegrityError, AttributeError):
        fmt = None  # the base loader reports what is wrong with the folder
    return fmt if isinstance(fmt, str) and fmt in FORMATS else FORMAT


def load_model(model_dir: str | Path, *, verify: bool = True) -> LoadedArtifact:
    """Any model folder (a single tagger, an ensemble, ...), verified against its manifest first."""
    d = Path(model_dir)
    if not d.is_dir():
        raise ModelLoadError(f"{d}: not a model directory", path=str(d),
                             hint="pass the folder written by `nerservice train --out`")
    return FORMATS[_format_of(d)].load(d, verify=verify)
