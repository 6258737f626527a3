"""The multi-corpus tagger: the single-corpus network (shared char encoders, word vectors, dense layer,
BiLSTM stack) whose emission layer holds every head's tag columns side by side, with one CRF per head.

The heads' CRFs live in one K×K CRF whose diagonal blocks are the heads' own transitions (off-block
entries are never trained or read). A sentence of corpus c trains head c only: its emissions outside
c's columns get -1e4, so every path through another head's tags has probability ~exp(-1e4) = 0 and the
log-partition is exactly head c's own (the gold path lies inside the block). That makes one compiled
step serve batches of any corpus or any mix of corpora, at the cost of a CRF over K = sum of the heads'
tags instead of one head's (cheap next to the BiLSTMs). Inference decodes each head on its own columns
(``nerservice/multi/decode.py``), so the saved weights are exactly a ``NerTagger`` with K tags.
"""
from __future__ import annotations

from typing import Any

import keras
import numpy as np
from keras import ops

from nerservice.config import ModelConfig
from nerservice.model.tagger import NerTagger, build_tagger
from nerservice.text.vocab import MultiTagVocabulary

OFF_HEAD = 1e4  # emission penalty outside a sentence's head: exp(-1e4) underflows to exactly 0 in float32


@keras.saving.register_keras_serializable(package="nerservice")
class MultiNerTagger(NerTagger):
    def __init__(self, *, column_heads: list[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.column_heads = [int(h) for h in column_heads]
        heads = np.asarray(self.column_heads, dtype=np.int32)
        if heads.shape != (self.n_tags,):
            raise ValueError(f"column_heads has {heads.size} entries for {self.n_tags} tags")
        self._col_head = heads
        # (H, K) 1.0 where a column belongs to the head, else 0.0
        self._head_cols = (np.arange(heads.max() + 1)[:, None] == heads[None, :]).astype("float32")

    def negative_log_likelihood(self, inputs: dict[str, Any], training: bool = True) -> Any:
        emissions = self(inputs, training=training)
        tags = ops.cast(inputs["tag_ids"], "int32")
        head = ops.take(ops.convert_to_tensor(self._col_head), tags[:, 0])  # (B,) the sentence's corpus
        allowed = ops.take(ops.convert_to_tensor(self._head_cols), head, axis=0)  # (B, K)
        emissions = ops.cast(emissions, "float32") + (ops.expand_dims(allowed, 1) - 1.0) * OFF_HEAD
        return -self.crf.log_likelihood(emissions, tags, inputs["lengths"])

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "column_heads": self.column_heads}


def build_multi_tagger(model_config: ModelConfig, *, tags: MultiTagVocabulary, n_words: int, n_chars: int,
                       word_vectors: np.ndarray | None = None, seed: int = 42,
                       cls: type[MultiNerTagger] | None = None, **lm: Any) -> NerTagger:
    """``cls``: a subclass that trains differently (a distillation student: ``nerservice/distil/student.py``)."""
    return build_tagger(model_config, n_words=n_words, n_chars=n_chars, n_tags=len(tags), word_vectors=word_vectors,
                        seed=seed, cls=cls or MultiNerTagger, column_heads=tags.column_heads().tolist(), **lm)
