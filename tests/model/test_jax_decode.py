"""The JAX CRF decode (run on the GPU by the JAX Predictor) against the NumPy decode, on JAX's CPU device.

The decode is plain JAX (no Keras), so it runs in-process whatever the Keras backend; the fused
forward + decode of a real model under KERAS_BACKEND=jax is checked in tests/model/test_device_tagging.py.
"""
from __future__ import annotations

import numpy as np
import pytest

from helpers import brute_force_crf, random_crf_problem
from nerservice.model.decode import CrfParams, marginals, viterbi
from nerservice.model.device_tagging import padded_length

jnp = pytest.importorskip("jax.numpy")
from nerservice.model.jax_decode import crf_arrays, decode_jit  # noqa: E402  (only with jax installed)


def _both(p: dict[str, np.ndarray]) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    crf = CrfParams(p["transitions"], p["start"], p["end"])
    paths, post = viterbi(p["emissions"], p["lengths"], crf), marginals(p["emissions"], p["lengths"], crf)
    tags, scores = decode_jit(jnp.asarray(p["emissions"], jnp.float32), jnp.asarray(p["lengths"]), crf_arrays(crf),
                              with_scores=True)
    return paths, post, np.asarray(tags), np.asarray(scores)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("scale", [2.0, 12.0])  # 12: scores in the thousands on long rows (float32 cancellation)
def test_device_decode_equals_numpy_decode(seed: int, scale: float) -> None:
    p = random_crf_problem(seed, k=5, lengths=(5, 3, 1, 4, 2, 0, 37, 160), pad=3)
    p["emissions"] = p["emissions"] * scale
    paths, post, tags, scores = _both(p)
    assert tags.shape == scores.shape == p["emissions"].shape[:2]
    for b, n in enumerate(p["lengths"]):
        assert tags[b, :n].tolist() == paths[b].tolist(), f"sentence {b} (length {n})"
        np.testing.assert_allclose(scores[b, :n], post[b, np.arange(n), paths[b]], rtol=0, atol=1e-5)
        assert np.all(tags[b, n:] == 0) and np.all(scores[b, n:] == 0.0)  # padding


@pytest.mark.parametrize("seed", range(3))
def test_device_decode_matches_brute_force(seed: int) -> None:
    p = random_crf_problem(seed)
    _, _, tags, scores = _both(p)
    for b, n in enumerate(p["lengths"]):
        bf = brute_force_crf(p["emissions"][b, :n], p["transitions"], p["start"], p["end"])
        assert tags[b, :n].tolist() == bf["best"].tolist()
        np.testing.assert_allclose(scores[b, :n], bf["marginals"][np.arange(n), bf["best"]], atol=1e-6)


def test_padding_junk_does_not_change_the_device_decode() -> None:
    p = random_crf_problem(21, pad=0)
    _, _, base_tags, base_scores = _both(p)
    b, t, k = p["emissions"].shape
    junk = np.random.default_rng(0).normal(0, 50, (b, t + 9, k))
    for i, n in enumerate(p["lengths"]):
        junk[i, :n] = p["emissions"][i, :n]
    _, _, tags, scores = _both({**p, "emissions": junk})
    for i, n in enumerate(p["lengths"]):
        assert tags[i, :n].tolist() == base_tags[i, :n].tolist()
        np.testing.assert_allclose(scores[i, :n], base_scores[i, :n], atol=1e-6)


def test_one_step_batches_and_scores_off() -> None:
    p = random_crf_problem(4, lengths=(1, 1, 0), pad=0)
    paths, _, tags, _ = _both(p)
    assert [tags[b, :n].tolist() for b, n in enumerate(p["lengths"])] == [x.tolist() for x in paths]
    crf = CrfParams(p["transitions"], p["start"], p["end"])
    t2, s2 = decode_jit(jnp.asarray(p["emissions"], jnp.float32), jnp.asarray(p["lengths"]), crf_arrays(crf),
                        with_scores=False)
    assert np.asarray(t2).tolist() == tags.tolist() and np.all(np.asarray(s2) == 1.0)


def test_the_time_axis_ladder_bounds_padding_and_shapes() -> None:
    steps = {padded_length(n, 8) for n in range(1, 1025)}
    assert sorted(steps)[:12] == [8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]
    assert len(steps) == 14  # then 768, 1024: two shapes per doubling
    for n in range(1, 1025):
        t = padded_length(n, 8)
        assert t >= n and t % 8 == 0 and (t - n) <= max(7, t // 3)
    assert padded_length(5, 32) == 32  # a coarser bucket is kept
