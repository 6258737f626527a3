"""The keras.ops CRF log-likelihood against brute-force enumeration of every tag path."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import brute_force_crf, random_crf_problem


def _crf_with(problem: dict[str, np.ndarray]):
    from nerservice.model.crf import CRF

    k = problem["transitions"].shape[0]
    crf = CRF(k)
    crf.build()
    crf.transitions.assign(problem["transitions"].astype("float32"))
    crf.start.assign(problem["start"].astype("float32"))
    crf.end.assign(problem["end"].astype("float32"))
    return crf


def _log_likelihood(crf, problem: dict[str, np.ndarray]) -> np.ndarray:
    from keras import ops

    out = crf.log_likelihood(problem["emissions"].astype("float32"), problem["tags"].astype("int32"),
                             problem["lengths"])
    return np.asarray(ops.convert_to_numpy(out), dtype=np.float64)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_likelihood_equals_gold_score_minus_log_partition(seed: int) -> None:
    p = random_crf_problem(seed)
    ll = _log_likelihood(_crf_with(p), p)
    assert ll.shape == (len(p["lengths"]),)
    for b, n in enumerate(p["lengths"]):
        bf = brute_force_crf(p["emissions"][b, :n], p["transitions"], p["start"], p["end"])
        expected = bf["score"](p["tags"][b, :n]) - bf["log_z"]
        assert ll[b] == pytest.approx(expected, abs=1e-4), f"sentence {b} (length {n})"
        assert ll[b] < 0


def test_probabilities_of_all_paths_sum_to_one() -> None:
    """exp(log-likelihood) over every path of a length-4 sentence sums to 1 (a normalised distribution)."""
    import itertools

    p = random_crf_problem(5, lengths=(4,), pad=3)
    crf = _crf_with(p)
    paths = np.array(list(itertools.product(range(3), repeat=4)))
    tags = np.zeros((len(paths), p["tags"].shape[1]), dtype=np.int64)
    tags[:, :4] = paths
    batch = {"emissions": np.repeat(p["emissions"], len(paths), 0), "tags": tags,
             "lengths": np.full(len(paths), 4, dtype=np.int32)}
    ll = _log_likelihood(crf, batch)
    assert np.exp(ll).sum() == pytest.approx(1.0, abs=1e-4)


def test_padding_is_ignored() -> None:
    """Whatever sits in the padding (emissions, tags, how much of it), the log-likelihood is the same."""
    p = random_crf_problem(7, pad=0)
    crf = _crf_with(p)
    base = _log_likelihood(crf, p)
    rng = np.random.default_rng(1)
    longer = dict(p)
    t = p["emissions"].shape[1]
    longer["emissions"] = np.concatenate([p["emissions"], rng.normal(0, 5, (len(p["lengths"]), 7, 3))], axis=1)
    longer["tags"] = np.concatenate([p["tags"], rng.integers(0, 3, (len(p["lengths"]), 7))], axis=1)
    for b, n in enumerate(p["lengths"]):  # junk inside the original padding too
        longer["emissions"][b, n:t] = rng.normal(0, 5, (t - n, 3))
        longer["tags"][b, n:t] = rng.integers(0, 3, t - n)
    np.testing.assert_allclose(_log_likelihood(crf, longer), base, atol=1e-5)


def test_each_sentence_is_independent_of_its_batch() -> None:
    p = random_crf_problem(3)
    crf = _crf_with(p)
    together = _log_likelihood(crf, p)
    for b in range(len(p["lengths"])):
        alone = {"emissions": p["emissions"][b:b + 1], "tags": p["tags"][b:b + 1], "lengths": p["lengths"][b:b + 1]}
        assert _log_likelihood(crf, alone)[0] == pytest.approx(together[b], abs=1e-5)


def test_gradient_of_the_nll_matches_finite_differences() -> None:
    """The loss is trainable: its gradient w.r.t. the transitions agrees with a numerical derivative."""
    import tensorflow as tf

    p = random_crf_problem(11, lengths=(4, 2, 3))
    crf = _crf_with(p)
    em, tags = tf.constant(p["emissions"], tf.float32), tf.constant(p["tags"], tf.int32)
    with tf.GradientTape() as tape:
        loss = -tf.reduce_sum(crf.log_likelihood(em, tags, p["lengths"]))
    grad = tape.gradient(loss, crf.transitions.value).numpy()

    def total(trans: np.ndarray) -> float:
        return -sum(brute_force_crf(p["emissions"][b, :n], trans, p["start"], p["end"])["score"](p["tags"][b, :n])
                    - brute_force_crf(p["emissions"][b, :n], trans, p["start"], p["end"])["log_z"]
                    for b, n in enumerate(p["lengths"]))

    eps = 1e-4
    for i, j in [(0, 0), (1, 2), (2, 1)]:
        plus, minus = p["transitions"].copy(), p["transitions"].copy()
        plus[i, j] += eps
        minus[i, j] -= eps
        assert grad[i, j] == pytest.approx((total(plus) - total(minus)) / (2 * eps), abs=2e-3)


def test_log_likelihood_inside_tf_function_with_unknown_time_length() -> None:
    """The training step traces with T unknown (None); the forward recursion must still be exact."""
    import tensorflow as tf

    p = random_crf_problem(13)
    crf = _crf_with(p)
    fn = tf.function(lambda e, t, n: crf.log_likelihood(e, t, n), input_signature=[
        tf.TensorSpec((None, None, 3), tf.float32), tf.TensorSpec((None, None), tf.int32),
        tf.TensorSpec((None,), tf.int32)])
    got = fn(p["emissions"].astype("float32"), p["tags"].astype("int32"), p["lengths"]).numpy()
    np.testing.assert_allclose(got, _log_likelihood(crf, p), atol=1e-5)


def test_empty_rows_contribute_zero() -> None:
    """Fixed-shape batches (XLA/JAX) are padded with empty sentences: their log-likelihood is exactly 0."""
    p = random_crf_problem(17, lengths=(3, 0, 2, 0))
    ll = _log_likelihood(_crf_with(p), p)
    assert ll[1] == 0.0 and ll[3] == 0.0
    assert ll[0] < 0 and ll[2] < 0
