"""Which runtime serves a model: ONNX Runtime (the default on CPU: same emissions, ~2x the Keras path's
tokens/s) or Keras (the training framework, the reference).

    auto   an ONNX export -> ONNX Runtime; a Keras model -> converted in memory to the same ONNX graphs
           when ``onnxruntime`` and ``onnx`` are installed and Keras is not on JAX (GPUs), else Keras; a
           model with a character LM (``model.char_lm``) stays on Keras: the graphs do not cover it yet (a
           gazetteer, ``model.gazetteer``, they do: nerservice/runtime/graph.py)
    onnx   ONNX Runtime, or a coded error saying what to install
    keras  the Keras forward of a saved model (an export has no Keras weights: a coded error)
"""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any, Literal

from nerservice.artifacts.layout import CONFIG, ENSEMBLE, MANIFEST, ONNX_FORMAT
from nerservice.errors import ModelLoadError

Runtime = Literal["auto", "onnx", "keras"]
RUNTIMES: tuple[str, ...] = ("auto", "onnx", "keras")


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _is_export(loaded: Any) -> bool:
    from nerservice.artifacts.onnx_folder import LoadedOnnx

    members = getattr(loaded, "members", None) or []
    return isinstance(loaded, LoadedOnnx) or bool(members) and all(isinstance(m, LoadedOnnx) for m in members)


def _is_onnx_dir(d: Path) -> bool:
    try:
        return json.loads((d / MANIFEST).read_text(encoding="utf-8")).get("format") == ONNX_FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def _keras_only(d: Path) -> bool:
    """A model with a character LM (``model.char_lm``) or a pretrained encoder (``model.encoder``): the ONNX
    graphs do not cover them yet."""
    try:
        model = json.loads((d / CONFIG).read_text(encoding="utf-8"))["model"]
        return bool(model.get("char_lm_units") or model.get("encoder_shape"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def onnx_covers(loaded: Any) -> bool:
    members = getattr(loaded, "members", None)
    if members is not None:
        return all(onnx_covers(m) for m in members)
    model = getattr(loaded, "model", None)
    return getattr(model, "char_lm", None) is None and getattr(model, "text_encoder", None) is None


def converts_in_memory() -> bool:
    """``auto`` on a Keras model: convert when both packages are there and the backend is TensorFlow."""
    return (_installed("onnxruntime") and _installed("onnx")
            and os.environ.get("KERAS_BACKEND", "tensorflow") == "tensorflow")


def planned_runtime(model_dir: str | Path, runtime: str = "auto") -> str:
    """The runtime ``load_for_inference`` will use, decided without loading (so a Spark worker knows
    whether to configure TensorFlow's thread pools before anything imports it)."""
    d = Path(model_dir)
    top = d / "member-0" if (d / ENSEMBLE).is_file() else d
    if _is_onnx_dir(top):
        return "onnx"
    if runtime == "auto":
        return "onnx" if converts_in_memory() and not _keras_only(top) else "keras"
    return runtime


def load_for_inference(model_dir: str | Path, *, runtime: str = "auto", threads: int | None = None,
                       word_cache: int | None = None, xla: bool = False) -> Any:
    """``load_model`` (verified), then put on the chosen runtime.  ``threads``: ONNX Runtime's intra-op
    threads (default: ``NERSERVICE_ORT_THREADS`` or one per core); ``word_cache``: rows of the word-feature
    cache per model (0 = off; default ``artifact.DEFAULT_CACHE_ENTRIES``).  ``xla``: XLA was asked for
    (a TensorFlow compiler), so "auto" keeps a Keras model on Keras."""
    from nerservice.artifacts.ensemble_folder import is_ensemble_dir, load_ensemble
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.onnx_folder import load_onnx_folder

    if runtime not in RUNTIMES:
        raise ModelLoadError(f"unknown runtime {runtime!r}", hint=f"one of {', '.join(RUNTIMES)}")
    options: dict[str, Any] = {"threads": threads, "cache_entries": word_cache}
    d = Path(model_dir)
    if is_ensemble_dir(d):
        loaded: Any = load_ensemble(d, onnx_options=options)
    elif _is_onnx_dir(d):
        loaded = load_onnx_folder(d, **options)
    else:
        loaded = load_model(d)
    if _is_export(loaded):
        if runtime == "keras":
            raise ModelLoadError(f"{model_dir}: an ONNX export has no Keras weights", path=str(model_dir),
                                 hint="pass the source model folder to use the Keras runtime")
        return loaded
    if runtime == "keras" or (runtime == "auto" and (xla or not converts_in_memory() or not onnx_covers(loaded))):
        return loaded
    return to_onnx(loaded, **options)


def to_onnx(loaded: Any, *, threads: int | None = None, cache_entries: int | None = None) -> Any:
    """A Keras ``LoadedModel`` (or ensemble of them) on ONNX Runtime: the export's graphs, built in memory."""
    from nerservice.artifacts.onnx_folder import DEFAULT_CACHE_ENTRIES, LoadedOnnx
    from nerservice.runtime.export import build_graphs
    from nerservice.runtime.forward import OrtForward

    members = getattr(loaded, "members", None)
    if members is not None:
        from nerservice.artifacts.ensemble_folder import LoadedEnsemble

        return LoadedEnsemble(loaded.path, [to_onnx(m, threads=threads, cache_entries=cache_entries) for m in members],
                              metrics=loaded.metrics,
                              lineage=loaded.lineage)
    # The table as an input: held once, by the array fed on every run, not inside the graph and the session.
    words, context, table = build_graphs(loaded.model, table_input=True)
    forward = OrtForward.open(words, context, threads=threads, word_table=table,
                              cache_entries=DEFAULT_CACHE_ENTRIES if cache_entries is None else cache_entries)
    return LoadedOnnx(loaded.path, loaded.config, loaded.vocabs, loaded.model.crf_params(), forward, manifest={},
                      metrics=loaded.metrics, lineage=loaded.lineage)
