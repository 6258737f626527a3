"""The store takes in exactly what a manifest lists: a model folder with an unlisted file is refused at
registration (nothing registered, nothing uploaded), and a downloaded or cached copy that gained one is
refused when resolved."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nerservice.errors import IntegrityError, ModelNotFoundError


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from random_model import build_random_model

    return build_random_model(tmp_path_factory.mktemp("contents") / "model")


@pytest.mark.parametrize("extra", ["evil.py", ".DS_Store", "sub/"])
def test_register_refuses_files_the_manifest_does_not_list(store, model_name, model_dir, tmp_path, extra) -> None:
    src = shutil.copytree(model_dir, tmp_path / "model")
    if extra.endswith("/"):
        (src / extra).mkdir()
        (src / extra / "payload.py").write_text("import os\n")
    else:
        (src / extra).write_text("import os; os.system('id')\n")
    with pytest.raises(IntegrityError, match="does not list") as err:
        store.register(src, model_name)
    assert extra in str(err.value) and "remove them" in (err.value.hint or "")
    with pytest.raises(ModelNotFoundError):
        store.list(model_name)  # nothing was registered, not even an incomplete version


def test_a_cached_copy_that_gained_a_file_is_refused(store, model_name, model_dir) -> None:
    version = store.register(model_dir, model_name)
    path = store.resolve(f"{model_name}/{version}")
    (path / "evil.py").write_text("import os\n")
    with pytest.raises(IntegrityError, match="evil.py"):
        store.resolve(f"{model_name}/{version}")
    (path / "evil.py").unlink()
    assert store.resolve(f"{model_name}/{version}") == path


def test_an_ensemble_member_with_an_unlisted_file_is_refused(store, model_name, model_dir, tmp_path) -> None:
    from nerservice.artifacts.ensemble_folder import save_ensemble

    ens = save_ensemble(tmp_path / "ens", [model_dir, model_dir])
    (ens / "member-1" / "evil.py").write_text("import os\n")
    with pytest.raises(IntegrityError, match="member-1/evil.py"):
        store.register(ens, model_name)
