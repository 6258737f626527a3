"""Sentences of tokens → tags and per-token confidences, through one compiled forward function.

Used by training (dev evaluation), the ``Extractor`` (REST and Spark batch inference) and ``evaluate``,
so all three decode identically.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from nerservice import backend as backends
from nerservice.model.batching import bucketed_batches
from nerservice.model.decode import CrfParams, Tagged, decode_emissions
from nerservice.model.forward import Forward, KeptStatesForward, compile_forward
from nerservice.model.heads import decode_merged
from nerservice.text.features import EncodedCorpus, ShapePolicy
from nerservice.text.vocab import MultiTagVocabulary, TagVocabulary, Vocabularies

if TYPE_CHECKING:  # Keras is imported only when a Keras model is used: the ONNX runtime serves without it
    from nerservice.model.device_tagging import DeviceTagger
    from nerservice.model.tagger import NerTagger
    from nerservice.model.xla_forward import BackgroundXlaForward


class XlaCompiler(Protocol):
    """A background XLA compiler's counts (``/metrics``) and ``wait()`` (benchmarks, tests)."""

    graph_calls: int
    xla_calls: int

    @property
    def compiled(self) -> int: ...

    @property
    def pending(self) -> int: ...

    def wait(self) -> int: ...


class TagPredictor(Protocol):
    """What callers use of a ``Predictor`` or an ``EnsemblePredictor``."""

    @property
    def runtime(self) -> str: ...  # "keras" or "onnx": what computes the emissions

    @property
    def background_xla(self) -> XlaCompiler | None: ...

    @property
    def tag_labels(self) -> list[str]: ...

    def crf_params(self) -> CrfParams: ...

    def emissions(self, sentences: Sequence[Sequence[str]]) -> list[np.ndarray]: ...

    def tag(self, sentences: Sequence[Sequence[str]], *, with_scores: bool = True) -> list[Tagged]: ...

    def predict_tags(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]: ...


def decode_tags(emissions: Sequence[np.ndarray], crf: CrfParams, tags: TagVocabulary | MultiTagVocabulary, *,
                with_scores: bool, batch_size: int, bucket_size: int) -> list[Tagged]:
    """Tags of one head, or of every head merged into one tag sequence (a multi-corpus model)."""
    kw: dict[str, Any] = dict(with_scores=with_scores, batch_size=batch_size, bucket_size=bucket_size)
    if isinstance(tags, MultiTagVocabulary):
        return decode_merged(emissions, crf, tags, **kw)
    return decode_emissions(emissions, crf, tags.tag, **kw)


