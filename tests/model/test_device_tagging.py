"""The JAX Predictor's fused forward + device decode (``device_tagging.py``) against the NumPy decode of the
same emissions under JAX, and against the TensorFlow CPU path, on JAX's CPU device."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import REPO, jax_env, last_json_line, run_python

pytestmark = [pytest.mark.jax, pytest.mark.slow]

SCRIPT = r"""
import json, sys
import keras
assert keras.backend.backend() == "jax", keras.backend.backend()
import numpy as np
from nerservice.model.predictor import decode_emissions
from nerservice.artifacts.formats import load_model

sentences = json.loads(open({sentences!r}).read())
pred = load_model({model!r}).predictor(batch_size=4, token_budget=64)
assert pred.device_tagger is not None
res = {{"policies": [pred.device_tagger.policy_for(n, 5).fixed_batch for n in (1, 3, 4, 9)]}}
for with_scores in (True, False):
    fused = pred.tag(sentences, with_scores=with_scores)
    host = decode_emissions(pred.emissions(sentences), pred.crf_params(), pred.vocabs.tags.tag,
                            with_scores=with_scores, batch_size=4, bucket_size=pred.bucket_size)
    res[str(with_scores)] = {{"fused": [[t.tags, t.scores] for t in fused], "host": [[t.tags, t.scores] for t in host]}}
print(json.dumps(res))
"""


def test_device_decode_equals_numpy_decode_and_the_tensorflow_path(tmp_path: Path, tiny_model_dir: Path,
                                                                   demo_corpus) -> None:
    from nerservice.artifacts.formats import load_model
    from nerservice.data import read_corpus

    sentences = [s.tokens for s in read_corpus(demo_corpus["test"]).sentences][:40]
    # Empty sentences, a long one (several token-budget cuts, so short batches padded to a power of two).
    sentences += [[], [tok for s in sentences[:6] for tok in s], ["x"], []]
    (tmp_path / "s.json").write_text(json.dumps(sentences))
    res = last_json_line(run_python(SCRIPT.format(sentences=str(tmp_path / "s.json"), model=str(tiny_model_dir)),
                                    env={**jax_env(), "PYTHONPATH": str(REPO)}, timeout=600).stdout)
    assert res["policies"] == [1, 4, 4, 4]
    tf_tagged = load_model(tiny_model_dir).predictor(batch_size=4, token_budget=64).tag(sentences)
    for with_scores in ("True", "False"):
        fused, host = res[with_scores]["fused"], res[with_scores]["host"]
        assert len(fused) == len(host) == len(sentences)
        assert [f[0] for f in fused] == [h[0] for h in host]  # identical tags
        assert any(tag != "O" for f in fused for tag in f[0])  # the model finds entities: a real comparison
        for (_, fs), (_, hs), sent in zip(fused, host, sentences):
            assert len(fs) == len(hs) == len(sent)
            assert fs == pytest.approx(hs, abs=1e-5)
        if with_scores == "True":
            assert [f[0] for f in fused] == [t.tags for t in tf_tagged]  # the CPU (TensorFlow) path
            for (_, fs), t in zip(fused, tf_tagged):
                assert fs == pytest.approx(t.scores, abs=1e-4)
        else:
            assert all(s == 1.0 for f in fused for s in f[1])
