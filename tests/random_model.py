"""Random-weight models for the fast tiers: built and saved in about a second, no training.

Top-level module (like ``helpers``): pytest puts ``tests/`` on sys.path through tests/conftest.py."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

WORDS = ["patients", "with", "colorectal", "cancer", "took", "aspirin", "and", "developed", "asthma", "after", "cisplatin", "therapy", "."]
TAGS = ["O", "O", "B-Disease", "I-Disease", "O", "B-Chemical", "O", "O", "B-Disease", "O", "B-Chemical", "O", "O"]


def build_random_model(out: Path, *, seed: int = 7, full_size: bool = False, **model_overrides: Any) -> Path:
    """A tagger with random weights (Disease/Chemical tags), saved through the library's save function:
    a real model folder whose answers are arbitrary but deterministic. ``full_size``: the default
    architecture (what a served model costs per token) instead of a tiny one."""
    from helpers import tiny_model_config
    from nerservice.artifacts.model_folder import save_model
    from nerservice.config import ModelConfig, NerConfig
    from nerservice.data import Sentence
    from nerservice.model.tagger import build_tagger
    from nerservice.training.trainer import build_vocabularies

    vocabs = build_vocabularies([Sentence(tuple(WORDS), tuple(TAGS))])
    model_config = (ModelConfig(**model_overrides) if full_size
                    else tiny_model_config(**{"max_word_length": 24, **model_overrides}))
    config = NerConfig().model_copy(update={"model": model_config})
    model = build_tagger(config.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                         n_tags=len(vocabs.tags), seed=seed)
    return save_model(out, model=model, vocabs=vocabs, config=config, metrics={"dev": {"f1": 0.0}})


TWO_HEADS = (("dis", ["O", "B-Disease", "I-Disease"]), ("chem", ["O", "B-Chemical", "I-Chemical"]))


def build_random_multi_model(out: Path, *, seed: int = 7,
                             heads: Sequence[tuple[str, list[str]]] = TWO_HEADS) -> Path:
    """A multi-corpus model (format ``nerservice.multi.v1``) with random weights and ``heads`` (name, tags)
    — by default two: "dis" (Disease) and "chem" (Chemical) — over the same words as ``build_random_model``."""
    from dataclasses import replace

    from helpers import tiny_model_config
    from nerservice.artifacts.layout import MULTI, MULTI_FORMAT
    from nerservice.artifacts.model_folder import save_model
    from nerservice.config import NerConfig
    from nerservice.data import Sentence
    from nerservice.multi.tagger import build_multi_tagger
    from nerservice.text.vocab import MultiTagVocabulary
    from nerservice.training.trainer import build_vocabularies

    tags = MultiTagVocabulary([(name, list(head)) for name, head in heads])
    vocabs = replace(build_vocabularies([Sentence(tuple(WORDS), tuple(TAGS))]), tags=tags)
    config = NerConfig().model_copy(update={"model": tiny_model_config(max_word_length=24)})
    model = build_multi_tagger(config.model, tags=tags, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                               seed=seed)
    return save_model(out, model=model, vocabs=vocabs, config=config, fmt=MULTI_FORMAT,
                      extra_files={MULTI: {"corpora": {"corpora": [{"name": name} for name, _ in heads]}}})
