"""The format table: every model folder loads and verifies through ``formats.load_model`` /
``verify_manifest``, whichever format it has (fast: random-weight model, no training)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nerservice.artifacts import formats, layout
from nerservice.errors import IntegrityError, ModelLoadError


def test_a_single_model_folder_loads_through_the_table(tiny_random_model_dir: Path) -> None:
    from nerservice.artifacts.model_folder import LoadedModel

    loaded = formats.load_model(tiny_random_model_dir)
    assert isinstance(loaded, LoadedModel)
    assert formats.verify_manifest(tiny_random_model_dir)["format"] == layout.FORMAT
    assert layout.PLOT not in {p.name for p in tiny_random_model_dir.iterdir()}  # the plot is training's
    tagged = loaded.predictor().tag([["Aspirin", "caused", "asthma", "."], []])
    assert len(tagged[0].tags) == 4 and tagged[1].tags == []
    assert set(tagged[0].tags) <= set(loaded.vocabs.tags.tags)


def test_an_ensemble_folder_loads_through_the_same_entry_point(tiny_random_model_dir: Path, tmp_path: Path) -> None:
    from nerservice.artifacts.ensemble_folder import LoadedEnsemble, save_ensemble

    ens = save_ensemble(tmp_path / "ens", [tiny_random_model_dir, tiny_random_model_dir])
    loaded = formats.load_model(ens)
    assert isinstance(loaded, LoadedEnsemble) and len(loaded.members) == 2
    assert formats.verify_manifest(ens)["format"] == layout.ENSEMBLE_FORMAT
    with pytest.raises(ModelLoadError, match="already an ensemble"):
        save_ensemble(tmp_path / "nested", [ens, tiny_random_model_dir])
    (ens / "member-1" / layout.VOCAB).write_text("{}", encoding="utf-8")  # a member tampered with
    with pytest.raises(IntegrityError):
        formats.load_model(ens)


def test_extra_files_are_listed_and_the_formats_own_names_refused(tiny_random_model_dir: Path,
                                                                   tmp_path: Path) -> None:
    from nerservice.artifacts.model_folder import load_model_folder, save_model

    m = load_model_folder(tiny_random_model_dir)
    out = save_model(tmp_path / "m", model=m.model, vocabs=m.vocabs, config=m.config,
                     extra_files={"notes.txt": lambda p: p.write_text("hi", encoding="utf-8")})
    assert "notes.txt" in json.loads((out / layout.MANIFEST).read_text())["files"]
    with pytest.raises(ValueError, match="plain name"):
        save_model(tmp_path / "bad", model=m.model, vocabs=m.vocabs, config=m.config,
                   extra_files={layout.WEIGHTS: lambda p: p.write_bytes(b"")})
    assert not (tmp_path / "bad").exists()  # staged: nothing half-written


def test_not_a_folder_and_a_broken_manifest_give_coded_errors(tiny_random_model_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="not a model directory"):
        formats.load_model(tmp_path / "nope")
    broken = tmp_path / "broken"
    shutil.copytree(tiny_random_model_dir, broken)
    (broken / layout.MANIFEST).write_text("{not json", encoding="utf-8")
    with pytest.raises(IntegrityError, match="unreadable manifest"):
        formats.load_model(broken)
