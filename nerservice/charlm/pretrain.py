"""Pretrain a forward and a backward character LM on unlabelled sentences (next-character prediction).

Each epoch cuts the character stream into windows of ``window`` characters at a fresh random offset and
shuffles them; the two directions are two small Keras models trained one after the other with ``fit``
(either backend).  Held-out text, when given, is scored in bits per character after every epoch; the
result is then the epoch with the lowest mean of the two directions' held-out bpc, and training stops after
``patience`` epochs without a new low.  Without held-out text it is the last epoch.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nerservice.charlm.config import CharLMConfig
from nerservice.charlm.folder import DIRECTIONS, CharLM
from nerservice.errors import ConfigError
from nerservice.text.char_stream import build_vocab, encode_stream


def windows(stream: np.ndarray, window: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and next-character targets, (n, window) each, from ``stream[offset:]``."""
    n = (stream.size - 1 - offset) // window
    x = stream[offset: offset + n * window].reshape(n, window)
    y = stream[offset + 1: offset + 1 + n * window].reshape(n, window)
    return x, y


def _weights(models: dict[str, Any]) -> dict[str, list[np.ndarray]]:
    return {d: [np.array(w) for w in models[d].get_weights()] for d in DIRECTIONS}


def build_direction(n_chars: int, cfg: CharLMConfig, name: str) -> Any:
    import keras

    from nerservice.model.char_lm_layer import direction_layers

    emb, lstm = direction_layers(n_chars, cfg.embedding_dim, cfg.units, name)
    model = keras.Sequential([keras.Input((None,), dtype="int32"), emb, lstm,
                              keras.layers.Dense(n_chars, name=f"{name}_head")], name=f"{name}_lm")
    model.compile(optimizer=keras.optimizers.Adam(cfg.learning_rate, clipnorm=cfg.clip_norm),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def pretrain(sentences: Sequence[Sequence[str]], cfg: CharLMConfig, *, dev: Sequence[Sequence[str]] = (),
             log: Callable[[str], None] = print) -> CharLM:
    import keras

    vocab = build_vocab(sentences, min_count=cfg.min_count)
    stream = encode_stream(sentences, vocab)
    if stream.size < 2 * cfg.window + 2:
        raise ConfigError(f"the text has {stream.size} characters: too little for windows of {cfg.window}",
                          hint="pass more text or a smaller window")
    dev_stream = encode_stream(dev, vocab) if dev else None
    keras.utils.set_random_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    clock = time.perf_counter()
    history: list[dict[str, Any]] = []
    models = {d: build_direction(len(vocab), cfg, d) for d in DIRECTIONS}
    streams = {"forward": stream, "backward": stream[::-1].copy()}
    dev_streams = {"forward": dev_stream, "backward": dev_stream[::-1].copy()} if dev_stream is not None else {}
    stopped = "epochs"
    best: tuple[float, int, dict[str, list[np.ndarray]]] | None = None  # (held-out bpc, epoch, weights)
    for epoch in range(1, cfg.epochs + 1):
        record: dict[str, Any] = {"epoch": epoch}
        for d in DIRECTIONS:
            x, y = windows(streams[d], cfg.window, int(rng.integers(cfg.window)))
            order = rng.permutation(x.shape[0])
            t0 = time.perf_counter()
            fit = models[d].fit(x[order], y[order], batch_size=cfg.batch_size, epochs=1, shuffle=False, verbose=0)
            record[f"{d}_train_bpc"] = float(fit.history["loss"][-1]) / math.log(2)
            record[f"{d}_chars_per_s"] = x.size / max(time.perf_counter() - t0, 1e-9)
            if d in dev_streams and dev_streams[d].size > cfg.window + 1:
                dx, dy = windows(dev_streams[d], cfg.window, 0)
                record[f"{d}_dev_bpc"] = float(models[d].evaluate(dx, dy, batch_size=cfg.batch_size,
                                                                  verbose=0)) / math.log(2)
        record["minutes"] = (time.perf_counter() - clock) / 60
        history.append(record)
        log(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in record.items()))
        if all(f"{d}_dev_bpc" in record for d in DIRECTIONS):
            score = sum(record[f"{d}_dev_bpc"] for d in DIRECTIONS) / len(DIRECTIONS)
            if best is None or score < best[0]:
                best = (score, epoch, _weights(models))
            elif epoch - best[1] >= cfg.patience:
                stopped = "patience"
                break
        if cfg.max_minutes is not None and record["minutes"] >= cfg.max_minutes and epoch < cfg.epochs:
            stopped = "max_minutes"
            break
    weights = best[2] if best is not None else _weights(models)
    record_out = {"train_chars": int(stream.size), "dev_chars": int(dev_stream.size) if dev_stream is not None else 0,
                  "sentences": len(sentences), "history": history, "stopped": stopped,
                  "kept_epoch": best[1] if best is not None else len(history),
                  "kept_dev_bpc": best[0] if best is not None else None,
                  "minutes": (time.perf_counter() - clock) / 60}
    return CharLM(cfg, vocab, weights, record=record_out)
