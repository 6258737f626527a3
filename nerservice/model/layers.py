"""Keras 3 layers of the tagger, written with ``keras.ops`` only (TensorFlow and JAX backends).

No Keras masks anywhere: sequences carry explicit ``lengths``.  A masked LSTM cannot use cuDNN
(docs/ARCHITECTURE.md, platform facts: JAX falls back to ``lax.scan`` at about half speed), so the
backward direction of each BiLSTM runs on the sequence reversed *within its length* and is reversed back.
Right padding never reaches a real token:
the forward pass sees padding only after the real tokens, the backward pass only after the reversed real
tokens.  Outputs on real tokens are therefore independent of padding (tests/model/test_layers.py proves it).
"""
from __future__ import annotations

from typing import Any

import keras
from keras import ops


def reverse_within_length(x: Any, lengths: Any) -> Any:
    """Reverse x[b, :lengths[b]] along axis 1 and leave the padding where it is. x: (B, T, F)."""
    t = ops.shape(x)[1]
    steps = ops.expand_dims(ops.arange(t, dtype="int32"), 0)
    lens = ops.expand_dims(ops.cast(lengths, "int32"), 1)
    idx = ops.where(steps < lens, lens - 1 - steps, steps)
    idx = ops.broadcast_to(ops.expand_dims(idx, -1), ops.shape(x))
    return ops.take_along_axis(x, idx, axis=1)


def sequence_mask(lengths: Any, maxlen: Any) -> Any:
    steps = ops.expand_dims(ops.arange(maxlen, dtype="int32"), 0)
    return steps < ops.expand_dims(ops.cast(lengths, "int32"), 1)


@keras.saving.register_keras_serializable(package="nerservice")
class LengthBiLSTM(keras.layers.Layer):
    """Bidirectional LSTM over right-padded sequences with explicit lengths; concat of both directions."""

    def __init__(self, units: int, *, return_last: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.units = units
        self.return_last = return_last
        self.forward_lstm = keras.layers.LSTM(units, return_sequences=True, name="forward")
        self.backward_lstm = keras.layers.LSTM(units, return_sequences=True, name="backward")

    def build(self, input_shape: Any) -> None:
        self.forward_lstm.build(input_shape)
        self.backward_lstm.build(input_shape)

    def call(self, x: Any, lengths: Any) -> Any:
        fwd = self.forward_lstm(x)
        bwd = self.backward_lstm(reverse_within_length(x, lengths))
        if self.return_last:
            # The state after the last *real* step, for each direction (char encoder: one vector per word).
            last = ops.maximum(ops.cast(lengths, "int32") - 1, 0)
            idx = ops.broadcast_to(ops.reshape(last, (-1, 1, 1)), (ops.shape(x)[0], 1, self.units))
            f = ops.squeeze(ops.take_along_axis(fwd, idx, axis=1), 1)
            b = ops.squeeze(ops.take_along_axis(bwd, idx, axis=1), 1)
            return ops.concatenate([f, b], axis=-1)
        return ops.concatenate([fwd, reverse_within_length(bwd, lengths)], axis=-1)

    def compute_output_shape(self, input_shape: Any) -> Any:
        if self.return_last:
            return (input_shape[0], 2 * self.units)
        return (*input_shape[:-1], 2 * self.units)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "units": self.units, "return_last": self.return_last}