class ForwardPredictor:
    """Encoding, length-bucketed batching and the CRF decode around any ``forward(batch) -> emissions``
    (B, T, K): the Keras ``Predictor`` below and the ONNX Runtime one (nerservice/runtime/predictor.py)
    differ only in the forward function, so they cannot drift in anything else."""

    runtime = "keras"  # what computes the emissions
    # How ``emissions`` cuts a call into forward batches: by length rounded to ``bucket_size`` and at most
    # ``token_budget`` padded tokens (a runtime may sort by exact length and cap batches lower, below).
    exact_lengths = False
    forward_tokens: int | None = None

    def __init__(self, forward: Forward, vocabs: Vocabularies, crf: CrfParams | None, *, policy: ShapePolicy,
                 max_word_length: int, batch_size: int = 256, token_budget: int = 8192, bucket_size: int = 8) -> None:
        self._forward, self.vocabs, self._crf, self.policy = forward, vocabs, crf, policy
        self.max_word_length, self.batch_size = max_word_length, batch_size
        self.token_budget, self.bucket_size = token_budget, bucket_size
        self.background_xla: BackgroundXlaForward | None = None
        self.device_tagger: DeviceTagger | None = None

    @property
    def tag_labels(self) -> list[str]:
        """The tag set in emission-column order (an ensemble checks its members agree on it)."""
        return self.vocabs.tags.tags

    def crf_params(self) -> CrfParams:
        if self._crf is None:  # a subclass that reads them from its model overrides this
            raise NotImplementedError("no CRF parameters given")
        return self._crf

    def forward_batches(self, lengths: Sequence[int]) -> list[np.ndarray]:
        """Index arrays of the forward batches for sentences of these lengths."""
        budget = min(self.token_budget, self.forward_tokens or self.token_budget)
        return bucketed_batches(lengths, batch_size=self.batch_size, seed=None, token_budget=budget,
                                bucket_size=1 if self.exact_lengths else self.bucket_size)

    def emissions(self, sentences: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """The network's emission scores per sentence, (len, K) float64; empty sentences give (0, K)."""
        k = len(self.vocabs.tags)
        out = [np.zeros((0, k))] * len(sentences)
        nonempty = [i for i, s in enumerate(sentences) if len(s)]
        encoded = EncodedCorpus([sentences[i] for i in nonempty], self.vocabs, max_word_length=self.max_word_length)
        for idx in self.forward_batches([len(sentences[i]) for i in nonempty]):
            batch = encoded.batch(idx, self.policy, with_tags=False)
            em = self._forward(batch)[: len(idx)].astype(np.float64)
            for row, (j, n) in enumerate(zip(idx, batch["lengths"][: len(idx)])):
                out[nonempty[j]] = em[row, : int(n)]
        return out

    def tag(self, sentences: Sequence[Sequence[str]], *, with_scores: bool = True) -> list[Tagged]:
        """Tag sentences (lists of tokens). Empty sentences get empty results."""
        if self.device_tagger is not None:
            return self.device_tagger.tag(sentences, with_scores=with_scores)
        return decode_tags(self.emissions(sentences), self.crf_params(), self.vocabs.tags,
                           with_scores=with_scores, batch_size=self.batch_size, bucket_size=self.bucket_size)

    def predict_tags(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        return [t.tags for t in self.tag(sentences, with_scores=False)]


class Predictor(ForwardPredictor):
    """The Keras model's forward (TF graph, XLA, or JAX with the decode on the device)."""

    def __init__(self, model: NerTagger, vocabs: Vocabularies, *, max_word_length: int, batch_size: int = 256,
                 token_budget: int = 8192, bucket_size: int = 8, jit_compile: bool | str = False,
                 matmul_precision: str = "highest", keep_encoder_states_mb: int = 0) -> None:
        """``jit_compile``: False = TF graph; True = XLA, compiling each new shape before answering;
        "background" = XLA over bounded shapes, compiled on a background thread while the graph function
        answers (``xla_forward.py``; TensorFlow only, the JAX path is always compiled).
        ``matmul_precision``: JAX only, the fused forward + device decode's (``device_tagging.py``).
        ``keep_encoder_states_mb``: for a model with a frozen encoder, keep the encoder's states of the batches
        it scores, up to this much memory (``KeptStatesForward``: training's dev set, scored every epoch;
        TensorFlow graph only, elsewhere ignored)."""
        self.model = model
        backend = backends.current()
        xla: BackgroundXlaForward | None = None
        forward: Forward
        if jit_compile == "background" and backend == "tensorflow":
            from nerservice.model.xla_forward import BackgroundXlaForward

            forward = xla = BackgroundXlaForward(model)
            policy = ShapePolicy.bounded(time_multiple=bucket_size)
        elif keep_encoder_states_mb and model.text_encoder is not None and backend == "tensorflow" \
                and jit_compile is False:
            forward = KeptStatesForward(model, budget_mb=keep_encoder_states_mb)
            policy = ShapePolicy.for_backend(backend, batch_size=batch_size, time_multiple=bucket_size)
        else:
            forward = compile_forward(model, jit_compile=jit_compile is True)
            policy = ShapePolicy.for_backend(backend, batch_size=batch_size, time_multiple=bucket_size)
        super().__init__(forward, vocabs, None, policy=policy, max_word_length=max_word_length,
                         batch_size=batch_size, token_budget=token_budget, bucket_size=bucket_size)
        self.background_xla = xla
        # forward + CRF decode in one compiled function (``device_tagging.py``); a multi-corpus model decodes
        # each head on its own CRF block, on the host (``heads.py``)
        if backend == "jax" and not isinstance(vocabs.tags, MultiTagVocabulary):
            from nerservice.model.device_tagging import DeviceTagger

            self.device_tagger = DeviceTagger(model, vocabs, max_word_length=max_word_length, batch_size=batch_size,
                                              token_budget=token_budget, bucket_size=bucket_size,
                                              policy=self.policy, crf_params=self.crf_params,
                                              matmul_precision=matmul_precision)

    def crf_params(self) -> CrfParams:
        return self.model.crf_params()  # read each time: training evaluates while the weights move
