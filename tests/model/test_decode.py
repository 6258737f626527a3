"""NumPy Viterbi and forward-backward marginals against brute-force enumeration."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from helpers import brute_force_crf, random_crf_problem
from nerservice.model.decode import CrfParams, marginals, path_log_score, viterbi


def _params(p: dict[str, np.ndarray]) -> CrfParams:
    return CrfParams(transitions=p["transitions"], start=p["start"], end=p["end"])


@pytest.mark.parametrize("seed", range(6))
def test_viterbi_returns_the_brute_force_argmax_path(seed: int) -> None:
    p = random_crf_problem(seed)
    paths = viterbi(p["emissions"], p["lengths"], _params(p))
    assert len(paths) == len(p["lengths"])
    for b, n in enumerate(p["lengths"]):
        bf = brute_force_crf(p["emissions"][b, :n], p["transitions"], p["start"], p["end"])
        assert bf["best_margin"] > 1e-9  # a unique optimum, so the comparison is meaningful
        assert paths[b].shape == (n,)
        assert paths[b].tolist() == bf["best"].tolist(), f"sentence {b} (length {n})"


@pytest.mark.parametrize("seed", range(4))
def test_marginals_equal_brute_force_and_sum_to_one(seed: int) -> None:
    p = random_crf_problem(seed)
    post = marginals(p["emissions"], p["lengths"], _params(p))
    assert post.shape == p["emissions"].shape
    for b, n in enumerate(p["lengths"]):
        bf = brute_force_crf(p["emissions"][b, :n], p["transitions"], p["start"], p["end"])
        np.testing.assert_allclose(post[b, :n], bf["marginals"], atol=1e-9)
        np.testing.assert_allclose(post[b, :n].sum(axis=1), 1.0, atol=1e-9)
        assert np.all(post[b, n:] == 0.0)  # padding rows are zero


def test_padding_content_and_length_do_not_change_decoding() -> None:
    p = random_crf_problem(21, pad=0)
    base_paths = viterbi(p["emissions"], p["lengths"], _params(p))
    base_post = marginals(p["emissions"], p["lengths"], _params(p))
    rng = np.random.default_rng(0)
    b, t, k = p["emissions"].shape
    junk = rng.normal(0, 50, (b, t + 7, k))  # huge junk scores in the padding
    for i, n in enumerate(p["lengths"]):
        junk[i, :n] = p["emissions"][i, :n]
    paths = viterbi(junk, p["lengths"], _params(p))
    post = marginals(junk, p["lengths"], _params(p))
    for i, n in enumerate(p["lengths"]):
        assert paths[i].tolist() == base_paths[i].tolist()
        np.testing.assert_allclose(post[i, :n], base_post[i, :n], atol=1e-12)


def test_empty_sentence_decodes_to_nothing() -> None:
    p = random_crf_problem(2, lengths=(3, 0))
    paths = viterbi(p["emissions"], p["lengths"], _params(p))
    post = marginals(p["emissions"], p["lengths"], _params(p))
    assert paths[1].shape == (0,)
    assert np.all(post[1] == 0.0)
    np.testing.assert_allclose(post[0, :3].sum(axis=1), 1.0)


def test_marginals_are_stable_for_large_scores() -> None:
    """Scores in the thousands (an over-confident model) must not overflow to NaN/inf."""
    p = random_crf_problem(4)
    p["emissions"] = p["emissions"] * 1000
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow inside, even one masked afterwards, is a bug
        post = marginals(p["emissions"], p["lengths"], _params(p))
    assert np.all(np.isfinite(post))
    for b, n in enumerate(p["lengths"]):
        np.testing.assert_allclose(post[b, :n].sum(axis=1), 1.0, atol=1e-9)


def test_path_log_score_matches_independent_scoring() -> None:
    p = random_crf_problem(8, lengths=(5,))
    bf = brute_force_crf(p["emissions"][0, :5], p["transitions"], p["start"], p["end"])
    path = np.array([2, 0, 1, 1, 0])
    assert path_log_score(p["emissions"][0, :5], path, _params(p)) == pytest.approx(bf["score"](path))
