"""``nerservice export MODEL --format onnx --out DIR``: a saved model (or ensemble) -> the inference
folder of nerservice/artifacts/onnx_folder.py.  Needs Keras (to read the weights) and ``onnx`` (to build the
graphs); the artifact it writes needs neither.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from nerservice.artifacts.files import sha256_file, staged, write_json, write_manifest
from nerservice.artifacts.layout import (
    CONFIG,
    CONTEXT_GRAPH,
    CRF,
    ENSEMBLE,
    ENSEMBLE_FORMAT,
    LINEAGE,
    MANIFEST,
    METRICS,
    MULTI,
    ONNX_FORMAT,
    README,
    VOCAB,
    WORDS_DATA,
    WORDS_GRAPH,
)
from nerservice.artifacts.onnx_folder import META_CRF, META_SOURCE, META_VOCAB
from nerservice.errors import ModelError, ModelLoadError
from nerservice.runtime.deps import require
from nerservice.runtime.forward import WORD_TABLE


def build_graphs(model: Any, *, metadata: dict[str, str] | None = None,
                 table_input: bool = False) -> tuple[bytes, bytes, Any]:
    """Serialized (words, context) ONNX graphs of a Keras ``NerTagger``, with ``metadata`` embedded, and
    the word-vector table: with ``table_input`` the words graph takes it as an input (``graph.words_graph``)
    and the caller feeds it; otherwise it is inside the graph and the third item is None."""
    require("onnx")
    if getattr(model, "char_lm", None) is not None or getattr(model, "text_encoder", None) is not None:
        raise ModelError("ONNX export does not cover a tagger with a character LM (model.char_lm) or a pretrained"
                         " encoder (model.encoder) yet",
                         hint="serve it with the Keras runtime (--runtime keras; 'auto' does so)")
    from nerservice.runtime.graph import context_graph, words_graph
    from nerservice.runtime.weights import tagger_weights

    weights, shape = tagger_weights(model)
    out = []
    for graph in (words_graph(weights, shape, table_input=table_input), context_graph(weights, shape)):
        for k, v in (metadata or {}).items():
            entry = graph.metadata_props.add()
            entry.key, entry.value = k, v
        out.append(graph.SerializeToString())
    return out[0], out[1], weights["word_embedding"] if table_input else None


def write_words_graph(graph: bytes, path: Path) -> None:
    """The words graph at ``path`` with its word-vector table in ``WORDS_DATA`` beside it.  ONNX Runtime
    memory-maps an external initializer instead of copying it onto its heap, so a served model's resident
    memory holds only the pages of rows its traffic has looked up: the table keeps every word of the vectors
    file (``model.vector_vocabulary``, 400k x 50 floats = 76 MB for GloVe 6B), and an in-graph table made an
    export's server 115 MB larger before its first request (BENCHMARKS.md, session 22)."""
    import onnx
    from onnx.external_data_helper import set_external_data

    proto = onnx.load_from_string(graph)
    table = next(t for t in proto.graph.initializer if t.name == WORD_TABLE)
    set_external_data(table, WORDS_DATA)  # offset 0 of its own file: page-aligned, which the mmap needs
    onnx.save_model(proto, str(path))


def export_onnx(model_dir: str | Path, out_dir: str | Path, *, source_ref: str | None = None) -> Path:
    """Export the saved model or ensemble in ``model_dir`` (verified and loaded first) into ``out_dir``."""
    from nerservice.artifacts.ensemble_folder import is_ensemble_dir
    from nerservice.artifacts.formats import load_model

    src, out = Path(model_dir), Path(out_dir)
    if is_ensemble_dir(src):
        return _export_ensemble(src, out, source_ref=source_ref)
    loaded = load_model(src)  # verifies the manifest; refuses a broken model before anything is written
    if getattr(loaded, "model", None) is None:
        raise ModelLoadError(f"{src}: already an ONNX export", path=str(src),
                             hint="export the Keras model it came from (its manifest names the source)")
    with staged(out) as tmp:
        _write_single(loaded, src, tmp, source_ref=source_ref or str(src.resolve()))
    return out


def _write_single(loaded: Any, src: Path, tmp: Path, *, source_ref: str) -> None:
    from nerservice.runtime.readme import readme_text

    src_manifest = json.loads((src / MANIFEST).read_text(encoding="utf-8"))
    for name in (VOCAB, CONFIG, METRICS, LINEAGE, MULTI):  # MULTI: a multi-corpus model's corpora (lineage)
        if (src / name).is_file():
            shutil.copy2(src / name, tmp / name)
    crf = loaded.model.crf_params()
    write_json(tmp / CRF, {"transitions": crf.transitions.tolist(), "start": crf.start.tolist(),
                           "end": crf.end.tolist(), "tags": loaded.vocabs.tags.tags})
    source = {"manifest_sha256": sha256_file(src / MANIFEST), "format": src_manifest.get("format"),
              "ref": source_ref, "model": src_manifest.get("model", {})}
    words, context, _ = build_graphs(loaded.model, metadata={
        META_SOURCE: source["manifest_sha256"], META_VOCAB: sha256_file(tmp / VOCAB), META_CRF: sha256_file(tmp / CRF)})
    write_words_graph(words, tmp / WORDS_GRAPH)
    (tmp / CONTEXT_GRAPH).write_bytes(context)
    (tmp / README).write_text(readme_text(loaded, source), encoding="utf-8")
    write_manifest(tmp, ONNX_FORMAT, sorted(p.name for p in tmp.iterdir()), source=source)


def _export_ensemble(src: Path, out: Path, *, source_ref: str | None) -> Path:
    """An ensemble of exports: the ensemble folder layout (nerservice/artifacts/ensemble_folder.py) with every member
    exported; it loads, verifies and serves through the same ensemble code."""
    from nerservice.artifacts.ensemble_folder import load_ensemble

    ens = load_ensemble(src)  # verifies every member
    spec = json.loads((src / ENSEMBLE).read_text(encoding="utf-8"))
    with staged(out) as tmp:
        entries = []
        for entry, member in zip(spec["members"], ens.members):
            dst = tmp / entry["dir"]
            dst.mkdir()
            _write_single(member, src / entry["dir"], dst, source_ref=f"{source_ref or src.resolve()}/{entry['dir']}")
            entries.append({**entry, "manifest_sha256": sha256_file(dst / MANIFEST)})
        write_json(tmp / ENSEMBLE, {**spec, "members": entries})
        for name in (METRICS, LINEAGE):
            shutil.copy2(src / name, tmp / name)
        write_manifest(tmp, ENSEMBLE_FORMAT, [ENSEMBLE, METRICS, LINEAGE],
                       source={"manifest_sha256": sha256_file(src / MANIFEST), "format": ENSEMBLE_FORMAT,
                               "ref": source_ref or str(src.resolve())}, runtime="onnx")
    return out