@keras.saving.register_keras_serializable(package="nerservice")
class CharEncoder(keras.layers.Layer):
    """Characters of each distinct word → [max-pooled char-CNN ; last states of char-BiLSTM].

    NerDL: 25-d char embeddings, a CNN of 30 filters of width 3 max-pooled over characters, and a char
    BiLSTM of 30 per direction.  Padding characters are excluded from the max (they would otherwise
    leak a constant into short words).
    """

    def __init__(self, n_chars: int, *, embedding_dim: int = 25, cnn_filters: int = 30, cnn_width: int = 3,
                 lstm_units: int = 30, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n_chars, self.embedding_dim = n_chars, embedding_dim
        self.cnn_filters, self.cnn_width, self.lstm_units = cnn_filters, cnn_width, lstm_units
        self.embedding = keras.layers.Embedding(n_chars, embedding_dim, name="char_embedding")
        self.conv = (keras.layers.Conv1D(cnn_filters, cnn_width, padding="same", activation="tanh", name="char_cnn")
                     if cnn_filters else None)
        self.bilstm = LengthBiLSTM(lstm_units, return_last=True, name="char_bilstm") if lstm_units else None

    @property
    def output_dim(self) -> int:
        return self.cnn_filters + 2 * self.lstm_units

    def build(self, input_shape: Any) -> None:
        self.embedding.build(input_shape)
        emb_shape = (*input_shape, self.embedding_dim)
        if self.conv is not None:
            self.conv.build(emb_shape)
        if self.bilstm is not None:
            self.bilstm.build(emb_shape)

    def call(self, word_chars: Any) -> Any:
        chars = ops.cast(word_chars, "int32")
        valid = ops.expand_dims(chars > 0, -1)
        # Padding chars embed as zeros, exactly what the CNN's own "same" padding reads past a word's end:
        # otherwise the window at a word's last char would see the <pad> embedding or a zero depending on
        # how wide the batch's char axis is, and a word's features would depend on the other words.
        x = ops.where(valid, self.embedding(chars), 0.0)  # (U, C, E)
        lengths = ops.sum(ops.cast(chars > 0, "int32"), axis=1)
        parts = []
        if self.conv is not None:
            h = self.conv(x)
            h = ops.where(valid, h, ops.full_like(h, -1e4))
            pooled = ops.max(h, axis=1)
            # The padding word (no chars at all) gets zeros instead of -1e4.
            parts.append(ops.where(ops.expand_dims(lengths > 0, -1), pooled, ops.zeros_like(pooled)))
        if self.bilstm is not None:
            parts.append(self.bilstm(x, ops.maximum(lengths, 1)))
        return parts[0] if len(parts) == 1 else ops.concatenate(parts, axis=-1)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return (input_shape[0], self.output_dim)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "n_chars": self.n_chars, "embedding_dim": self.embedding_dim,
                "cnn_filters": self.cnn_filters, "cnn_width": self.cnn_width, "lstm_units": self.lstm_units}


def keep_mask(shape: Any, rate: float, seed: Any, rows: Any = None) -> Any:
    """Boolean keep-mask of ``shape`` (B, T, ...) for dropout at ``rate``.

    ``rows = (row_ids, rows_total, time_total)`` draws the noise for the *global* batch
    (rows_total, time_total, ...) and keeps this worker's rows and time steps: a worker that trains on rows
    ``rank::world`` of a global batch then drops exactly the units a single process drops on the whole
    batch (the seed state is the same on every worker), so distributed training reproduces single-process
    training with dropout on, not only in distribution.  Without ``rows`` the noise is drawn for ``shape``."""
    if rows is None:
        noise = keras.random.uniform(shape, seed=seed)
    else:
        row_ids, rows_total, time_total = rows
        full = keras.random.uniform((rows_total, time_total, *shape[2:]), seed=seed)
        noise = ops.take(full, row_ids, axis=0)[:, : shape[1]]
    return noise >= rate


@keras.saving.register_keras_serializable(package="nerservice")
class ReplicaDropout(keras.layers.Layer):
    """Inverted dropout on (B, T, ...) activations whose mask can follow the global batch (``keep_mask``)."""

    def __init__(self, rate: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rate = float(rate)
        self.seed_generator = keras.random.SeedGenerator(name="seed_generator")

    def call(self, x: Any, training: bool = False, rows: Any = None) -> Any:
        if not training or self.rate == 0.0:
            return x
        keep = keep_mask(ops.shape(x), self.rate, self.seed_generator, rows)
        return ops.where(keep, x / (1.0 - self.rate), ops.zeros_like(x))

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "rate": self.rate}


@keras.saving.register_keras_serializable(package="nerservice")
class ResidualBiLSTMStack(keras.layers.Layer):
    """``depth`` BiLSTM layers; each adds its output to its input (NerDL's residual stack)."""

    def __init__(self, units: int, depth: int, *, dropout: float = 0.5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.units, self.depth, self.dropout_rate = units, depth, dropout
        self.layers_ = [LengthBiLSTM(units, name=f"bilstm_{i}") for i in range(depth)]
        self.dropouts = [ReplicaDropout(dropout, name=f"dropout_{i}") for i in range(depth)]

    def build(self, input_shape: Any) -> None:
        shape = tuple(input_shape)
        for layer in self.layers_:
            layer.build(shape)
            shape = (*shape[:-1], 2 * self.units)

    def call(self, x: Any, lengths: Any, training: bool = False, rows: Any = None) -> Any:
        for layer, drop in zip(self.layers_, self.dropouts):
            h = drop(layer(x, lengths), training=training, rows=rows)
            x = x + h if ops.shape(x)[-1] == 2 * self.units else h
        return x

    def compute_output_shape(self, input_shape: Any) -> Any:
        return (*input_shape[:-1], 2 * self.units)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "units": self.units, "depth": self.depth, "dropout": self.dropout_rate}
