"""Distillation's CRF pieces against brute-force enumeration of every tag path: the teacher's expected
counts (NumPy forward-backward) and the student's cross-entropy (keras.ops) with its gradient."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from helpers import random_crf_problem


def _paths(n: int, k: int) -> np.ndarray:
    return np.array(list(itertools.product(range(k), repeat=n)), dtype=np.int64)


def _distribution(em: np.ndarray, tr: np.ndarray, st: np.ndarray, en: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every path of one sentence (T, K) and its probability, enumerated."""
    n, k = em.shape
    paths = _paths(n, k)
    scores = np.array([st[p[0]] + en[p[-1]] + em[np.arange(n), p].sum() + tr[p[:-1], p[1:]].sum() for p in paths])
    probs = np.exp(scores - np.logaddexp.reduce(scores))
    return paths, probs


def _counts(paths: np.ndarray, probs: np.ndarray, k: int) -> dict[str, np.ndarray]:
    n = paths.shape[1]
    node, pairs, start, end = np.zeros((n, k)), np.zeros((k, k)), np.zeros(k), np.zeros(k)
    for p, pr in zip(paths, probs):
        node[np.arange(n), p] += pr
        for a, b in zip(p[:-1], p[1:]):
            pairs[a, b] += pr
        start[p[0]] += pr
        end[p[-1]] += pr
    return {"node": node, "pairs": pairs, "start": start, "end": end}


def _crf(problem: dict[str, np.ndarray]):
    from nerservice.model.crf import CRF

    crf = CRF(problem["transitions"].shape[0])
    crf.build()
    crf.transitions.assign(problem["transitions"].astype("float32"))
    crf.start.assign(problem["start"].astype("float32"))
    crf.end.assign(problem["end"].astype("float32"))
    return crf


@pytest.mark.parametrize("seed", [0, 1])
def test_expected_counts_equal_brute_force(seed: int) -> None:
    from nerservice.model.decode import CrfParams, expected_counts

    p = random_crf_problem(seed)
    crf = CrfParams(p["transitions"], p["start"], p["end"])
    node, pairs = expected_counts(p["emissions"], p["lengths"], crf)
    for b, n in enumerate(p["lengths"]):
        c = _counts(*_distribution(p["emissions"][b, :n], p["transitions"], p["start"], p["end"]), k=3)
        np.testing.assert_allclose(node[b, :n], c["node"], atol=1e-9)
        assert not node[b, n:].any(), "padding positions must be zero"
        np.testing.assert_allclose(pairs[b], c["pairs"], atol=1e-9)
        assert pairs[b].sum() == pytest.approx(n - 1)


@pytest.mark.parametrize("seed", [0, 3])
def test_cross_entropy_and_its_gradient_equal_brute_force(seed: int) -> None:
    """CE(q, p_s) = -sum_y q(y) log p_s(y), q a teacher CRF, p_s the student's; the gradient of CE is the
    student's expected counts minus the teacher's (emissions, transitions, start, end)."""
    import tensorflow as tf
    from keras import ops

    from nerservice.model.decode import CrfParams, expected_counts

    student, teacher = random_crf_problem(seed), random_crf_problem(seed + 100)
    lengths = student["lengths"]
    t_em = teacher["emissions"]
    node, pairs = expected_counts(t_em, lengths, CrfParams(teacher["transitions"], teacher["start"], teacher["end"]))
    crf = _crf(student)
    em = tf.Variable(student["emissions"].astype("float32"))
    with tf.GradientTape() as tape:
        ce = crf.cross_entropy(em, node.astype("float32"), pairs.astype("float32"), lengths)
        total = tf.reduce_sum(ce)
    g_em, g_tr, g_st, g_en = tape.gradient(total, [em, crf.transitions, crf.start, crf.end])
    ce = np.asarray(ops.convert_to_numpy(ce), dtype=np.float64)
    want_tr, want_st, want_en = np.zeros((3, 3)), np.zeros(3), np.zeros(3)
    for b, n in enumerate(lengths):
        paths, q = _distribution(t_em[b, :n], teacher["transitions"], teacher["start"], teacher["end"])
        _, ps = _distribution(student["emissions"][b, :n], student["transitions"], student["start"], student["end"])
        assert ce[b] == pytest.approx(-(q * np.log(ps)).sum(), abs=2e-4), f"sentence {b}"
        cq, cs = _counts(paths, q, 3), _counts(paths, ps, 3)
        np.testing.assert_allclose(np.asarray(g_em)[b, :n], cs["node"] - cq["node"], atol=2e-5)
        assert not np.asarray(g_em)[b, n:].any(), "padding gets no gradient"
        want_tr += cs["pairs"] - cq["pairs"]
        want_st += cs["start"] - cq["start"]
        want_en += cs["end"] - cq["end"]
    np.testing.assert_allclose(np.asarray(g_tr), want_tr, atol=5e-5)
    np.testing.assert_allclose(np.asarray(g_st), want_st, atol=5e-5)
    np.testing.assert_allclose(np.asarray(g_en), want_en, atol=5e-5)


