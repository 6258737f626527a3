"""A trained model as a directory with fixed file names; loading needs nothing else and never unpickles.

    config.json         NerConfig (typed, versioned)
    vocab.json          word / char / tag vocabularies
    model.weights.h5    Keras weights (HDF5 arrays only)
    metrics.json        dev/test evaluation
    history.json        per-epoch history;  history.png  its plot
    lineage.json        corpus fingerprints, config hash, git sha, package versions
    manifest.json       file list with sha256 and sizes (the store verifies it)

A directory is written under a temporary name and renamed into place, so a reader never sees half a model.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterator, Sequence
from typing import Any

from nerservice.config import NerConfig
from nerservice.errors import ModelLoadError
from nerservice.text.vocab import MultiTagVocabulary, Vocabularies

CONFIG, VOCAB, WEIGHTS = "config.json", "vocab.json", "model.weights.h5"
METRICS, HISTORY, PLOT, LINEAGE, MANIFEST = "metrics.json", "history.json", "history.png", "lineage.json", "manifest.json"
REQUIRED = (CONFIG, VOCAB, WEIGHTS, MANIFEST)
FORMAT = "nerservice.saved_model.v1"
ENSEMBLE_FORMAT = "nerservice.ensemble.v1"  # nerservice/saved_ensemble.py: several models in one folder
MULTI_FORMAT = "nerservice.multi.v1"  # nerservice/multi/: one model, one head per corpus; needs MULTI too
MULTI = "multi.json"


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True), encoding="utf-8")


def save_model(out_dir: str | Path, *, model: Any, vocabs: Vocabularies, config: NerConfig,
               metrics: dict[str, Any] | None = None, history: list[dict[str, Any]] | None = None,
               lineage: dict[str, Any] | None = None, fmt: str = FORMAT,
               extra_files: dict[str, Any] | None = None) -> Path:
    """``fmt``/``extra_files``: another format's kind and its own JSON files (name -> data)."""
    from nerservice.training.history import plot_history, save_history

    out = Path(out_dir)
    with staged(out) as tmp:
        (tmp / CONFIG).write_text(config.to_json(), encoding="utf-8")
        vocabs.save(tmp / VOCAB)
        model.save_weights(tmp / WEIGHTS)
        write_json(tmp / METRICS, metrics or {})
        write_json(tmp / LINEAGE, lineage or {})
        if history:
            save_history(history, tmp / HISTORY)
            plot_history(history, tmp / PLOT)
        for name, data in (extra_files or {}).items():
            write_json(tmp / name, data)
        # "model": the data-dependent sizes (vocab, chars, tags, word dim)
        write_manifest(tmp, fmt, sorted(p.name for p in tmp.iterdir()), model=model.get_config())
    return out


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


def write_manifest(folder: Path, fmt: str, names: Sequence[str], **extra: Any) -> None:
    write_json(folder / MANIFEST, {
        "format": fmt, **extra,
        "files": {n: {"sha256": sha256_file(folder / n), "bytes": (folder / n).stat().st_size} for n in names},
    })


def _swap_into_place(tmp: Path, out: Path) -> None:
    if out.exists():
        trash = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, trash)
        os.replace(tmp, out)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.replace(tmp, out)


def verify_manifest(model_dir: str | Path) -> dict[str, Any]:
    """Check every file listed in the manifest exists with its recorded size and sha256."""
    from nerservice.errors import IntegrityError

    d = Path(model_dir)
    try:
        manifest = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise IntegrityError(f"{d / MANIFEST}: unreadable manifest ({exc})", path=str(d)) from None
    if isinstance(manifest, dict) and manifest.get("format") == ENSEMBLE_FORMAT:
        from nerservice.saved_ensemble import verify_ensemble

        return verify_ensemble(d, manifest)
    extra = [MULTI] if isinstance(manifest, dict) and manifest.get("format") == MULTI_FORMAT else []
    return check_files(d, manifest, required=[n for n in REQUIRED if n != MANIFEST] + extra)


def check_files(folder: Path, manifest: Any, *, required: Sequence[str]) -> dict[str, Any]:
    """The manifest's 'files' table is well formed, lists every ``required`` name, names only plain files in
    ``folder``, and each has its recorded size and sha256."""
    from nerservice.errors import IntegrityError

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


@dataclass
class LoadedModel:
    path: Path
    config: NerConfig
    vocabs: Vocabularies
    model: Any
    metrics: dict[str, Any] = field(default_factory=dict)
    lineage: dict[str, Any] = field(default_factory=dict)

    def predictor(self, **kwargs: Any) -> Any:
        from nerservice.model.predictor import Predictor

        return Predictor(self.model, self.vocabs, max_word_length=self.config.model.max_word_length,
                         bucket_size=self.config.training.bucket_size, **kwargs)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"{path}: cannot read ({exc})", path=str(path)) from None


def load_model(model_dir: str | Path, *, verify: bool = True) -> Any:
    """A ``LoadedModel``, or a ``LoadedEnsemble`` for a folder written by ``nerservice ensemble`` (same
    interface: ``predictor()``, ``vocabs``, ``config``, ``metrics``, ``lineage``)."""
    from nerservice.model.tagger import NerTagger
    from nerservice.saved_ensemble import is_ensemble_dir, load_ensemble

    d = Path(model_dir)
    if not d.is_dir():
        raise ModelLoadError(f"{d}: not a model directory", path=str(d),
                             hint="pass the folder written by `nerservice train --out`")
    if is_ensemble_dir(d):
        return load_ensemble(d, verify=verify)
    missing = [n for n in REQUIRED if not (d / n).is_file()]
    if missing:
        raise ModelLoadError(f"{d}: missing {', '.join(missing)}", path=str(d))
    if verify:
        verify_manifest(d)
    config = NerConfig.from_dict(read_json(d / CONFIG))
    vocabs = Vocabularies.load(d / VOCAB)
    manifest = read_json(d / MANIFEST)
    shape = manifest.get("model", {})
    if (manifest.get("format") == MULTI_FORMAT) != isinstance(vocabs.tags, MultiTagVocabulary):
        raise ModelLoadError(f"{d}: vocab.json's tag set does not fit format {manifest.get('format')!r}", path=str(d))
    if shape.get("n_words") != len(vocabs.words) or shape.get("n_tags") != len(vocabs.tags):
        raise ModelLoadError(f"{d}: manifest sizes do not match vocab.json", path=str(d))
    model = NerTagger(n_words=len(vocabs.words), n_chars=len(vocabs.chars), n_tags=len(vocabs.tags),
                      word_dim=int(shape["word_dim"]), model_config=config.model.model_dump(mode="json"))
    model.build_for_inference()
    model.load_weights(d / WEIGHTS)
    return LoadedModel(d, config, vocabs, model, metrics=read_json(d / METRICS) if (d / METRICS).exists() else {},
                       lineage=read_json(d / LINEAGE) if (d / LINEAGE).exists() else {})
