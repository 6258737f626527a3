"""The model store facade against a real MLflow backend (embedded SQLite and a real ``mlflow server``)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nerservice.errors import (
    IntegrityError,
    InvalidModelRefError,
    ModelLoadError,
    ModelNotFoundError,
    PromotionRefusedError,
    StoreError,
)

from .store_helpers import clone_with_dev_f1, flip_byte, rewrite_manifest, tree_digest

TEXTS = [
    "Patients treated with cisplatin developed acute renal failure.",
    "No evidence of hepatitis was found after aspirin therapy.",
    "",
]


def test_register_resolve_gives_identical_predictions(store, model_name, tiny_model_dir, tiny_training):
    from nerservice.inference import Extractor

    version = store.register(tiny_model_dir, model_name, tags={"team": "bio"})
    assert version == 1
    resolved = store.resolve(f"{model_name}/1")
    assert resolved.is_dir() and resolved.resolve() != Path(tiny_model_dir).resolve()
    assert tree_digest(resolved) == tree_digest(tiny_model_dir)  # byte-identical copy
    # every reference form reaches the same verified copy
    assert store.resolve(model_name) == resolved == store.resolve(f"{model_name}@latest")

    original, restored = Extractor.load(tiny_model_dir), Extractor.load(resolved)
    want = original.extract(TEXTS)
    assert any(want), "the tiny model should find entities in these texts"
    assert restored.extract(TEXTS) == want

    info = store.describe(f"{model_name}/1")
    assert info["status"] == "complete" and info["tags"] == {"team": "bio"}
    assert info["metrics"]["dev_f1"] == pytest.approx(tiny_training.dev["micro"]["f1"])
    assert info["metrics"]["test_f1"] == pytest.approx(tiny_training.test["micro"]["f1"])
    assert set(tiny_training.dev["per_type"]) == {k.split(".", 1)[1] for k in info["metrics"] if k.startswith("dev_f1.")}
    lineage = tiny_training.lineage
    assert info["lineage"]["config_hash"] == lineage["config_hash"]
    assert info["lineage"]["corpus.train"] == lineage["corpus_fingerprints"]["train"]
    assert info["lineage"]["git_sha"] == lineage["git_sha"]
    assert info["run_id"] and info["manifest_sha256"] and info["created"].endswith("+00:00")


def test_versions_and_alias_moves(store, model_name, tiny_model_dir):
    v1 = store.register(tiny_model_dir, model_name)
    v2 = store.register(tiny_model_dir, model_name)
    assert (v1, v2) == (1, 2)
    store.set_alias(model_name, "production", v1)
    assert store.describe(f"{model_name}@production")["version"] == 1
    assert store.resolve(f"{model_name}@production").parent.name == "1"

    store.set_alias(model_name, "production", v2)
    store.set_alias(model_name, "staging", v1)
    assert store.describe(f"{model_name}@production")["version"] == 2
    assert store.resolve(f"{model_name}@production").parent.name == "2"
    listed = store.list(model_name)
    assert [(r["version"], r["aliases"], r["status"]) for r in listed] == [
        (2, ["production"], "complete"), (1, ["staging"], "complete")]
    assert model_name in {r["name"] for r in store.list()}

    with pytest.raises(ModelNotFoundError, match="has no alias 'canary'"):
        store.resolve(f"{model_name}@canary")
    with pytest.raises(ModelNotFoundError, match="has no version 9"):
        store.resolve(f"{model_name}/9")
    with pytest.raises(ModelNotFoundError, match="no model named"):
        store.resolve("no-such-model@production")
    with pytest.raises(ModelNotFoundError):
        store.set_alias(model_name, "production", 9)


def test_promote_if_better_refuses_a_worse_candidate(store, model_name, tiny_model_dir, tmp_path):
    good = clone_with_dev_f1(tiny_model_dir, tmp_path / "good", 0.90)
    worse = clone_with_dev_f1(tiny_model_dir, tmp_path / "worse", 0.70)
    equal = clone_with_dev_f1(tiny_model_dir, tmp_path / "equal", 0.90)
    v_good, v_worse, v_equal = (store.register(d, model_name) for d in (good, worse, equal))

    assert store.promote(model_name, v_good) is True  # nobody held the alias
    with pytest.raises(PromotionRefusedError, match=r"dev_f1 0\.7000 is worse than 0\.9000") as err:
        store.promote(model_name, v_worse)
    assert err.value.code == "NER504"
    assert store.describe(f"{model_name}@production")["version"] == v_good  # unchanged

    assert store.promote(model_name, v_equal) is True  # not worse is enough
    assert store.promote(model_name, v_equal) is False  # already there
    assert store.promote(model_name, v_worse, if_better=None) is True  # explicit override
    assert store.describe(f"{model_name}@production")["version"] == v_worse
    # a metric the versions do not carry cannot justify a promotion
    with pytest.raises(PromotionRefusedError, match="no 'dev_auc' metric"):
        store.promote(model_name, v_good, if_better="dev_auc")


def test_incomplete_version_is_never_resolvable(store, model_name, tiny_model_dir):
    """A registration that died after creating the version but before its commit tag."""
    v1 = store.register(tiny_model_dir, model_name)
    client = store.client
    run = client.create_run(store.experiment_id())
    client.log_artifacts(run.info.run_id, str(tiny_model_dir), "model")
    mv = client.create_model_version(model_name, f"{run.info.artifact_uri}/model", run_id=run.info.run_id,
                                     await_creation_for=0)
    broken = int(mv.version)
    assert broken == v1 + 1

    with pytest.raises(ModelNotFoundError, match="incomplete"):
        store.resolve(f"{model_name}/{broken}")
    assert store.describe(f"{model_name}@latest")["version"] == v1  # latest = latest COMPLETE version
    assert store.resolve(model_name).parent.name == str(v1)
    with pytest.raises(StoreError, match="incomplete"):
        store.set_alias(model_name, "production", broken)
    statuses = {r["version"]: r["status"] for r in store.list(model_name)}
    assert statuses == {v1: "complete", broken: "incomplete"}
    # the store keeps working: the next registration is complete and becomes latest
    v3 = store.register(tiny_model_dir, model_name)
    assert v3 == broken + 1
    assert store.describe(model_name)["version"] == v3


def test_tampered_cached_copy_is_detected(store, model_name, tiny_model_dir):
    store.register(tiny_model_dir, model_name)
    cached = store.resolve(f"{model_name}/1")
    flip_byte(cached / "model.weights.h5")
    with pytest.raises(IntegrityError, match=r"cached copy.*model\.weights\.h5: checksum mismatch") as err:
        store.resolve(f"{model_name}/1")
    assert err.value.code == "NER502" and str(cached.parent) in err.value.hint

    shutil.rmtree(cached.parent)  # the documented way out: drop the copy, it is downloaded again
    cached = store.resolve(f"{model_name}/1")
    with open(cached / "vocab.json", "r+b") as fh:  # truncated
        fh.truncate(10)
    with pytest.raises(IntegrityError, match="vocab.json: checksum mismatch"):
        store.resolve(f"{model_name}@latest")
    shutil.rmtree(cached.parent)
    cached = store.resolve(f"{model_name}/1")
    (cached / "config.json").unlink()
    with pytest.raises(IntegrityError, match="config.json: missing"):
        store.resolve(model_name)
    shutil.rmtree(cached.parent)
    assert tree_digest(store.resolve(f"{model_name}/1")) == tree_digest(tiny_model_dir)


def test_tampered_stored_artifact_is_detected(store_env, model_name, tiny_model_dir, tmp_path):
    store = store_env.store(tmp_path / "cache-a")
    store.register(tiny_model_dir, model_name)
    stored = store_env.stored_dir(store.describe(f"{model_name}/1")["source"])
    assert (stored / "model.weights.h5").is_file(), "the test must tamper with the real stored bytes"
    weights = (stored / "model.weights.h5").read_bytes()

    flip_byte(stored / "model.weights.h5")
    with pytest.raises(IntegrityError, match=r"stored artifact.*model\.weights\.h5: checksum mismatch"):
        store_env.store(tmp_path / "cache-b").resolve(f"{model_name}/1")
    assert not (tmp_path / "cache-b").exists() or not any((tmp_path / "cache-b").rglob("model.weights.h5"))

    # swapping in other weights WITH a matching manifest is caught by the checksum committed at registration
    rewrite_manifest(stored)
    with pytest.raises(IntegrityError, match="recorded at registration"):
        store_env.store(tmp_path / "cache-c").resolve(f"{model_name}/1")

    (stored / "model.weights.h5").write_bytes(weights)
    shutil.copy(Path(tiny_model_dir) / "manifest.json", stored / "manifest.json")
    (stored / "lineage.json").unlink()  # a file lost from the store
    with pytest.raises(IntegrityError, match="lineage.json: missing"):
        store_env.store(tmp_path / "cache-d").resolve(f"{model_name}/1")


def test_register_refuses_bad_input(store, model_name, tiny_model_dir, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(tiny_model_dir, broken)
    flip_byte(broken / "model.weights.h5")
    with pytest.raises(IntegrityError, match="checksum mismatch"):
        store.register(broken, model_name)
    with pytest.raises(ModelLoadError, match="not a saved model directory"):
        store.register(tmp_path, model_name)
    for bad in ("../escape", "a/b", "..", ".hidden", "", "x" * 65, "name with space", "q'uote"):
        with pytest.raises(InvalidModelRefError):
            store.register(tiny_model_dir, bad)
    with pytest.raises(InvalidModelRefError, match="reserved"):
        store.register(tiny_model_dir, model_name, tags={"nerservice.manifest_sha256": "0" * 64})
    with pytest.raises(ModelNotFoundError, match="no model named"):  # nothing was registered by the above
        store.list(model_name)


def test_an_ensemble_registers_resolves_and_is_verified_member_by_member(store, model_name, tiny_ensemble_dir):
    from nerservice.artifacts.ensemble_folder import LoadedEnsemble
    from nerservice.artifacts.files import sha256_file
    from nerservice.artifacts.formats import load_model
    from nerservice.inference import Extractor

    version = store.register(tiny_ensemble_dir, model_name)
    resolved = store.resolve(f"{model_name}/{version}")
    def every_file(d: Path) -> dict[str, str]:
        return {str(p.relative_to(d)): sha256_file(p) for p in sorted(d.rglob("*")) if p.is_file()}

    assert any("/" in name for name in every_file(tiny_ensemble_dir))
    assert every_file(resolved) == every_file(tiny_ensemble_dir)  # members came along, byte for byte
    assert isinstance(load_model(resolved), LoadedEnsemble)
    assert Extractor.load(resolved).extract(TEXTS) == Extractor.load(tiny_ensemble_dir).extract(TEXTS)
