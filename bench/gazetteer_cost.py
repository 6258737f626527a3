"""What the gazetteer feature costs at inference (issue 14, session 9): matching a corpus's text against the
gazetteer of another split, per token — the only work it adds in front of the network (the ONNX graphs
compute a gazetteer model at the same cost: a gather-add before the dense ReLU).

    python bench/gazetteer_cost.py --train CORPUS/train.tsv --text CORPUS/test.tsv [--repeats 7]

Prints the gazetteer's size and the best of ``repeats`` timings of the matching (``Gazetteer.ids_of_keys``, on
tokens already normalised, as ``EncodedCorpus`` calls it) in microseconds per token, one Python thread, and of
``normalize_word`` per token, which the encoding does anyway for the word ids, for scale.
"""
from __future__ import annotations

import argparse
import json
import time

from nerservice.config import ModelConfig
from nerservice.data import read_corpus
from nerservice.text.gazetteer import build_gazetteer
from nerservice.text.vocab import normalize_word


def best_of(fn, repeats: int) -> float:  # noqa: ANN001
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    m = ModelConfig()
    train = read_corpus(args.train).sentences
    text = [s.tokens for s in read_corpus(args.text).sentences]
    n = sum(len(t) for t in text)
    g = build_gazetteer(train, min_ratio=m.gazetteer_min_ratio, max_tokens=m.gazetteer_max_tokens)
    keys = [normalize_word(t) for s in text for t in s]
    offsets = [0]
    for s in text:
        offsets.append(offsets[-1] + len(s))
    assert g.ids_of_keys(keys, offsets).tolist() == g.flat_ids(text).tolist()
    # EncodedCorpus normalises every distinct token anyway (word ids): what the gazetteer adds is the matching
    match_s = best_of(lambda: g.ids_of_keys(keys, offsets), args.repeats)
    norm_s = best_of(lambda: [normalize_word(t) for s in text for t in s], args.repeats)
    print(json.dumps({"strings": len(g), "types": list(g.types), "tokens": n,
                      "match_us_per_token": round(1e6 * match_s / n, 3),
                      "normalize_us_per_token_for_scale": round(1e6 * norm_s / n, 3)}))


if __name__ == "__main__":
    main()
