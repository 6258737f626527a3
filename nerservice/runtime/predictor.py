"""The predictor over ONNX Runtime: the same encoding, batching and CRF decode as the Keras ``Predictor``
(both are a ``ForwardPredictor``), with the forward of nerservice/runtime/forward.py and the CRF read from
the export."""
from __future__ import annotations

from typing import Any

from nerservice.model.decode import CrfParams
from nerservice.model.predictor import ForwardPredictor
from nerservice.text.features import ShapePolicy
from nerservice.text.vocab import Vocabularies


class OnnxPredictor(ForwardPredictor):
    runtime = "onnx"
    # ONNX Runtime's LSTM computes every padded step of a batch, and its shapes are free: sort by exact
    # length and cap a forward batch at 1,024 padded tokens.  NCBI test x2, one core, context graph:
    # padding 1.30 -> 1.03 of the real tokens and 38.7k -> 54.8k tokens per CPU-second (smaller batches also
    # keep each step's gates in cache); 512 was no faster, 2,048 / 8,192 slower (50.7k / 43.5k).
    exact_lengths = True
    forward_tokens = 1024

    def __init__(self, forward: Any, vocabs: Vocabularies, crf: CrfParams, *, max_word_length: int,
                 batch_size: int = 256, token_budget: int = 8192, bucket_size: int = 8,
                 jit_compile: bool | str = False) -> None:
        """``jit_compile`` is a TensorFlow option (XLA); it is accepted so one set of Extractor settings
        fits either runtime, and ignored: ONNX Runtime optimises its graph once at load."""
        del jit_compile
        # Dynamic shapes cost ONNX Runtime nothing, and outputs on real tokens never depend on padding:
        # no rounding of the time axis (fewer padded LSTM steps).
        super().__init__(forward, vocabs, crf, policy=ShapePolicy(time_multiple=1), max_word_length=max_word_length,
                         batch_size=batch_size, token_budget=token_budget, bucket_size=bucket_size)
