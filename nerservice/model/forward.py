"""The compiled inference forward pass, per backend: batch arrays → emissions (B, T, K) as NumPy.

Its own module so that ``predictor.py`` (which chooses a forward pass) and ``xla_forward.py`` (which
wraps this one) both import it without importing each other.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from nerservice import backend as backends
from nerservice.text.inputs import INPUT_RANKS, model_inputs

if TYPE_CHECKING:  # Keras only when a Keras model is compiled: the ONNX runtime imports ``Forward`` without it
    from nerservice.model.tagger import NerTagger

Forward = Callable[[dict[str, np.ndarray]], np.ndarray]


def compile_forward(model: NerTagger, *, jit_compile: bool = False) -> Forward:
    """Backend-specific compiled inference: emissions (B, T, K) as NumPy."""
    backend = backends.current()
    if backend == "tensorflow":
        import tensorflow as tf

        fn = tf.function(lambda b: model(b, training=False), input_signature=[backends.tf_signature(INPUT_RANKS)],
                         jit_compile=jit_compile)
        return lambda batch: np.asarray(fn(model_inputs(batch)).numpy())
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
