"""Saved models: fixed file names, HDF5 weights, no pickle anywhere, checksums enforced, and a fresh
process reproduces the in-memory model's predictions exactly."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from helpers import last_json_line, run_python

TEXTS = [
    "Patients with breast cancer were treated with cisplatin.",
    "Cisplatin-induced nephrotoxicity was observed in 12 of 40 rats. No cases of asthma were reported.",
    "",
    "The association between hepatitis and Parkinson disease remains unclear.",
]
SENTENCES = [["Patients", "with", "asthma", "were", "treated", "with", "lithium", "."],
             ["We", "report", "a", "case", "of", "melanoma", "associated", "with", "tamoxifen", "."],
             ["Unseen", "tokens", "zzqx", "ÿ", "😀"]]


@pytest.fixture()
def model_copy(tiny_model_dir: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "model"
    shutil.copytree(tiny_model_dir, dst)
    return dst


@pytest.mark.slow
def test_fixed_file_names_and_a_valid_manifest(tiny_model_dir: Path) -> None:
    from nerservice.artifacts import formats
    from nerservice.artifacts import layout as sm

    names = {p.name for p in tiny_model_dir.iterdir()}
    assert names == {sm.CONFIG, sm.VOCAB, sm.WEIGHTS, sm.METRICS, sm.HISTORY, sm.PLOT, sm.LINEAGE, sm.MANIFEST}
    manifest = formats.verify_manifest(tiny_model_dir)
    assert manifest["format"] == sm.FORMAT
    assert set(manifest["files"]) == names - {sm.MANIFEST}
    assert {"n_words", "n_chars", "n_tags", "word_dim", "model_config"} <= set(manifest["model"])


@pytest.mark.slow
def test_weights_are_hdf5_and_nothing_is_pickled(tiny_model_dir: Path) -> None:
    import h5py

    weights = tiny_model_dir / "model.weights.h5"
    assert weights.read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"
    with h5py.File(weights, "r") as f:
        kinds = []
        f.visititems(lambda name, obj: kinds.append(obj.dtype.kind) if isinstance(obj, h5py.Dataset) else None)
    assert kinds and set(kinds) <= {"f", "i", "u", "b"}  # plain numeric arrays, no object/opaque data
    for p in tiny_model_dir.iterdir():
        assert p.suffix in {".json", ".h5", ".png"}, p
        if p.suffix == ".json":
            json.loads(p.read_text(encoding="utf-8"))


def test_the_package_never_unpickles() -> None:
    """No pickle/joblib/torch.load in nerservice, and every np.load refuses pickles."""
    root = Path(__file__).resolve().parents[1] / "nerservice"
    for path in root.rglob("*.py"):
        src = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(import|from)\s+(pickle|cPickle|dill|joblib|cloudpickle)\b", src, re.M), path
        assert "allow_pickle=True" not in src, path
        assert "torch.load(" not in src and "pd.read_pickle" not in src, path
        for call in re.finditer(r"np\.load\(([^)]*)\)", src):
            assert "allow_pickle=False" in call.group(1), f"{path}: {call.group(0)}"
    assert "allow_pickle=False" in (root / "training" / "checkpoint.py").read_text()


@pytest.mark.slow
def test_loading_in_a_fresh_process_gives_identical_predictions(tiny_model_dir: Path, tmp_path: Path) -> None:
    """In-memory model → save → a new interpreter loads it: same emissions (bit for bit) and entities."""
    from helpers import encode_batch
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.model_folder import save_model
    from nerservice.inference import Extractor
    from nerservice.model.forward import compile_forward

    mem = load_model(tiny_model_dir)
    out = save_model(tmp_path / "resaved", model=mem.model, vocabs=mem.vocabs, config=mem.config,
                     metrics=mem.metrics, lineage=mem.lineage)
    batch = encode_batch(SENTENCES, mem.vocabs, max_word_length=mem.config.model.max_word_length, time_multiple=8)
    np.savez(tmp_path / "batch.npz", **batch)
    expected_em = compile_forward(mem.model)(batch)
    expected_ents = [[e.to_dict() for e in ents] for ents in Extractor(mem).extract(TEXTS)]
    expected_tags = mem.predictor().predict_tags(SENTENCES)

    code = f"""
import json
import numpy as np
from nerservice.inference import Extractor
from nerservice.model.forward import compile_forward
loaded = Extractor.load({str(out)!r}, runtime="keras")  # the Keras path, bit for bit
with np.load({str(tmp_path / 'batch.npz')!r}, allow_pickle=False) as z:
    batch = {{k: z[k] for k in z.files}}
