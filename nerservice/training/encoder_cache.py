"""The frozen encoder's states, computed once per training sentence (``model.encoder``).

The pretrained encoder never changes while the tagger trains (its weights are frozen and its output is
behind ``stop_gradient``), yet a training step that ran it recomputed the same states for the same sentence
every epoch: on one CPU core the encoder was ~80 % of a step (NCBI-disease: 1.0-1.2k tokens/s with it,
5.3-5.9k without; BENCHMARKS.md, session 36). Here a sentence's states (every hidden state at each token's
first piece, ``(tokens, L + 1, H)``) are computed the first time it is in a batch and kept, in float16, for
every later epoch; the batch carries them as ``ENCODER_STATES`` and the tagger reads them instead of running
its encoder (``model/tagger.py``). The dev set's states are kept by its predictor
(``model/forward.KeptStatesForward``); inference runs the encoder.

``training.encoder_cache_mb`` bounds what is kept (NCBI-disease's train split: ~0.7 GB for MiniLM-L6's
7 x 384 states a token). A sentence past the bound is encoded again whenever it is in a batch, so a small
bound costs time, never correctness. States are rounded to float16 whether kept or not, so the bound does not
change what the tagger sees: a run's weights do not depend on it.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nerservice.model.forward import compile_encoder_states
from nerservice.text.inputs import ENCODER_STATES

MB = 1 << 20


class EncoderStates:
    """``(rows, batch) -> {ENCODER_STATES: (B, T, L + 1, H) float32}`` for ``EpochLoop``: ``rows`` index the
    training sentences of the batch's first ``len(rows)`` rows (the rest are padding rows, all zeros)."""

    def __init__(self, encoder: Any, n_sentences: int, *, budget_mb: int) -> None:
        self.encoder = encoder
        self.budget_bytes = budget_mb * MB
        self._kept: list[np.ndarray | None] = [None] * n_sentences
        self.kept_bytes = 0
        self.kept_sentences = 0
        self._compiled: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
        self.encoded_sentences = 0  # sentence encodings computed; past the bound a sentence counts every time

    def _encode(self, wp_ids: np.ndarray, wp_index: np.ndarray) -> np.ndarray:
        if self._compiled is None:
            self._compiled = compile_encoder_states(self.encoder)
        return self._compiled(wp_ids, wp_index).astype(np.float16)  # (m, T, L + 1, H)

    def __call__(self, rows: np.ndarray, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        lengths = batch["lengths"]
        b, t = batch["token_ids"].shape
        missing = [i for i, r in enumerate(rows) if self._kept[int(r)] is None]
        fresh: dict[int, np.ndarray] = {}
        if missing:
            sel = np.asarray(missing)
            encoded = self._encode(batch["wp_ids"][sel], batch["wp_index"][sel])
            self.encoded_sentences += len(missing)
            for j, i in enumerate(missing):
                states = encoded[j, : int(lengths[i])].copy()  # a copy: the batch's array is not held
                fresh[i] = states
                if self.kept_bytes + states.nbytes <= self.budget_bytes:
                    self._kept[int(rows[i])] = states
                    self.kept_bytes += states.nbytes
                    self.kept_sentences += 1
        shape = self.encoder.layers + 1, self.encoder.hidden
        out = np.zeros((b, t, *shape), dtype=np.float32)
        for i, r in enumerate(rows):
            kept = fresh[i] if i in fresh else self._kept[int(r)]
            if kept is not None:  # always: a sentence is either kept or encoded just now
                out[i, : kept.shape[0]] = kept
        return {ENCODER_STATES: out}

    def stats(self) -> dict[str, Any]:
        return {"kept_sentences": self.kept_sentences, "sentences": len(self._kept),
                "kept_bytes": self.kept_bytes, "budget_mb": self.budget_bytes // MB,
                "encoded_sentences": self.encoded_sentences}
