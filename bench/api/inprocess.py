"""In-process baseline worker: the Extractor's throughput on the same texts, called in chunks of N texts.

Runs as its own process (``python -m bench.api.inprocess MODEL``) so TF never loads in the load generator;
it loads the model once and then answers one JSON command per stdin line, so the benchmark can measure
the baseline right before each server cell, under the same (noisy) machine conditions:

    {"texts": "/path/texts.json", "chunk": 64, "options": "server", "max_seconds": 5}
    -> {"texts_per_s": 412.3, "texts": 940}

``options``: "server" = the Extractor options the server passes (api/settings.py defaults, e.g. 32
sentences per model call, background XLA); "default" = Extractor's own defaults (256 sentences per call,
TF graph); "default-xla" = those with background XLA.

    {"warm": "/path/texts.json", "chunks": [1, 16, 64, 256]}  -> {"compiled": {"server": 12, ...}}
runs every extractor over the texts in each chunking once and waits for their background compiles, so
the measured passes are steady state (a long-running server is warm too).
"""
from __future__ import annotations

import json
import os
import sys
import time


def main(argv: list[str]) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from api.model_slot import extractor_options
    from api.settings import ApiSettings
    from nerservice.artifacts.resolve import resolve_dir
    from nerservice.inference import Extractor

    (model,) = argv
    path = resolve_dir(model)
    extractors = {"server": Extractor.load(path, **extractor_options(ApiSettings(model=model))),
                  "default": Extractor.load(path), "default-xla": Extractor.load(path, jit_compile="background")}
    for ex in extractors.values():
        ex.extract(["Warm-up sentence for the tagger. It has two sentences."])
    cache: dict[str, list[str]] = {}
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if "warm" in cmd:
            texts = cache.setdefault(cmd["warm"], json.loads(open(cmd["warm"], encoding="utf-8").read()))
            for ex in extractors.values():
                for chunk in cmd["chunks"]:
                    for i in range(0, len(texts), chunk):
                        ex.extract(texts[i:i + chunk])
            compiled = {k: ex.background_xla.wait() for k, ex in extractors.items() if ex.background_xla}
            print(json.dumps({"compiled": compiled}), flush=True)
            continue
        texts = cache.setdefault(cmd["texts"], json.loads(open(cmd["texts"], encoding="utf-8").read()))
        ex, chunk = extractors[cmd["options"]], int(cmd["chunk"])
        done, t0 = 0, time.perf_counter()
        deadline = t0 + float(cmd.get("max_seconds", 1e9))
        for i in range(0, len(texts), chunk):  # one pass at most, bounded in time
            part = texts[i:i + chunk]
            ex.extract(part)
            done += len(part)
            if time.perf_counter() > deadline:
                break
        print(json.dumps({"texts_per_s": done / (time.perf_counter() - t0), "texts": done}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
