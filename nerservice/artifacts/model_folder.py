"""One trained tagger as a folder with fixed file names (``layout.py``); loading needs nothing else and
never unpickles: the network is rebuilt from config.json + the manifest's sizes, then the HDF5 weights
are read into it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nerservice.artifacts.files import check_files, read_json, read_manifest, staged, write_json, write_manifest
from nerservice.artifacts.layout import (
    CONFIG,
    FORMAT,
    HISTORY,
    LINEAGE,
    MANIFEST,
    METRICS,
    MULTI,
    MULTI_FORMAT,
    REQUIRED,
    VOCAB,
    WEIGHTS,
)
from nerservice.config import NerConfig
from nerservice.errors import ModelLoadError
from nerservice.text.vocab import MultiTagVocabulary, Vocabularies

if TYPE_CHECKING:
    from nerservice.model.predictor import Predictor
    from nerservice.model.tagger import NerTagger

# Writes one optional file into the staged folder (e.g. training's history plot), given its path.
FileWriter = Callable[[Path], None]
# What a format adds to the base files: a writer, or JSON data written as is.
ExtraFile = FileWriter | dict[str, Any] | list[Any]
# Files a format needs besides the base ones.
FORMAT_FILES: dict[str, tuple[str, ...]] = {FORMAT: (), MULTI_FORMAT: (MULTI,)}


def truthful_gazetteer(config: NerConfig, vocabs: Vocabularies) -> NerConfig:
    """``model.gazetteer`` asks train() to build one (the default); a model without one in its vocabularies —
    built without training data, or saved before the setting existed (its config lacks the key, which reads
    as the default) — says so in its config."""
    if config.model.gazetteer and vocabs.gazetteer is None:
        return config.with_overrides({"model.gazetteer": False})
    return config


def save_model(out_dir: str | Path, *, model: NerTagger, vocabs: Vocabularies, config: NerConfig,
               metrics: dict[str, Any] | None = None, history: list[dict[str, Any]] | None = None,
               lineage: dict[str, Any] | None = None, fmt: str = FORMAT,
               extra_files: Mapping[str, ExtraFile] | None = None) -> Path:
    """Write the folder (staged: all or nothing). ``fmt``: the manifest's format (``FORMAT``, or a format
    that shares this layout such as ``MULTI_FORMAT``). ``extra_files``: name -> writer (called with the
    path) or JSON data, for files the caller adds (listed in the manifest like the others)."""
    out = Path(out_dir)
    config = truthful_gazetteer(config, vocabs)
    with staged(out) as tmp:
        (tmp / CONFIG).write_text(config.to_json(), encoding="utf-8")
        vocabs.save(tmp / VOCAB)
        model.save_weights(tmp / WEIGHTS)
        write_json(tmp / METRICS, metrics or {})
        write_json(tmp / LINEAGE, lineage or {})
        if history:
            write_json(tmp / HISTORY, history)
        for name, write in (extra_files or {}).items():
            if Path(name).name != name or name in REQUIRED:
                raise ValueError(f"extra file {name!r}: a plain name that is not one of the format's own")
            if callable(write):
                write(tmp / name)
            else:
                write_json(tmp / name, write)
        # "model": the data-dependent sizes (vocab, chars, tags, word dim)
        write_manifest(tmp, fmt, sorted(p.name for p in tmp.iterdir()), model=model.get_config())
    return out


def verify_model_folder(folder: Path, manifest: Any) -> dict[str, Any]:
    fmt = manifest.get("format") if isinstance(manifest, dict) else None
    extra = FORMAT_FILES.get(fmt, ()) if isinstance(fmt, str) else ()
    return check_files(folder, manifest, required=[n for n in REQUIRED if n != MANIFEST] + list(extra))


@dataclass
class LoadedModel:
    path: Path
    config: NerConfig
    vocabs: Vocabularies
    model: NerTagger
    metrics: dict[str, Any] = field(default_factory=dict)
    lineage: dict[str, Any] = field(default_factory=dict)

    def predictor(self, **kwargs: Any) -> Predictor:
        from nerservice.model.predictor import Predictor

        return Predictor(self.model, self.vocabs, max_word_length=self.config.model.max_word_length,
                         bucket_size=self.config.training.bucket_size, **kwargs)


def load_model_folder(model_dir: str | Path, *, verify: bool = True) -> LoadedModel:
    """Load one tagger's folder (``formats.load_model`` is the entry point that also reads ensembles)."""
    from nerservice.model.tagger import NerTagger

    d = Path(model_dir)
    missing = [n for n in REQUIRED if not (d / n).is_file()]
    if missing:
        raise ModelLoadError(f"{d}: missing {', '.join(missing)}", path=str(d))
    # Verified: an unreadable manifest is an IntegrityError, as from the store's checks.
    manifest = verify_model_folder(d, read_manifest(d)) if verify else read_json(d / MANIFEST)
    vocabs = Vocabularies.load(d / VOCAB)
    config = truthful_gazetteer(NerConfig.from_dict(read_json(d / CONFIG)), vocabs)
    shape = manifest.get("model", {}) if isinstance(manifest, dict) else {}
    fmt = manifest.get("format") if isinstance(manifest, dict) else None
    if (fmt == MULTI_FORMAT) != isinstance(vocabs.tags, MultiTagVocabulary):
        raise ModelLoadError(f"{d}: vocab.json's tag set does not fit format {fmt!r}", path=str(d))
    n_lm_chars = len(vocabs.lm_chars) if vocabs.lm_chars is not None else 0
    n_gazetteer_ids = vocabs.gazetteer.n_ids if vocabs.gazetteer is not None else 0
    if (shape.get("n_words") != len(vocabs.words) or shape.get("n_tags") != len(vocabs.tags)
            or shape.get("n_lm_chars", 0) != n_lm_chars or shape.get("n_gazetteer_ids", 0) != n_gazetteer_ids):
        raise ModelLoadError(f"{d}: manifest sizes do not match vocab.json", path=str(d))
    model = NerTagger(n_words=len(vocabs.words), n_chars=len(vocabs.chars), n_tags=len(vocabs.tags),
                      word_dim=int(shape["word_dim"]), model_config=config.model.model_dump(mode="json"),
                      n_lm_chars=n_lm_chars, n_gazetteer_ids=n_gazetteer_ids, word_initializer="zeros")
    model.build_for_inference()
    model.load_weights(d / WEIGHTS)
    return LoadedModel(d, config, vocabs, model, metrics=read_json(d / METRICS) if (d / METRICS).exists() else {},
                       lineage=read_json(d / LINEAGE) if (d / LINEAGE).exists() else {})
