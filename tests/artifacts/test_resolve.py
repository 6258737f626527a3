"""``resolve``: the one owner of "which model folder is this" (folders, run folders; store refs are
covered in tests/store)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nerservice.artifacts import layout
from nerservice.artifacts.resolve import resolve, resolve_dir
from nerservice.errors import ModelLoadError


def test_a_run_folder_resolves_to_its_model_best(tiny_random_model_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "ncbi"
    shutil.copytree(tiny_random_model_dir, run / layout.BEST)
    r = resolve(str(run))
    assert (r.path, r.name, r.kind) == (run / layout.BEST, "ncbi", "directory")
    assert resolve_dir(str(run)) == run / layout.BEST
    # A folder's version is its manifest's content hash: stable, and changed by a retrain.
    assert r.version == resolve(str(run / layout.BEST)).version and len(r.version) == 12
    (run / layout.BEST / layout.MANIFEST).write_text("{}", encoding="utf-8")
    assert resolve(str(run)).version != r.version


def test_a_plain_model_folder_is_named_after_itself(tiny_random_model_dir: Path) -> None:
    r = resolve(str(tiny_random_model_dir))
    assert (r.path, r.name) == (tiny_random_model_dir, tiny_random_model_dir.name)


@pytest.mark.parametrize("ref", ["/no/such/dir", "./missing", "data/mod le", "a" * 5000])
def test_a_missing_folder_is_a_coded_model_load_error(ref: str) -> None:
    with pytest.raises(ModelLoadError, match="no such model directory") as err:
        resolve(ref)
    assert err.value.code == "NER401"


def test_an_existing_file_is_not_taken_for_a_store_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("model.txt").write_text("x", encoding="utf-8")
    with pytest.raises(ModelLoadError, match="no such model directory"):
        resolve_dir("model.txt")
