"""Multi-device data parallelism on the JAX backend (the multi-GPU path of issue 7), run on CPU with two
virtual XLA host devices (``--xla_force_host_platform_device_count=2``) in a subprocess: the same
``JaxStep`` code the H200 runs, with the batch axis sharded over a 2-device mesh."""
from __future__ import annotations

import pytest

from helpers import REPO, jax_env, last_json_line, run_python

pytestmark = [pytest.mark.jax, pytest.mark.slow]

SCRIPT = r"""
import json, sys
sys.path.insert(0, {tests!r})
import jax, keras, numpy as np
assert keras.backend.backend() == "jax" and len(jax.devices()) == 2, jax.devices()
from helpers import tiny_config
from nerservice.demo_corpus import generate
from nerservice.errors import ConfigError
from nerservice.model.tagger import build_tagger
from nerservice.text.features import EncodedCorpus, ShapePolicy
from nerservice.training.loop import epoch_plan
from nerservice.training.parallel import clear_data_parallel, use_data_parallel
from nerservice.training.steps import make_train_step
from nerservice.training.trainer import train, vocabularies_with_vectors

res = {{}}
config = tiny_config().with_overrides({{"model.dropout": 0.3, "training.bucket_size": 32, "model.lstm_layers": 1}})
tr = generate(96, seed=5)
vocabs, _, _ = vocabularies_with_vectors(tr, [], None, progress=False, vector_vocabulary=0)
enc = EncodedCorpus([s.tokens for s in tr], vocabs, max_word_length=config.model.max_word_length,
                    tags=[s.tags for s in tr])
policy = ShapePolicy.for_backend("jax", batch_size=config.training.batch_size, time_multiple=32)
plan = epoch_plan([len(s.tokens) for s in tr], config, 0)

def run(devices):
    if devices:
        use_data_parallel(devices)
    try:
        model = build_tagger(config.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                             n_tags=len(vocabs.tags), seed=7)
        step = make_train_step(model, config.training)
        losses = [float(step(enc.batch(idx, policy), len(idx))) for idx in plan]
        out = {{"losses": losses, "state_devices": sorted(str(d) for d in step._tv[0].devices())}}
        if devices:
            b = step._placement.batch({{k: v for k, v in enc.batch(plan[0], policy).items()
                                       if k in ("token_ids", "lengths", "word_chars", "word_index", "tag_ids")}})
            out["token_shards"] = [list(s.data.shape) for s in b["token_ids"].addressable_shards]
            out["char_shards"] = [list(s.data.shape) for s in b["word_chars"].addressable_shards]
            hlo = step._step.lower(step._tv, step._ntv, step._ov, b, np.float32(1)).compile().as_text()
            out["all_reduce_in_step"] = "all-reduce" in hlo
        step.sync_to_model()
        out["weights"] = [np.asarray(v.value) for v in model.trainable_variables]
        return out
    finally:
        clear_data_parallel()

one, two = run(None), run(2)
res["steps"] = len(plan)
res["loss_diff"] = max(abs(a - b) for a, b in zip(one["losses"], two["losses"]))
res["weight_diff"] = max(float(np.max(np.abs(a - b))) for a, b in zip(one["weights"], two["weights"]))
res["loss_moved"] = one["losses"][0] - one["losses"][-1]
for k in ("state_devices", "token_shards", "char_shards", "all_reduce_in_step"):
    res[k] = two[k]
res["one_state_devices"] = one["state_devices"]

# A batch that does not split evenly is a coded config error, before any compile.
use_data_parallel(2)
try:
    bad = config.with_overrides({{"training.batch_size": 15}})
    model = build_tagger(bad.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars), n_tags=len(vocabs.tags))
    make_train_step(model, bad.training)
    res["odd_batch_error"] = None
except ConfigError as exc:
    res["odd_batch_error"] = [exc.code, str(exc)]

# The whole trainer (dev evaluation, checkpoints, best model) under the 2-device distribution, on the steps'
# 96 sentences (and 24 + 24 for dev and test): what is checked below does not depend on the corpus, and the
# demo corpus' 400 + 80 + 80 brought more distinct padded shapes, each another XLA compile (~15 s in all).
cfg = config.with_overrides({{"training.epochs": 2}})
outcome = train(cfg, train_data=tr, dev_data=generate(24, seed=6), test_data=generate(24, seed=7), out_dir={out!r},
                progress=False)
clear_data_parallel()
res["trainer_epochs"] = [h["epoch"] for h in outcome.history]
res["trainer_losses"] = [h["loss"] for h in outcome.history]
res["trainer_test_f1"] = outcome.test["micro"]["f1"]
print(json.dumps(res))
"""


def test_two_device_data_parallel_step_equals_one_device(tmp_path) -> None:
    code = SCRIPT.format(tests=str(REPO / "tests"), out=str(tmp_path / "dp-run"))
    res = last_json_line(run_python(code, env=jax_env("--xla_force_host_platform_device_count=2"),
                                    timeout=900).stdout)
    assert res["steps"] >= 5 and res["loss_moved"] > 0
    # Same update on one device and on two, dropout included (JAX's partitionable threefry draws the
    # same masks however the batch is split); differences are float summation order only.
    assert res["loss_diff"] < 1e-4, res
    assert res["weight_diff"] < 1e-5, res
    # Really split: state on both devices, half the sentences per device, the word list on each, and an
    # all-reduce in the compiled step.
    assert len(res["one_state_devices"]) == 1
    assert len(res["state_devices"]) == 2
    assert [s[0] for s in res["token_shards"]] == [8, 8]
    assert res["char_shards"][0] == res["char_shards"][1]
    assert res["all_reduce_in_step"] is True
    code_, message = res["odd_batch_error"]
    assert code_.startswith("NER") and "batch_size=15" in message and "2" in message
    assert res["trainer_epochs"] == [1, 2]
    assert res["trainer_losses"][1] < res["trainer_losses"][0]
    assert 0.0 <= res["trainer_test_f1"] <= 1.0
