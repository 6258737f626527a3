"""The Bi-LSTM-CNN-Char-CRF tagger (Spark NLP NerDL's network), sized by data and config.

word vectors ⊕ char encoder (CNN + BiLSTM over each distinct word) → dropout → dense 256 ReLU →
residual BiLSTM stack (128/dir × depth) → dropout → emission scores → CRF.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import keras
import numpy as np
from keras import ops

from nerservice.config import ModelConfig
from nerservice.errors import ConfigError
from nerservice.model.char_lm_layer import ContextualCharEmbedding
from nerservice.model.crf import CRF
from nerservice.model.decode import CrfParams
from nerservice.model.encoder_layer import FrozenTransformer, ScalarMix
from nerservice.model.layers import CharEncoder, ReplicaDropout, ResidualBiLSTMStack, keep_mask
from nerservice.text.inputs import ENCODER_STATES
from nerservice.text.vocab import UNK_ID


@keras.saving.register_keras_serializable(package="nerservice")
class NerTagger(keras.Model):
    def __init__(self, *, n_words: int, n_chars: int, n_tags: int, word_dim: int, model_config: dict[str, Any],
                 n_lm_chars: int = 0, n_gazetteer_ids: int = 0, word_initializer: str = "uniform",
                 **kwargs: Any) -> None:
        """``word_initializer``: "zeros" when saved weights will replace the table at once (loading): a
        random 400k-word table (``model.vector_vocabulary``) costs another 76 MB on the way."""
        super().__init__(**kwargs)
        cfg = ModelConfig.model_validate(model_config)
        self.n_words, self.n_chars, self.n_tags, self.word_dim = n_words, n_chars, n_tags, word_dim
        self.n_lm_chars, self.n_gazetteer_ids = n_lm_chars, n_gazetteer_ids
        self.model_config = cfg.model_dump(mode="json")
        self.word_embedding = keras.layers.Embedding(n_words, word_dim, embeddings_initializer=word_initializer,
                                                     name="word_embedding")
        self.char_encoder = CharEncoder(
            n_chars, embedding_dim=cfg.char_embedding_dim, cnn_filters=cfg.char_cnn_filters,
            cnn_width=cfg.char_cnn_width, lstm_units=cfg.char_lstm_units, name="char_encoder")
        # Created only with an LM, so models without one keep exactly their variables. Frozen: its weights
        # are the pretrained LM's (copied in by train()), and no gradient reaches them.
        self.char_lm = None
        if cfg.char_lm_units:
            if n_lm_chars < 3:
                raise ConfigError("model.char_lm_units is set but the vocabularies have no LM characters",
                                  hint="train with model.char_lm=FOLDER; train() fills the sizes in")
            self.char_lm = ContextualCharEmbedding(n_lm_chars, embedding_dim=cfg.char_lm_embedding_dim,
                                                   units=cfg.char_lm_units, name="char_lm")
            self.char_lm.trainable = False
        # Likewise created only with a gazetteer (``text/gazetteer.py``): its size comes with the vocabularies.
        # ``model.gazetteer`` asks train() to build one; a tagger built without one (no training data, or a
        # model saved before the setting existed) has no layer.
        self.gazetteer_embedding = None
        if n_gazetteer_ids:
            if not cfg.gazetteer or n_gazetteer_ids < 3:
                raise ConfigError(f"a gazetteer of {n_gazetteer_ids} ids needs model.gazetteer=true and >= 3 ids")
            self.gazetteer_embedding = keras.layers.Embedding(n_gazetteer_ids, cfg.gazetteer_dim,
                                                              name="gazetteer_embedding")
        # Likewise created only with a pretrained encoder (``model.encoder``): frozen, its weights copied in by
        # train(); only the mix of its states is learned.
        self.text_encoder = self.encoder_mix = None
        if cfg.encoder_shape is not None:
            s = cfg.encoder_shape
            self.text_encoder = FrozenTransformer(vocab_size=s.vocab_size, hidden=s.hidden, layers=s.layers,
                                                  heads=s.heads, intermediate=s.intermediate,
                                                  max_positions=s.max_positions, eps=s.eps, name="text_encoder")
            self.encoder_mix = ScalarMix(s.layers + 1, name="encoder_mix")
        # Created only when used, so encoder models saved without it keep exactly their variables.
        self.encoder_dropout = (ReplicaDropout(cfg.encoder_dropout, name="encoder_dropout")
                                if self.text_encoder is not None and cfg.encoder_dropout else None)
        self.input_dropout = ReplicaDropout(cfg.dropout, name="input_dropout")
        self.word_dropout = cfg.word_dropout
        # Created only when used, so models saved without word dropout keep exactly their variables.
        self.word_dropout_seed = keras.random.SeedGenerator(name="word_dropout_seed") if cfg.word_dropout else None
        self.dense = keras.layers.Dense(cfg.dense_units, activation="relu", name="dense")
        self.stack = ResidualBiLSTMStack(cfg.lstm_units, cfg.lstm_layers, dropout=cfg.dropout, name="bilstm_stack")
        self.emission = keras.layers.Dense(n_tags, name="emissions")
        self.crf = CRF(n_tags, name="crf")

    def build(self, input_shape: Any = None) -> None:
        """Create every weight by tracing a one-token batch (sub-layers build on first use)."""
        self.call(dummy_batch(), training=False)
        self.crf.build()
        self.built = True

    def build_for_inference(self) -> None:
        if not self.built:
            self.build()

    def call(self, inputs: dict[str, Any], training: bool = False) -> Any:
        lengths = inputs["lengths"]
        # Set by the training loop: this batch's rows within the global batch (see layers.keep_mask).
        rows = (inputs["row_ids"], inputs["rows_total"], inputs["time_total"]) if "row_ids" in inputs else None
        token_ids = ops.cast(inputs["token_ids"], "int32")
        if training and self.word_dropout_seed is not None:
            keep = keep_mask(ops.shape(token_ids), self.word_dropout, self.word_dropout_seed, rows)
            # <pad> (0) stays <pad>; every other id may become <unk>.
            token_ids = ops.where(ops.logical_or(keep, token_ids == 0), token_ids, UNK_ID)
        words = self.word_embedding(token_ids)
        parts = [words]
        if self.char_encoder.output_dim:
            per_word = self.char_encoder(inputs["word_chars"])  # (U, F)
            parts.append(ops.take(per_word, ops.cast(inputs["word_index"], "int32"), axis=0))  # (B, T, F)
        if self.char_lm is not None:
            lm = self.char_lm(inputs["lm_chars"], inputs["lm_forward"], inputs["lm_backward"])  # (B, S) -> (B, T, 2H)
            parts.append(ops.stop_gradient(lm))
        if self.text_encoder is not None and self.encoder_mix is not None:
            # Training batches bring the frozen encoder's states, computed once per sentence
            # (training/encoder_cache.py); inference runs the encoder.
            states = (inputs[ENCODER_STATES] if ENCODER_STATES in inputs
                      else self.text_encoder(inputs["wp_ids"], inputs["wp_index"]))  # (B, T, L + 1, H)
            mixed = self.encoder_mix(ops.stop_gradient(states))
            if self.encoder_dropout is not None:
                mixed = self.encoder_dropout(mixed, training=training, rows=rows)
            parts.append(mixed)
        if self.gazetteer_embedding is not None:
            parts.append(self.gazetteer_embedding(ops.cast(inputs["gazetteer"], "int32")))  # (B, T, G)
        x = ops.concatenate(parts, axis=-1) if len(parts) > 1 else parts[0]
        x = self.input_dropout(x, training=training, rows=rows)
        x = self.dense(x)
        x = self.stack(x, lengths, training=training, rows=rows)
        return self.emission(x)

    def negative_log_likelihood(self, inputs: dict[str, Any], training: bool = True) -> Any:
        """Per-sentence NLL (B,) of the gold ``tag_ids``."""
        emissions = self(inputs, training=training)
        return -self.crf.log_likelihood(emissions, inputs["tag_ids"], inputs["lengths"])

    def crf_params(self) -> CrfParams:
        return CrfParams(
            transitions=np.asarray(ops.convert_to_numpy(self.crf.transitions), dtype=np.float64),
            start=np.asarray(ops.convert_to_numpy(self.crf.start), dtype=np.float64),
            end=np.asarray(ops.convert_to_numpy(self.crf.end), dtype=np.float64),
        )

    def set_word_vectors(self, matrix: np.ndarray, *, trainable: bool) -> None:
        self.word_embedding.embeddings.assign(matrix.astype("float32"))
        self.word_embedding.trainable = trainable

    def get_config(self) -> dict[str, Any]:
        return {"n_words": self.n_words, "n_chars": self.n_chars, "n_tags": self.n_tags,
                "word_dim": self.word_dim, "model_config": self.model_config, "name": self.name,
                **({"n_lm_chars": self.n_lm_chars} if self.n_lm_chars else {}),
                **({"n_gazetteer_ids": self.n_gazetteer_ids} if self.n_gazetteer_ids else {})}


def dummy_batch() -> dict[str, np.ndarray]:
    return {
        "token_ids": np.ones((1, 1), dtype=np.int32),
        "lengths": np.ones((1,), dtype=np.int32),
        "word_chars": np.array([[0, 0, 0, 0], [1, 0, 0, 0]], dtype=np.int32),
        "word_index": np.ones((1, 1), dtype=np.int32),
        "lm_chars": np.array([[2, 3, 2]], dtype=np.int32),
        "lm_forward": np.array([[2]], dtype=np.int32),
        "lm_backward": np.array([[2]], dtype=np.int32),
        "gazetteer": np.array([[2]], dtype=np.int32),
        "wp_ids": np.array([[2, 3, 4]], dtype=np.int32),
        "wp_index": np.array([[1]], dtype=np.int32),
    }


def build_tagger(model_config: ModelConfig, *, n_words: int, n_chars: int, n_tags: int,
                 word_vectors: np.ndarray | None = None, seed: int = 42, cls: type[NerTagger] | None = None,
                 char_lm_weights: Mapping[str, Sequence[np.ndarray]] | None = None,
                 encoder_arrays: Sequence[np.ndarray] | None = None, **extra: Any) -> NerTagger:
    """Construct and build a tagger; ``word_vectors`` (n_words, d) initialises (and by default freezes) words.
    ``char_lm_weights``: a pretrained character LM's encoder arrays per direction (``CharLM.encoder_weights``;
    ``n_lm_chars`` in ``extra``; likewise ``n_gazetteer_ids``).  ``cls``/``extra``: a subclass and its own
    constructor arguments (the multi-corpus tagger)."""
    keras.utils.set_random_seed(seed)
    word_dim = int(word_vectors.shape[1]) if word_vectors is not None else model_config.word_embedding_dim
    tagger = (cls or NerTagger)(n_words=n_words, n_chars=n_chars, n_tags=n_tags, word_dim=word_dim,
                                model_config=model_config.model_dump(mode="json"), **extra)
    tagger.build_for_inference()
    if char_lm_weights is not None and tagger.char_lm is not None:
        tagger.char_lm.set_direction_weights(char_lm_weights)
    if encoder_arrays is not None and tagger.text_encoder is not None:
        tagger.text_encoder.set_arrays(encoder_arrays)
    if word_vectors is not None:
        tagger.set_word_vectors(word_vectors, trainable=model_config.embeddings_trainable)
    return tagger
