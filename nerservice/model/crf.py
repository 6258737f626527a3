"""Linear-chain CRF: learned transitions, negative log-likelihood in ``keras.ops`` (trainable on either
backend), and exact decoding in NumPy (``nerservice.model.decode``).

Scores: start[y0] + sum_t emissions[t, y_t] + sum_t transitions[y_{t-1}, y_t] + end[y_last].
"""
from __future__ import annotations

from typing import Any

import keras
from keras import ops

from nerservice.model.layers import sequence_mask


@keras.saving.register_keras_serializable(package="nerservice")
class CRF(keras.layers.Layer):
    def __init__(self, n_tags: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n_tags = n_tags

    def build(self, input_shape: Any = None) -> None:
        init = keras.initializers.RandomUniform(-0.1, 0.1)
        k = self.n_tags
        self.transitions = self.add_weight(shape=(k, k), initializer=init, name="transitions")
        self.start = self.add_weight(shape=(k,), initializer=init, name="start")
        self.end = self.add_weight(shape=(k,), initializer=init, name="end")

    def call(self, emissions: Any) -> Any:  # identity; the CRF acts through its methods
        return emissions

    def log_likelihood(self, emissions: Any, tags: Any, lengths: Any) -> Any:
        """log p(tags | emissions) per sentence, shape (B,). Positions at or after ``lengths`` are ignored."""
        emissions = ops.cast(emissions, "float32")
        tags = ops.cast(tags, "int32")
        lengths = ops.cast(lengths, "int32")
        k = self.n_tags
        t = ops.shape(emissions)[1]
        mask = ops.cast(sequence_mask(lengths, t), "float32")
        trans = ops.convert_to_tensor(self.transitions)
        start = ops.convert_to_tensor(self.start)
        end = ops.convert_to_tensor(self.end)

        # Score of the gold path.
        em = ops.squeeze(ops.take_along_axis(emissions, ops.expand_dims(tags, -1), axis=-1), -1)
        gold = ops.sum(em * mask, axis=1)
        pair = tags[:, :-1] * k + tags[:, 1:]
        gold += ops.sum(ops.take(ops.reshape(trans, (-1,)), pair) * mask[:, 1:], axis=1)
        gold += ops.take(start, tags[:, 0])
        last = ops.take_along_axis(tags, ops.expand_dims(ops.maximum(lengths - 1, 0), 1), axis=1)[:, 0]
        gold += ops.take(end, last)

        # log Z by the forward algorithm; a position past the length carries alpha through unchanged.
        # fori_loop, not scan: Keras' TF scan needs a static time length, and a JAX fori_loop with static
        # bounds (shapes are static under jit) lowers to a differentiable scan.
        def step(i: Any, alpha: Any) -> Any:
            e = ops.take(emissions, i, axis=1)
            m = ops.take(mask, i, axis=1)
            nxt = ops.logsumexp(ops.expand_dims(alpha, 2) + ops.expand_dims(trans, 0), axis=1) + e
            return ops.where(ops.expand_dims(m, 1) > 0, nxt, alpha)

        alpha = ops.fori_loop(1, t, step, ops.expand_dims(start, 0) + emissions[:, 0])
        log_z = ops.logsumexp(alpha + ops.expand_dims(end, 0), axis=1)
        # Empty rows (batch padding for fixed XLA shapes) contribute exactly zero.
        return ops.where(lengths > 0, gold - log_z, ops.zeros_like(log_z))

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "n_tags": self.n_tags}
