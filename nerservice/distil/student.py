"""The student: exactly a ``NerTagger`` (same variables, saved and loaded as one), whose training loss is
the cross-entropy of its CRF against the teacher's sequence distribution, read from the batch's teacher
targets (``targets.py``) instead of the gold tags.  Only training differs, so the saved model serves,
exports and registers like any other.  A multi-corpus teacher's student is a ``MultiNerTagger`` in the same
way: every sentence trains every head, each on its own tag columns."""
from __future__ import annotations

from typing import Any

import keras
import numpy as np
from keras import ops

from nerservice.model.layers import sequence_mask
from nerservice.model.tagger import NerTagger
from nerservice.multi.tagger import OFF_HEAD, MultiNerTagger
from nerservice.text.inputs import TEACHER_PAIRS, TEACHER_RANKS, TEACHER_UNARY


@keras.saving.register_keras_serializable(package="nerservice")
class StudentTagger(NerTagger):
    LOSS_INPUTS = TEACHER_RANKS  # the train step passes these float32 arrays (training/steps.py)

    def negative_log_likelihood(self, inputs: dict[str, Any], training: bool = True) -> Any:
        """Per-sentence cross-entropy against the targets (B,): the NLL when a target is a gold path."""
        emissions = self(inputs, training=training)
        return self.crf.cross_entropy(emissions, inputs[TEACHER_UNARY], inputs[TEACHER_PAIRS], inputs["lengths"])


@keras.saving.register_keras_serializable(package="nerservice")
class MultiStudentTagger(MultiNerTagger):
    """The sum over heads of each head's cross-entropy against the teacher's head-h distribution.

    The targets hold every head's counts side by side (head h's on its columns, 0 elsewhere), so the
    expected score of all heads is one linear term (``CRF.expected_score``); each head's log-partition is
    the CRF's over emissions pushed to -1e4 outside its columns (as ``MultiNerTagger`` trains a labelled
    sentence's head), all heads in one forward pass over a (H*B)-row batch."""

    LOSS_INPUTS = TEACHER_RANKS

    def negative_log_likelihood(self, inputs: dict[str, Any], training: bool = True) -> Any:
        return multi_head_cross_entropy(self.crf, self(inputs, training=training), self._head_cols,
                                        inputs[TEACHER_UNARY], inputs[TEACHER_PAIRS], inputs["lengths"])


def multi_head_cross_entropy(crf: Any, emissions: Any, head_cols: np.ndarray, unary: Any, pairs: Any,
                             lengths: Any) -> Any:
    """sum_h CE(q_h, p_h) per sentence (B,): ``head_cols`` (H, K) 1.0 on head h's columns; ``unary``/``pairs``
    every head's target counts on its own columns (``CRF.cross_entropy`` for one head)."""
    emissions = ops.cast(emissions, "float32")
    lengths = ops.cast(lengths, "int32")
    t, k = ops.shape(emissions)[1], ops.shape(emissions)[2]
    heads = head_cols.shape[0]
    off = (ops.convert_to_tensor(head_cols.astype("float32")) - 1.0) * OFF_HEAD  # (H, K): 0 on a head's columns
    per_head = ops.expand_dims(emissions, 0) + ops.reshape(off, (heads, 1, 1, -1))  # (H, B, T, K)
    mask = ops.cast(sequence_mask(lengths, t), "float32")
    log_z = crf.log_partition(ops.reshape(per_head, (-1, t, k)),
                              ops.reshape(ops.tile(ops.expand_dims(mask, 0), (heads, 1, 1)), (-1, t)))
    log_z = ops.sum(ops.reshape(log_z, (heads, -1)), axis=0)
    expected = crf.expected_score(emissions, unary, pairs, lengths)
    return ops.where(lengths > 0, log_z - expected, ops.zeros_like(log_z))
