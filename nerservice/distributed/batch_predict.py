"""Executor side of batch inference: the API's ``Extractor``, loaded once per executor Python worker.

``mapInPandas`` calls :func:`predict_frames` once per partition; the module-level cache keyed by the
resolved model path and the Extractor options means a Python worker that Spark reuses for the next
partition (the default, ``spark.python.worker.reuse=true``) loads the model (and its runtime: ONNX Runtime,
or TensorFlow for the Keras path) only once, and never serves one head's (or one option set's) Extractor
for another.
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nerservice.errors import RequestError

OUTPUT_SCHEMA = ("id {id_type}, entities array<struct<start:int,end:int,label:string,text:string,score:double>>, "
                 "error string")

# (resolved model path, sorted Extractor options) -> Extractor.  The options are part of the key because
# ``head`` picks other entity types from the same folder and ``with_scores``/``runtime`` change the answers:
# one folder with two option sets is two Extractors.  A job's options are fixed, so a worker holds one.
CacheKey = tuple[str, tuple[tuple[str, Any], ...]]
_EXTRACTORS: dict[CacheKey, Any] = {}


def cache_key(model_dir: str, options: dict[str, Any]) -> CacheKey:
    return str(Path(model_dir).resolve()), tuple(sorted(options.items()))


def extractor_for(model_dir: str, *, loads: Any = None, **options: Any) -> Any:
    """The cached Extractor for ``model_dir`` with ``options`` (loaded on first use in this process).
    ``loads`` is an optional Spark accumulator counting real loads, so a job can report how often the
    cache missed."""
    key = cache_key(model_dir, options)
    extractor = _EXTRACTORS.get(key)
    if extractor is None:
        from nerservice.distributed.threads import limit_tensorflow_threads, task_cpus
        from nerservice.inference import Extractor
        from nerservice.runtime.select import planned_runtime

        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        cpus = task_cpus()
        path = key[0]
        if planned_runtime(path, options.get("runtime", "auto")) == "keras":
            limit_tensorflow_threads(cpus)  # imports TensorFlow: only when it will run the model
        extractor = _EXTRACTORS[key] = Extractor.load(path, threads=cpus, **options)
        if loads is not None:
            loads.add(1)
    return extractor


def predict_frames(frames: Iterator[Any], *, model_dir: str, id_col: str, text_col: str,
                   loads: Any = None, busy: Any = None, options: dict[str, Any] | None = None) -> Iterator[Any]:
    """mapInPandas body: (id, text) frames → (id, entities, error) frames. A null or non-string text is
    reported in ``error`` for its row (code NER600), never silently turned into "no entities".
    ``busy`` (optional accumulator) sums the seconds spent inside ``Extractor.extract``."""
    import pandas as pd

    extractor = extractor_for(model_dir, loads=loads, **(options or {}))
    for frame in frames:
        texts = frame[text_col].tolist()
        ok = [i for i, t in enumerate(texts) if isinstance(t, str)]
        t0 = time.perf_counter()
        found = extractor.extract([texts[i] for i in ok])
        if busy is not None:
            busy.add(time.perf_counter() - t0)
        entities: list[Any] = [None] * len(texts)
        errors: list[str | None] = [None] * len(texts)
        for i, ents in zip(ok, found):
            entities[i] = [e.to_dict() for e in ents]
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                err = RequestError(f"text is {'null' if t is None else type(t).__name__}, expected a string")
                errors[i] = f"[{err.code}] {err.message}"
        yield pd.DataFrame({"id": frame[id_col].values, "entities": entities, "error": errors})
