"""The character LM's typed configuration, saved in its folder."""
from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError

from nerservice.config import Strict, describe, parse_value
from nerservice.errors import ConfigError


class CharLMConfig(Strict):
    # 256 units: with it a tagger trains 1.65x and infers 3.2x slower on one CPU core (BENCHMARKS.md,
    # "Character language model"); Flair uses 2048 on a GPU.
    units: int = Field(256, ge=4)
    embedding_dim: int = Field(32, ge=2)
    window: int = Field(250, ge=8)  # characters per training sequence (Flair: 250)
    batch_size: int = Field(64, ge=1)
    epochs: int = Field(4, ge=1)
    learning_rate: float = Field(2e-3, gt=0)
    clip_norm: float = Field(1.0, gt=0)
    min_count: int = Field(2, ge=1)  # rarer characters are <unk>
    # Bounds on the text one run reads, checked while reading (work and memory are linear in them).
    max_tokens: int = Field(20_000_000, ge=1)
    max_sentence_tokens: int = Field(5_000, ge=1)
    max_minutes: float | None = Field(None, gt=0)  # stops after the epoch that crosses it
    # With held-out text the folder keeps the epoch of lowest held-out bits per character, and training stops
    # after this many epochs without a new low: a 512-unit LM on ~6M characters reached its low at epoch 43
    # and then rose (1.87 -> 1.96 by epoch 113; BENCHMARKS.md, "Character language model").
    patience: int = Field(5, ge=1)
    seed: int = 42

    def with_overrides(self, items: list[str]) -> "CharLMConfig":
        """``["units=128", "epochs=2"]`` -> a validated copy; an unknown key or a bad value is a ConfigError."""
        data: dict[str, Any] = self.model_dump(mode="json")
        for item in items:
            key, sep, raw = item.partition("=")
            if not sep:
                raise ConfigError(f"override {item!r} is not KEY=VALUE", hint="e.g. units=128")
            if key.strip() not in data:
                raise ConfigError(f"unknown character LM setting {key.strip()!r}", hint=f"known: {sorted(data)}")
            data[key.strip()] = parse_value(raw.strip())
        try:
            return CharLMConfig.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"invalid character LM config: {describe(exc)}") from None
