"""``nerservice export --format onnx``: a self-contained folder whose graphs give the Keras model's emissions
and, decoded as its README says, its entities — checked without any of nerservice's code."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import BLOCK_NERSERVICE, REPO, run_python, save_random_model

HERE = Path(__file__).resolve().parent
SENTENCES = [["Patients", "with", "asthma", "were", "treated", "with", "lithium", "."],
             ["BRCA1", "mutations", "and", "a", "supercalifragilisticexpialidocious-ase", "deficiency"],
             ["Cisplatin"], ["The", "of", "the", "of", "Ünïcödé", "٣٤", "x" * 40]]


def keras_predictor(model_dir: Path):
    from nerservice.artifacts.formats import load_model

    return load_model(model_dir).predictor()


@pytest.mark.parametrize("variant", ["tiny", "no-cnn", "cnn-only"])
def test_onnx_runtime_gives_the_keras_emissions_and_tags(random_models, exports, variant) -> None:
    from nerservice.artifacts.formats import load_model

    keras_pred = keras_predictor(random_models[variant])
    onnx_pred = load_model(exports[variant]).predictor()
    assert onnx_pred.runtime == "onnx" and keras_pred.runtime == "keras"
    for a, b in zip(keras_pred.emissions(SENTENCES), onnx_pred.emissions(SENTENCES)):
        assert a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-4)
    want, got = keras_pred.tag(SENTENCES), onnx_pred.tag(SENTENCES)
    assert [t.tags for t in got] == [t.tags for t in want]
    assert any(t != "O" for r in want for t in r.tags)  # the random model tags something: a real comparison
    for a, b in zip(want, got):
        np.testing.assert_allclose(b.scores, a.scores, rtol=0, atol=1e-4)


def test_the_export_alone_with_its_documented_decode_gives_the_same_entities(random_models, exports) -> None:
    """The README's recipe, run with onnxruntime + NumPy in a process where nerservice cannot be imported."""
    code = BLOCK_NERSERVICE + f"import runpy; runpy.run_path({str(HERE / 'standalone_onnx.py')!r}, run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", code, str(exports["tiny"])], check=False, input=json.dumps(SENTENCES),
                          capture_output=True, text=True, timeout=120, cwd=HERE)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    keras_pred = keras_predictor(random_models["tiny"])
    for a, b in zip(keras_pred.emissions(SENTENCES), out["emissions"]):
        np.testing.assert_allclose(np.asarray(b), a, rtol=0, atol=1e-4)
    assert out["tags"] == [t.tags for t in keras_pred.tag(SENTENCES)]
    readme = (exports["tiny"] / "README.md").read_text(encoding="utf-8")
    assert "words.onnx" in readme and "Viterbi" in readme and "max_word_length" in readme


