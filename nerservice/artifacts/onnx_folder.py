"""The exported inference folder (``nerservice export --format onnx``, nerservice/runtime/export.py): serves
without TensorFlow or Keras, on ONNX Runtime (nerservice/runtime/forward.py).

    words.onnx     word graph: word_ids (U,), word_chars (U, C) -> features (U, D)
    context.onnx   context graph: features, word_index (B, T), lengths (B,) [, gazetteer (B, T)] -> emissions
    vocab.json     word / char / tag vocabularies, and a gazetteer model's gazetteer (copied from the source
                   model: the predictor matches text against it, as the Keras one does)
    crf.json       CRF transitions (K, K), start (K,), end (K,) as float64 lists
    config.json    the source model's NerConfig (max word length, bucket size)
    metrics.json   lineage.json   copied from the source model
    README.md      inputs, outputs and the decode, for users without nerservice
    manifest.json  format, the source model's identity, sha256 and size of every file

Two checks run before anything serves: every file against the manifest (sha256 and size), and each graph's
embedded metadata (the source model's manifest sha256 and the sha256 of vocab.json and crf.json at export)
against the manifest and the files — so graphs exported from another model version, or a folder whose
manifest was rewritten around swapped files, are refused with a coded error.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nerservice.artifacts.files import check_files, read_json, read_manifest
from nerservice.artifacts.layout import (
    CONFIG,
    CONTEXT_GRAPH,
    CRF,
    LINEAGE,
    METRICS,
    ONNX_FORMAT,
    VOCAB,
    WORDS_GRAPH,
)
from nerservice.config import NerConfig
from nerservice.errors import IntegrityError, ModelLoadError
from nerservice.model.decode import CrfParams
from nerservice.text.vocab import Vocabularies

if TYPE_CHECKING:
    from nerservice.runtime.predictor import OnnxPredictor

REQUIRED = (WORDS_GRAPH, CONTEXT_GRAPH, VOCAB, CRF, CONFIG)
META_SOURCE = "nerservice.source_manifest_sha256"
META_VOCAB, META_CRF = "nerservice.vocab_sha256", "nerservice.crf_sha256"
DEFAULT_CACHE_ENTRIES = 20_000  # word-feature rows kept per model: 20k x 256 floats = 20 MB at most


def is_onnx_manifest(manifest: Any) -> bool:
    return isinstance(manifest, dict) and manifest.get("format") == ONNX_FORMAT


def verify_onnx_folder(folder: str | Path, manifest: Any) -> dict[str, Any]:
    d = Path(folder)
    check_files(d, manifest, required=REQUIRED)
    source = manifest.get("source")
    if not isinstance(source, dict) or not isinstance(source.get("manifest_sha256"), str):
        raise IntegrityError(f"{d}/manifest.json: no source model identity", path=str(d),
                             hint="export the model again with `nerservice export`")
    return dict(manifest)


def read_crf(path: Path) -> CrfParams:
    data = read_json(path)
    try:
        crf = CrfParams(transitions=np.asarray(data["transitions"], dtype=np.float64),
                        start=np.asarray(data["start"], dtype=np.float64),
                        end=np.asarray(data["end"], dtype=np.float64))
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelLoadError(f"{path}: not CRF parameters ({exc})", path=str(path)) from None
    k = crf.start.shape[0]
    if crf.transitions.shape != (k, k) or crf.end.shape != (k,):
        raise ModelLoadError(f"{path}: CRF shapes {crf.transitions.shape}/{crf.start.shape}/{crf.end.shape} "
                             "do not fit together", path=str(path))
    return crf


def _check_binding(d: Path, name: str, session: Any, manifest: dict[str, Any]) -> None:
    """The graph's metadata names the source model and the vocab/CRF files it was exported with."""
    meta = session.get_modelmeta().custom_metadata_map
    files = manifest["files"]
    expected = {META_SOURCE: manifest["source"]["manifest_sha256"], META_VOCAB: files[VOCAB]["sha256"],
                META_CRF: files[CRF]["sha256"]}
    wrong = [k for k, v in expected.items() if meta.get(k) != v]
    if wrong:
        raise IntegrityError(
            f"{d / name}: exported from another model version than this folder's manifest, vocabularies "
            f"or CRF ({', '.join(wrong)} differ)", path=str(d / name),
            hint="export the model again with `nerservice export MODEL --format onnx`")


@dataclass
class LoadedOnnx:
    """The ``LoadedModel`` interface (``predictor()``, ``vocabs``, ``config``, ``metrics``, ``lineage``)."""

    path: Path
    config: NerConfig
    vocabs: Vocabularies
    crf: CrfParams
    forward: Any  # nerservice.runtime.forward.OrtForward
    manifest: dict[str, Any]
    metrics: dict[str, Any] = field(default_factory=dict)
    lineage: dict[str, Any] = field(default_factory=dict)

    def predictor(self, **kwargs: Any) -> OnnxPredictor:
        from nerservice.runtime.predictor import OnnxPredictor

        return OnnxPredictor(self.forward, self.vocabs, self.crf, max_word_length=self.config.model.max_word_length,
                             bucket_size=self.config.training.bucket_size, **kwargs)


def load_onnx_folder(folder: str | Path, *, verify: bool = True, threads: int | None = None,
              cache_entries: int | None = None) -> LoadedOnnx:
    """``threads``: ONNX Runtime intra-op threads (default ``NERSERVICE_ORT_THREADS``, else one per core);
    ``cache_entries``: word-feature cache rows (default ``DEFAULT_CACHE_ENTRIES``; 0 = off)."""
    from nerservice.runtime.forward import OrtForward

    d = Path(folder)
    manifest = read_manifest(d)
    if not is_onnx_manifest(manifest):
        got = manifest.get("format") if isinstance(manifest, dict) else None
        raise ModelLoadError(f"{d}: not a {ONNX_FORMAT} export (format {got!r})", path=str(d))
    if verify:
        verify_onnx_folder(d, manifest)
    config = NerConfig.from_dict(read_json(d / CONFIG))
    vocabs = Vocabularies.load(d / VOCAB)
    crf = read_crf(d / CRF)
    forward = OrtForward.open(d / WORDS_GRAPH, d / CONTEXT_GRAPH, threads=threads,
                               cache_entries=DEFAULT_CACHE_ENTRIES if cache_entries is None else cache_entries)
    for name, sess in ((WORDS_GRAPH, forward.words), (CONTEXT_GRAPH, forward.context)):
        _check_binding(d, name, sess, manifest)
    k = forward.context.get_outputs()[0].shape[2]
    if k != len(vocabs.tags) or crf.start.shape[0] != len(vocabs.tags):
        raise ModelLoadError(f"{d}: the network emits {k} tags, vocab.json and crf.json have "
                             f"{len(vocabs.tags)} / {crf.start.shape[0]}", path=str(d))
    return LoadedOnnx(d, config, vocabs, crf, forward, manifest,
                      metrics=read_json(d / METRICS) if (d / METRICS).is_file() else {},
                      lineage=read_json(d / LINEAGE) if (d / LINEAGE).is_file() else {})
