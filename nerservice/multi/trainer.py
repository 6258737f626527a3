"""``train_multi()``: several corpora, one shared network, one CRF head per corpus (multi-task learning as in
Wang et al. 2019, "Cross-type biomedical named entity recognition with deep multi-task learning").

Shared: word vectors, char encoders, dense layer, BiLSTM stack (everything below the emission layer).
Per corpus: its tag columns of the emission layer and its CRF block (``nerservice/multi/tagger.py``).
Batches follow ``CorporaConfig.batching``; early stopping and model-best use the mean over corpora of the
dev entity F1 (each corpus on its own head). Output folders as ``nerservice.training.trainer.train``;
the saved folders have format ``nerservice.multi.v1`` and hold ``multi.json`` (corpora, label maps, the
overlap rule).  With a ``distillation`` (``nerservice/distil``) every training sentence, labelled or not,
trains every head on a multi-corpus teacher's targets; unlabelled text is one more batch group.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from nerservice.artifacts.layout import CHECKPOINT
from nerservice.config import NerConfig
from nerservice.data import Sentence
from nerservice.model.batching import bucketed_batches
from nerservice.multi.config import CorporaConfig
from nerservice.multi.corpora import CorpusSplits, namespaced, tag_vocabulary, with_dev_in_train
from nerservice.multi.evaluation import evaluate_heads
from nerservice.text.vocab import HEAD_SEP, MultiTagVocabulary, Vocabularies
from nerservice.training.trainer import (
    Distillation,
    TrainCallback,
    TrainOutcome,
    config_with_vectors,
    gazetteer_arguments,
    phase_timings,
    vocabularies_with_vectors,
    with_gazetteer,
)

if TYPE_CHECKING:
    from nerservice.training.recipes import Runner, RunRequest

OVERLAP_RULE = "highest-mean-marginal, then longest, then corpus order, then start"  # nerservice/model/heads.py


def corpus_plan(groups: Sequence[np.ndarray], lengths: np.ndarray, config: NerConfig, epoch: int,
                world: int = 1, weights: Sequence[float] | None = None) -> list[np.ndarray]:
    """Global batches of one epoch, each inside one corpus (``groups``: each corpus's sentence indices),
    the batches of every corpus shuffled together: a corpus is sampled in proportion to its size times
    its weight (``CorpusSpec.weight``: whole passes, each shuffled on its own, then a seeded share of one
    more). Identical on every worker (seeds from the config)."""
    t = config.training
    batches: list[np.ndarray] = []
    for c, idx in enumerate(groups):
        weight = 1.0 if weights is None else float(weights[c])
        passes, part = int(weight), weight - int(weight)
        for p in range(passes + (part > 0)):
            seed = t.seed + epoch + 7919 * (c + 1) + 104729 * p  # pass 0 = the unweighted plan
            these = [idx[b] for b in bucketed_batches(lengths[idx], batch_size=t.batch_size,
                                                       bucket_size=t.bucket_size, seed=seed)]
            if p == passes:  # the fractional pass: a seeded share of this corpus's batches
                keep = max(1, round(part * len(these)))
                these = [these[i] for i in np.sort(np.random.default_rng(seed).permutation(len(these))[:keep])]
            batches.extend(these)
    order = np.random.default_rng(t.seed + epoch).permutation(len(batches))
    return [batches[i] for i in order if len(batches[i]) >= world]


def multi_manifest(corpora_config: CorporaConfig) -> dict[str, Any]:
    return {"corpora": corpora_config.model_dump(mode="json"), "overlap_rule": OVERLAP_RULE}


def train_multi(
    config: NerConfig,
    corpora_config: CorporaConfig,
    corpora: Sequence[CorpusSplits],
    *,
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
    unlabelled: Sequence[Sentence] = (),
) -> TrainOutcome:
    """Train one model on ``corpora`` (from ``read_corpora``); same distributed contract as ``train``, and
    the same ``keep``/``recipe`` (the final-model recipe's phase 2 passes corpora ``with_dev_in_train``).
    ``distillation``: a student of a multi-corpus teacher, whose targets cover the corpora's training
    sentences in corpus order, then ``unlabelled`` (tags never read)."""
    from nerservice import backend
    from nerservice.artifacts.layout import MULTI, MULTI_FORMAT
    from nerservice.charlm.attach import lm_arguments, resolve_char_lm
    from nerservice.encoder.attach import encoder_arguments, resolve_encoder, with_word_pieces
    from nerservice.lineage import build_lineage
    from nerservice.model.predictor import Predictor
    from nerservice.multi.tagger import build_multi_tagger
    from nerservice.training.checkpointer import Checkpointer
    from nerservice.training.loop import EpochLoop
    from nerservice.training.steps import make_train_step

    config = config_with_vectors(config, embeddings)
    config, char_lm, char_lm_record = resolve_char_lm(config)
    config, encoder, encoder_record = resolve_encoder(config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tags = distillation.tags if distillation is not None else tag_vocabulary(corpora)
    assert isinstance(tags, MultiTagVocabulary)
    # unlabelled text gets placeholder tags of the first head: the encoder needs tag ids, the student's loss
    # reads the teacher's targets only
    placeholder = f"{tags.names[0]}{HEAD_SEP}O"
    extra = [Sentence(s.tokens, (placeholder,) * len(s.tokens), file=s.file, line=s.line) for s in unlabelled]
    train_all = [s for c in corpora for s in namespaced(c.name, c.train)] + extra
    others = [s for c in corpora for s in c.dev + (c.test or [])]
    vocabs, matrix, vocab_stats = vocabularies_with_vectors(
        train_all, others, embeddings, progress=progress, vector_vocabulary=config.model.vector_vocabulary)
    vocabs = Vocabularies(words=vocabs.words, chars=vocabs.chars, tags=tags,
                          lm_chars=char_lm.vocab if char_lm is not None else None)
    vocabs = with_word_pieces(vocabs, encoder)
    # Types named per corpus ("bc5cdr|Chemical"): each corpus's strings are chosen on its own text.
    vocabs, gazetteer_ids, gazetteer_record = with_gazetteer(
        vocabs, config, [(f"{c.name}{HEAD_SEP}", c.train) for c in corpora], unlabelled=extra)
    if gazetteer_record:
        vocab_stats = {**vocab_stats, "gazetteer": gazetteer_record}
    starts = np.cumsum([0] + [len(c.train) for c in corpora] + ([len(extra)] if extra else []))
    groups = [np.arange(a, b) for a, b in zip(starts[:-1], starts[1:])]
    weights = list(corpora_config.weights) + ([1.0] if extra else [])
    lengths = np.array([len(s.tokens) for s in train_all], dtype=np.int64)
    plan_fn = None
    if corpora_config.batching == "per-corpus":
        def plan_fn(epoch: int) -> list[np.ndarray]:
            return corpus_plan(groups, lengths, config, epoch, world, weights)

    chief = rank == 0
    scope = strategy.scope() if strategy is not None else contextlib.nullcontext()
    with scope:
        model = build_multi_tagger(config.model, tags=tags, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                                   word_vectors=matrix, seed=config.training.seed,
                                   cls=distillation.tagger_cls if distillation is not None else None,
                                   **lm_arguments(char_lm), **encoder_arguments(encoder),
                                   **gazetteer_arguments(vocabs))
    step = make_train_step(model, config.training, strategy=strategy)
    predictor = Predictor(model, vocabs, max_word_length=config.model.max_word_length,
                          batch_size=config.training.eval_batch_size, bucket_size=config.training.bucket_size,
                          keep_encoder_states_mb=config.training.encoder_cache_mb)  # dev: scored every epoch
    lineage = build_lineage(
        corpora=lineage_corpora(corpora),
        config_hash=config.fingerprint(), sources=sources or {}, backend=backend.current(),
        extra={"vocab": vocab_stats, "corpora": corpora_config.names, **({"recipe": recipe} if recipe else {}),
               **({"char_lm": char_lm_record} if char_lm_record else {}),
               **({"encoder": encoder_record} if encoder_record else {}),
               **({"distillation": distillation.record} if distillation is not None else {})})
    dev_sets = {c.name: c.dev for c in corpora}
    checkpointer = Checkpointer(out, vocabs=vocabs, config=config, lineage=lineage, enabled=chief, fmt=MULTI_FORMAT,
                                extra_files={MULTI: multi_manifest(corpora_config)}, keep=keep)
    state = checkpointer.resume(model, step.optimizer) if resume else None
    if state is not None:
        step.reload_from_model()
        print(f"resuming from {out / CHECKPOINT} after epoch {state.epoch}", flush=True)
    if chief:
        for cb in callbacks:
            cb.on_start(config)
    loop = EpochLoop(step, vocabs, config, train_all, evaluate=lambda: evaluate_heads(predictor, dev_sets),
                     state=state, progress=progress and chief, rank=rank, world=world, plan_fn=plan_fn,
                     on_checkpoint=lambda: checkpointer.save_checkpoint(model, step.optimizer, loop.state),
                     extra_batch=distillation.batch if distillation is not None else None,
                     gazetteer_ids=gazetteer_ids)
    for record, is_best in loop:
        record["dev_f1_per_corpus"] = {c: m["micro"]["f1"] for c, m in loop.last_dev["per_corpus"].items()}
        checkpointer.save_epoch(model, loop.state, loop.last_dev, is_best=is_best)
        if chief:
            for cb in callbacks:
                cb.on_epoch(record, is_best)
    best_epoch = loop.state.epoch if keep == "last" else loop.state.best_epoch  # the epoch of the kept model
    outcome = TrainOutcome(out_dir=out, best_dir=checkpointer.best_dir, best_epoch=best_epoch,
                           dev=loop.last_dev, test=None, history=loop.state.history,
                           stopped_reason=loop.stopped_reason, seconds=loop.seconds, lineage=lineage,
                           vocab_stats=vocab_stats, model=model, step_stats=step.stats(),
                           timings=phase_timings(loop))
    if not chief:
        return outcome
    best = checkpointer.load_kept()
    outcome.dev = checkpointer.kept_dev()  # evaluated once, in its epoch, on the weights model-best holds
    tests = {c.name: c.test for c in corpora if c.test}
    outcome.test = (evaluate_heads(best.predictor(batch_size=config.training.eval_batch_size), tests)
                    if tests else None)
    metrics = {"dev": outcome.dev, "epoch": best_epoch}
    if outcome.test is not None:
        metrics["test"] = outcome.test
    checkpointer.finish(best, loop.state, metrics)
    for cb in callbacks:
        cb.on_end(outcome)
    return outcome


def lineage_corpora(corpora: Sequence[CorpusSplits]) -> dict[str, list[Sentence]]:
    """The splits a multi-corpus run's lineage fingerprints, by name (``NAME/train``, ``NAME/dev``, ``NAME/test``)."""
    return {f"{c.name}/{split}": list(part) for c in corpora
            for split, part in (("train", c.train), ("dev", c.dev), ("test", c.test)) if part}


def multi_runner(corpora_config: CorporaConfig, corpora: Sequence[CorpusSplits], *, sources: dict[str, Any],
                 resume: bool, progress: bool,
                 callbacks_for: Callable[[RunRequest], Sequence[TrainCallback]] = lambda _: ()) -> Runner:
    """``training.run_pool.core_runner`` for a multi-corpus model: each run of a recipe (``--final``) in
    this process; phase 2 trains every corpus on its train + dev."""
    from nerservice.training.finished import finished_from
    from nerservice.training.recipes import RunSummary

    def run(req: RunRequest) -> RunSummary:
        data = with_dev_in_train(corpora) if req.train_on_dev else corpora
        callbacks = callbacks_for(req)
        if resume and not callbacks:  # a finished run is read back (training/finished.py)
            done = finished_from(req, lineage_corpora(data), has_test=any(c.test for c in data), progress=progress)
            if done is not None:
                return done
        outcome = train_multi(req.config, corpora_config, data, embeddings=req.config.model.embeddings,
                              out_dir=req.out_dir, sources=sources, callbacks=callbacks, resume=resume,
                              progress=progress, keep=req.keep, recipe=req.recipe)
        return RunSummary.of(outcome)

    return run
