"""The tagger's forward pass on ONNX Runtime: a batch dict of named arrays -> emissions (B, T, K).

Same input as the Keras forward (``token_ids``, ``lengths``, ``word_chars``, ``word_index``, and
``gazetteer`` for a model with one; see nerservice/text/features.py), same output within float rounding, so
the Predictor, its batching and the CRF decode are shared unchanged.  Two graphs
(nerservice/runtime/graph.py): the word graph runs once per distinct (word id, characters) pair of the
batch — rows of it a ``WordFeatureCache`` already holds are not run again — and the context graph runs the
BiLSTM stack over the gathered rows (adding a gazetteer model's per-token share of the dense layer first).

Imports only NumPy and ``onnxruntime`` (never TensorFlow or Keras).  ``InferenceSession.run`` is
thread-safe, and so is the cache, so one forward serves the API's concurrent batches.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from nerservice.errors import ModelLoadError
from nerservice.runtime.deps import require
from nerservice.runtime.word_cache import WordFeatureCache

# The words graph's word-vector table: an initializer (an export keeps it in words.onnx.data) or, in a graph
# converted in memory, an input this class feeds (graph.words_graph).
WORD_TABLE = "word_embedding"

THREADS_ENV = "NERSERVICE_ORT_THREADS"


def import_onnxruntime() -> Any:
    return require("onnxruntime")


def session_options(threads: int | None) -> Any:
    ort = import_onnxruntime()
    so = ort.SessionOptions()
    n = threads if threads is not None else int(os.environ.get(THREADS_ENV, "0") or 0)
    so.intra_op_num_threads = n  # 0 = ONNX Runtime's default: one per physical core
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    # Idle intra-op threads sleep instead of spinning: a server's model thread waits between batches, and
    # spinning threads take cores from the event loop, the tokenizer and other processes.
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return so


def make_session(model: str | Path | bytes, threads: int | None) -> Any:
    ort = import_onnxruntime()
    src = model if isinstance(model, bytes) else str(model)
    try:
        return ort.InferenceSession(src, session_options(threads), providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - ORT raises its own exception types for unreadable graphs
        where = "in-memory graph" if isinstance(model, bytes) else str(model)
        raise ModelLoadError(f"{where}: ONNX Runtime cannot load it ({exc})") from None


def distinct_words(batch: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (word id, char row) pairs of a batch: word ids (P,), char rows (P, C), and each token's
    pair index (B, T).  A word's features depend on both (two long words may share a clipped char form but
    not their normalised id), so a pair, not a char row, is the unit the word graph computes."""
    tok, index, chars = batch["token_ids"], batch["word_index"], batch["word_chars"]
    n_rows = chars.shape[0]
    key = tok.astype(np.int64) * n_rows + index
    uniq, inverse = np.unique(key, return_inverse=True)
    return ((uniq // n_rows).astype(np.int32), chars[uniq % n_rows],
            inverse.reshape(tok.shape).astype(np.int32))


class OrtForward:
    """``forward(batch) -> emissions`` over the two sessions, with an optional word-feature cache."""

    def __init__(self, words: Any, context: Any, *, cache: WordFeatureCache | None = None,
                 word_table: np.ndarray | None = None) -> None:
        self.words, self.context, self.cache = words, context, cache
        # A words graph that takes the word-vector table as an input (graph.words_graph(table_input=True)).
        self._feeds: dict[str, np.ndarray] = {WORD_TABLE: word_table} if word_table is not None else {}
        # Read once from the graph, not the vocabularies: a gazetteer model's context graph declares the
        # input (and needs it); the graphs of every other model, old exports included, do not accept it.
        self.takes_gazetteer = any(i.name == "gazetteer" for i in context.get_inputs())

    @classmethod
    def open(cls, words: str | Path | bytes, context: str | Path | bytes, *, threads: int | None = None,
             cache_entries: int = 0, word_table: np.ndarray | None = None) -> OrtForward:
        dim = None
        sess_w = make_session(words, threads)
        dim = int(sess_w.get_outputs()[0].shape[1])
        cache = WordFeatureCache(cache_entries, dim) if cache_entries > 0 else None
        return cls(sess_w, make_session(context, threads), cache=cache, word_table=word_table)

    def word_features(self, word_ids: np.ndarray, word_chars: np.ndarray) -> np.ndarray:
        def run(ids: np.ndarray, chars: np.ndarray) -> np.ndarray:
            out: np.ndarray = self.words.run(None, {"word_ids": ids, "word_chars": chars, **self._feeds})[0]
            return out

        if self.cache is None:
            return run(word_ids, word_chars)
        return self.cache.features(word_ids, word_chars, run)

    def context_inputs(self, batch: dict[str, np.ndarray], features: np.ndarray,
                       word_index: np.ndarray) -> dict[str, np.ndarray]:
        """The context graph's feed: the word rows, each token's row index, the lengths, and the gazetteer
        ids when the graph takes them."""
        feed = {"features": features, "word_index": word_index, "lengths": batch["lengths"].astype(np.int32)}
        if self.takes_gazetteer:
            feed["gazetteer"] = np.ascontiguousarray(batch["gazetteer"], dtype=np.int32)
        return feed

    def __call__(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        word_ids, chars, index = distinct_words(batch)
        feats = self.word_features(word_ids, chars)
        out: np.ndarray = self.context.run(None, self.context_inputs(batch, feats, index))[0]
        return out

    def stats(self) -> dict[str, Any]:
        return self.cache.stats() if self.cache is not None else {"entries": 0, "capacity": 0}
