"""``train()``: corpora → vocabularies (+ pretrained vectors) → tagger → epochs → saved models.

Writes a run folder: ``OUT/model-best``, ``OUT/model-last``, ``OUT/checkpoint`` (``artifacts/layout.py``).
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from nerservice.artifacts.layout import CHECKPOINT
from nerservice.config import NerConfig
from nerservice.data import Sentence
from nerservice.errors import ConfigError
from nerservice.metrics import evaluate_predictor
from nerservice.text.gazetteer import build_for_training
from nerservice.text.vocab import MultiTagVocabulary, TagVocabulary, Vocabularies, Vocabulary, normalize_word


class TrainCallback(Protocol):
    def on_start(self, config: NerConfig) -> None:
        """The run's own config, before its first epoch: a recipe's runs (phase 2's epoch count, a distillation
        student) differ from the config the command was given, and what a callback records must be the run's."""

    def on_epoch(self, record: dict[str, Any], is_best: bool) -> None: ...

    def on_end(self, outcome: "TrainOutcome") -> None: ...


class Distillation(Protocol):
    """What ``train()`` needs to train a distillation student (``nerservice/distil/run.py``): the teacher's
    tag set (the student's, column for column), the student class, the batch targets, the lineage record."""

    tags: TagVocabulary | MultiTagVocabulary  # multi: a multi-corpus teacher's (``train_multi``)
    tagger_cls: type[Any]
    record: dict[str, Any]
    labelled: int  # the first ``labelled`` training sentences carry gold tags; the rest is unlabelled text

    def batch(self, rows: np.ndarray, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]: ...


@dataclass
class TrainOutcome:
    out_dir: Path
    best_dir: Path  # the model the run keeps: model-best, or model-last with keep="last"
    best_epoch: int
    dev: dict[str, Any]
    test: dict[str, Any] | None
    history: list[dict[str, Any]]
    stopped_reason: str
    seconds: float
    lineage: dict[str, Any] = field(default_factory=dict)
    vocab_stats: dict[str, Any] = field(default_factory=dict)
    # The trained model as the loop left it (last epoch, every rank): lets a distributed runner check that
    # all workers ended with identical weights.
    model: Any = field(default=None, repr=False, compare=False)
    # Where the run's wall time went, in seconds (``phase_timings``): what the scaling benchmark and the
    # cost model (bench/scaling_model.py) split into fixed costs and training.
    timings: dict[str, float] = field(default_factory=dict)
    step_stats: dict[str, int] = field(default_factory=dict)  # TrainStep.stats(): traces, all-reduces per step
    # How the per-epoch dev evaluation ran: "whole" (this process decoded all of dev) or "sharded-all-reduce"
    # (its share, the counts summed on the training collective: ``training/sharded_eval.py``).
    dev_eval: str = "whole"


def build_vocabularies(train: Sequence[Sentence], *, also_tags: Sequence[Sentence] = (),
                       extra_words: Sequence[str] = ()) -> Vocabularies:
    """Words (normalised) and chars from the training corpus; tags from every labelled corpus given."""
    words = Vocabulary.build((normalize_word(t) for s in train for t in s.tokens), extra=extra_words)
    chars = Vocabulary.build(ch for s in train for t in s.tokens for ch in t)
    tags = TagVocabulary({t for s in list(train) + list(also_tags) for t in s.tags})
    return Vocabularies(words=words, chars=chars, tags=tags)


