"""Fine-tune a multi-corpus model on one of its corpora: does the shared model, specialised, beat itself?

The four-corpus model's ``ncbi`` head is our best one-model NCBI-disease figure (BENCHMARKS "Session 32"), and
distilled students only reach a member's level. This tries the usual multi-task learning follow-up: go on
training the whole network (shared encoder + that corpus's head) on that corpus alone, at a lower rate, from
the multi-corpus model's weights. The comparison is paired: each fine-tuned model against the very model it
started from, scored by the same code in the same process, so no other run's seed noise enters it.

    KERAS_BACKEND=jax python bench/gpu/finetune_head.py --model RUN/model-best --corpora corpora-w.json \
        --head ncbi --set training.learning_rate=0.001 --set training.epochs=10 --json-out R.json
    (phase 2 of the final recipe:)  ... --model FINAL/model-last --train-on-dev --set training.epochs=E

Phase 1 (default): ``--head`` trains on its train split; early stopping and the kept weights follow that
head's dev F1 (model-best; epoch 0 = the starting model, so "no fine-tuning" can win). With
``--train-on-dev``: the head trains on train + dev for ``training.epochs`` epochs and the last epoch's
weights are kept (the final recipe's phase 2; E chosen on dev in phase 1). Either way every head is scored on
test before and after, so what fine-tuning costs the other entity types is measured too.

``--corpora`` must be the config the model was trained with: the gazetteer's jackknifed ids of the training
text are rebuilt from it exactly as training built them, and checked against the model's own gazetteer.
The config is the model's own (saved with it) plus ``--set`` overrides; ``training.warmup_epochs`` is 0
unless set. Nothing is saved: the figures go to ``--json-out``.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "jax")


def start_model(folder: Path) -> tuple[Any, Any, Any]:
    """(model, vocabs, config) of a multi-corpus folder, as a ``MultiNerTagger`` that can train."""
    from nerservice.artifacts.layout import WEIGHTS
    from nerservice.artifacts.model_folder import load_model_folder
    from nerservice.multi.tagger import MultiNerTagger
    from nerservice.text.vocab import MultiTagVocabulary

    loaded = load_model_folder(folder)
    vocabs, config = loaded.vocabs, loaded.config
    if not isinstance(vocabs.tags, MultiTagVocabulary):
        raise SystemExit(f"{folder}: not a multi-corpus model")
    if config.model.char_lm:
        raise SystemExit(f"{folder}: a model with a character LM is not supported here")
    model = MultiNerTagger(column_heads=vocabs.tags.column_heads().tolist(), **loaded.model.get_config())
    model.build_for_inference()
    model.load_weights(folder / WEIGHTS)
    model.word_embedding.trainable = config.model.embeddings_trainable  # as build_tagger leaves it
    return model, vocabs, config


def training_gazetteer_ids(vocabs: Any, config: Any, corpora: list[Any], head: str) -> np.ndarray | None:
    """The jackknifed gazetteer ids of ``head``'s training sentences, as ``train_multi`` built them."""
    from nerservice.text.vocab import HEAD_SEP
    from nerservice.training.trainer import with_gazetteer

    if vocabs.gazetteer is None:
        return None
    rebuilt, ids, _ = with_gazetteer(vocabs, config, [(f"{c.name}{HEAD_SEP}", c.train) for c in corpora])
    if rebuilt.gazetteer.to_dict() != vocabs.gazetteer.to_dict():
        raise SystemExit("--corpora does not rebuild the model's gazetteer: not the config it was trained with")
    assert ids is not None
    sizes = [sum(len(s.tokens) for s in c.train) for c in corpora]
    i = [c.name for c in corpora].index(head)
    return ids[sum(sizes[:i]):sum(sizes[:i + 1])]


