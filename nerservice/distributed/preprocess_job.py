"""Driver side of ``spark_jobs/preprocess.py``.

    OUT/train/, OUT/dev/, OUT/test/   Parquet sentences (split, tokens, tags, file, line)
    OUT/quarantine/                   JSON lines: every rejected sentence (file, line, reason, kind, role)
    OUT/stats.json                    per split and overall: sentences, tokens, entities per type, vocab and
                                      char counts, length histogram; input bookkeeping that must add up
    OUT/word2vec.txt                  optional in-domain vectors (word2vec text)
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from nerservice.distributed import hadoopfs
from nerservice.distributed.preprocess import QUARANTINE_SCHEMA, SENTENCE_SCHEMA, account, parse_file
from nerservice.distributed.preprocess_docs import brat_key, parse_brat_group
from nerservice.distributed.splits import SPLITS, parse_ratios
from nerservice.distributed.stats import CorpusStats, add_row, merge
from nerservice.distributed.word2vec import Word2VecOptions, train_word2vec, write_vectors
from nerservice.documents.align import ConvertOptions
from nerservice.errors import ConfigError, CorpusError


@dataclass
class PreprocessRequest:
    out: str
    train: list[str]
    dev: list[str] = field(default_factory=list)
    test: list[str] = field(default_factory=list)
    split: str | None = None  # "0.8,0.1,0.1": split --train inputs by content hash (no dev/test given)
    seed: int = 42
    fmt: str = "auto"
    scheme: str = "auto"
    overwrite: bool = False
    word2vec: Word2VecOptions | None = None
    unlabeled: list[str] = field(default_factory=list)
    label_map: dict[str, str] = field(default_factory=dict)  # document formats: file label → model label
    sentences: str = "split"  # document formats: "split" (sentence splitter) or "lines"
    tokens: str = "words"  # document formats: "words" (the tokenizer) or "whitespace" (pre-tokenised text)


def run_preprocess(spark: Any, req: PreprocessRequest) -> dict[str, Any]:
    """Parse, split, write Parquet + quarantine + stats (+ word2vec). Returns the stats dict."""
    started = time.perf_counter()
    ratios = parse_ratios(req.split) if req.split else None
    if ratios and (req.dev or req.test):
        raise ConfigError("--split divides the --train inputs; do not also pass --dev/--test",
                          hint="either give dev/test files or a split ratio")
    if not ratios and not req.dev:
        raise ConfigError("no dev data: pass --dev files or --split (e.g. 0.8,0.1,0.1)",
                          hint="training needs a dev set for early stopping")
    if hadoopfs.exists(spark, req.out):
        if not req.overwrite:
            raise ConfigError(f"output {req.out} exists", hint="pass --overwrite to replace it")
        hadoopfs.delete(spark, req.out)
    sc = spark.sparkContext
    roles = {"train": req.train, "dev": req.dev, "test": req.test}
    files: dict[str, list[str]] = {role: hadoopfs.expand(spark, pats) for role, pats in roles.items() if pats}
    parts = []
    options = ConvertOptions(lenient=True, label_map=req.label_map, sentences=req.sentences,  # type: ignore[arg-type]
                             tokens=req.tokens)  # type: ignore[arg-type]
    for role, paths in files.items():
        # binaryFiles: whole files, so format/scheme detection and sentence boundaries see the file.
        files_rdd = sc.binaryFiles(",".join(paths), minPartitions=min(len(paths), sc.defaultParallelism))
        if req.fmt == "brat":  # NAME.txt + NAME.ann meet in one task (grouped by NAME on the executors)
            group = partial(parse_brat_group, role, options=options, ratios=ratios, seed=req.seed)
            parts.append(files_rdd.map(lambda kv: _brat_pair(kv)).filter(lambda x: x is not None).groupByKey()
                         .map(lambda kv, group=group: group(kv[0], dict(kv[1]))))
            continue
        parse = partial(parse_file, role, fmt=req.fmt, scheme=req.scheme, ratios=ratios, seed=req.seed,
                        options=options)
        parts.append(files_rdd.map(lambda kv, parse=parse: parse(kv[0], kv[1])))
    parsed = sc.union(parts).persist()
    try:
        return _write_outputs(spark, req, parsed, files, started)
    finally:
        parsed.unpersist()


def _write_outputs(spark: Any, req: PreprocessRequest, parsed: Any, files: dict[str, list[str]],
                   started: float) -> dict[str, Any]:
    reports = parsed.map(lambda r: r.report).collect()
    rows = parsed.flatMap(lambda r: r.rows)
    sentences = spark.createDataFrame(rows.map(_row_tuple), SENTENCE_SCHEMA).persist()
    try:
        by_split = dict(rows.map(lambda r: (r["split"], r)).aggregateByKey(CorpusStats(), add_row, merge).collect())
        split_counts = {name: by_split[name].sentences for name in SPLITS if name in by_split}
        if "train" not in split_counts or "dev" not in split_counts:
            raise CorpusError(f"no usable {'train' if 'train' not in split_counts else 'dev'} sentences "
                              f"(kept per split: {split_counts})", hint="see the quarantine and file reports")
        for name in split_counts:
            sentences.filter(sentences.split == name).write.parquet(hadoopfs.join(req.out, name))
        quarantine = spark.createDataFrame(parsed.flatMap(lambda r: r.rejected).map(_quarantine_tuple),
                                           QUARANTINE_SCHEMA)
        quarantined = quarantine.count()
        quarantine.coalesce(1).write.json(hadoopfs.join(req.out, "quarantine"))
        overall = CorpusStats()
        for st in by_split.values():
            overall.merge(st)
        stats: dict[str, Any] = {
            "inputs": {role: paths for role, paths in files.items()},
            "split_ratios": req.split, "seed": req.seed,
            "accounting": account(reports, split_counts, quarantined),
            "splits": {name: by_split[name].to_dict() for name in SPLITS if name in by_split},
            "overall": overall.to_dict(),
            "files": sorted(reports, key=lambda r: (r["role"], r["file"])),
        }
        if req.word2vec is not None:
            t0 = time.perf_counter()
            vectors = train_word2vec(spark, sentences, unlabeled=req.unlabeled or None, options=req.word2vec)
            write_vectors(spark, vectors, hadoopfs.join(req.out, "word2vec.txt"))
            stats["word2vec"] = {"path": hadoopfs.join(req.out, "word2vec.txt"), "words": len(vectors.words),
                                 "dim": vectors.dim, "unlabeled": req.unlabeled, "seconds": time.perf_counter() - t0,
                                 **{k: getattr(req.word2vec, k) for k in ("min_count", "window", "iterations", "seed")}}
        stats["seconds"] = round(time.perf_counter() - started, 3)
        stats["tokens_per_s"] = round(overall.tokens / max(stats["seconds"], 1e-9), 1)
        hadoopfs.write_text(spark, hadoopfs.join(req.out, "stats.json"), json.dumps(stats, indent=2))
        return stats
    finally:
        sentences.unpersist()


def _brat_pair(kv: tuple[str, bytes]) -> tuple[str, tuple[str, bytes]] | None:
    key = brat_key(kv[0])
    return None if key is None else (key[0], (key[1][0], bytes(kv[1])))


def _row_tuple(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["split"], r["tokens"], r["tags"], r["file"], r["line"])


def _quarantine_tuple(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["file"], r["line"], r["reason"], r["kind"], r["role"])
