"""A recipe's rerun reads an unchanged ensemble's scores back (``ensemble_folder.evaluated_before``) and
rebuilds it when anything it was made or scored from differs."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from nerservice.artifacts.ensemble_folder import save_ensemble
from nerservice.data import read_corpus
from nerservice.lineage import corpus_fingerprint
from nerservice.metrics import evaluate_predictor
from nerservice.training.recipes import save_evaluated_ensemble


class Counting:
    """The real evaluator, counting its calls: a read-back must not score anything."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, predictor: Any, data: Any) -> dict[str, Any]:
        self.calls += 1
        return evaluate_predictor(predictor, data)


def splits(demo_corpus: dict[str, Path]) -> dict[str, Any]:
    return {name: read_corpus(demo_corpus[name]).sentences for name in ("dev", "test")}


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_an_unchanged_ensemble_is_read_back_without_scoring_or_writing(tiny_model_dir, contrary_member_dir,
                                                                       demo_corpus, tmp_path) -> None:
    members, data, out = [tiny_model_dir, contrary_member_dir], splits(demo_corpus), tmp_path / "ens"
    first = Counting()
    _, metrics = save_evaluated_ensemble(out, members, data, evaluate=first)
    assert first.calls == 2  # dev and test
    lineage = json.loads((out / "lineage.json").read_text())
    assert set(lineage["evaluated_on"]) == {"dev", "test"}
    before = snapshot(out)
    again = Counting()
    path, metrics_again = save_evaluated_ensemble(out, members, data, evaluate=again)
    assert again.calls == 0 and path == out
    assert metrics_again == json.loads(json.dumps(metrics))  # what the first call scored, as saved
    assert snapshot(out) == before  # not rewritten


def test_other_data_or_members_are_scored_again(tiny_model_dir, contrary_member_dir, demo_corpus, tmp_path) -> None:
    members, data, out = [tiny_model_dir, contrary_member_dir], splits(demo_corpus), tmp_path / "ens"
    save_evaluated_ensemble(out, members, data)
    fewer = {"dev": data["dev"], "test": data["test"][:-1]}  # one test sentence less
    count = Counting()
    _, metrics = save_evaluated_ensemble(out, members, fewer, evaluate=count)
    assert count.calls == 2
    assert json.loads((out / "lineage.json").read_text())["evaluated_on"]["test"] == corpus_fingerprint(fewer["test"])
    assert json.loads((out / "metrics.json").read_text()) == json.loads(json.dumps(metrics))
    only_dev = Counting()
    save_evaluated_ensemble(out, members, {"dev": data["dev"]}, evaluate=only_dev)  # a split less
    assert only_dev.calls == 1
    swapped = Counting()
    save_evaluated_ensemble(out, members[::-1], {"dev": data["dev"]}, evaluate=swapped)  # other member order
    assert swapped.calls == 1
    renamed = Counting()
    save_evaluated_ensemble(out, members[::-1], {"dev": data["dev"]}, sources=["a", "b"], evaluate=renamed)
    assert renamed.calls == 1 and [m["source"] for m in json.loads((out / "lineage.json").read_text())["members"]] == [
        "a", "b"]


def test_a_retrained_member_or_a_tampered_folder_is_rebuilt(tiny_model_dir, contrary_member_dir, demo_corpus,
                                                             tmp_path) -> None:
    data, out = splits(demo_corpus), tmp_path / "ens"
    member = tmp_path / "member"
    shutil.copytree(tiny_model_dir, member)
    members = [member, contrary_member_dir]
    _, metrics = save_evaluated_ensemble(out, members, data)
    # the member's folder now holds another model (a retrained run): the ensemble is rebuilt from it
    shutil.rmtree(member)
    shutil.copytree(contrary_member_dir, member)
    count = Counting()
    _, rebuilt = save_evaluated_ensemble(out, members, data, evaluate=count)
    assert count.calls == 2
    pinned = json.loads((out / "ensemble.json").read_text())["members"]
    assert pinned[0]["manifest_sha256"] == pinned[1]["manifest_sha256"]  # both copies of the contrary model now
    # a folder whose saved scores were edited fails verification and is scored and written again
    saved = json.loads((out / "metrics.json").read_text())
    saved["test"]["micro"]["f1"] = 1.0
    (out / "metrics.json").write_text(json.dumps(saved))
    count = Counting()
    _, honest = save_evaluated_ensemble(out, members, data, evaluate=count)
    assert count.calls == 2 and honest == rebuilt
    assert json.loads((out / "metrics.json").read_text())["test"]["micro"]["f1"] == rebuilt["test"]["micro"]["f1"]


def test_an_ensemble_saved_without_its_data_fingerprints_is_scored_again(tiny_model_dir, contrary_member_dir,
                                                                         demo_corpus, tmp_path) -> None:
    members, data, out = [tiny_model_dir, contrary_member_dir], splits(demo_corpus), tmp_path / "ens"
    save_ensemble(out, members, metrics={"dev": {}, "test": {}})  # as folders made before evaluated_on was kept
    count = Counting()
    _, metrics = save_evaluated_ensemble(out, members, data, evaluate=count)
    assert count.calls == 2 and metrics["test"]["micro"]