def test_a_one_hot_target_gives_the_negative_log_likelihood() -> None:
    from keras import ops

    from nerservice.distil.targets import gold_counts

    p = random_crf_problem(4)
    crf = _crf(p)
    b, t, k = p["emissions"].shape
    unary, pairs = np.zeros((b, t, k), "float32"), np.zeros((b, k, k), "float32")
    for i, n in enumerate(p["lengths"]):
        unary[i, :n], pairs[i] = gold_counts(p["tags"][i, :n], k)
    ce = ops.convert_to_numpy(crf.cross_entropy(p["emissions"].astype("float32"), unary, pairs, p["lengths"]))
    nll = -ops.convert_to_numpy(crf.log_likelihood(p["emissions"].astype("float32"), p["tags"], p["lengths"]))
    np.testing.assert_allclose(ce, nll, atol=1e-4)


def test_empty_rows_contribute_nothing() -> None:
    from keras import ops

    p = random_crf_problem(6, lengths=(3, 0, 2))
    crf = _crf(p)
    rng = np.random.default_rng(0)
    b, t, k = p["emissions"].shape
    ce = ops.convert_to_numpy(crf.cross_entropy(p["emissions"].astype("float32"), rng.random((b, t, k)).astype("float32"),
                                                rng.random((b, k, k)).astype("float32"), p["lengths"]))
    assert ce[1] == 0.0


def _block(p: dict[str, np.ndarray], cols: slice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return p["transitions"][cols, cols], p["start"][cols], p["end"][cols]


@pytest.mark.parametrize("seed", [0, 5])
def test_a_multi_corpus_students_loss_is_the_sum_of_its_heads_cross_entropies(seed: int) -> None:
    """Two heads (columns 0-1 and 2-4) of one K = 5 CRF: the multi-corpus student's loss against both heads'
    targets side by side is CE(q_0, p_0) + CE(q_1, p_1), each head's distributions enumerated on its own
    columns and its own block of the transitions (off-block transitions must not matter)."""
    import tensorflow as tf
    from keras import ops

    from nerservice.distil.student import multi_head_cross_entropy

    heads = [slice(0, 2), slice(2, 5)]
    head_cols = np.array([[1, 1, 0, 0, 0], [0, 0, 1, 1, 1]], dtype=np.float32)
    lengths = (3, 2, 1, 0)
    student = random_crf_problem(seed, k=5, lengths=lengths, pad=1)
    teacher = random_crf_problem(seed + 50, k=5, lengths=lengths, pad=1)
    b, t, k = student["emissions"].shape
    unary, pairs = np.zeros((b, t, k), np.float32), np.zeros((b, k, k), np.float32)
    want = np.zeros(b)
    for i, n in enumerate(lengths):
        if n == 0:
            continue
        for cols in heads:
            paths, q = _distribution(teacher["emissions"][i, :n, cols], *_block(teacher, cols))
            _, ps = _distribution(student["emissions"][i, :n, cols], *_block(student, cols))
            c = _counts(paths, q, cols.stop - cols.start)
            unary[i, :n, cols], pairs[i, cols, cols] = c["node"], c["pairs"]
            want[i] += -(q * np.log(ps)).sum()
    crf = _crf(student)
    em = tf.Variable(student["emissions"].astype("float32"))
    with tf.GradientTape() as tape:
        got = multi_head_cross_entropy(crf, em, head_cols, unary, pairs, student["lengths"])
        total = tf.reduce_sum(got)
    np.testing.assert_allclose(np.asarray(ops.convert_to_numpy(got), np.float64), want, atol=3e-4)
    g_tr = np.asarray(tape.gradient(total, crf.transitions))
    assert not g_tr[0:2, 2:5].any() and not g_tr[2:5, 0:2].any(), "off-block transitions are never trained"
    # one head over every column is exactly the single-corpus cross-entropy
    one = multi_head_cross_entropy(crf, em, np.ones((1, k), np.float32), unary / 2, pairs / 2, student["lengths"])
    single = crf.cross_entropy(em, unary / 2, pairs / 2, student["lengths"])
    np.testing.assert_allclose(ops.convert_to_numpy(one), ops.convert_to_numpy(single), atol=1e-4)
