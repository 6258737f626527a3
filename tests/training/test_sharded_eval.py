"""Dev evaluation split over workers: ranks decode disjoint shares, all-gather them through a real barrier
(``FolderBarrier``, one thread per rank) and score exactly what one process scores."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from nerservice.data import Sentence
from nerservice.distributed.local_barrier import FolderBarrier
from nerservice.errors import DistributedError
from nerservice.metrics import evaluate_tags
from nerservice.training.sharded_eval import sharded_evaluator, sharded_predictions


class _Predictor:
    """Tags every capitalised token B-X: deterministic, so one process and the shards must agree."""

    def __init__(self) -> None:
        self.decoded: list[int] = []

    def predict_tags(self, sentences):
        self.decoded.append(len(sentences))
        return [["B-X" if t[:1].isupper() else "O" for t in s] for s in sentences]


def _corpus(n: int) -> list[Sentence]:
    words = ["Aspirin", "and", "Fever", "were", "seen", "Lupus"]
    return [Sentence(tuple(words[i % 3:i % 3 + 3]), ("B-X", "O", "O"), "dev.tsv", i + 1) for i in range(n)]


@pytest.mark.parametrize("n,world", [(10, 3), (2, 3), (7, 2)])
def test_shards_reassemble_to_the_single_process_result(tmp_path: Path, n: int, world: int) -> None:
    corpus = _corpus(n)
    expected = evaluate_tags([list(s.tags) for s in corpus], _Predictor().predict_tags([s.tokens for s in corpus]))
    results: dict[int, object] = {}
    predictors = [_Predictor() for _ in range(world)]

    def rank_main(rank: int) -> None:
        ctx = FolderBarrier(tmp_path, rank=rank, world=world, timeout_s=30)
        results[rank] = sharded_evaluator(predictors[rank], corpus, rank=rank, world=world, gather=ctx.allGather)

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == list(range(world))
    assert all(results[r] == expected for r in range(world))
    # Each rank decoded only its share.
    assert [sum(p.decoded) for p in predictors] == [len(corpus[r::world]) for r in range(world)]


def test_a_rank_with_a_different_dev_set_is_a_coded_error() -> None:
    tokens = [("A",), ("b",), ("C",)]
    with pytest.raises(DistributedError) as err:
        sharded_predictions(tokens, _Predictor().predict_tags, rank=0, world=2,
                            gather=lambda m: [m, '[["O"], ["O"]]'])  # rank 1 claims two sentences, owns one
    assert err.value.code.startswith("NER")