def test_the_folder_lists_every_file_with_the_source_identity(random_models, exports) -> None:
    from nerservice.artifacts.files import sha256_file
    from nerservice.artifacts.formats import verify_manifest
    from nerservice.artifacts.layout import ONNX_FORMAT

    manifest = json.loads((exports["tiny"] / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["format"] == ONNX_FORMAT
    assert set(manifest["files"]) == {"words.onnx", "words.onnx.data", "context.onnx", "vocab.json", "crf.json",
                                      "config.json", "metrics.json", "lineage.json", "README.md"}
    assert manifest["source"]["manifest_sha256"] == sha256_file(random_models["tiny"] / "manifest.json")
    assert manifest["source"]["model"]["n_words"] > 10
    verify_manifest(exports["tiny"])  # the store's check dispatches on the format


def test_the_word_table_is_external_data_and_checked(random_models, exports, tmp_path: Path) -> None:
    """The word-vector table lives in words.onnx.data (ONNX Runtime memory-maps it), bit for bit the model's;
    the manifest covers it like any file: missing or altered, the folder does not load."""
    import onnx
    from onnx import numpy_helper
    from onnx.external_data_helper import load_external_data_for_tensor

    from nerservice.artifacts.formats import load_model
    from nerservice.errors import IntegrityError

    proto = onnx.load(str(exports["tiny"] / "words.onnx"), load_external_data=False)
    table = next(t for t in proto.graph.initializer if t.name == "word_embedding")
    assert table.data_location == onnx.TensorProto.EXTERNAL and not table.raw_data
    load_external_data_for_tensor(table, str(exports["tiny"]))
    keras = load_model(random_models["tiny"]).model.word_embedding.embeddings
    np.testing.assert_array_equal(numpy_helper.to_array(table), np.asarray(keras))
    for damage in ("missing", "altered"):
        folder = _copy(exports["tiny"], tmp_path / damage)
        data = folder / "words.onnx.data"
        if damage == "missing":
            data.unlink()
        else:
            raw = bytearray(data.read_bytes())
            raw[7] ^= 1
            data.write_bytes(bytes(raw))
        with pytest.raises(IntegrityError, match="words.onnx.data"):
            load_model(folder)


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def _rewrite_manifest(folder: Path) -> None:
    """What someone hiding a swap would do: recompute every checksum."""
    from nerservice.artifacts.files import write_manifest

    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    extra = {k: v for k, v in manifest.items() if k not in ("format", "files")}
    write_manifest(folder, manifest["format"], sorted(manifest["files"]), **extra)


def test_a_changed_file_is_refused_before_serving(exports, tmp_path) -> None:
    from nerservice.errors import IntegrityError
    from nerservice.inference import Extractor

    bad = _copy(exports["tiny"], tmp_path / "bad")
    data = bytearray((bad / "context.onnx").read_bytes())
    data[-10] ^= 0xFF
    (bad / "context.onnx").write_bytes(bytes(data))
    with pytest.raises(IntegrityError, match="checksum mismatch") as err:
        Extractor.load(bad)
    assert err.value.code == "NER502"


@pytest.mark.parametrize("swapped", ["words.onnx", "vocab.json", "crf.json"])
def test_files_from_another_model_version_are_refused_even_with_a_rewritten_manifest(exports, tmp_path, swapped) -> None:
    from nerservice.artifacts.formats import load_model
    from nerservice.errors import IntegrityError

    bad = _copy(exports["tiny"], tmp_path / "bad")
    other = tmp_path / "other"
    other_src = json.loads((exports["tiny"] / "manifest.json").read_text(encoding="utf-8"))
    # The same network shape, other weights: the random "tiny" model with another seed.
    from nerservice.runtime.export import export_onnx

    export_onnx(save_random_model(tmp_path / "src2", {}, seed=7), other)
    if swapped == "vocab.json":  # a vocabulary of the same size, one word changed
        vocab = json.loads((bad / "vocab.json").read_text(encoding="utf-8"))
        vocab["words"]["items"][-1] += "x"
        (bad / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    else:
        (bad / swapped).write_bytes((other / swapped).read_bytes())
    _rewrite_manifest(bad)
    assert json.loads((bad / "manifest.json").read_text())["source"] == other_src["source"]
    with pytest.raises(IntegrityError, match="another model version") as err:
        load_model(bad)
    assert err.value.code == "NER502"


def test_an_unknown_export_format_is_a_coded_error(exports, tmp_path) -> None:
    from nerservice.artifacts.onnx_folder import load_onnx_folder as load_onnx
    from nerservice.errors import ModelLoadError

    bad = _copy(exports["tiny"], tmp_path / "bad")
    manifest = json.loads((bad / "manifest.json").read_text(encoding="utf-8"))
    manifest["format"] = "nerservice.onnx.v9"
    (bad / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ModelLoadError, match="not a nerservice.onnx.v1 export"):
        load_onnx(bad)


def test_an_export_has_no_keras_runtime(exports) -> None:
    from nerservice.errors import ModelLoadError
    from nerservice.inference import Extractor

    with pytest.raises(ModelLoadError, match="no Keras weights"):
        Extractor.load(exports["tiny"], runtime="keras")


def test_cli_export_writes_the_folder(random_models, tmp_path, capsys) -> None:
    from nerservice.cli.main import main

    out = tmp_path / "exported"
    assert main(["export", str(random_models["no-cnn"]), "--format", "onnx", "--out", str(out)]) == 0
    assert "exported" in capsys.readouterr().out
    assert (out / "words.onnx").is_file() and (out / "README.md").is_file()


def test_missing_onnxruntime_is_an_install_hint_not_a_traceback(exports) -> None:
    """`nerservice predict EXPORT` in a process where onnxruntime cannot be imported."""
    code = f"""
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "onnxruntime":
            raise ImportError("No module named 'onnxruntime'")
sys.meta_path.insert(0, Block())
from nerservice.cli.main import main
sys.exit(main(["predict", {str(exports["tiny"])!r}, "-"]))
"""
    proc = subprocess.run([sys.executable, "-c", code], check=False, input="Patients with asthma.\n", capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 2, proc.stderr
    assert "NER401" in proc.stderr and "pip install 'nerservice[serve]'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_in_memory_conversion_is_the_default_and_matches_keras(random_models) -> None:
    from nerservice.inference import Extractor

    texts = ["Patients with asthma were treated with lithium. BRCA1 mutations cause breast cancer.", "", "x"]
    auto, ref = Extractor.load(random_models["tiny"]), Extractor.load(random_models["tiny"], runtime="keras")
    assert (auto.runtime, ref.runtime) == ("onnx", "keras")
    assert Extractor.load(random_models["tiny"], jit_compile="background").runtime == "keras"  # XLA is Keras'
    _assert_same_entities(auto.extract(texts), ref.extract(texts))


def _assert_same_entities(got, want) -> None:
    assert [[(e.start, e.end, e.label) for e in es] for es in got] == \
        [[(e.start, e.end, e.label) for e in es] for es in want]
    for es_a, es_b in zip(got, want):
        for a, b in zip(es_a, es_b):
            assert abs(a.score - b.score) <= 1e-4


@pytest.mark.slow
def test_trained_model_and_ensemble_export_and_serve_the_same_entities(tiny_model_dir, tiny_ensemble_dir,
                                                                       demo_corpus, tmp_path) -> None:
    from nerservice.data import read_corpus
    from nerservice.inference import Extractor
    from nerservice.runtime.export import export_onnx

    sents = [s.tokens for s in read_corpus(demo_corpus["test"]).sentences]
    texts = [" ".join(s) for s in sents]
    for src in (tiny_model_dir, tiny_ensemble_dir):
        out = export_onnx(src, tmp_path / src.name)
        ex = Extractor.load(out)
        assert ex.runtime == "onnx"
        _assert_same_entities(ex.extract(texts), Extractor.load(src, runtime="keras").extract(texts))
    assert run_python(f"from nerservice.artifacts.formats import verify_manifest; verify_manifest({str(out)!r})")
