"""A frozen BERT encoder inside the tagger (``model.encoder``; weights from ``nerservice/encoder``), written
with ``keras.ops`` only like the tagger's other layers.

Inputs are each sentence's word pieces (``wp_ids`` (B, P), [CLS] ... [SEP], 0 = padding) and each token's
first-piece position (``wp_index`` (B, T)); the output is every hidden state (the embeddings' and each
layer's) at those positions, (B, T, L + 1, H), for the tagger's learned mix.  A sentence longer than the
encoder's positions is read in blocks of ``max_positions`` pieces, each a row of its own.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
from keras import ops

NEG = -1e9


def layer_norm(x: Any, gamma: Any, beta: Any, eps: float) -> Any:
    mean = ops.mean(x, axis=-1, keepdims=True)
    var = ops.mean(ops.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * ops.rsqrt(var + eps) * gamma + beta


@keras.saving.register_keras_serializable(package="nerservice")
class FrozenTransformer(keras.layers.Layer):
    def __init__(self, *, vocab_size: int, hidden: int, layers: int, heads: int, intermediate: int,
                 max_positions: int, eps: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.vocab_size, self.hidden, self.layers, self.heads = vocab_size, hidden, layers, heads
        self.intermediate, self.max_positions, self.eps = intermediate, max_positions, eps
        self.trainable = False

    def _w(self, name: str, shape: Sequence[int]) -> Any:
        return self.add_weight(name=name, shape=tuple(shape), initializer="zeros", trainable=False)

    def build(self, input_shape: Any = None) -> None:
        h, f = self.hidden, self.intermediate
        self.word = self._w("word_embeddings", (self.vocab_size, h))
        self.position = self._w("position_embeddings", (self.max_positions, h))
        self.token_type = self._w("token_type", (h,))
        self.emb_norm = (self._w("emb_norm_gamma", (h,)), self._w("emb_norm_beta", (h,)))
        self.blocks: list[list[Any]] = []
        for i in range(self.layers):
            shapes = [("q_kernel", (h, h)), ("q_bias", (h,)), ("k_kernel", (h, h)), ("k_bias", (h,)),
                      ("v_kernel", (h, h)), ("v_bias", (h,)), ("o_kernel", (h, h)), ("o_bias", (h,)),
                      ("attn_norm_gamma", (h,)), ("attn_norm_beta", (h,)), ("ff_in_kernel", (h, f)),
                      ("ff_in_bias", (f,)), ("ff_out_kernel", (f, h)), ("ff_out_bias", (h,)),
                      ("ff_norm_gamma", (h,)), ("ff_norm_beta", (h,))]
            self.blocks.append([self._w(f"layer{i}_{n}", s) for n, s in shapes])
        self.built = True

    def set_arrays(self, arrays: Sequence[np.ndarray]) -> None:
        """``TextEncoder.layer_arrays()`` order: embeddings (word, position, token type, norm), then per layer
        q, k, v, o (kernel, bias), attention norm, feed-forward in, out, norm."""
        variables = [self.word, self.position, self.token_type, *self.emb_norm] + [v for b in self.blocks for v in b]
        if len(arrays) != len(variables):
            raise ValueError(f"{len(arrays)} arrays for {len(variables)} encoder weights")
        for var, arr in zip(variables, arrays):
            if tuple(var.shape) != tuple(arr.shape):
                raise ValueError(f"encoder weight {var.path}: shape {tuple(arr.shape)}, expected {tuple(var.shape)}")
            var.assign(arr)

    def call(self, wp_ids: Any, wp_index: Any) -> Any:
        ids = ops.cast(wp_ids, "int32")
        b, p = ops.shape(ids)[0], ops.shape(ids)[1]
        # Sentences longer than the positions are cut into blocks read as rows of their own: attention's
        # memory and time grow with the number of blocks, not with the square of the longest sentence
        # (a block-diagonal mask over the whole row ran a four-corpus GPU training out of memory).
        # A batch no longer than the positions is one block of its own width. Under a TensorFlow graph the
        # width is a tensor: deciding on it symbolically keeps it so (session 35: a static-only test sent every
        # TF batch down the long path, 512 positions a row, and CPU training ran 8x slower).
        k = self.max_positions
        width = min(p, k) if isinstance(p, int) else ops.minimum(p, k)
        blocks = ops.reshape(ops.pad(ids, [[0, 0], [0, (width - p % width) % width]]), (-1, width))
        states = self.encode(blocks, width)  # (B * n, width, L + 1, H)
        states = ops.reshape(states, (b, -1, self.layers + 1, self.hidden))
        t = ops.shape(wp_index)[1]
        idx = ops.reshape(ops.cast(wp_index, "int32"), (b, t, 1, 1))
        idx = ops.broadcast_to(idx, (b, t, self.layers + 1, self.hidden))
        return ops.take_along_axis(states, idx, axis=1)  # (B, T, L + 1, H)

    def encode(self, ids: Any, width: Any) -> Any:
        """Every hidden state (N, W, L + 1, H) of N rows of at most ``max_positions`` pieces."""
        n = ops.shape(ids)[0]
        steps = ops.arange(width, dtype="int32")
        x = ops.take(self.word, ids, axis=0) + ops.expand_dims(ops.take(self.position, steps, axis=0), 0) \
            + self.token_type
        x = layer_norm(x, *self.emb_norm, self.eps)
        bias = ops.where(ops.expand_dims(ops.expand_dims(ids > 0, 1), 1), 0.0, NEG)  # (N, 1, 1, W): real keys only
        states = [x]
        d = self.hidden // self.heads

        def split(t: Any) -> Any:
            return ops.transpose(ops.reshape(t, (n, width, self.heads, d)), (0, 2, 1, 3))

        for (qk, qb, kk, kb, vk, vb, ok, ob, ag, ab, fik, fib, fok, fob, fg, fb) in self.blocks:
            q = split(ops.matmul(x, qk) + qb)
            k = split(ops.matmul(x, kk) + kb)
            v = split(ops.matmul(x, vk) + vb)
            scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) / math.sqrt(d) + bias
            ctx = ops.matmul(ops.softmax(scores, axis=-1), v)
            ctx = ops.reshape(ops.transpose(ctx, (0, 2, 1, 3)), (n, width, self.hidden))
            x = layer_norm(ops.matmul(ctx, ok) + ob + x, ag, ab, self.eps)
            ff = ops.gelu(ops.matmul(x, fik) + fib, approximate=False)
            x = layer_norm(ops.matmul(ff, fok) + fob + x, fg, fb, self.eps)
            states.append(x)
        return ops.stack(states, axis=2)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "vocab_size": self.vocab_size, "hidden": self.hidden, "layers": self.layers,
                "heads": self.heads, "intermediate": self.intermediate, "max_positions": self.max_positions,
                "eps": self.eps}


@keras.saving.register_keras_serializable(package="nerservice")
class ScalarMix(keras.layers.Layer):
    """ELMo's mix (Peters et al. 2018): gamma * sum_j softmax(w)_j * h_j over the encoder's L + 1 states."""

    def __init__(self, n_states: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n_states = n_states

    def build(self, input_shape: Any = None) -> None:
        self.w = self.add_weight(name="weights", shape=(self.n_states,), initializer="zeros")
        self.gamma = self.add_weight(name="gamma", shape=(), initializer="ones")
        self.built = True

    def call(self, states: Any) -> Any:
        weights = ops.reshape(ops.softmax(self.w), (1, 1, self.n_states, 1))
        return self.gamma * ops.sum(states * weights, axis=2)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "n_states": self.n_states}
