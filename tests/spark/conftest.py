"""Fixtures for the Spark job tests: one real standalone cluster (master + 2 workers, 1 core and 2g each,
127.0.0.1 only) shared by the whole session, and a demo corpus with injected bad lines."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from .cluster import SparkCluster
from .job_helpers import inject_bad_lines


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    cluster = SparkCluster(tmp_path_factory.mktemp("spark-cluster"), workers=2, cores=1, memory="2g")
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def bad_corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Demo corpus (400/80/80) + two broken sentences in train + an empty file given as training input."""
    from nerservice.demo_corpus import write_demo_corpus

    folder = tmp_path_factory.mktemp("bad-corpus")
    paths = write_demo_corpus(folder, sizes=(400, 80, 80), seed=11)
    broken = inject_bad_lines(paths["train"])
    empty = folder / "empty.tsv"
    empty.write_text("", encoding="utf-8")
    return {"paths": paths, "broken_lines": broken, "empty": empty, "blocks": 400 + 80 + 80}

