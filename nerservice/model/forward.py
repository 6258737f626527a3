"""The compiled inference forward pass, per backend: batch arrays → emissions (B, T, K) as NumPy.

Its own module so that ``predictor.py`` (which chooses a forward pass) and ``xla_forward.py`` (which
wraps this one) both import it without importing each other.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from nerservice import backend as backends
from nerservice.text.inputs import ENCODER_STATES, INPUT_NAMES, INPUT_RANKS, model_inputs

if TYPE_CHECKING:  # Keras only when a Keras model is compiled: the ONNX runtime imports ``Forward`` without it
    from nerservice.model.tagger import NerTagger

Forward = Callable[[dict[str, np.ndarray]], np.ndarray]


def compile_forward(model: NerTagger, *, jit_compile: bool = False, with_states: bool = False) -> Forward:
    """Backend-specific compiled inference: emissions (B, T, K) as NumPy.  ``with_states``: the batch also
    carries ``ENCODER_STATES`` and the model reads them instead of running its encoder (TensorFlow only;
    ``KeptStatesForward``)."""
    backend = backends.current()
    if backend == "tensorflow":
        import tensorflow as tf

        spec = backends.tf_signature(INPUT_RANKS)
        if with_states:
            spec[ENCODER_STATES] = tf.TensorSpec((None,) * 4, tf.float32)
        fn = tf.function(lambda b: model(b, training=False), input_signature=[spec], jit_compile=jit_compile)
        keys = (*INPUT_NAMES, ENCODER_STATES) if with_states else INPUT_NAMES
        return lambda batch: np.asarray(fn({k: batch[k] for k in keys}).numpy())
    if with_states:
        raise ValueError("a forward with kept encoder states is compiled for TensorFlow only")
    import jax

    @jax.jit
    def fwd(tv: Any, ntv: Any, batch: Any) -> Any:
        out, _ = model.stateless_call(tv, ntv, batch, training=False)
        return out

    def run(batch: dict[str, np.ndarray]) -> np.ndarray:
        tv = [v.value for v in model.trainable_variables]
        ntv = [v.value for v in model.non_trainable_variables]
        return np.asarray(fwd(tv, ntv, model_inputs(batch)))

    return run


def compile_encoder_states(encoder: Any) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A frozen encoder layer's ``(wp_ids, wp_index) -> states (B, T, L + 1, H)`` as NumPy, compiled per backend
    (``training/encoder_cache.py``): run op by op, JAX would compile each op anew for every batch shape."""
    if backends.current() == "tensorflow":
        import tensorflow as tf

        spec = [tf.TensorSpec((None, None), tf.int32)] * 2
        fn = tf.function(lambda ids, index: encoder(ids, index), input_signature=spec)
        return lambda ids, index: np.asarray(fn(ids.astype(np.int32), index.astype(np.int32)).numpy())
    import jax

    @jax.jit
    def states(ntv: Any, ids: Any, index: Any) -> Any:
        out, _ = encoder.stateless_call([], ntv, ids, index)
        return out

    def run(ids: np.ndarray, index: np.ndarray) -> np.ndarray:
        return np.asarray(states([v.value for v in encoder.non_trainable_variables], ids, index))

    return run


class KeptStatesForward:
    """The forward for text scored again and again (training's dev set, every epoch) by a model with a frozen
    encoder: each batch's encoder states are computed once and kept (float16, up to ``budget_mb``), keyed by
    the batch's word pieces, so later calls with the same batch run only the tagger. The predictor cuts the same
    sentences into the same batches each time (its batching has no seed), so every later call finds them."""

    def __init__(self, model: NerTagger, *, budget_mb: int) -> None:
        self._forward = compile_forward(model, with_states=True)
        self._encode = compile_encoder_states(model.text_encoder)
        self.budget_bytes = budget_mb << 20
        self.kept_bytes = 0
        self._kept: dict[bytes, np.ndarray] = {}

    def __call__(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        ids, index = batch["wp_ids"], batch["wp_index"]
        key = hashlib.blake2b(repr((ids.shape, index.shape)).encode() + ids.tobytes() + index.tobytes(),
                              digest_size=16).digest()
        states = self._kept.get(key)
        if states is None:
            states = self._encode(ids, index).astype(np.float16)
            if self.kept_bytes + states.nbytes <= self.budget_bytes:
                self._kept[key] = states
                self.kept_bytes += states.nbytes
        return self._forward({**batch, ENCODER_STATES: states.astype(np.float32)})
