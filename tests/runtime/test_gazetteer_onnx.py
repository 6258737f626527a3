"""ONNX graphs of a tagger with a gazetteer (``model.gazetteer``): the dense kernel split between the words
graph (per-word rows, no ReLU) and the context graph (each token's gazetteer row, then the ReLU) gives the
Keras emissions; exports carry the gazetteer and serve the Keras tags; ``auto`` picks ONNX for such a model;
models without one keep their graphs."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import BLOCK_NERSERVICE, TINY_OVERRIDES, encode_batch, tiny_config

HERE = Path(__file__).resolve().parent
# Demo-corpus sentences (their entity strings are in the gazetteer: single- and multi-token matches) and
# text the corpus never saw; lengths differ, so the batch has padding.
TEXT = [["Patients", "with", "colorectal", "cancer", "took", "aspirin", "."],
        ["5", "-", "fluorouracil", "and", "Cisplatin", "caused", "ataxia", "-", "telangiectasia"],
        ["Alzheimer", "disease"],
        ["BRCA1", "mutations", "and", "a", "supercalifragilisticexpialidocious-ase", "deficiency", "in", "asthma"],
        ["x" * 40]]


@pytest.fixture(scope="module")
def gazetteer_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random-weight tiny tagger with a gazetteer of the demo corpus' annotations, saved."""
    from nerservice.artifacts.model_folder import save_model
    from nerservice.demo_corpus import generate
    from nerservice.model.tagger import build_tagger
    from nerservice.text.gazetteer import build_gazetteer
    from nerservice.training.trainer import build_vocabularies

    config = tiny_config().with_overrides({**TINY_OVERRIDES, "model.gazetteer": True, "model.gazetteer_dim": 5})
    train = generate(120, seed=5)
    gaz = build_gazetteer(train, min_ratio=0.5, max_tokens=8)
    vocabs = dataclasses.replace(build_vocabularies(train), gazetteer=gaz)
    model = build_tagger(config.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                         n_tags=len(vocabs.tags), n_gazetteer_ids=gaz.n_ids, seed=4)
    rng = np.random.default_rng(4)
    for v in model.weights:
        # The gazetteer rows get a large spread: the feature must move the emissions for the test to see it.
        scale = 1.5 if "gazetteer" in v.path else 0.3
        v.assign(np.asarray(v.numpy()) + rng.normal(0, scale, v.shape).astype("float32"))
    return save_model(tmp_path_factory.mktemp("gaz") / "model", model=model, vocabs=vocabs, config=config)


@pytest.fixture(scope="module")
def gazetteer_export(gazetteer_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from nerservice.runtime.export import export_onnx

    return export_onnx(gazetteer_model, tmp_path_factory.mktemp("gaz-export") / "export")


def _loaded(folder: Path):
    from nerservice.artifacts.formats import load_model

    return load_model(folder)


def _ort(loaded, cache_entries: int = 0):
    from nerservice.runtime.export import build_graphs
    from nerservice.runtime.forward import OrtForward

    words, context, _ = build_graphs(loaded.model)
    return OrtForward.open(words, context, threads=1, cache_entries=cache_entries)


def _batch(loaded) -> dict[str, np.ndarray]:
    return encode_batch(TEXT, loaded.vocabs, max_word_length=loaded.config.model.max_word_length)


def _assert_close_on_real_tokens(got: np.ndarray, want: np.ndarray, lengths: np.ndarray) -> None:
    assert got.shape == want.shape
    for b, n in enumerate(lengths):
        np.testing.assert_allclose(got[b, :n], want[b, :n], rtol=0, atol=1e-5)


def test_onnx_emissions_equal_keras_as_gazetteer_ids_vary(gazetteer_model) -> None:
    from keras import ops

    loaded = _loaded(gazetteer_model)
    n_ids = loaded.vocabs.gazetteer.n_ids
    batch = _batch(loaded)
    gaz, lengths = batch["gazetteer"], batch["lengths"]
    # The matched ids cover padding, no match, and both begin (even) and continue (odd) ids of a type.
    assert {0, 1} <= set(gaz.ravel().tolist())
    assert any(x >= 2 and x % 2 == 0 for x in gaz.ravel()) and any(x >= 3 and x % 2 == 1 for x in gaz.ravel())
    forward = _ort(loaded)
    assert forward.takes_gazetteer
    keras_of = lambda b: np.asarray(ops.convert_to_numpy(loaded.model(b, training=False)))  # noqa: E731
    matched = forward(batch)
    _assert_close_on_real_tokens(matched, keras_of(batch), lengths)
    # Every id of the table, at random on real tokens (padding stays 0): not only what matching produces.
    rng = np.random.default_rng(0)
    real = np.arange(gaz.shape[1])[None, :] < lengths[:, None]
    for _ in range(3):
        shuffled = {**batch, "gazetteer": np.where(real, rng.integers(1, n_ids, gaz.shape), 0).astype(np.int32)}
        got = forward(shuffled)
        _assert_close_on_real_tokens(got, keras_of(shuffled), lengths)
        # The feature moves the emissions (so the comparison above is about it, not about the other parts).
        assert np.abs(got - matched)[real].max() > 1e-2


def test_the_word_cache_gives_the_same_emissions_on_a_gazetteer_model(gazetteer_model) -> None:
    loaded = _loaded(gazetteer_model)
    batch = _batch(loaded)
    plain, cached = _ort(loaded), _ort(loaded, cache_entries=1000)
    want = plain(batch)
    first = cached(batch)
    # The second pass takes every word row from the cache (the words graph's pre-activation output).
    again = cached({**batch, "gazetteer": np.where(batch["gazetteer"] > 0, 1, 0).astype(np.int32)})
    stats = cached.stats()
    assert stats["hits"] == stats["misses"] > 0
    np.testing.assert_array_equal(first, want)
    np.testing.assert_array_equal(again, plain({**batch, "gazetteer": np.where(batch["gazetteer"] > 0, 1, 0)
                                                .astype(np.int32)}))
    assert np.abs(again - want).max() > 1e-2  # the same cached rows, other gazetteer ids: other emissions


def test_the_export_carries_the_gazetteer_and_serves_the_keras_tags(gazetteer_model, gazetteer_export) -> None:
    keras_loaded, onnx_loaded = _loaded(gazetteer_model), _loaded(gazetteer_export)
    assert onnx_loaded.vocabs.gazetteer == keras_loaded.vocabs.gazetteer
    assert onnx_loaded.forward.takes_gazetteer
    keras_pred, onnx_pred = keras_loaded.predictor(), onnx_loaded.predictor()
    assert (keras_pred.runtime, onnx_pred.runtime) == ("keras", "onnx")
    for a, b in zip(keras_pred.emissions(TEXT), onnx_pred.emissions(TEXT)):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-5)
    want, got = keras_pred.tag(TEXT), onnx_pred.tag(TEXT)
    assert [t.tags for t in got] == [t.tags for t in want]
    assert any(t != "O" for r in want for t in r.tags)  # the random model tags something: a real comparison
    readme = (gazetteer_export / "README.md").read_text(encoding="utf-8")
    assert "`gazetteer` int32 (B, T)" in readme and "max_tokens" in readme


