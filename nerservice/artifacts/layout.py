"""The names of things on disk, spelled once.

A training run writes (spaCy's habit)::

    OUT/model-best/   the saved model with the best dev entity F1 (what you deploy)
    OUT/model-last/   the model after the last epoch
    OUT/checkpoint/   resumable state (weights + optimizer + loop state + the run's identity); a rerun of the
                      same run continues from it (training/resume.py)

A saved model folder holds::

    config.json         NerConfig (typed, versioned)
    vocab.json          word / char / tag vocabularies
    model.weights.h5    Keras weights (HDF5 arrays only)
    metrics.json        dev/test evaluation
    history.json        per-epoch history;  history.png  its plot (written by training, optional)
    lineage.json        corpus fingerprints, config hash, git sha, package versions
    manifest.json       file list with sha256 and sizes (the store verifies it)

An ensemble folder holds ``ensemble.json`` and ``member-N/`` model folders (``ensemble_folder.py``); an ONNX
export (``onnx_folder.py``) holds ``words.onnx`` (its word-vector table in ``words.onnx.data``), ``context.onnx``,
``crf.json``, ``README.md`` beside
``vocab.json``, ``config.json``, ``metrics.json``, ``lineage.json`` and its manifest.
"""
from __future__ import annotations

# Run folder (the output of `nerservice train --out OUT`).
BEST, LAST, CHECKPOINT = "model-best", "model-last", "checkpoint"
RUN_MODELS = (BEST, LAST)

# Model folder.
CONFIG, VOCAB, WEIGHTS = "config.json", "vocab.json", "model.weights.h5"
METRICS, HISTORY, PLOT = "metrics.json", "history.json", "history.png"
LINEAGE, MANIFEST = "lineage.json", "manifest.json"
REQUIRED = (CONFIG, VOCAB, WEIGHTS, MANIFEST)

# Ensemble folder.
ENSEMBLE = "ensemble.json"

# Multi-corpus model folder (nerservice/multi/): a model folder plus its heads' description.
MULTI = "multi.json"

# Checkpoint folder (nerservice/training/checkpoint.py).
STATE, MODEL_VARS, OPT_VARS = "state.json", "model_vars.npz", "optimizer_vars.npz"
RUN_IDENTITY = "run.json"  # what the run trains: model config and data (training/resume.py)

# The ``format`` field of manifest.json. The strings are on disk in every saved model: never change them.
FORMAT = "nerservice.saved_model.v1"
ENSEMBLE_FORMAT = "nerservice.ensemble.v1"
MULTI_FORMAT = "nerservice.multi.v1"  # one model, one head per corpus; needs MULTI too
ONNX_FORMAT = "nerservice.onnx.v1"  # `nerservice export --format onnx` (onnx_folder.py): serves without TensorFlow

# ONNX export folder (onnx_folder.py): the two graphs and the CRF beside vocab.json, config.json.
WORDS_GRAPH, CONTEXT_GRAPH, CRF, README = "words.onnx", "context.onnx", "crf.json", "README.md"
# The words graph's word-vector table as ONNX external data: ONNX Runtime memory-maps it (export.py says why).
WORDS_DATA = "words.onnx.data"