np.save({str(tmp_path / 'em.npy')!r}, compile_forward(loaded.loaded.model)(batch))
ents = [[e.to_dict() for e in es] for es in loaded.extract({TEXTS!r})]
tags = loaded.predictor.predict_tags({SENTENCES!r})
print(json.dumps({{"entities": ents, "tags": tags}}))
"""
    got = last_json_line(run_python(code).stdout)
    np.testing.assert_array_equal(np.load(tmp_path / "em.npy", allow_pickle=False), expected_em)
    assert got["entities"] == expected_ents
    assert got["tags"] == expected_tags
    assert any(e["label"] == "Disease" for e in got["entities"][0])  # the model really tags something


@pytest.mark.slow
def test_tampered_files_raise_integrity_error(model_copy: Path) -> None:
    from nerservice.artifacts.formats import load_model
    from nerservice.errors import IntegrityError

    weights = model_copy / "model.weights.h5"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(IntegrityError, match="checksum") as err:
        load_model(model_copy)
    assert err.value.code == "NER502"


@pytest.mark.slow
def test_edited_vocabulary_is_detected(model_copy: Path) -> None:
    from nerservice.artifacts.formats import load_model
    from nerservice.errors import IntegrityError

    vocab = json.loads((model_copy / "vocab.json").read_text(encoding="utf-8"))
    vocab["tags"]["tags"] = list(reversed(vocab["tags"]["tags"]))
    (model_copy / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    with pytest.raises(IntegrityError):
        load_model(model_copy)


@pytest.mark.slow
def test_vocabulary_that_does_not_fit_the_weights_is_refused_even_with_a_matching_checksum(model_copy: Path) -> None:
    from nerservice.artifacts.files import sha256_file
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.layout import MANIFEST
    from nerservice.errors import ModelLoadError

    vocab = json.loads((model_copy / "vocab.json").read_text(encoding="utf-8"))
    vocab["words"]["items"].append("brand-new-word")
    (model_copy / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    manifest = json.loads((model_copy / MANIFEST).read_text())
    manifest["files"]["vocab.json"] = {"sha256": sha256_file(model_copy / "vocab.json"),
                                       "bytes": (model_copy / "vocab.json").stat().st_size}
    (model_copy / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ModelLoadError, match="do not match"):
        load_model(model_copy)


@pytest.mark.slow
def test_missing_files_and_folders_raise_model_load_error(model_copy: Path, tmp_path: Path) -> None:
    from nerservice.artifacts.formats import load_model
    from nerservice.errors import IntegrityError, ModelLoadError

    with pytest.raises(ModelLoadError, match="not a model directory") as err:
        load_model(tmp_path / "nowhere")
    assert err.value.code == "NER401"
    (model_copy / "history.png").unlink()  # listed in the manifest
    with pytest.raises(IntegrityError, match="missing file"):
        load_model(model_copy)
    (model_copy / "model.weights.h5").unlink()
    with pytest.raises(ModelLoadError, match="model.weights.h5"):
        load_model(model_copy)


@pytest.mark.slow
def test_unreadable_manifest_is_an_integrity_error(model_copy: Path) -> None:
    from nerservice.artifacts.formats import load_model
    from nerservice.errors import IntegrityError

    (model_copy / "manifest.json").write_text("{oops", encoding="utf-8")
    with pytest.raises(IntegrityError, match="manifest"):
        load_model(model_copy)


@pytest.mark.slow
def test_saving_over_an_existing_model_replaces_it_atomically(tiny_model_dir: Path, tmp_path: Path) -> None:
    from nerservice.artifacts.formats import load_model, verify_manifest
    from nerservice.artifacts.model_folder import save_model

    mem = load_model(tiny_model_dir)
    for metrics in ({"round": 1}, {"round": 2}):
        save_model(tmp_path / "m", model=mem.model, vocabs=mem.vocabs, config=mem.config, metrics=metrics)
    assert [p.name for p in tmp_path.iterdir()] == ["m"]
    verify_manifest(tmp_path / "m")
    assert load_model(tmp_path / "m").metrics == {"round": 2}


@pytest.mark.slow
@pytest.mark.parametrize("edit", ["drop_config_entry", "escape_folder", "no_files_table"])
def test_a_doctored_manifest_is_refused(model_copy: Path, edit: str) -> None:
    """Without these checks, deleting config.json's entry would let config.json change unchecked."""
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.layout import MANIFEST
    from nerservice.errors import IntegrityError

    manifest = json.loads((model_copy / MANIFEST).read_text())
    if edit == "drop_config_entry":
        del manifest["files"]["config.json"]
        cfg = json.loads((model_copy / "config.json").read_text())
        cfg["model"]["dropout"] = 0.1
        (model_copy / "config.json").write_text(json.dumps(cfg))
    elif edit == "escape_folder":
        manifest["files"]["../outside.json"] = {"sha256": "0" * 64, "bytes": 1}
    else:
        manifest["files"] = ["config.json"]
    (model_copy / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(IntegrityError):
        load_model(model_copy)
