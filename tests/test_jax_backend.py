"""The JAX backend (KERAS_BACKEND is fixed at import, so everything runs in a subprocess): CRF against
brute force, train → save → load → predict, and weights files that move between backends unchanged."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers import REPO, jax_env, run_python

pytestmark = [pytest.mark.jax, pytest.mark.slow]

SENTENCES = [["Patients", "with", "breast", "cancer", "were", "treated", "with", "cisplatin", "."],
             ["Lithium", "-", "induced", "nephrotoxicity"],
             ["Unseen", "wordzz", "😀", "ÿ", "and", "asthma", "."]]

JAX_SCRIPT = r"""
import json, os, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
import keras
assert keras.backend.backend() == "jax", keras.backend.backend()
import numpy as np
from keras import ops
from helpers import brute_force_crf, random_crf_problem
from helpers import tiny_config
from nerservice.data import read_corpus
from nerservice.inference import Extractor
from nerservice.model.crf import CRF
from nerservice.model.forward import compile_forward
from nerservice.training.trainer import train

work = Path({work!r})
result = {{}}
import time
t0 = time.perf_counter()

# 1. CRF log-likelihood against brute force, under jax.
errs = []
for seed in range(3):
    p = random_crf_problem(seed)
    crf = CRF(3)
    crf.build()
    crf.transitions.assign(p["transitions"].astype("float32"))
    crf.start.assign(p["start"].astype("float32"))
    crf.end.assign(p["end"].astype("float32"))
    ll = np.asarray(ops.convert_to_numpy(crf.log_likelihood(p["emissions"].astype("float32"), p["tags"], p["lengths"])))
    for b, n in enumerate(p["lengths"]):
        bf = brute_force_crf(p["emissions"][b, :n], p["transitions"], p["start"], p["end"])
        errs.append(abs(float(ll[b]) - (bf["score"](p["tags"][b, :n]) - bf["log_z"])))
result["crf_max_error"] = max(errs)
result["t_crf"] = time.perf_counter() - t0

# 2. Train on the demo corpus, save, load, predict.
corpus = {corpus!r}
# bucket_size 32: every batch has T = 32, so XLA compiles the step and the forward pass once each
# (compiling per shape dominates a run this small).
# One residual layer: XLA compile time grows with the number of LSTM scans in the gradient.
cfg = tiny_config().with_overrides({{"training.epochs": 3, "training.bucket_size": 32, "model.lstm_layers": 1}})
outcome = train(cfg, train_data=read_corpus(corpus["train"]).sentences, dev_data=read_corpus(corpus["dev"]).sentences,
                test_data=read_corpus(corpus["test"]).sentences, out_dir=work / "jax-run", progress=False)
result["history"] = outcome.history
result["t_train"] = time.perf_counter() - t0
result["test_f1"] = outcome.test["micro"]["f1"]
result["backend_in_lineage"] = json.loads((outcome.best_dir / "lineage.json").read_text())["keras_backend"]
ex = Extractor.load(outcome.best_dir)
result["entities"] = [[e.to_dict() for e in es] for es in ex.extract(
    ["Patients with breast cancer were treated with cisplatin.", ""])]

# 3. Emissions of both models (the JAX-trained one and the TF-trained fixture) on one fixed batch.
batch = {{k: v for k, v in np.load(work / "batch_jax.npz", allow_pickle=False).items()}}
np.save(work / "em_jax_model_under_jax.npy", compile_forward(ex.loaded.model)(batch))
batch = {{k: v for k, v in np.load(work / "batch_tf.npz", allow_pickle=False).items()}}
tf_ex = Extractor.load({tf_model!r})
np.save(work / "em_tf_model_under_jax.npy", compile_forward(tf_ex.loaded.model)(batch))
result["tf_model_entities_under_jax"] = [[e.to_dict() for e in es] for es in tf_ex.extract({texts!r})]
result["t_all"] = time.perf_counter() - t0
print(json.dumps(result))
"""

TEXTS = ["Patients with breast cancer were treated with cisplatin.",
         "Cisplatin-induced nephrotoxicity was observed. No cases of asthma were reported.", ""]


def _batch(loaded) -> dict[str, np.ndarray]:
    from helpers import encode_batch

    return encode_batch(SENTENCES, loaded.vocabs, max_word_length=loaded.config.model.max_word_length,
                        time_multiple=8)


def _real(em: np.ndarray) -> list[np.ndarray]:
    return [em[b, :len(s)] for b, s in enumerate(SENTENCES)]


def test_jax_backend_end_to_end_and_weights_move_between_backends(tmp_path: Path, tiny_model_dir: Path,
                                                                   demo_corpus) -> None:
    from helpers import last_json_line
    from nerservice.artifacts.formats import load_model
    from nerservice.inference import Extractor
    from nerservice.model.forward import compile_forward

    tf_loaded = load_model(tiny_model_dir)
    np.savez(tmp_path / "batch_tf.npz", **_batch(tf_loaded))
    # The JAX model's vocabulary is built from the same corpus, so the TF-side batch for it is identical
    # in content; it is written before the run because the JAX model does not exist yet.
    np.savez(tmp_path / "batch_jax.npz", **_batch(tf_loaded))
    code = JAX_SCRIPT.format(tests=str(REPO / "tests"), work=str(tmp_path), tf_model=str(tiny_model_dir),
                             corpus={k: str(v) for k, v in demo_corpus.items()}, texts=TEXTS)
    res = last_json_line(run_python(code, env=jax_env(), timeout=600).stdout)

    assert res["crf_max_error"] < 1e-4
    assert [h["epoch"] for h in res["history"]] == [1, 2, 3]
    assert res["history"][-1]["loss"] < res["history"][0]["loss"]
    assert res["test_f1"] >= 0.9
    assert res["backend_in_lineage"] == "jax"
    assert [(e["text"], e["label"]) for e in res["entities"][0]] == [("breast cancer", "Disease"),
                                                                    ("cisplatin", "Chemical")]
    assert res["entities"][1] == []

    # TF-trained model under JAX == under TF.
    em_tf = compile_forward(tf_loaded.model)(_batch(tf_loaded))
    em_jax = np.load(tmp_path / "em_tf_model_under_jax.npy")
    for a, b in zip(_real(em_tf), _real(em_jax)):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-4)
    tf_ents = [[e.to_dict() for e in es] for es in Extractor(tf_loaded).extract(TEXTS)]
    got = res["tf_model_entities_under_jax"]
    assert [[(e["start"], e["end"], e["label"]) for e in es] for es in got] == \
        [[(e["start"], e["end"], e["label"]) for e in es] for es in tf_ents]
    for es_j, es_t in zip(got, tf_ents):
        assert [e["score"] for e in es_j] == pytest.approx([e["score"] for e in es_t], abs=1e-4)

    # JAX-trained model under TF == under JAX.
    jax_loaded = load_model(tmp_path / "jax-run" / "model-best")
    assert jax_loaded.vocabs == tf_loaded.vocabs
    em_tf_side = compile_forward(jax_loaded.model)(_batch(jax_loaded))
    for a, b in zip(_real(np.load(tmp_path / "em_jax_model_under_jax.npy")), _real(em_tf_side)):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-4)
    json.dumps(res)
