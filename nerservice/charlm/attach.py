"""What ``train()`` does with ``model.char_lm``: read the LM folder, record its sizes in the config (a saved
tagger is rebuilt from its config alone) and its identity in the lineage."""
from __future__ import annotations

from typing import Any

from nerservice.charlm.folder import CharLM, load_char_lm
from nerservice.config import NerConfig


def lm_arguments(lm: CharLM | None) -> dict[str, Any]:
    """``build_tagger``'s arguments for the LM (none without one)."""
    if lm is None:
        return {}
    return {"n_lm_chars": len(lm.vocab), "char_lm_weights": lm.encoder_weights()}


def resolve_char_lm(config: NerConfig) -> tuple[NerConfig, CharLM | None, dict[str, Any]]:
    """(config with the LM's sizes, the LM or None, its lineage record or {})."""
    if not config.model.char_lm:
        if config.model.char_lm_units:
            config = config.with_overrides({"model.char_lm_units": 0, "model.char_lm_embedding_dim": 0})
        return config, None, {}
    lm = load_char_lm(config.model.char_lm)
    config = config.with_overrides({"model.char_lm_units": lm.config.units,
                                    "model.char_lm_embedding_dim": lm.config.embedding_dim})
    record = {"path": str(config.model.char_lm), "weights_sha256": lm.fingerprint, "units": lm.config.units,
              "characters": len(lm.vocab), "train_chars": lm.record.get("train_chars"),
              "text": lm.record.get("text")}
    return config, lm, record
