"""``spark_jobs/predict.py --head NAME`` in-process (no Spark): the option reaches the Extractor options, the
executor cache keeps one Extractor per head, and a head the model cannot serve fails on the driver with the
Extractor's own coded error before Spark is touched. The real-cluster run: tests/spark/test_spark_multi.py."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from random_model import build_random_multi_model  # tests/random_model.py


@pytest.fixture(scope="module")
def multi_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_random_multi_model(tmp_path_factory.mktemp("multi") / "model")


@pytest.fixture(scope="module")
def multi_ensemble_dir(multi_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from nerservice.artifacts.ensemble_folder import save_ensemble

    other = build_random_multi_model(tmp_path_factory.mktemp("multi2") / "model", seed=8)
    return save_ensemble(tmp_path_factory.mktemp("multi-ens") / "ens", [multi_dir, other])


@pytest.fixture
def empty_cache(monkeypatch: pytest.MonkeyPatch) -> dict[Any, Any]:
    from nerservice.distributed import batch_predict

    cache: dict[Any, Any] = {}
    monkeypatch.setattr(batch_predict, "_EXTRACTORS", cache)
    return cache


class _Count:
    """Stands in for a Spark accumulator."""

    def __init__(self, zero: Any) -> None:
        self.value = zero

    def add(self, v: Any) -> None:
        if isinstance(self.value, list):
            self.value.extend(v)
        elif isinstance(self.value, dict):
            for k, n in v.items():
                self.value[k] = self.value.get(k, 0) + n
        else:
            self.value += v


class _NoSpark:
    """A Spark session that must not be used: any use fails the test with an AssertionError."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the driver used Spark ({name}) before checking the request")


def test_parse_args_takes_head() -> None:
    from spark_jobs.predict import parse_args

    base = ["--model", "m", "--input", "in.txt", "--output", "out"]
    assert parse_args(base).head is None
    assert parse_args([*base, "--head", "chem"]).head == "chem"


def test_main_refuses_a_wrong_head_before_a_spark_session_starts(multi_dir: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from nerservice.distributed import session
    from nerservice.errors import ConfigError
    from spark_jobs.predict import main

    def no_session(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a Spark session (and its executors) started for a request the model cannot serve")

    monkeypatch.setattr(session, "get_session", no_session)
    with pytest.raises(ConfigError, match=r"its heads are \['dis', 'chem'\]"):
        main(["--model", str(multi_dir), "--input", "in.txt", "--output", str(tmp_path / "out"), "--head", "genes"])
    assert not (tmp_path / "out").exists()


def test_the_executor_cache_keeps_one_extractor_per_head(multi_dir: Path, empty_cache: dict[Any, Any]) -> None:
    from nerservice.distributed.batch_predict import extractor_for

    loads = _Count(0)
    dis = extractor_for(str(multi_dir), loads=loads, head="dis", runtime="keras")
    chem = extractor_for(str(multi_dir), loads=loads, head="chem", runtime="keras")
    # a worker reused for the other head's job must not answer with the first head's types
    assert dis is not chem and (dis.labels, chem.labels) == (["Disease"], ["Chemical"])
    assert extractor_for(str(multi_dir / "."), loads=loads, head="chem", runtime="keras") is chem  # same key
    assert extractor_for(str(multi_dir), loads=loads, runtime="keras").labels == ["Chemical", "Disease"]
    assert loads.value == 3 and len(empty_cache) == 3


def test_documents_go_through_the_same_cache_with_the_head(multi_dir: Path, empty_cache: dict[Any, Any]) -> None:
    from nerservice.distributed.batch_predict import extractor_for
    from nerservice.distributed.predict_docs import annotate_partition, parse_input

    text = b"1|t|Patients with colorectal cancer took aspirin and cisplatin.\n1|a|Asthma after therapy.\n\n"
    options = {"head": "chem", "runtime": "keras"}
    counts = _Count({})
    out = list(annotate_partition(iter(parse_input(("file:/in/a.pubtator", text), fmt="pubtator")),
                                  model_dir=str(multi_dir), out_format="jsonl", output="", options=options,
                                  errors=_Count([]), counts=counts))
    assert len(out) == 1 and counts.value["documents"] == 1
    assert len(empty_cache) == 1
    assert extractor_for(str(multi_dir), **options) is next(iter(empty_cache.values()))
    assert next(iter(empty_cache.values())).labels == ["Chemical"]


@pytest.mark.parametrize("which, head", [("multi", "genes"), ("ensemble", "genes"), ("single", "dis")])
def test_a_head_the_model_cannot_serve_fails_on_the_driver_as_the_extractor_fails(
        which: str, head: str, multi_dir: Path, multi_ensemble_dir: Path, tiny_random_model_dir: Path,
        tmp_path: Path) -> None:
    from nerservice.distributed.predict_job import PredictRequest, run_predict
    from nerservice.errors import ConfigError
    from nerservice.inference import Extractor

    model = {"multi": multi_dir, "ensemble": multi_ensemble_dir, "single": tiny_random_model_dir}[which]
    with pytest.raises(ConfigError) as extractor_error:
        Extractor.load(model, head=head, runtime="keras")
    out = tmp_path / "preds"
    for input_format in ("jsonl", "pubtator"):  # the text path and the document path
        req = PredictRequest(inputs=[str(tmp_path / "in")], output=str(out), model=str(model),
                             input_format=input_format, output_format="jsonl", options={"head": head})
        with pytest.raises(ConfigError) as driver_error:
            run_predict(_NoSpark(), req)
        assert driver_error.value.code == extractor_error.value.code == "NER100"
        assert str(driver_error.value) == str(extractor_error.value)
    assert not out.exists()


def test_a_head_the_model_has_passes_the_driver_check(multi_dir: Path, multi_ensemble_dir: Path) -> None:
    from nerservice.distributed.predict_job import resolve_model

    # the whole job with --head on a real cluster (summary, output): test_spark_multi.py
    assert resolve_model(str(multi_ensemble_dir), head="chem") == multi_ensemble_dir.resolve()
    assert resolve_model(str(multi_dir), head="dis") == multi_dir.resolve()
