"""Shared fixtures: a demo corpus written by us, a tiny model trained on it once per session (slow tier),
and a tiny random-weight model built without training (fast tier)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from helpers import TINY_OVERRIDES, tiny_config  # noqa: E402,F401  (re-exported for fixtures)


@pytest.fixture(scope="session")
def demo_corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from nerservice.demo_corpus import write_demo_corpus

    return write_demo_corpus(tmp_path_factory.mktemp("demo-corpus"), sizes=(400, 80, 80), seed=11)


@pytest.fixture(scope="session")
def tiny_random_model_dir(tmp_path_factory: pytest.TempPathFactory, demo_corpus: dict[str, Path]) -> Path:
    """A saved model folder with random weights, built in about a second and never trained: the fast tier's
    model for the Extractor, readers and API ``TestClient`` tests.  Its vocabularies come from the demo
    corpus (so it has that corpus' tag set); its predictions are arbitrary but deterministic (seeded)."""
    from nerservice.artifacts.model_folder import save_model
    from nerservice.data import read_corpus
    from nerservice.model.tagger import build_tagger
    from nerservice.training.trainer import build_vocabularies

    config = tiny_config()
    vocabs = build_vocabularies(read_corpus(demo_corpus["train"]).sentences)
    model = build_tagger(config.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                         n_tags=len(vocabs.tags), seed=config.training.seed)
    return save_model(tmp_path_factory.mktemp("random-model") / "model", model=model, vocabs=vocabs,
                      config=config, metrics={}, lineage={"note": "random weights, test fixture"})


@pytest.fixture(scope="session")
def tiny_training(tmp_path_factory: pytest.TempPathFactory, demo_corpus: dict[str, Path]):
    """A model trained for real on the demo corpus (TrainOutcome)."""
    from nerservice.data import read_corpus
    from nerservice.training.trainer import train

    out = tmp_path_factory.mktemp("tiny-run")
    return train(tiny_config(), train_data=read_corpus(demo_corpus["train"]).sentences,
                 dev_data=read_corpus(demo_corpus["dev"]).sentences,
                 test_data=read_corpus(demo_corpus["test"]).sentences, out_dir=out, progress=False)


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_training) -> Path:
    return tiny_training.best_dir


@pytest.fixture(scope="session")
def contrary_member_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second ensemble member that disagrees strongly with the tiny model: its weights with the emission
    layer scaled by -1.3, so the pair's mean emissions point the other way and the ensemble decides
    differently from either member alone (a random untrained member would be too quiet to change anything)."""
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.model_folder import save_model

    base = load_model(tiny_model_dir)
    layer = base.model.emission
    layer.set_weights([w * -1.3 for w in layer.get_weights()])
    return save_model(tmp_path_factory.mktemp("member") / "contrary", model=base.model, vocabs=base.vocabs,
                      config=base.config)


@pytest.fixture(scope="session")
def tiny_ensemble_dir(tiny_model_dir: Path, contrary_member_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from nerservice.artifacts.ensemble_folder import save_ensemble

    return save_ensemble(tmp_path_factory.mktemp("ensemble") / "ens", [tiny_model_dir, contrary_member_dir])


@pytest.fixture(scope="session")
def tiny_multi_corpora(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two synthetic corpora with different label sets and their corpora config (helpers.write_two_corpora)."""
    from helpers import write_two_corpora

    return write_two_corpora(tmp_path_factory.mktemp("two-corpora"))


@pytest.fixture(scope="session")
def tiny_multi_run(tiny_multi_corpora: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A multi-corpus model trained for real through `nerservice train --corpora` (the run folder)."""
    from nerservice.cli.main import main

    out = tmp_path_factory.mktemp("multi-run")
    sets = [x for k, v in {**TINY_OVERRIDES, "training.patience": 3}.items()
            for x in ("--set", f"{k}={json.dumps(v)}")]
    assert main(["train", "--corpora", str(tiny_multi_corpora), "--out", str(out), "--quiet", *sets]) == 0
    return out



# --- Parallel runs: `make test` runs `pytest -n 2 --dist loadfile` (pytest-xdist) ---------------------------
# A unit of work for a worker is a test file, so a module's fixtures are built once, on one worker, except that
# the files sharing the session Spark cluster (tests/spark/conftest.py) are one unit: the run starts one
# cluster and never runs two Spark jobs on it at once. Units run longest first (their seconds in
# tests/durations.json, refreshed with scripts/test_durations.py from a run's --junitxml), so the two workers
# finish close together; a unit not listed there counts 0 s and runs last.
# (Our own scheduler, not `--dist loadgroup`: xdist 3.8 groups by rewriting item._nodeid, which pytest 9.2
# no longer reads, so loadgroup silently ran every test on its own.)
SPARK_CLUSTER_FILES = frozenset({"tests/spark/test_spark_jobs.py", "tests/spark/test_spark_documents.py",
                                 "tests/spark/test_spark_multi.py"})
DURATIONS = Path(__file__).with_name("durations.json")


def work_unit(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return "spark-cluster" if path in SPARK_CLUSTER_FILES else path


def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN001,ANN201
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class UnitScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False  # keep our longest-first order (xdist would sort by test count)
    return UnitScheduling(config, log)


# --- The serial tier: `make test` then runs `pytest -m serial` alone, a process of its own for the one or two tests
# marked serial. Importing every test module only to deselect all but those took ~15 s (TensorFlow, JAX, pyspark,
# schemathesis ... at module level) of a tier nothing else runs beside. With exactly that marker expression, a
# test file whose text never says "serial" is not imported: it cannot mark a test serial. Every other run
# collects everything, and checks (below) that each serial test's file does say it.
def _says_serial(path: Path) -> bool:
    return "serial" in path.read_text(encoding="utf-8", errors="replace")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if config.getoption("markexpr", "") != "serial" or not collection_path.is_file():
        return None
    if not (collection_path.name.startswith("test_") and collection_path.suffix == ".py"):
        return None
    return None if _says_serial(collection_path) else True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unsaid = sorted({str(i.path) for i in items if i.get_closest_marker("serial") and not _says_serial(Path(i.path))})
    if unsaid:
        raise pytest.UsageError(f"{unsaid} mark tests serial without the word in the file (a conftest hook?): "
                                "`pytest -m serial` skips importing such files (tests/conftest.py)")
    stray = sorted({i.nodeid.split("::", 1)[0] for i in items if "spark_cluster" in getattr(i, "fixturenames", ())}
                   - SPARK_CLUSTER_FILES)
    if stray:
        raise pytest.UsageError(f"{stray} use the spark_cluster fixture: add them to SPARK_CLUSTER_FILES in "
                                "tests/conftest.py so parallel runs keep one cluster and one Spark job at a time")
    if not hasattr(config, "workerinput"):  # serial runs keep collection order
        return
    seconds: dict[str, float] = json.loads(DURATIONS.read_text(encoding="utf-8")) if DURATIONS.exists() else {}
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(work_unit(item.nodeid), []).append(item)
    order = sorted(units, key=lambda u: -seconds.get(u, 0.0))  # stable: ties keep collection order
    items[:] = [item for unit in order for item in units[unit]]
