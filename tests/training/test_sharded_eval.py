"""Dev evaluation split over workers: ranks decode disjoint shares, count them, sum the counts (here over
threads, one per rank; on the workers it is the training collective, ``training/collective.py``, exercised by
tests/spark/test_spark_jobs.py and tests/spark/test_local_barrier.py) and score exactly what one process
scores on the whole dev set -- several entity types, wrong types and boundaries, I- tags that start no
entity, more ranks than sentences."""
from __future__ import annotations

import random
import threading

import numpy as np
import pytest

from nerservice.data import Sentence
from nerservice.errors import DistributedError
from nerservice.metrics import evaluate_tags
from nerservice.training.sharded_eval import count_layout, sharded_evaluator

TAGS = ["O", "B-Disease", "I-Disease", "B-Chemical", "I-Chemical", "B-Gene", "I-Gene"]


class _Predictor:
    """A deterministic function of the tokens (so one process and the shards must agree) that makes every
    kind of mistake: each token's tag is drawn from a generator seeded by the token."""

    def __init__(self) -> None:
        self.decoded: list[int] = []

    def predict_tags(self, sentences):
        self.decoded.append(len(sentences))
        return [[TAGS[random.Random(t).randrange(len(TAGS))] for t in s] for s in sentences]


def _corpus(n: int, seed: int = 3) -> list[Sentence]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        tags: list[str] = []
        for _ in range(rng.randint(1, 9)):
            kind = rng.choice(["Disease", "Chemical", "Gene", None, None])
            tags += ["O"] if kind is None else [f"B-{kind}"] + [f"I-{kind}"] * rng.randint(0, 2)
        tokens = tuple(f"w{rng.randrange(40)}" for _ in tags)
        out.append(Sentence(tokens, tuple(tags), "dev.tsv", i + 1))
    return out


class _ThreadSum:
    """Element-wise sum over ``world`` threads: the stand-in for the workers' all-reduce."""

    def __init__(self, world: int) -> None:
        self.parts: list[np.ndarray | None] = [None] * world
        self.barrier = threading.Barrier(world)
        self.calls = 0

    def for_rank(self, rank: int):
        def all_sum(v: np.ndarray) -> np.ndarray:
            assert v.dtype == np.int64 and v.ndim == 1
            self.parts[rank] = v
            self.barrier.wait(10)
            total = np.sum(np.stack(self.parts), axis=0)  # type: ignore[arg-type]
            self.barrier.wait(10)
            self.calls += rank == 0
            return total
        return all_sum


def _run(corpus: list[Sentence], world: int, predictors=None, labels=TAGS):  # noqa: ANN001, ANN202
    predictors = predictors or [_Predictor() for _ in range(world)]
    summer, results, errors = _ThreadSum(world), {}, {}

    def rank_main(rank: int) -> None:
        try:
            results[rank] = sharded_evaluator(predictors[rank], corpus, rank=rank, world=world,
                                              all_sum=summer.for_rank(rank), labels=labels)
        except Exception as exc:  # noqa: BLE001 -- handed to the test thread
            errors[rank] = exc

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results, errors, predictors, summer


@pytest.mark.parametrize("n,world", [(25, 1), (25, 2), (25, 3), (7, 4), (2, 3), (1, 5)])
def test_summed_counts_score_exactly_the_single_process_result(n: int, world: int) -> None:
    corpus = _corpus(n)
    expected = evaluate_tags([list(s.tags) for s in corpus], _Predictor().predict_tags([s.tokens for s in corpus]))
    assert len(expected["per_type"]) >= 2 or n < 5  # several types take part
    results, errors, predictors, summer = _run(corpus, world)
    assert not errors and sorted(results) == list(range(world))
    assert all(results[r] == expected for r in range(world))  # the same dict on every rank, float for float
    assert summer.calls == 1  # one sum per evaluation
    # Each rank decoded only its share (ranks past the end of dev decode nothing).
    assert [sum(p.decoded) for p in predictors] == [len(corpus[r::world]) for r in range(world)]


def test_the_layout_covers_every_count_of_the_tag_set() -> None:
    from nerservice.metrics import count_tags

    corpus = _corpus(40, seed=8)
    counts = count_tags([list(s.tags) for s in corpus], _Predictor().predict_tags([s.tokens for s in corpus]))
    assert set(counts) <= set(count_layout(TAGS))
    assert count_layout(reversed(TAGS)) == count_layout(TAGS)  # one order whatever order the tags come in


def test_a_tag_outside_the_agreed_set_or_a_different_dev_set_is_a_coded_error() -> None:
    class Stray(_Predictor):  # a tag neither the model's tag set nor dev's gold tags hold
        def predict_tags(self, sentences):
            return [["B-Species", *tags[1:]] for tags in super().predict_tags(sentences)]

    corpus = _corpus(6)
    _, errors, _, _ = _run(corpus, 2, predictors=[Stray(), Stray()])
    assert sorted(errors) == [0, 1]
    assert all(isinstance(e, DistributedError) and e.code.startswith("NER") for e in errors.values())

    def one_rank_sum(v: np.ndarray) -> np.ndarray:  # the other rank held a dev set of 2 sentences
        other = np.zeros_like(v)
        other[0] = 2
        return v + other

    with pytest.raises(DistributedError, match="counted 5 sentences"):
        sharded_evaluator(_Predictor(), corpus, rank=0, world=2, all_sum=one_rank_sum, labels=TAGS)
