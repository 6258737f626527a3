"""Exact CRF decoding in NumPy: Viterbi paths and per-token marginals (forward-backward).

Decoding runs on the host after the network: it is cheap (T·K² per sentence for a handful of tags), it
keeps inference identical across Keras backends, and marginals give each entity a confidence.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from nerservice.model.batching import bucketed_batches


@dataclass(frozen=True)
class CrfParams:
    transitions: np.ndarray  # (K, K) from → to
    start: np.ndarray  # (K,)
    end: np.ndarray  # (K,)


@dataclass(frozen=True)
class Tagged:
    """One decoded sentence."""
    tags: list[str]
    scores: list[float]  # marginal probability of each chosen tag (1.0 when marginals were not asked for)


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    m = np.max(x, axis=axis, keepdims=True)
    out: np.ndarray = np.squeeze(m, axis) + np.log(np.sum(np.exp(x - m), axis=axis))
    return out


def viterbi(emissions: np.ndarray, lengths: np.ndarray, crf: CrfParams) -> list[np.ndarray]:
    """Best tag path per sentence. emissions (B, T, K); returns B arrays of length lengths[b]."""
    b, t, k = emissions.shape
    score = crf.start[None, :] + emissions[:, 0]
    back = np.zeros((b, t, k), dtype=np.int32)
    for i in range(1, t):
        cand = score[:, :, None] + crf.transitions[None]  # (B, from, to)
        best_prev = np.argmax(cand, axis=1)
        nxt = np.take_along_axis(cand, best_prev[:, None, :], axis=1)[:, 0] + emissions[:, i]
        live = (i < lengths)[:, None]
        score = np.where(live, nxt, score)
        back[:, i] = best_prev
    score = score + crf.end[None]
    paths = []
    for s in range(b):
        n = int(lengths[s])
        if n == 0:
            paths.append(np.zeros(0, dtype=np.int32))
            continue
        path = np.empty(n, dtype=np.int32)
        path[-1] = int(np.argmax(score[s]))
        for i in range(n - 1, 0, -1):
            path[i - 1] = back[s, i, path[i]]
        paths.append(path)
    return paths


def forward_backward(emissions: np.ndarray, lengths: np.ndarray,
                     crf: CrfParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Log forward and backward scores (B, T, K) and log Z (B,), float64.  Past a sentence's length the
    values are meaningless: callers mask them."""
    b, t, k = emissions.shape
    em = emissions.astype(np.float64)
    tr = crf.transitions.astype(np.float64)
    alpha = np.zeros((b, t, k))
    alpha[:, 0] = crf.start[None] + em[:, 0]
    for i in range(1, t):
        alpha[:, i] = _logsumexp(alpha[:, i - 1][:, :, None] + tr[None], axis=1) + em[:, i]
    beta = np.zeros((b, t, k))
    last = np.maximum(lengths - 1, 0)
    beta[np.arange(b), last] = crf.end[None].repeat(b, 0)
    for i in range(t - 2, -1, -1):
        nxt = _logsumexp(tr[None] + (em[:, i + 1] + beta[:, i + 1])[:, None, :], axis=2)
        # Positions at the sentence's end keep the end scores set above; padding positions are masked later.
        beta[:, i] = np.where((i < last)[:, None], nxt, beta[:, i])
    log_z = _logsumexp(alpha[np.arange(b), last] + crf.end[None], axis=1)
    return alpha, beta, log_z


def marginals(emissions: np.ndarray, lengths: np.ndarray, crf: CrfParams) -> np.ndarray:
    """p(y_t = k | x) for every position, (B, T, K); rows past the length are zero."""
    alpha, beta, log_z = forward_backward(emissions, lengths, crf)
    return _node_marginals(alpha, beta, log_z, lengths)


def _node_marginals(alpha: np.ndarray, beta: np.ndarray, log_z: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    live = np.arange(alpha.shape[1])[None, :] < lengths[:, None]  # (B, T)
    # Padding positions are set to -inf before exp: alpha keeps growing there and would overflow.
    return np.exp(np.where(live[:, :, None], alpha + beta - log_z[:, None, None], -np.inf))


def expected_counts(emissions: np.ndarray, lengths: np.ndarray, crf: CrfParams) -> tuple[np.ndarray, np.ndarray]:
    """The CRF's posterior node marginals (B, T, K) (zero past the length) and its pairwise marginals
    p(y_{t-1} = i, y_t = j | x) summed over t (B, K, K): the expected transition counts.  Together they
    are all a linear-chain CRF's cross-entropy against this distribution needs (``CRF.cross_entropy``)."""
    b, t, k = emissions.shape
    alpha, beta, log_z = forward_backward(emissions, lengths, crf)
    live = np.arange(t)[None, :] < lengths[:, None]
    node = _node_marginals(alpha, beta, log_z, lengths)
    em = emissions.astype(np.float64)
    tr = crf.transitions.astype(np.float64)
    pairs = np.zeros((b, k, k))
    for i in range(1, t):
        # log xi(i-1 -> i) = alpha[i-1, from] + A[from, to] + E[i, to] + beta[i, to] - log Z
        log_xi = (alpha[:, i - 1][:, :, None] + tr[None] + (em[:, i] + beta[:, i])[:, None, :]
                  - log_z[:, None, None])
        pairs += np.exp(np.where(live[:, i][:, None, None], log_xi, -np.inf))
    return node, pairs


def path_log_score(emissions: np.ndarray, tags: np.ndarray, crf: CrfParams) -> float:
    """Unnormalised score of one tag path for one sentence (T, K) — used by tests and diagnostics."""
    s = crf.start[tags[0]] + crf.end[tags[-1]] + emissions[np.arange(len(tags)), tags].sum()
    return float(s + crf.transitions[tags[:-1], tags[1:]].sum())


def decode_emissions(emissions: Sequence[np.ndarray], crf: CrfParams, tag_of: Callable[[int], str], *,
                     with_scores: bool, batch_size: int, bucket_size: int) -> list[Tagged]:
    """Viterbi paths (and marginals) for per-sentence emissions, decoded in length-bucketed padded batches
    (the NumPy recursions cost T·K² per step for the whole batch at once)."""
    out = [Tagged([], [])] * len(emissions)
    nonempty = [i for i, e in enumerate(emissions) if len(e)]
    for idx in bucketed_batches([len(emissions[i]) for i in nonempty], batch_size=batch_size,
                                bucket_size=bucket_size, seed=None):
        rows = [nonempty[j] for j in idx]
        lens = np.array([len(emissions[r]) for r in rows])
        em = np.zeros((len(rows), int(lens.max()), emissions[rows[0]].shape[1]))
        for b, r in enumerate(rows):
            em[b, : lens[b]] = emissions[r]
        paths = viterbi(em, lens, crf)
        post = marginals(em, lens, crf) if with_scores else None
        for b, (r, path) in enumerate(zip(rows, paths)):
            scores = post[b, np.arange(len(path)), path].tolist() if post is not None else [1.0] * len(path)
            out[r] = Tagged([tag_of(int(t)) for t in path], scores)
    return out
