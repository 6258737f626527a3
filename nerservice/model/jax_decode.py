"""Exact CRF decoding in JAX, batched and jittable: the device twin of ``nerservice.model.decode``.

On a GPU the network's forward pass is several times faster than the NumPy Viterbi and forward-backward
that follow it on the host, so the JAX Predictor fuses these into its compiled forward function: only the
chosen tags and their marginals (B, T) leave the device.

Same results as the NumPy decode (tests/model/test_jax_decode.py): the same recursions and tie-breaking
(argmax takes the first maximum), in float32 instead of float64.  To keep float32 exact enough, both
recursions are renormalised at every step: Viterbi subtracts each step's maximum (argmaxes are unchanged),
forward and backward subtract each step's log-sum-exp, and a marginal is the softmax of the two
normalised vectors at that position (mathematically the same as exp(alpha + beta - log Z), without the
cancellation of two large numbers that costs float32 ~1e-4 on long sentences).
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from nerservice.model.decode import CrfParams


def crf_arrays(crf: CrfParams) -> tuple[Any, Any, Any]:
    """The CRF's parameters as float32 device arrays (transitions, start, end)."""
    return (jnp.asarray(crf.transitions, jnp.float32), jnp.asarray(crf.start, jnp.float32),
            jnp.asarray(crf.end, jnp.float32))


def viterbi_paths(emissions: Any, lengths: Any, transitions: Any, start: Any, end: Any) -> Any:
    """Best tag path per sentence as a (B, T) int32 array; positions at or past ``lengths`` are 0."""
    em = emissions.astype(jnp.float32)
    b, t, _ = em.shape
    lengths = lengths.astype(jnp.int32)
    steps = jnp.arange(1, t)

    def forward(score: Any, i: Any) -> tuple[Any, Any]:
        cand = score[:, :, None] + transitions[None]  # (B, from, to)
        best_prev = jnp.argmax(cand, axis=1).astype(jnp.int32)
        nxt = jnp.max(cand, axis=1) + em[:, i]
        nxt = nxt - jnp.max(nxt, axis=1, keepdims=True)
        return jnp.where((i < lengths)[:, None], nxt, score), best_prev

    score0 = start[None] + em[:, 0]
    score, back = lax.scan(forward, score0 - jnp.max(score0, axis=1, keepdims=True), steps)  # back: (T-1, B, K)
    last_tag = jnp.argmax(score + end[None], axis=1).astype(jnp.int32)
    # back_to[i] = backpointers *into* position i from position i + 1; a zero row after the end.
    back_to = jnp.concatenate([back, jnp.zeros((1, b, back.shape[2]), jnp.int32)], axis=0)
    rows = jnp.arange(b)

    def backward(nxt_tag: Any, i: Any) -> tuple[Any, Any]:
        # nxt_tag: the tag chosen at position i + 1 (meaningless at and past the sentence's end).
        from_next = back_to[i][rows, nxt_tag]
        tag = jnp.where(i == lengths - 1, last_tag, jnp.where(i < lengths - 1, from_next, 0))
        return tag, tag

    _, tags = lax.scan(backward, last_tag, jnp.arange(t), reverse=True)
    return tags.T


def chosen_marginals(emissions: Any, lengths: Any, tags: Any, transitions: Any, start: Any, end: Any) -> Any:
    """p(y_t = tags[b, t] | x) as (B, T) float32; 0 at positions past the length."""
    em = emissions.astype(jnp.float32)
    b, t, k = em.shape
    lengths = lengths.astype(jnp.int32)
    last = jnp.maximum(lengths - 1, 0)

    def norm(x: Any) -> Any:
        return x - jax.nn.logsumexp(x, axis=1, keepdims=True)

    def fwd(alpha: Any, i: Any) -> tuple[Any, Any]:
        nxt = norm(jax.nn.logsumexp(alpha[:, :, None] + transitions[None], axis=1) + em[:, i])
        return nxt, nxt

    alpha0 = norm(start[None] + em[:, 0])
    _, alphas = lax.scan(fwd, alpha0, jnp.arange(1, t))
    alphas = jnp.concatenate([alpha0[None], alphas], axis=0)  # (T, B, K)
    em_next = jnp.concatenate([em[:, 1:], jnp.zeros((b, 1, k), em.dtype)], axis=1)  # em[:, i + 1]
    end_b = jnp.broadcast_to(end[None], (b, k))

    def bwd(beta_next: Any, i: Any) -> tuple[Any, Any]:
        nxt = norm(jax.nn.logsumexp(transitions[None] + (em_next[:, i] + beta_next)[:, None, :], axis=2))
        # At the sentence's last position beta = end; before it the recursion; after it anything (masked).
        beta = jnp.where((i < last)[:, None], nxt, end_b)
        return beta, beta

    _, betas = lax.scan(bwd, end_b, jnp.arange(t), reverse=True)  # (T, B, K)
    post = jax.nn.softmax(alphas + betas, axis=2)
    chosen = jnp.take_along_axis(post, tags.T[:, :, None], axis=2)[:, :, 0].T
    live = jnp.arange(t)[None, :] < lengths[:, None]
    return jnp.where(live, chosen, 0.0)


def decode_on_device(emissions: Any, lengths: Any, crf: tuple[Any, Any, Any], *, with_scores: bool) -> tuple[Any, Any]:
    """(tags (B, T) int32, scores (B, T) float32) — scores are 1.0 where marginals were not asked for."""
    transitions, start, end = crf
    tags = viterbi_paths(emissions, lengths, transitions, start, end)
    if not with_scores:
        return tags, jnp.ones(tags.shape, jnp.float32)
    return tags, chosen_marginals(emissions, lengths, tags, transitions, start, end)


decode_jit = jax.jit(decode_on_device, static_argnames=("with_scores",))