def vocabularies_with_vectors(train: Sequence[Sentence], others: Sequence[Sentence],
                              embeddings: str | Sequence[str] | None, *, vector_vocabulary: int,
                              progress: bool = True
                              ) -> tuple[Vocabularies, np.ndarray | None, dict[str, Any]]:
    """Training words, plus words of dev/test that have a pretrained vector, plus the first
    ``vector_vocabulary`` words of each vectors file (its most frequent: ``model.vector_vocabulary``).  The
    words beyond the corpus are why a saved model still knows "woodpecker" on text it never saw: without
    their rows every such word would be <unk> at inference.

    Several sources (e.g. GloVe and in-domain word2vec) are concatenated per word: each word's row is
    [vector from source 1 | vector from source 2 | ...], zeros where a source lacks the word."""
    from itertools import islice

    from nerservice.embeddings import vector_sources

    sources = vector_sources(embeddings)
    if not sources:
        vocabs = build_vocabularies(train, also_tags=others)
        return vocabs, None, {"words": len(vocabs.words), "pretrained": None}
    from nerservice.embeddings import embedding_matrix, load_vectors, vector_words

    train_words = {normalize_word(t) for s in train for t in s.tokens}
    other_words = {normalize_word(t) for s in others for t in s.tokens} - train_words
    frequent = [list(islice(vector_words(src), vector_vocabulary)) if vector_vocabulary else [] for src in sources]
    keep = train_words | other_words | {w for head in frequent for w in head}
    loaded = [load_vectors(src, keep=keep, progress=progress) for src in sources]
    # Ids after the training words: dev/test words (sorted), then each file's frequent words in file order.
    extra = sorted({w for v in loaded for w in v.words if w in other_words})
    extra += [w for head in frequent for w in head if w not in train_words and w not in other_words]
    vocabs = build_vocabularies(train, also_tags=others, extra_words=extra)
    parts = [embedding_matrix(v, vocabs.words) for v in loaded]
    matrix = np.concatenate([m for m, _ in parts], axis=1) if len(parts) > 1 else parts[0][0]
    # A word "has a vector" when any source has it (its row is not all zeros).
    hits = int(np.count_nonzero(np.any(matrix[2:] != 0, axis=1))) if len(parts) > 1 else parts[0][1]
    pretrained: Any = str(sources[0]) if len(sources) == 1 else [str(x) for x in sources]
    # Of the training words, how many have a vector (the vocabulary's own share says little once it holds a
    # vectors file's words too); and how many words came from the files alone (``vector_vocabulary``).
    train_ids = [i for i in vocabs.words.ids(sorted(train_words)) if i > 1]
    train_hits = int(np.count_nonzero(np.any(matrix[train_ids] != 0, axis=1))) if train_ids else 0
    corpus_words = len(train_ids) + sum(1 for w in other_words if w in vocabs.words)
    stats = {"words": len(vocabs.words), "pretrained": pretrained, "dim": int(matrix.shape[1]),
             "with_vector": hits, "coverage": hits / max(len(vocabs.words) - 2, 1),
             "training_coverage": train_hits / max(len(train_ids), 1),
             "beyond_corpus": len(vocabs.words) - 2 - corpus_words}
    if len(parts) > 1:
        stats["per_source"] = [{"source": str(src), "dim": v.dim, "with_vector": h}
                               for src, v, (_, h) in zip(sources, loaded, parts)]
    return vocabs, matrix, stats


def with_gazetteer(vocabs: Vocabularies, config: NerConfig, corpora: Sequence[tuple[str, Sequence[Sentence]]], *,
                   unlabelled: Sequence[Sentence] = ()) -> tuple[Vocabularies, np.ndarray | None, dict[str, Any]]:
    """With ``model.gazetteer``: the vocabularies with the gazetteer of ``corpora`` ((type prefix, training
    sentences) pairs, ``text/gazetteer.py``), the training sentences' jackknifed ids — then those of
    ``unlabelled`` training text (a distillation student's), matched against the whole gazetteer — and its
    lineage record; otherwise ``(vocabs, None, {})``."""
    m = config.model
    if not m.gazetteer:
        return vocabs, None, {}
    built = build_for_training(corpora, min_ratio=m.gazetteer_min_ratio, max_tokens=m.gazetteer_max_tokens,
                               folds=m.gazetteer_folds)
    g = built.gazetteer
    if not g.types:
        raise ConfigError("model.gazetteer is set but the training corpus has no entity annotations",
                          hint="--set model.gazetteer=false")
    ids = np.concatenate([built.training_ids, g.flat_ids(s.tokens for s in unlabelled)]).astype(np.int32)
    record = {"strings": len(g), "types": list(g.types), "training_tokens_matched": int(np.count_nonzero(ids > 1))}
    return dataclasses.replace(vocabs, gazetteer=g), ids, record


def gazetteer_arguments(vocabs: Vocabularies) -> dict[str, Any]:
    """``build_tagger``'s argument for the gazetteer (none without one)."""
    return {"n_gazetteer_ids": vocabs.gazetteer.n_ids} if vocabs.gazetteer is not None else {}


def lineage_corpora(train: Sequence[Sentence], dev: Sequence[Sentence],
                    test: Sequence[Sentence] | None) -> dict[str, list[Sentence]]:
    """The splits a run's lineage fingerprints, by name (``training/finished.py`` compares them on a rerun)."""
    corpora = {"train": list(train), "dev": list(dev)}
    if test:
        corpora["test"] = list(test)
    return corpora


def config_with_vectors(config: NerConfig, embeddings: str | Sequence[str] | None) -> NerConfig:
    """The config as saved: it tells which vectors the model was trained with."""
    from nerservice.embeddings import vector_sources

    used = vector_sources(embeddings)
    return config if used == config.model.embeddings else config.with_overrides({"model.embeddings": used})


