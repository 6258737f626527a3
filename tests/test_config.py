"""NerConfig: defaults, strictness, overrides, JSON round-trip, stable fingerprint."""
from __future__ import annotations

import json

import pytest

from nerservice.config import CONFIG_VERSION, ModelConfig, NerConfig, TrainingConfig
from nerservice.errors import ConfigError


def test_defaults_are_valid_and_follow_nerdl() -> None:
    c = NerConfig()
    assert c.version == CONFIG_VERSION
    m, t = c.model, c.training
    assert (m.char_embedding_dim, m.char_cnn_filters, m.char_cnn_width, m.char_lstm_units) == (25, 30, 3, 30)
    assert (m.dense_units, m.lstm_units, m.lstm_layers) == (256, 128, 3)
    assert (t.lr_decay, t.clip_norm) == (0.005, 5.0)
    # Where the defaults leave NerDL: the recipe measured best on dev (BENCHMARKS.md, sessions 4, 9, 10 and 16).
    assert (m.dropout, m.embeddings, t.average_epochs, t.patience, t.epochs) == (0.3, ["glove-6b-50d"], 5, 8, 40)
    assert m.word_dropout == 0.1
    assert m.gazetteer and (t.batch_size, t.learning_rate, t.warmup_epochs, t.warmup_start_factor) == (128, 4e-3, 2, 0.25)
    assert NerConfig.from_dict(json.loads(c.to_json())) == c


def test_json_round_trip_preserves_every_value(tmp_path) -> None:
    c = NerConfig().with_overrides({"model.lstm_layers": 2, "training.max_minutes": 7.5, "model.dropout": 0.25})
    again = NerConfig.from_dict(json.loads(c.to_json()))
    assert again == c
    path = tmp_path / "config.json"
    path.write_text(c.to_json(), encoding="utf-8")
    assert NerConfig.load(path) == c
    assert again.to_json() == c.to_json()


@pytest.mark.parametrize("data", [
    {"model": {"lstm_unitz": 5}},  # typo in a known section
    {"modle": {}},  # unknown section
    {"training": {"epochs": 3, "bogus": 1}},
    {"extra_top_level": True},
])
def test_unknown_keys_are_rejected(data) -> None:
    with pytest.raises(ConfigError) as err:
        NerConfig.from_dict(data)
    assert err.value.code == "NER100"


@pytest.mark.parametrize("data,where", [
    ({"model": {"dropout": 1.5}}, "model.dropout"),
    ({"training": {"epochs": 0}}, "training.epochs"),
    ({"training": {"batch_size": "many"}}, "training.batch_size"),
    ({"version": "nerservice.config.v0"}, "version"),
])
def test_invalid_values_name_the_field(data, where: str) -> None:
    with pytest.raises(ConfigError, match=where.replace(".", r"\.")):
        NerConfig.from_dict(data)


def test_overrides_parse_json_values_and_strings() -> None:
    c = NerConfig().with_overrides(["training.epochs=3", "model.dropout=0.3", "training.max_minutes=null",
                                    "model.embeddings_trainable=true", "training.learning_rate=2e-3"])
    assert c.training.epochs == 3 and isinstance(c.training.epochs, int)
    assert c.model.dropout == 0.3
    assert c.training.max_minutes is None
    assert c.model.embeddings_trainable is True
    assert c.training.learning_rate == 0.002
    d = NerConfig().with_overrides({"training.seed": 7})
    assert d.training.seed == 7 and NerConfig().training.seed == 42  # the original is untouched


@pytest.mark.parametrize("override,match", [
    (["training.epochz=3"], "unknown config key"),
    (["nosuch.epochs=3"], "unknown config section"),
    (["training.epochs"], "not KEY=VALUE"),
    (["training.epochs=abc"], "training.epochs"),
    (["model.dropout=-1"], "model.dropout"),
    (["model.encoder_dropout=0.3"], "encoder_dropout=0.3 needs model.encoder"),
])
def test_bad_overrides_raise_config_error(override, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        NerConfig().with_overrides(override)


def test_encoder_dropout_is_accepted_beside_an_encoder() -> None:
    cfg = NerConfig().with_overrides(["model.encoder=minilm-l6", "model.encoder_dropout=0.3"])
    assert cfg.model.encoder_dropout == 0.3
    assert NerConfig().with_overrides(["model.encoder=minilm-l6"]).model.encoder_dropout == 0.5
    # Without an encoder, 0 (a model saved in session 35) and the default are what every config carries.
    assert NerConfig().with_overrides(["model.encoder_dropout=0"]).model.encoder_dropout == 0.0
    assert NerConfig().model.encoder_dropout == 0.5


def test_an_encoder_model_saved_before_encoder_dropout_loads_without_it() -> None:
    shape = {"vocab_size": 10, "hidden": 4, "layers": 1, "heads": 1, "intermediate": 8, "max_positions": 16,
             "eps": 1e-12}
    old = NerConfig().model.model_dump(mode="json")
    del old["encoder_dropout"]
    old.update(encoder="minilm-l6", encoder_shape=shape)
    assert NerConfig.from_dict({"model": old}).model.encoder_dropout == 0.0
    assert NerConfig.from_dict({"model": {**old, "encoder_dropout": 0.5}}).model.encoder_dropout == 0.5
    fresh = {k: v for k, v in old.items() if k not in ("encoder_shape",)}  # before train() records the shape
    assert NerConfig.from_dict({"model": fresh}).model.encoder_dropout == 0.5


def test_unreadable_config_file_is_a_config_error(tmp_path) -> None:
    bad = tmp_path / "c.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot read config"):
        NerConfig.load(bad)
    with pytest.raises(ConfigError):
        NerConfig.load(tmp_path / "missing.json")


def test_fingerprint_is_stable_and_sensitive() -> None:
    a, b = NerConfig(), NerConfig.from_dict(json.loads(NerConfig().to_json()))
    assert a.fingerprint() == b.fingerprint()
    assert len(a.fingerprint()) == 16 and int(a.fingerprint(), 16) >= 0
    # Same values given in another order / via overrides: same print.
    c = NerConfig.from_dict({"training": {"seed": 42, "epochs": 40}, "model": {"dropout": 0.3}})
    assert c.fingerprint() == a.fingerprint()
    assert NerConfig().with_overrides(["training.seed=43"]).fingerprint() != a.fingerprint()


def test_fingerprint_is_the_same_in_another_process() -> None:
    """Never Python's salted hash(): a fresh interpreter with another hash seed gives the same print."""
    import os
    import subprocess
    import sys

    code = "from nerservice.config import NerConfig; print(NerConfig().fingerprint())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "12345"}).stdout.strip()
    assert out == NerConfig().fingerprint()


def test_validate_assignment_guards_mutation() -> None:
    t = TrainingConfig()
    with pytest.raises(Exception):
        t.epochs = -1
    m = ModelConfig()
    with pytest.raises(Exception):
        m.nonexistent = 3
