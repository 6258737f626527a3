"""In-domain word vectors with Spark MLlib Word2Vec, exported as a word2vec text file that
``nerservice.embeddings.load_vectors`` reads.

Words are trained in their ``normalize_word`` form (lower-case, digits → 0): that is the form the
tagger's word vocabulary and the embedding loader use, so every trained vector is reachable and
"BRCA1"/"brca2" share statistics instead of splitting them.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any

import numpy as np

from nerservice.embeddings import WordVectors, save_word2vec_text
from nerservice.text.tokenizer import tokenize
from nerservice.text.vocab import normalize_word


@dataclass(frozen=True)
class Word2VecOptions:
    dim: int = 100
    min_count: int = 2  # MLlib's default 5 drops most of a small corpus' rare disease names
    window: int = 5
    iterations: int = 5
    seed: int = 42
    partitions: int = 1  # >1 is faster but not reproducible (MLlib merges partition models)


def normalized(tokens: list[str]) -> list[str]:
    return [normalize_word(t) for t in tokens]


def tokenize_line(line: str) -> list[str]:
    """An unlabeled text line → normalised tokens (the tokenizer the API uses on raw text)."""
    return [normalize_word(t.text) for t in tokenize(line)]


def train_word2vec(spark: Any, sentences_df: Any, *, unlabeled: list[str] | None = None,
                   options: Word2VecOptions = Word2VecOptions()) -> WordVectors:
    """``sentences_df`` has a ``tokens`` array column; ``unlabeled`` are text files (one text per line)."""
    from pyspark.ml.feature import Word2Vec
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("words", T.ArrayType(T.StringType()))])
    words = sentences_df.select("tokens").rdd.map(lambda r: (normalized(r["tokens"]),))
    if unlabeled:
        lines = spark.read.text(unlabeled).rdd.map(lambda r: (tokenize_line(r["value"]),))
        words = words.union(lines.filter(lambda r: len(r[0]) > 0))
    df = spark.createDataFrame(words, schema)
    model = Word2Vec(vectorSize=options.dim, minCount=options.min_count, windowSize=options.window,
                     maxIter=options.iterations, seed=options.seed, numPartitions=options.partitions,
                     inputCol="words", outputCol="vector").fit(df)
    rows = sorted(model.getVectors().collect(), key=lambda r: r["word"])
    matrix = np.asarray([r["vector"].toArray() for r in rows], dtype=np.float32).reshape(len(rows), options.dim)
    return WordVectors(words=[r["word"] for r in rows], matrix=matrix)


def write_vectors(spark: Any, vectors: WordVectors, uri: str) -> None:
    """Write word2vec text to any Spark filesystem (local temp file, then a Hadoop copy)."""
    from nerservice.distributed import hadoopfs

    with tempfile.TemporaryDirectory(prefix="nerservice-w2v-") as tmp:
        # Same file name as the target: save_word2vec_text gzips when it ends in .gz.
        local = os.path.join(tmp, uri.rstrip("/").rsplit("/", 1)[-1] or "vectors.txt")
        save_word2vec_text(vectors, local)
        hadoopfs.put_file(spark, local, uri)
