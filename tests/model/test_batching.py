"""Length-bucketed batches: reproducible with a seed, every index exactly once, buckets respected."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nerservice.model.batching import bucketed_batches

LENGTHS = np.random.default_rng(0).integers(1, 60, 203).tolist()


def _flat(batches) -> list[int]:
    return [int(i) for b in batches for i in b]


def test_same_seed_same_batches_other_seed_other_order() -> None:
    a = bucketed_batches(LENGTHS, batch_size=16, bucket_size=8, seed=5)
    b = bucketed_batches(LENGTHS, batch_size=16, bucket_size=8, seed=5)
    c = bucketed_batches(LENGTHS, batch_size=16, bucket_size=8, seed=6)
    assert [x.tolist() for x in a] == [x.tolist() for x in b]
    assert [x.tolist() for x in a] != [x.tolist() for x in c]


def test_seed_gives_the_same_batches_in_a_fresh_process() -> None:
    import subprocess
    import sys

    code = ("from nerservice.model.batching import bucketed_batches; import numpy as np; "
            "L = np.random.default_rng(0).integers(1, 60, 203).tolist(); "
            "print([b.tolist() for b in bucketed_batches(L, batch_size=16, bucket_size=8, seed=5)])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "999", "PATH": "/usr/bin:/bin"}).stdout.strip()
    assert out == str([b.tolist() for b in bucketed_batches(LENGTHS, batch_size=16, bucket_size=8, seed=5)])


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(1, 300), max_size=120), batch_size=st.integers(1, 40),
       bucket_size=st.integers(1, 16), seed=st.one_of(st.none(), st.integers(0, 2**32 - 1)),
       budget=st.one_of(st.none(), st.integers(1, 2000)))
def test_every_index_exactly_once_and_batches_bounded(lengths, batch_size, bucket_size, seed, budget) -> None:
    batches = bucketed_batches(lengths, batch_size=batch_size, bucket_size=bucket_size, seed=seed,
                               token_budget=budget)
    assert sorted(_flat(batches)) == list(range(len(lengths)))
    for b in batches:
        assert 1 <= len(b) <= batch_size
        if budget is not None and len(b) > 1:  # a lone over-long sentence still gets its own batch
            assert max(lengths[i] for i in b) * len(b) <= budget
    # Bucketing: batches are contiguous runs of the length-bucket order, so two batches never interleave
    # buckets (each batch's key range overlaps another's at most at the ends).
    keys = [sorted(-(-lengths[i] // bucket_size) for i in b) for b in batches]
    ranges = sorted((k[0], k[-1]) for k in keys)
    for (lo1, hi1), (lo2, hi2) in zip(ranges, ranges[1:]):
        assert hi1 <= lo2


def test_bucketing_keeps_padding_small() -> None:
    """Padded tokens with bucketing are a fraction of what random batches would waste."""
    def waste(batches) -> int:
        return sum(max(LENGTHS[i] for i in b) * len(b) - sum(LENGTHS[i] for i in b) for b in batches)

    bucketed = bucketed_batches(LENGTHS, batch_size=16, bucket_size=8, seed=1)
    rng = np.random.default_rng(1)
    perm = rng.permutation(len(LENGTHS))
    random_batches = [perm[i:i + 16] for i in range(0, len(perm), 16)]
    assert waste(bucketed) < 0.3 * waste(random_batches)


def test_without_seed_the_order_is_by_length_and_deterministic() -> None:
    batches = bucketed_batches([5, 1, 9, 2, 5], batch_size=2, bucket_size=1, seed=None)
    assert [b.tolist() for b in batches] == [[1, 3], [0, 4], [2]]


def test_empty_input() -> None:
    assert bucketed_batches([], batch_size=4, bucket_size=8, seed=0) == []


def test_epoch_plans_differ_by_epoch_and_drop_batches_too_small_for_the_workers() -> None:
    from nerservice.config import NerConfig
    from nerservice.training.loop import epoch_plan

    cfg = NerConfig().with_overrides({"training.batch_size": 8, "training.bucket_size": 4})
    lengths = [3] * 17  # one bucket: batches of 8, 8, 1
    e0, e1 = epoch_plan(lengths, cfg, 0), epoch_plan(lengths, cfg, 1)
    assert sorted(_flat(e0)) == list(range(17))
    assert [b.tolist() for b in e0] != [b.tolist() for b in e1]
    assert [b.tolist() for b in epoch_plan(lengths, cfg, 0)] == [b.tolist() for b in e0]
    two = epoch_plan(lengths, cfg, 0, world=2)
    assert sorted(len(b) for b in two) == [8, 8]  # the 1-sentence batch cannot feed two workers


@pytest.mark.parametrize("world", [2, 3])
def test_worker_slices_of_a_global_batch_partition_it(world: int) -> None:
    """What run_epochs does with rank/world: slices [rank::world] cover each global batch exactly once."""
    from nerservice.config import NerConfig
    from nerservice.training.loop import epoch_plan

    plan = epoch_plan(LENGTHS, NerConfig(), 0, world=world)
    for b in plan:
        parts = [b[r::world] for r in range(world)]
        assert all(len(p) for p in parts)
        assert sorted(_flat(parts)) == sorted(b.tolist())