def test_the_export_alone_with_its_readme_recipe_gives_the_keras_emissions(gazetteer_model, gazetteer_export) -> None:
    """standalone_onnx.py (no nerservice importable) computes the gazetteer ids as the README says."""
    code = BLOCK_NERSERVICE + f"import runpy; runpy.run_path({str(HERE / 'standalone_onnx.py')!r}, run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", code, str(gazetteer_export)], check=False, input=json.dumps(TEXT),
                          capture_output=True, text=True, timeout=120, cwd=HERE)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    keras_pred = _loaded(gazetteer_model).predictor()
    assert out["gazetteer"] == [keras_pred.vocabs.gazetteer.token_ids(s) for s in TEXT]
    for a, b in zip(keras_pred.emissions(TEXT), out["emissions"]):
        np.testing.assert_allclose(np.asarray(b), a, rtol=0, atol=1e-5)
    assert out["tags"] == [t.tags for t in keras_pred.tag(TEXT)]


def test_auto_serves_a_gazetteer_model_on_onnx_and_a_char_lm_model_stays_on_keras(gazetteer_model, tmp_path) -> None:
    import shutil

    from nerservice.inference import Extractor
    from nerservice.runtime.select import onnx_covers, planned_runtime

    assert planned_runtime(gazetteer_model) == "onnx"
    assert onnx_covers(_loaded(gazetteer_model))
    auto, ref = Extractor.load(gazetteer_model), Extractor.load(gazetteer_model, runtime="keras")
    assert (auto.runtime, ref.runtime) == ("onnx", "keras")
    texts = ["Patients with colorectal cancer took aspirin. Alzheimer disease and asthma.", "x"]
    got, want = auto.extract(texts), ref.extract(texts)
    assert [[(e.start, e.end, e.label) for e in es] for es in got] == \
        [[(e.start, e.end, e.label) for e in es] for es in want]
    # The refusal that remains: planned_runtime reads config.json only, so a character-LM size there decides.
    lm = shutil.copytree(gazetteer_model, tmp_path / "lm")
    config = json.loads((lm / "config.json").read_text(encoding="utf-8"))
    config["model"]["char_lm_units"] = 4
    (lm / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert planned_runtime(lm) == "keras"


def test_graphs_without_a_gazetteer_are_the_old_ones_and_with_one_split_the_dense_layer(random_models,
                                                                                          gazetteer_model) -> None:
    import onnx

    from nerservice.runtime.export import build_graphs

    def ops_and_inputs(folder: Path) -> tuple[list[str], list[str], list[str], int]:
        words, context = (onnx.load_from_string(g) for g in build_graphs(_loaded(folder).model)[:2])
        kernel = next(t for t in words.graph.initializer if t.name == "dense.kernel")
        return ([n.op_type for n in words.graph.node], [n.op_type for n in context.graph.node],
                [i.name for i in context.graph.input], int(kernel.dims[0]))

    w_ops, c_ops, c_inputs, rows = ops_and_inputs(random_models["tiny"])
    assert w_ops[-2:] == ["Relu", "Identity"] and "Relu" not in c_ops
    assert c_inputs == ["features", "word_index", "lengths"]
    gaz_loaded = _loaded(gazetteer_model)
    w_ops, c_ops, c_inputs, rows = ops_and_inputs(gazetteer_model)
    assert w_ops[-2:] == ["Gemm", "Identity"] and "Relu" not in w_ops
    assert c_inputs == ["features", "word_index", "lengths", "gazetteer"] and "Relu" in c_ops
    g = gaz_loaded.config.model.gazetteer_dim
    assert rows == int(gaz_loaded.model.dense.kernel.shape[0]) - g  # the per-word rows only
    assert not _ort(_loaded(random_models["tiny"])).takes_gazetteer
