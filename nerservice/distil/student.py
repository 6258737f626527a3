"""The student: exactly a ``NerTagger`` (same variables, saved and loaded as one), whose training loss is
the cross-entropy of its CRF against the teacher's sequence distribution, read from the batch's teacher
targets (``targets.py``) instead of the gold tags.  Only training differs, so the saved model serves,
exports and registers like any other."""
from __future__ import annotations

from typing import Any

import keras

from nerservice.model.tagger import NerTagger
from nerservice.text.inputs import TEACHER_PAIRS, TEACHER_RANKS, TEACHER_UNARY


@keras.saving.register_keras_serializable(package="nerservice")
class StudentTagger(NerTagger):
    LOSS_INPUTS = TEACHER_RANKS  # the train step passes these float32 arrays (training/steps.py)

    def negative_log_likelihood(self, inputs: dict[str, Any], training: bool = True) -> Any:
        """Per-sentence cross-entropy against the targets (B,): the NLL when a target is a gold path."""
        emissions = self(inputs, training=training)
        return self.crf.cross_entropy(emissions, inputs[TEACHER_UNARY], inputs[TEACHER_PAIRS], inputs["lengths"])
