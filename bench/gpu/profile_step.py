"""Where does a training step's time go? Times the jitted JaxStep for model variants at one shape.

    KERAS_BACKEND=jax python bench/gpu/profile_step.py [--batch 256 --time 32]
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("KERAS_BACKEND", "jax")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--time", type=int, default=32)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    import jax
    import numpy as np

    from nerservice.config import NerConfig
    from nerservice.model.tagger import build_tagger
    from nerservice.training.steps import make_train_step

    b, t, c = args.batch, args.time, 24
    rng = np.random.default_rng(0)
    rows = b * t + 1
    batch = {
        "token_ids": rng.integers(1, 9000, (b, t)).astype("int32"),
        "lengths": np.full((b,), t, dtype="int32"),
        "word_chars": rng.integers(1, 80, (rows, c)).astype("int32"),
        "word_index": rng.integers(1, rows, (b, t)).astype("int32"),
        "tag_ids": rng.integers(0, 3, (b, t)).astype("int32"),
    }
    batch["word_chars"][:, 8:] = 0
    variants = {
        "full": [],
        "no char BiLSTM": ["model.char_lstm_units=0"],
        "no char encoders": ["model.char_lstm_units=0", "model.char_cnn_filters=0"],
        "1 BiLSTM layer": ["model.lstm_layers=1"],
        "1 layer, no chars": ["model.lstm_layers=1", "model.char_lstm_units=0", "model.char_cnn_filters=0"],
    }
    for name, overrides in variants.items():
        config = NerConfig().with_overrides(overrides)
        model = build_tagger(config.model, n_words=9000, n_chars=80, n_tags=3)
        step = make_train_step(model, config.training)
        dev = jax.device_put(batch)
        jax.block_until_ready(step(dev, b))
        t0 = time.perf_counter()
        for _ in range(args.steps):
            loss = step(dev, b)
        jax.block_until_ready(loss)
        dt = (time.perf_counter() - t0) / args.steps
        fwd = jax.jit(lambda tv, ntv, x: model.stateless_call(tv, ntv, x, training=False)[0])
        tv = [v.value for v in model.trainable_variables]
        ntv = [v.value for v in model.non_trainable_variables]
        xin = {k: dev[k] for k in ("token_ids", "lengths", "word_chars", "word_index")}
        jax.block_until_ready(fwd(tv, ntv, xin))
        t0 = time.perf_counter()
        for _ in range(args.steps):
            out = fwd(tv, ntv, xin)
        jax.block_until_ready(out)
        df = (time.perf_counter() - t0) / args.steps
        print(f"{name:<22} train step {dt * 1e3:7.2f} ms ({b * t / dt:>12,.0f} tok/s)   "
              f"forward {df * 1e3:7.2f} ms ({b * t / df:>12,.0f} tok/s)", flush=True)


if __name__ == "__main__":
    main()