def phase_timings(loop: Any) -> dict[str, float]:
    """Seconds of an ``EpochLoop``'s phases: the step's warm-up (trace, collectives), the timed training
    steps, the dev evaluations, and the rest (saves and checkpoints between epochs); plus training tokens.
    Only this loop's epochs count (a resumed state's history holds earlier ones)."""
    records = loop.state.history[len(loop.state.history) - loop.epochs_run:]
    train_s = sum(r["train_seconds"] for r in records)
    eval_s = sum(r["eval_seconds"] for r in records)
    return {"warmup_s": loop.warmup_seconds, "train_s": train_s, "eval_s": eval_s,
            "epoch_other_s": max(loop.seconds - loop.warmup_seconds - train_s - eval_s, 0.0),
            "train_tokens": float(sum(r["train_tokens"] for r in records))}


def train(
    config: NerConfig,
    *,
    train_data: Sequence[Sentence],
    dev_data: Sequence[Sentence],
    test_data: Sequence[Sentence] | None = None,
    embeddings: str | Sequence[str] | None = None,
    out_dir: str | Path,
    sources: dict[str, Any] | None = None,
    callbacks: Sequence[TrainCallback] = (),
    resume: bool = True,
    progress: bool = True,
    strategy: Any = None,
    rank: int = 0,
    world: int = 1,
    keep: Literal["best", "last"] = "best",
    recipe: dict[str, Any] | None = None,
    distillation: Distillation | None = None,
) -> TrainOutcome:
    """Train and save.  ``keep="last"`` (the final-model recipe's phase 2, ``training/recipes.py``): no
    model is selected on dev (dev is then training data): model-last is the result, evaluated on test, and
    no model-best is written.  ``recipe``: how this run fits a multi-run recipe, recorded in the lineage.
    Distributed use (``spark_jobs/train.py``): every worker calls this with the same
    data and config, its ``rank``, ``world`` and a ``tf.distribute`` strategy; each trains on its slice of
    every global batch; only rank 0 writes models and checkpoints (``out_dir`` must be shared storage) and
    calls callbacks. Every worker gets the same dev metrics (weights are identical) so early stopping agrees:
    with a strategy and ``world > 1`` each decodes only its share of dev and the workers sum the shares' counts
    on the strategy's collective (``training.sharded_eval``).  ``distillation``: train a student on a teacher's
    targets (one per ``train_data`` sentence, in order) instead of the gold tags (``nerservice/distil``).

    spaCy's shape: the ``EpochLoop`` yields ``(record, is_best)``, the ``Checkpointer`` writes, and test is
    evaluated once, here, on the saved model-best."""
    from nerservice import backend
    from nerservice.charlm.attach import lm_arguments, resolve_char_lm
    from nerservice.encoder.attach import encoder_arguments, resolve_encoder, with_word_pieces
    from nerservice.lineage import build_lineage
    from nerservice.model.predictor import Predictor
    from nerservice.model.tagger import build_tagger
    from nerservice.training.checkpointer import Checkpointer
    from nerservice.training.collective import make_all_sum
    from nerservice.training.loop import EpochLoop
    from nerservice.training.sharded_eval import sharded_evaluator
    from nerservice.training.steps import make_train_step

    clock = time.perf_counter()
    config = config_with_vectors(config, embeddings)
    config, char_lm, char_lm_record = resolve_char_lm(config)
    config, encoder, encoder_record = resolve_encoder(config)
    out = Path(out_dir)
    others = list(dev_data) + list(test_data or [])
    vocabs, matrix, vocab_stats = vocabularies_with_vectors(train_data, others, embeddings, progress=progress,
                                                            vector_vocabulary=config.model.vector_vocabulary)
    if char_lm is not None:
        vocabs = dataclasses.replace(vocabs, lm_chars=char_lm.vocab)
    vocabs = with_word_pieces(vocabs, encoder)
    if distillation is not None:
        vocabs = dataclasses.replace(vocabs, tags=distillation.tags)
    labelled = distillation.labelled if distillation is not None else len(train_data)
    vocabs, gazetteer_ids, gazetteer_record = with_gazetteer(vocabs, config, [("", train_data[:labelled])],
                                                             unlabelled=train_data[labelled:])
    if gazetteer_record:
        vocab_stats = {**vocab_stats, "gazetteer": gazetteer_record}
    timings = {"vectors_s": time.perf_counter() - clock}
    chief = rank == 0
    scope = strategy.scope() if strategy is not None else contextlib.nullcontext()
    with scope:
        model = build_tagger(config.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                             n_tags=len(vocabs.tags), word_vectors=matrix, seed=config.training.seed,
                             cls=distillation.tagger_cls if distillation is not None else None,
                             **lm_arguments(char_lm), **encoder_arguments(encoder), **gazetteer_arguments(vocabs))
    step = make_train_step(model, config.training, strategy=strategy)
    predictor = Predictor(model, vocabs, max_word_length=config.model.max_word_length,
                          batch_size=config.training.eval_batch_size, bucket_size=config.training.bucket_size,
                          keep_encoder_states_mb=config.training.encoder_cache_mb)  # dev: scored every epoch
    lineage = build_lineage(corpora=lineage_corpora(train_data, dev_data, test_data),
                            config_hash=config.fingerprint(), sources=sources or {},
                            backend=backend.current(),
                            extra={"vocab": vocab_stats, **({"recipe": recipe} if recipe else {}),
                                   **({"char_lm": char_lm_record} if char_lm_record else {}),
                                   **({"encoder": encoder_record} if encoder_record else {}),
                                   **({"distillation": distillation.record} if distillation is not None else {})})
    out.mkdir(parents=True, exist_ok=True)
    checkpointer = Checkpointer(out, vocabs=vocabs, config=config, lineage=lineage, enabled=chief, keep=keep)

    state = checkpointer.resume(model, step.optimizer) if resume else None
    if state is not None:
        step.reload_from_model()  # the JAX step keeps its own copies of the state
        print(f"resuming from {out / CHECKPOINT} after epoch {state.epoch}", flush=True)
    timings["build_s"] = time.perf_counter() - clock - timings["vectors_s"]
    if dev_data:  # trace the predictor now, not inside epoch 1's dev evaluation
        w0 = time.perf_counter()
        predictor.predict_tags([dev_data[0].tokens])
        timings["eval_warmup_s"] = time.perf_counter() - w0
    all_sum = make_all_sum(strategy) if world > 1 else None
    tag_set = [vocabs.tags.tag(i) for i in range(len(vocabs.tags))]
    dev_eval = "sharded-all-reduce" if all_sum is not None else "whole"

    def evaluate() -> dict[str, Any]:
        if all_sum is not None:
            return sharded_evaluator(predictor, dev_data, rank=rank, world=world, all_sum=all_sum, labels=tag_set)
        return evaluate_predictor(predictor, dev_data)

    if chief:
        for cb in callbacks:
            cb.on_start(config)
    loop = EpochLoop(step, vocabs, config, train_data, evaluate=evaluate,
                     state=state, progress=progress and chief, rank=rank, world=world,
                     on_checkpoint=lambda: checkpointer.save_checkpoint(model, step.optimizer, loop.state),
                     extra_batch=distillation.batch if distillation is not None else None,
                     gazetteer_ids=gazetteer_ids)
    for record, is_best in loop:
        checkpointer.save_epoch(model, loop.state, loop.last_dev, is_best=is_best)
        if chief:
            for cb in callbacks:
                cb.on_epoch(record, is_best)
    history = loop.state.history
    timings.update(phase_timings(loop))
    best_epoch = loop.state.epoch if keep == "last" else loop.state.best_epoch  # the epoch of the kept model
    if not chief:
        return TrainOutcome(out_dir=out, best_dir=checkpointer.best_dir, best_epoch=best_epoch, dev=loop.last_dev,
                            test=None, history=history, stopped_reason=loop.stopped_reason, seconds=loop.seconds,
                            lineage=lineage, vocab_stats=vocab_stats, model=model, timings=timings,
                            step_stats=step.stats(), dev_eval=dev_eval)
    final_clock = time.perf_counter()

    best = checkpointer.load_kept()
    dev_metrics = checkpointer.kept_dev()  # evaluated once, in its epoch, on the weights the kept model holds
    test_metrics = (evaluate_predictor(best.predictor(batch_size=config.training.eval_batch_size), test_data)
                    if test_data else None)
    metrics: dict[str, Any] = {"dev": dev_metrics, "epoch": best_epoch}
    if test_metrics is not None:
        metrics["test"] = test_metrics
    checkpointer.finish(best, loop.state, metrics)
    timings["final_s"] = time.perf_counter() - final_clock  # load the kept model, test evaluation, last writes
    outcome = TrainOutcome(out_dir=out, best_dir=checkpointer.best_dir, best_epoch=best_epoch, dev=dev_metrics,
                           test=test_metrics, history=history, stopped_reason=loop.stopped_reason,
                           seconds=loop.seconds, lineage=lineage, vocab_stats=vocab_stats, model=model,
                           timings=timings, step_stats=step.stats(), dev_eval=dev_eval)
    for cb in callbacks:
        cb.on_end(outcome)
    return outcome
