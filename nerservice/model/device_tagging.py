"""Tagging on the JAX backend with the CRF decode on the device, pipelined with the host's batch assembly.

The NumPy path (``Predictor.emissions`` then ``decode_emissions``) copies every batch's emissions to the
host and decodes there; on a GPU that host work, not the network, bounds throughput (194k tokens/s on one
H200).  Here one jitted function runs the network *and* the Viterbi/forward-backward of
``nerservice.model.jax_decode``, so only the chosen tags and their marginals (B, T) come back, and
dispatch is asynchronous: the host assembles batch i + 1 and unpacks batch i - 1 while the device runs
batch i.  Results equal the NumPy decode of the same emissions (tests/model/test_jax_decode.py).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nerservice.model.batching import bucketed_batches
from nerservice.model.decode import CrfParams, Tagged
from nerservice.text.features import EncodedCorpus, ShapePolicy
from nerservice.text.inputs import model_inputs
from nerservice.text.vocab import Vocabularies


def compile_tagging(model: Any, *, matmul_precision: str = "highest") -> Callable[..., Any]:
    """jit(params, crf, batch, with_scores) → (tags (B, T) int32, scores (B, T) float32) on the device.

    ``matmul_precision``: XLA's default on an H200 runs float32 matmuls in TF32, which moved marginals by
    up to 5.4e-4 from the CPU path (tags were still identical); "highest" keeps them within 1e-6 for ~25 %
    of the throughput (bench/results/gpu.md). "default" trades that back."""
    import jax

    from nerservice.model.jax_decode import decode_on_device

    def fused(tv: Any, ntv: Any, crf: Any, batch: Any, with_scores: bool) -> Any:
        with jax.default_matmul_precision(matmul_precision):  # applies while tracing
            emissions, _ = model.stateless_call(tv, ntv, batch, training=False)
            return decode_on_device(emissions, batch["lengths"], crf, with_scores=with_scores)

    return jax.jit(fused, static_argnames=("with_scores",))


def padded_length(longest: int, bucket_size: int) -> int:
    """Time steps for a batch whose longest sentence has ``longest`` tokens: a multiple of ``bucket_size`` up
    to 4 buckets, then of a quarter of the next power of two (8, 16, 24, 32, 48, 64, 96, 128, 192, ... for 8):
    at most a third of the steps is padding, and sentences of any length compile ~2 shapes per doubling."""
    step = max(bucket_size, (1 << max(longest - 1, 0).bit_length()) // 4)
    return -(-longest // step) * step


class DeviceTagger:
    def __init__(self, model: Any, vocabs: Vocabularies, *, max_word_length: int, batch_size: int,
                 token_budget: int, bucket_size: int, policy: ShapePolicy,
                 crf_params: Callable[[], CrfParams], matmul_precision: str = "highest") -> None:
        self.model, self.vocabs = model, vocabs
        self.max_word_length, self.batch_size = max_word_length, batch_size
        self.token_budget, self.bucket_size = token_budget, bucket_size
        self.policy, self.crf_params = policy, crf_params
        self._labels = np.array(vocabs.tags.tags, dtype=object)
        self._fn = compile_tagging(model, matmul_precision=matmul_precision)

    def policy_for(self, n: int, longest: int) -> ShapePolicy:
        """The padded shape of a batch of ``n`` sentences, the longest of ``longest`` tokens. Each new shape
        costs an XLA compile (seconds), so shapes come from short ladders: full batches keep the fixed batch
        size and a short one (a job's last, or one cut by the token budget) is padded to the next power of
        two; the time axis is ``padded_length``."""
        b = self.batch_size if n >= self.batch_size else min(self.batch_size, 1 << max(n - 1, 0).bit_length())
        # round_up(longest, t) == t for any t >= longest: the policy's multiple *is* the padded length.
        return dataclasses.replace(self.policy, fixed_batch=b, time_multiple=padded_length(longest, self.bucket_size))

    def tag(self, sentences: Sequence[Sequence[str]], *, with_scores: bool) -> list[Tagged]:
        from nerservice.model.jax_decode import crf_arrays

        out = [Tagged([], [])] * len(sentences)
        nonempty = [i for i, s in enumerate(sentences) if len(s)]
        if not nonempty:
            return out
        encoded = EncodedCorpus([sentences[i] for i in nonempty], self.vocabs, max_word_length=self.max_word_length)
        tv = [v.value for v in self.model.trainable_variables]
        ntv = [v.value for v in self.model.non_trainable_variables]
        crf = crf_arrays(self.crf_params())
        pending: tuple[np.ndarray, np.ndarray, Any] | None = None
        for idx in bucketed_batches(encoded.lengths.tolist(), batch_size=self.batch_size, bucket_size=self.bucket_size,
                                    seed=None, token_budget=self.token_budget):
            batch = encoded.batch(idx, self.policy_for(len(idx), int(encoded.lengths[idx].max())), with_tags=False)
            result = self._fn(tv, ntv, crf, model_inputs(batch), with_scores)  # returns at once
            if pending is not None:
                self._unpack(*pending, nonempty, out)
            pending = (idx, batch["lengths"], result)
        if pending is not None:
            self._unpack(*pending, nonempty, out)
        return out

    def _unpack(self, idx: np.ndarray, lengths: np.ndarray, result: Any, nonempty: list[int],
                out: list[Tagged]) -> None:
        tags, scores = (np.asarray(a) for a in result)  # waits for this batch only
        labels = self._labels
        for row, j in enumerate(idx.tolist()):
            n = int(lengths[row])
            out[nonempty[j]] = Tagged(labels[tags[row, :n]].tolist(), scores[row, :n].tolist())
