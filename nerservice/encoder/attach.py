"""What ``train()`` does with ``model.encoder``: read the encoder, record its sizes in the config (a saved
tagger is rebuilt from its config alone), its word pieces in the vocabularies and its identity in the
lineage."""
from __future__ import annotations

import dataclasses
from typing import Any

from nerservice.config import NerConfig
from nerservice.encoder.folder import TextEncoder, load_text_encoder, read_encoder_files, weights_fingerprint
from nerservice.text.vocab import Vocabularies


def encoder_arguments(encoder: TextEncoder | None) -> dict[str, Any]:
    """``build_tagger``'s arguments for the encoder (none without one)."""
    return {} if encoder is None else {"encoder_arrays": encoder.layer_arrays()}


def with_word_pieces(vocabs: Vocabularies, encoder: TextEncoder | None) -> Vocabularies:
    return vocabs if encoder is None else dataclasses.replace(vocabs, word_pieces=encoder.tokenizer())


def resolve_encoder(config: NerConfig) -> tuple[NerConfig, TextEncoder | None, dict[str, Any]]:
    """(config with the encoder's sizes, the encoder or None, its lineage record or {})."""
    if not config.model.encoder:
        if config.model.encoder_shape is not None:
            config = config.with_overrides({"model.encoder_shape": None})
        return config, None, {}
    encoder = load_text_encoder(config.model.encoder)
    config = config.with_overrides({"model.encoder_shape": encoder.shape.model_dump(mode="json")})
    record = {"ref": config.model.encoder, "path": str(encoder.path), "weights_sha256": encoder.fingerprint,
              **encoder.shape.model_dump(mode="json")}
    return config, encoder, record


def encoder_identity(config: NerConfig) -> tuple[NerConfig, str | None]:
    """``resolve_encoder``'s config and the weights' sha256 (None without an encoder), without reading the
    weights into memory: what a finished run's read-back compares with its saved config hash and lineage."""
    if not config.model.encoder:
        return resolve_encoder(config)[0], None
    path, shape, _ = read_encoder_files(config.model.encoder)
    return config.with_overrides({"model.encoder_shape": shape.model_dump(mode="json")}), weights_fingerprint(path)