def f1s(result: dict[str, Any]) -> dict[str, float]:
    return {c: round(100 * m["micro"]["f1"], 2) for c, m in result["per_corpus"].items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, type=Path, help="a multi-corpus model folder")
    ap.add_argument("--corpora", required=True, help="the corpora config the model was trained with")
    ap.add_argument("--head", required=True, help="the corpus (head) to fine-tune on")
    ap.add_argument("--train-on-dev", action="store_true", help="phase 2: train + dev, training.epochs, model-last")
    ap.add_argument("--set", action="append", default=[], help="config overrides (training.learning_rate=...)")
    ap.add_argument("--json-out")
    args = ap.parse_args()

    from nerservice.model.predictor import Predictor
    from nerservice.multi.config import CorporaConfig
    from nerservice.multi.corpora import namespaced, read_corpora, with_dev_in_train
    from nerservice.multi.evaluation import evaluate_heads
    from nerservice.training.loop import EpochLoop
    from nerservice.training.steps import make_train_step

    t0 = time.perf_counter()
    model, vocabs, saved = start_model(args.model)
    config = saved.with_overrides(["training.warmup_epochs=0", *args.set])
    corpora = read_corpora(CorporaConfig.load(args.corpora))
    if args.head not in [c.name for c in corpora]:
        raise SystemExit(f"--head {args.head}: not one of {[c.name for c in corpora]}")
    if args.train_on_dev:
        corpora = with_dev_in_train(corpora)
    target = next(c for c in corpora if c.name == args.head)
    gazetteer_ids = training_gazetteer_ids(vocabs, config, corpora, args.head)
    predictor = Predictor(model, vocabs, max_word_length=config.model.max_word_length,
                          batch_size=config.training.eval_batch_size, bucket_size=config.training.bucket_size)
    tests = {c.name: c.test for c in corpora if c.test}
    dev0 = evaluate_heads(predictor, {target.name: target.dev})["micro"]["f1"]
    before = f1s(evaluate_heads(predictor, tests))
    print(f"start: {args.head} dev {100 * dev0:.2f}, test {before}", flush=True)

    step = make_train_step(model, config.training)
    loop = EpochLoop(step, vocabs, config, namespaced(target.name, target.train),
                     evaluate=lambda: evaluate_heads(predictor, {target.name: target.dev}), progress=False,
                     gazetteer_ids=gazetteer_ids)
    loop.state.best_f1 = -1.0 if args.train_on_dev else dev0  # phase 1: the start must be beaten
    kept, history = [w.copy() for w in model.get_weights()], []  # phase 1: the start, unless an epoch beats it
    for record, is_best in loop:  # the weights to keep (averaged, if enabled) are in the model now
        history.append({"epoch": record["epoch"], "dev_f1": round(100 * record["dev_f1"], 2), "best": is_best,
                        "lr": record["lr"], "seconds": round(record["train_seconds"] + record["eval_seconds"], 2)})
        print(history[-1], flush=True)
        if args.train_on_dev or is_best:
            kept = [w.copy() for w in model.get_weights()]
    model.set_weights(kept)
    best_epoch = loop.state.epoch if args.train_on_dev else loop.state.best_epoch  # 0: the start was kept
    after = f1s(evaluate_heads(predictor, tests))
    from runtime import runtime  # bench/gpu/, the script's own folder

    result = {"model": str(args.model), "head": args.head, "phase": 2 if args.train_on_dev else 1,
              "settings": args.set, "seed": config.training.seed, **runtime(),
              "start": {"dev_f1": round(100 * dev0, 2), "test_f1": before},
              "kept_epoch": best_epoch, "epochs_run": len(history), "stopped": loop.stopped_reason,
              "kept": {"dev_f1": None if args.train_on_dev else round(100 * max(dev0, loop.state.best_f1), 2),
                       "test_f1": after},
              "delta_test": {c: round(after[c] - before[c], 2) for c in after},
              "history": history, "seconds": round(time.perf_counter() - t0, 1)}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2))
    print(json.dumps({k: result[k] for k in ("start", "kept_epoch", "kept", "delta_test")}), flush=True)


if __name__ == "__main__":
    main()
