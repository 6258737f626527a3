"""``train_multi()``: several corpora, one shared network, one CRF head per corpus (multi-task learning as in
Wang et al. 2019, "Cross-type biomedical named entity recognition with deep multi-task learning").

Shared: word vectors, char encoders, dense layer, BiLSTM stack (everything below the emission layer).
Per corpus: its tag columns of the emission layer and its CRF block (``nerservice/multi/tagger.py``).
Batches follow ``CorporaConfig.batching``; early stopping and model-best use the mean over corpora of the
dev entity F1 (each corpus on its own head). Output folders as ``nerservice.training.trainer.train``;
the saved folders have format ``nerservice.multi.v1`` and hold ``multi.json`` (corpora, label maps, the
overlap rule).
"""
from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nerservice.artifacts.layout import BEST, CHECKPOINT, LAST, PLOT
from nerservice.config import NerConfig
from nerservice.model.batching import bucketed_batches
from nerservice.multi.config import CorporaConfig
from nerservice.multi.corpora import CorpusSplits, namespaced, tag_vocabulary
from nerservice.multi.evaluation import evaluate_heads
from nerservice.text.vocab import Vocabularies
from nerservice.training.trainer import TrainCallback, TrainOutcome, config_with_vectors, vocabularies_with_vectors

OVERLAP_RULE = "highest-mean-marginal, then longest, then corpus order, then start"  # nerservice/model/heads.py


def corpus_plan(groups: Sequence[np.ndarray], lengths: np.ndarray, config: NerConfig, epoch: int,
                world: int = 1) -> list[np.ndarray]:
    """Global batches of one epoch, each inside one corpus (``groups``: each corpus's sentence indices),
    the batches of every corpus shuffled together: a corpus is sampled in proportion to its size.
    Identical on every worker (seeds from the config)."""
    t = config.training
    batches: list[np.ndarray] = []
    for c, idx in enumerate(groups):
        for b in bucketed_batches(lengths[idx], batch_size=t.batch_size, bucket_size=t.bucket_size,
                                  seed=t.seed + epoch + 7919 * (c + 1)):
            batches.append(idx[b])
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
) -> TrainOutcome:
    """Train one model on ``corpora`` (from ``read_corpora``); same distributed contract as ``train``."""
    from nerservice import backend
    from nerservice.artifacts.layout import MULTI, MULTI_FORMAT
    from nerservice.artifacts.model_folder import load_model_folder, save_model
    from nerservice.lineage import build_lineage
    from nerservice.model.predictor import Predictor
    from nerservice.multi.tagger import build_multi_tagger
    from nerservice.training.checkpoint import has_checkpoint, load_checkpoint, save_checkpoint
    from nerservice.training.history import plot_writer
    from nerservice.training.loop import LoopState, run_epochs
    from nerservice.training.steps import make_train_step

    config = config_with_vectors(config, embeddings)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    train_all = [s for c in corpora for s in namespaced(c.name, c.train)]
    others = [s for c in corpora for s in c.dev + (c.test or [])]
    vocabs, matrix, vocab_stats = vocabularies_with_vectors(train_all, others, embeddings, progress=progress)
    tags = tag_vocabulary(corpora)
    vocabs = Vocabularies(words=vocabs.words, chars=vocabs.chars, tags=tags)
    starts = np.cumsum([0] + [len(c.train) for c in corpora])
    groups = [np.arange(a, b) for a, b in zip(starts[:-1], starts[1:])]
    lengths = np.array([len(s.tokens) for s in train_all], dtype=np.int64)
    plan_fn = None
    if corpora_config.batching == "per-corpus":
        def plan_fn(epoch: int) -> list[np.ndarray]:
            return corpus_plan(groups, lengths, config, epoch, world)

    chief = rank == 0
    scope = strategy.scope() if strategy is not None else contextlib.nullcontext()
    with scope:
        model = build_multi_tagger(config.model, tags=tags, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                                   word_vectors=matrix, seed=config.training.seed)
    step = make_train_step(model, config.training, strategy=strategy)
    predictor = Predictor(model, vocabs, max_word_length=config.model.max_word_length,
                          batch_size=config.training.eval_batch_size, bucket_size=config.training.bucket_size)
    lineage = build_lineage(
        corpora={f"{c.name}/{split}": part for c in corpora
                 for split, part in (("train", c.train), ("dev", c.dev), ("test", c.test)) if part},
        config_hash=config.fingerprint(), sources=sources or {}, backend=backend.current(),
        extra={"vocab": vocab_stats, "corpora": corpora_config.names})
    dev_sets = {c.name: c.dev for c in corpora}
    extra = {MULTI: multi_manifest(corpora_config)}

    def save(where: Path, metrics: dict[str, Any], history: list[dict[str, Any]], m: Any = None) -> None:
        save_model(where, model=m or model, vocabs=vocabs, config=config, history=history, metrics=metrics,
                   lineage=lineage, fmt=MULTI_FORMAT, extra_files={**extra, PLOT: plot_writer(history)})

    state = LoopState()
    if resume and has_checkpoint(out / CHECKPOINT):
        state = load_checkpoint(out / CHECKPOINT, model=model, optimizer=step.optimizer)
        step.reload_from_model()
        print(f"resuming from {out / CHECKPOINT} after epoch {state.epoch}", flush=True)
    last_dev: list[dict[str, Any]] = [{}]

    def evaluate() -> dict[str, Any]:
        last_dev[0] = evaluate_heads(predictor, dev_sets)
        return last_dev[0]

    def on_epoch(record: dict[str, Any], is_best: bool) -> None:
        if not chief:
            return
        record["dev_f1_per_corpus"] = {c: m["micro"]["f1"] for c, m in last_dev[0]["per_corpus"].items()}
        save(out / LAST, {"dev": last_dev[0]}, state.history)
        if is_best:
            save(out / BEST, {"dev": last_dev[0], "epoch": record["epoch"]}, state.history)
        for cb in callbacks:
            cb.on_epoch(record, is_best)

    def on_checkpoint() -> None:
        if chief:
            save_checkpoint(out / CHECKPOINT, model=model, optimizer=step.optimizer, state=state)

    result = run_epochs(step, vocabs, config, train_all, evaluate=evaluate, on_epoch=on_epoch,
                        on_checkpoint=on_checkpoint, state=state, progress=progress and chief, rank=rank,
                        world=world, plan_fn=plan_fn)
    outcome = TrainOutcome(out_dir=out, best_dir=out / BEST, best_epoch=result.state.best_epoch, dev=last_dev[0],
                           test=None, history=result.state.history, stopped_reason=result.stopped_reason,
                           seconds=result.seconds, lineage=lineage, vocab_stats=vocab_stats, model=model)
    if not chief:
        return outcome
    best = load_model_folder(out / BEST)
    best_pred = best.predictor(batch_size=config.training.eval_batch_size)
    outcome.dev = evaluate_heads(best_pred, dev_sets)
    tests = {c.name: c.test for c in corpora if c.test}
    outcome.test = evaluate_heads(best_pred, tests) if tests else None
    metrics = {"dev": outcome.dev, "epoch": result.state.best_epoch}
    if outcome.test is not None:
        metrics["test"] = outcome.test
    save(out / BEST, metrics, result.state.history, m=best.model)
    for cb in callbacks:
        cb.on_end(outcome)
    return outcome
