"""The pretrained character LM (``nerservice/charlm``) inside the tagger: per-token features from a forward
and a backward LSTM run over the sentence's characters (``text/char_stream.py`` says which positions).
Written with ``keras.ops`` only, like the tagger's other layers, and without masks: the backward direction
reads the characters reversed within each sentence's length (``model/layers.py``), so right padding never
reaches a real position.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import keras
from keras import ops

from nerservice.model.layers import reverse_within_length


def direction_layers(n_chars: int, embedding_dim: int, units: int, prefix: str
                     ) -> tuple[keras.layers.Embedding, keras.layers.LSTM]:
    return (keras.layers.Embedding(n_chars, embedding_dim, name=f"{prefix}_embedding"),
            keras.layers.LSTM(units, return_sequences=True, name=f"{prefix}_lstm"))


@keras.saving.register_keras_serializable(package="nerservice")
class ContextualCharEmbedding(keras.layers.Layer):
    """(lm_chars (B, S), lm_forward (B, T), lm_backward (B, T)) -> (B, T, 2 * units)."""

    def __init__(self, n_chars: int, *, embedding_dim: int, units: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n_chars, self.embedding_dim, self.units = n_chars, embedding_dim, units
        self.fwd_embedding, self.fwd_lstm = direction_layers(n_chars, embedding_dim, units, "forward")
        self.bwd_embedding, self.bwd_lstm = direction_layers(n_chars, embedding_dim, units, "backward")

    @property
    def output_dim(self) -> int:
        return 2 * self.units

    def build(self, input_shape: Any = None) -> None:
        for emb, lstm in ((self.fwd_embedding, self.fwd_lstm), (self.bwd_embedding, self.bwd_lstm)):
            emb.build((None, None))
            lstm.build((None, None, self.embedding_dim))
        self.built = True

    def call(self, chars: Any, forward_index: Any, backward_index: Any) -> Any:
        chars = ops.cast(chars, "int32")
        lengths = ops.sum(ops.cast(chars > 0, "int32"), axis=1)
        fwd = self.fwd_lstm(self.fwd_embedding(chars))
        bwd = self.bwd_lstm(reverse_within_length(self.bwd_embedding(chars), lengths))
        parts = []
        for states, index in ((fwd, forward_index), (bwd, backward_index)):
            idx = ops.expand_dims(ops.cast(index, "int32"), -1)
            idx = ops.broadcast_to(idx, (ops.shape(idx)[0], ops.shape(idx)[1], self.units))
            parts.append(ops.take_along_axis(states, idx, axis=1))
        return ops.concatenate(parts, axis=-1)

    def direction_weights(self) -> dict[str, list[Any]]:
        return {"forward": self.fwd_embedding.get_weights() + self.fwd_lstm.get_weights(),
                "backward": self.bwd_embedding.get_weights() + self.bwd_lstm.get_weights()}

    def set_direction_weights(self, weights: Mapping[str, Sequence[Any]]) -> None:
        for name, emb, lstm in (("forward", self.fwd_embedding, self.fwd_lstm),
                                ("backward", self.bwd_embedding, self.bwd_lstm)):
            w = weights[name]
            emb.set_weights(list(w[:1]))
            lstm.set_weights(list(w[1:]))

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "n_chars": self.n_chars, "embedding_dim": self.embedding_dim,
                "units": self.units}
