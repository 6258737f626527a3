"""Several trained taggers as one: the mean of their CRF scores (a product of experts), decoded exactly.

Each member m scores a tag path y of sentence x as s_m(x, y) = Σ emissions + Σ transitions, and
log p_m(y | x) = s_m(x, y) − log Z_m(x).  The mean (1/M) Σ_m s_m(x, y) is again a linear-chain CRF score —
mean emissions, mean transitions, mean start/end scores — and since the log Z_m(x) do not depend on y, its
Viterbi path is exactly the path that maximises the geometric mean of the members' probabilities.  So an
ensemble costs M forward passes and one decode, needs no retraining or calibration, and its marginals give
entity scores the same way a single model's do.

Members must emit the same tag set in the same column order (models trained on one corpus do); their word
vocabularies and embeddings may differ (each member encodes the tokens itself).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nerservice.errors import ModelLoadError
from nerservice.model.decode import CrfParams, Tagged
from nerservice.model.predictor import ForwardPredictor, decode_tags


def mean_crf(params: Sequence[CrfParams]) -> CrfParams:
    return CrfParams(transitions=np.mean([p.transitions for p in params], axis=0).astype(np.float64),
                     start=np.mean([p.start for p in params], axis=0).astype(np.float64),
                     end=np.mean([p.end for p in params], axis=0).astype(np.float64))


def _summed(attr: str) -> property:
    return property(lambda self: sum(getattr(p, attr) for p in self.parts))


class MembersXla:
    """The members' background XLA compilers (``jit_compile="background"``) seen as one: the counts /metrics
    shows and the ``wait()`` benchmarks use.  Each member compiles its own shapes on its own thread."""

    compiled, pending, xla_calls, graph_calls = (_summed(a) for a in
                                                 ("compiled", "pending", "xla_calls", "graph_calls"))

    def __init__(self, parts: Sequence[Any]) -> None:
        self.parts = list(parts)

    def wait(self) -> int:
        return sum(p.wait() for p in self.parts)


class EnsemblePredictor:
    """The ``Predictor`` interface over M member predictors (used by the Extractor, evaluate, the API)."""

    def __init__(self, members: Sequence[ForwardPredictor]) -> None:
        if not members:
            raise ModelLoadError("an ensemble needs at least one member")
        tags = members[0].tag_labels
        for i, m in enumerate(members[1:], start=1):
            if m.tag_labels != tags:
                raise ModelLoadError(f"ensemble member {i} has tags {m.tag_labels}, member 0 has {tags}",
                                     hint="ensemble only models trained on the same tag set")
        self.members = list(members)
        self.vocabs = members[0].vocabs  # tag lookups; members' word vocabularies stay their own
        self.batch_size, self.bucket_size = members[0].batch_size, members[0].bucket_size
        self._crf = mean_crf([m.crf_params() for m in members])
        parts = [m.background_xla for m in members if m.background_xla is not None]
        self.background_xla = MembersXla(parts) if parts else None

    @property
    def tag_labels(self) -> list[str]:
        return self.members[0].tag_labels

    @property
    def runtime(self) -> str:
        return str(self.members[0].runtime)

    def crf_params(self) -> CrfParams:
        return self._crf

    def emissions(self, sentences: Sequence[Sequence[str]]) -> list[np.ndarray]:
        per_member = [m.emissions(sentences) for m in self.members]
        return [np.mean([em[i] for em in per_member], axis=0) for i in range(len(sentences))]

    def tag(self, sentences: Sequence[Sequence[str]], *, with_scores: bool = True) -> list[Tagged]:
        return decode_tags(self.emissions(sentences), self._crf, self.vocabs.tags,
                           with_scores=with_scores, batch_size=self.batch_size, bucket_size=self.bucket_size)

    def predict_tags(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        return [t.tags for t in self.tag(sentences, with_scores=False)]
