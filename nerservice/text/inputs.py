"""The model's input arrays, named once.

``text/features.py`` builds them, the tagger reads them, the compiled forward passes (``model/forward.py``,
``model/xla_forward.py``) and the training steps declare their signatures from this table.  Every array
is int32; the value is its rank (``None`` for every dimension in a TensorFlow signature):

  token_ids  (B, T)  word ids (normalised lookup form), 0 = padding
  lengths    (B,)    real tokens per sentence (0 for a padding sentence)
  word_chars (U, C)  char ids of the *distinct* words of the batch, row 0 = the empty padding word
  word_index (B, T)  row of ``word_chars`` for each token (0 at padding)
  lm_chars   (B, S)  the sentence's characters for the character LM (``text/char_stream.py``), 0 = padding;
                     (B, 1) zeros for a model without one (``model.char_lm``)
  lm_forward (B, T)  position in lm_chars of the forward LM's feature for each token (0 at padding)
  lm_backward (B, T) likewise for the backward LM, counted in the sentence's reversed characters
  gazetteer  (B, T)  the dictionary feature's id for each token (``text/gazetteer.py``), 0 at padding; zeros
                     for a model without one (``model.gazetteer``)
  wp_ids     (B, P)  the sentence's word pieces for the pretrained encoder (``encoder/wordpiece.py``), [CLS]
                     first, [SEP] last, 0 = padding; (B, 1) zeros for a model without one (``model.encoder``)
  wp_index   (B, T)  position in wp_ids of each token's first piece (0 at padding)
  tag_ids    (B, T)  gold tags (training only), 0 at padding

The training batches of a model with a pretrained encoder also carry its frozen states (float32,
``training/encoder_cache.py``): encoder_states (B, T, L + 1, H), every hidden state at each token's first
piece, 0 at padding; the tagger reads them instead of running its encoder. Training's dev forward
passes them too (``model/forward.KeptStatesForward``); inference runs the encoder.

A distillation student's training batches also carry its teacher's targets (float32, not int32;
``nerservice/distil``): teacher_unary (B, T, K) posterior tag marginals, 0 at padding; teacher_pairs
(B, K, K) pairwise marginals summed over positions (expected transition counts).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

INPUT_RANKS: Mapping[str, int] = {"token_ids": 2, "lengths": 1, "word_chars": 2, "word_index": 2,
                                  "lm_chars": 2, "lm_forward": 2, "lm_backward": 2,
                                  "gazetteer": 2, "wp_ids": 2, "wp_index": 2}
INPUT_NAMES: tuple[str, ...] = tuple(INPUT_RANKS)
TAG_IDS = "tag_ids"
TRAIN_RANKS: Mapping[str, int] = {**INPUT_RANKS, TAG_IDS: 2}
TRAIN_NAMES: tuple[str, ...] = tuple(TRAIN_RANKS)
ENCODER_STATES = "encoder_states"
TEACHER_UNARY, TEACHER_PAIRS = "teacher_unary", "teacher_pairs"
TEACHER_RANKS: Mapping[str, int] = {TEACHER_UNARY: 3, TEACHER_PAIRS: 3}

V = TypeVar("V")


def model_inputs(batch: Mapping[str, V]) -> dict[str, V]:
    """Only the arrays the forward pass takes (a batch may carry tags and bookkeeping too)."""
    return {k: batch[k] for k in INPUT_NAMES}
