"""XLA's memory plan for one JAX training step of the tagger, with and without a character LM.

Compiles (does not run) the project's ``JaxStep`` for a batch of the given shape and prints the temporary and
argument bytes XLA plans for it, so the cost of ``model.char_lm`` per step can be read without a GPU:

    KERAS_BACKEND=jax python bench/step_memory.py --lm-units 0 512 --batch 128 --tokens 324 --chars 1894

(a worst-case linnaeus batch: its longest training sentence has 324 tokens and 1,894 characters). The plan is
XLA's for the backend it runs on; a GPU's differs.
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "jax")


def plan(units: int, batch: int, tokens: int, chars: int, distinct_words: int) -> dict[str, float]:
    import jax
    import jax.numpy as jnp
    import numpy as np

    from nerservice.config import NerConfig
    from nerservice.model.tagger import build_tagger
    from nerservice.training.steps import JaxStep

    over = {"training.batch_size": batch}
    if units:
        over |= {"model.char_lm_units": units, "model.char_lm_embedding_dim": 32}
    cfg = NerConfig().with_overrides(over)
    model = build_tagger(cfg.model, n_words=20_000, n_chars=100, n_tags=3,
                         word_vectors=np.zeros((20_000, 50), np.float32), **({"n_lm_chars": 97} if units else {}))
    step = JaxStep(model, cfg.training)

    def i32(*shape: int) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(shape, jnp.int32)

    shapes = {"token_ids": i32(batch, tokens), "lengths": i32(batch),
              "word_chars": i32(distinct_words, cfg.model.max_word_length), "word_index": i32(batch, tokens),
              "lm_chars": i32(batch, chars if units else 1), "lm_forward": i32(batch, tokens),
              "lm_backward": i32(batch, tokens), "tag_ids": i32(batch, tokens)}
    compiled = step._step.lower(step._tv, step._ntv, step._ov, shapes, np.float32(1)).compile()
    mem = compiled.memory_analysis()
    return {"temp_gib": mem.temp_size_in_bytes / 2**30, "argument_gib": mem.argument_size_in_bytes / 2**30}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lm-units", type=int, nargs="+", default=[0, 512], help="0 = no character LM")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--tokens", type=int, default=324)
    ap.add_argument("--chars", type=int, default=1894)
    ap.add_argument("--distinct-words", type=int, default=5000)
    args = ap.parse_args()
    import jax

    for units in args.lm_units:
        p = plan(units, args.batch, args.tokens, args.chars, args.distinct_words)
        print(f"{jax.devices()[0].platform} lm_units={units} batch={args.batch} tokens={args.tokens} "
              f"chars={args.chars}: temp {p['temp_gib']:.2f} GiB, arguments {p['argument_gib']:.2f} GiB", flush=True)


if __name__ == "__main__":
    main()
