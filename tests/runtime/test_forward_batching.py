"""How the ONNX predictor cuts a call into forward batches (exact-length sort, a padded-token cap) and the
word-feature cache's keys, bound and thread safety."""
from __future__ import annotations

import threading

import numpy as np

from nerservice.runtime.word_cache import WordFeatureCache

WORDS = ["the", "of", "asthma", "BRCA1", "mutations", "lithium", "x" * 40, "Ünïcödé", "cisplatin", "."]


def sentences(n: int, seed: int = 0) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [[WORDS[int(i)] for i in rng.integers(0, len(WORDS), int(rng.integers(1, 70)))] for _ in range(n)]


def test_forward_batches_are_sorted_by_exact_length_capped_and_put_back_in_order(exports) -> None:
    from nerservice.artifacts.formats import load_model

    pred = load_model(exports["tiny"]).predictor()
    assert pred.exact_lengths and pred.forward_tokens == 1024
    sents = sentences(300)
    forward, shapes = pred._forward, []

    def recording(batch: dict[str, np.ndarray]) -> np.ndarray:
        lens = batch["lengths"]
        shapes.append((batch["word_index"].shape, int(lens.min()), int(lens.max())))
        return forward(batch)

    pred._forward = recording
    together = pred.emissions(sents)
    assert len(shapes) > 1
    for (b, t), shortest, longest in shapes:
        assert t == longest and (b * t <= 1024 or b == 1)
    padded = sum(b * t for (b, t), _, _ in shapes)
    shapes.clear()
    pred.exact_lengths, pred.forward_tokens = False, None  # the Keras path's batching: 8-token buckets
    old = pred.emissions(sents)
    padded_before = sum(b * t for (b, t), _, _ in shapes)
    assert padded <= 1.15 * sum(map(len, sents)) < padded_before  # sorted by exact length: little padding
    for a, b in zip(together, old):  # the batching changes the work, not the results
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
    pred._forward = forward
    for i in (0, 7, 150, 299):  # each sentence's emissions come back in its own place
        np.testing.assert_allclose(together[i], pred.emissions([sents[i]])[0], rtol=0, atol=1e-5)


def test_cache_keys_ignore_the_batch_char_width_and_tell_rows_apart() -> None:
    keys = WordFeatureCache.keys
    narrow = np.array([[5, 0, 0, 0]], dtype=np.int32)
    wide = np.array([[5, 0, 0, 0, 0, 0, 0, 0]], dtype=np.int32)
    assert keys(np.array([3]), narrow) == keys(np.array([3]), wide)
    rows = np.array([[5, 0, 0], [5, 256, 0], [261, 0, 0], [5, 1, 0], [0, 0, 0]], dtype=np.int32)
    assert len(set(keys(np.array([3, 3, 3, 3, 3]), rows))) == 5
    assert keys(np.array([3]), rows[:1]) != keys(np.array([4]), rows[:1])
    assert keys(np.array([256]), rows[4:]) != keys(np.array([1]), rows[4:])


def _compute(ids: np.ndarray, chars: np.ndarray) -> np.ndarray:
    return np.stack([ids.astype(np.float32), chars.sum(axis=1).astype(np.float32)], axis=1)


def test_cache_is_bounded_evicts_the_least_recent_and_is_safe_across_threads() -> None:
    cache = WordFeatureCache(capacity=50, dim=2)
    errors: list[str] = []

    def worker(seed: int) -> None:
        r = np.random.default_rng(seed)
        for _ in range(200):
            ids = r.integers(0, 120, 30).astype(np.int32)
            chars = np.zeros((30, 6), dtype=np.int32)
            chars[:, 0] = ids + 1
            got = cache.features(ids, chars, _compute)
            if not np.array_equal(got, _compute(ids, chars)):
                errors.append(f"thread {seed}: wrong rows")

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    st = cache.stats()
    assert st["entries"] == 50 and st["hits"] > 0 and st["rows_bytes"] == 50 * 2 * 4
    small = WordFeatureCache(capacity=2, dim=2)
    calls: list[int] = []

    def counting(ids: np.ndarray, chars: np.ndarray) -> np.ndarray:
        calls.append(len(ids))
        return _compute(ids, chars)

    one = lambda i: (np.array([i], dtype=np.int32), np.array([[i + 1, 0]], dtype=np.int32))  # noqa: E731
    for i in (1, 2, 1, 3, 1, 2):  # 2 is evicted by 3 (1 was used more recently), then computed again
        small.features(*one(i), counting)
    assert calls == [1, 1, 1, 1]
