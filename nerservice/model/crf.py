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

        log_z = self.log_partition(emissions, mask)
        # Empty rows (batch padding for fixed XLA shapes) contribute exactly zero.
        return ops.where(lengths > 0, gold - log_z, ops.zeros_like(log_z))

    def log_partition(self, emissions: Any, mask: Any) -> Any:
        """log Z per sentence (B,) by the forward algorithm; a position past the length carries alpha
        through unchanged.  ``mask``: (B, T) float, 1.0 on real tokens."""
        trans = ops.convert_to_tensor(self.transitions)
        start = ops.convert_to_tensor(self.start)
        end = ops.convert_to_tensor(self.end)
        t = ops.shape(emissions)[1]

        # fori_loop, not scan: Keras' TF scan needs a static time length, and a JAX fori_loop with static
        # bounds (shapes are static under jit) lowers to a differentiable scan.
        def step(i: Any, alpha: Any) -> Any:
            e = ops.take(emissions, i, axis=1)
            m = ops.take(mask, i, axis=1)
            nxt = ops.logsumexp(ops.expand_dims(alpha, 2) + ops.expand_dims(trans, 0), axis=1) + e
            return ops.where(ops.expand_dims(m, 1) > 0, nxt, alpha)

        alpha = ops.fori_loop(1, t, step, ops.expand_dims(start, 0) + emissions[:, 0])
        return ops.logsumexp(alpha + ops.expand_dims(end, 0), axis=1)

    def cross_entropy(self, emissions: Any, unary: Any, pairs: Any, lengths: Any) -> Any:
        """-sum_y q(y) log p(y | emissions) per sentence (B,), for a target distribution q over tag paths
        given by its expected counts: ``unary`` (B, T, K) = q's node marginals q(y_t = k) (0 past the
        length), ``pairs`` (B, K, K) = sum over t of q's pairwise marginals q(y_{t-1} = i, y_t = j).

        Exact for a linear-chain CRF, because log p(y) is linear in those counts:
        log p(y) = sum_t E[t, y_t] + sum_t A[y_{t-1}, y_t] + start[y_0] + end[y_last] - log Z, so its
        expectation under q only needs q's marginals.  A one-hot q (a gold path) gives the NLL; a teacher
        CRF's posteriors give sequence-level knowledge distillation (``nerservice/distil``)."""
        emissions = ops.cast(emissions, "float32")
        lengths = ops.cast(lengths, "int32")
        mask = ops.cast(sequence_mask(lengths, ops.shape(emissions)[1]), "float32")
        log_z = self.log_partition(emissions, mask)
        expected = self.expected_score(emissions, unary, pairs, lengths)
        return ops.where(lengths > 0, log_z - expected, ops.zeros_like(log_z))

    def expected_score(self, emissions: Any, unary: Any, pairs: Any, lengths: Any) -> Any:
        """E_q[score(y)] per sentence (B,) for q given by its expected counts (``cross_entropy``); linear in
        them, so targets that are sums of several distributions' counts (a multi-corpus teacher's heads,
        each on its own columns) give the sum of their expected scores."""
        emissions = ops.cast(emissions, "float32")
        unary = ops.cast(unary, "float32")
        pairs = ops.cast(pairs, "float32")
        lengths = ops.cast(lengths, "int32")
        mask = ops.cast(sequence_mask(lengths, ops.shape(emissions)[1]), "float32")
        unary = unary * ops.expand_dims(mask, 2)
        trans = ops.convert_to_tensor(self.transitions)
        start = ops.convert_to_tensor(self.start)
        end = ops.convert_to_tensor(self.end)
        expected = ops.sum(unary * emissions, axis=(1, 2))
        expected += ops.sum(pairs * ops.expand_dims(trans, 0), axis=(1, 2))
        expected += ops.sum(unary[:, 0] * ops.expand_dims(start, 0), axis=1)
        last = ops.maximum(lengths - 1, 0)
        last_unary = ops.squeeze(ops.take_along_axis(unary, ops.reshape(last, (-1, 1, 1)), axis=1), 1)
        return expected + ops.sum(last_unary * ops.expand_dims(end, 0), axis=1)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "n_tags": self.n_tags}
