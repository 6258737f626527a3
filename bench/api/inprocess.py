"""In-process baseline: the Extractor's throughput on the same texts, called in chunks of N texts, with
the options the server passes it and with the Extractor's own defaults.

Run as its own process (python -m bench.api.inprocess MODEL TEXTS.json CHUNK [CHUNK ...]) so TF never
loads in the load generator and the server is not running while this measures.
"""
from __future__ import annotations

import json
import os
import sys
import time


def main(argv: list[str]) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from nerservice.cli.common import resolve_model_dir
    from nerservice.inference import Extractor

    from api.model_slot import extractor_options
    from api.settings import ApiSettings

    model, texts_path, *chunks = argv
    texts: list[str] = json.loads(open(texts_path, encoding="utf-8").read())
    out: dict[str, dict[int, float]] = {}
    # "server": the Extractor options the server uses (api/settings.py defaults); "default": Extractor().
    for name, options in (("server", extractor_options(ApiSettings(model=model))), ("default", {})):
        ex = Extractor.load(resolve_model_dir(model), **options)
        ex.extract(texts[:8])  # trace once, like the server's warm-up
        out[name] = {}
        for chunk in map(int, chunks):
            t0 = time.perf_counter()
            for i in range(0, len(texts), chunk):
                ex.extract(texts[i:i + chunk])
            out[name][chunk] = len(texts) / (time.perf_counter() - t0)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
