"""Multi-corpus data on Spark: ``preprocess.py --corpora`` and ``train.py`` on its output.

    PREP/corpora.json     the corpora config (names, label maps, batching); its split paths are where the
                          corpora came from (lineage), training reads PREP/<name>/ instead
    PREP/<name>/          one ``preprocess.py`` output per corpus (train/ dev/ test/ Parquet, stats.json,
                          quarantine/), labels as in the files: label maps apply when training reads them

The driver reads every corpus, applies the checks of ``nerservice.multi.corpora.build_splits`` (empty
label sets, label maps that do not fit) before the barrier stage starts, and broadcasts
``{corpus: {split: rows}}``; each worker rebuilds the same corpora and runs ``train_multi``.
"""
from __future__ import annotations

import json
from typing import Any

from nerservice.data import Sentence
from nerservice.distributed import hadoopfs
from nerservice.errors import ConfigError
from nerservice.multi.config import CorporaConfig
from nerservice.multi.corpora import CorpusSplits, build_splits

CORPORA_FILE = "corpora.json"
Row = tuple[list[str], list[str], str, int]  # as nerservice.distributed.worker.Row


def preprocess_corpora(spark: Any, config: CorporaConfig, *, out: str, overwrite: bool = False, seed: int = 42,
                       **options: Any) -> dict[str, Any]:
    """Every corpus through ``run_preprocess`` into OUT/<name>/, then OUT/corpora.json. ``options``: more
    ``PreprocessRequest`` fields (word2vec, ...), applied to every corpus."""
    from nerservice.distributed.preprocess_job import PreprocessRequest, run_preprocess

    if hadoopfs.exists(spark, out):
        if not overwrite:
            raise ConfigError(f"output {out} exists", hint="pass --overwrite to replace it")
        hadoopfs.delete(spark, out)
    stats = {}
    for spec in config.corpora:
        req = PreprocessRequest(out=hadoopfs.join(out, spec.name), train=[spec.train], dev=[spec.dev],
                                test=[spec.test] if spec.test else [], seed=seed, fmt=spec.format,
                                scheme=spec.scheme, sentences=spec.sentences, tokens=spec.tokens, **options)
        stats[spec.name] = run_preprocess(spark, req)
    # Written last: a folder without it is not a finished multi-corpus preprocess.
    hadoopfs.write_text(spark, hadoopfs.join(out, CORPORA_FILE), json.dumps(config.model_dump(mode="json"), indent=2))
    return stats


def corpora_from_rows(config: CorporaConfig, data: dict[str, dict[str, list[Row]]]) -> list[CorpusSplits]:
    return build_splits(config, {name: {split: [Sentence(tuple(t), tuple(g), f, int(n)) for t, g, f, n in rows]
                                        for split, rows in parts.items()} for name, parts in data.items()})


def flat_splits(data: dict[str, dict[str, list[Row]]]) -> dict[str, list[Row]]:
    """All corpora's rows per split (the job summary's counts)."""
    out: dict[str, list[Row]] = {}
    for parts in data.values():
        for split, rows in parts.items():
            out.setdefault(split, []).extend(rows)
    return out
