"""spark-submit spark_jobs/preprocess.py --train 'data/train*.tsv' --dev data/dev.tsv --out prep/

Corpus files or globs on any Spark filesystem → Parquet sentences per split, stats.json and a quarantine
of every rejected sentence (file, line, reason); optionally word2vec vectors trained with MLlib.
"""
from __future__ import annotations

import argparse

from nerservice.distributed.session import run_main
from nerservice.json_stdout import emit_json


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="preprocess.py", description=__doc__.split("\n\n")[1])
    p.add_argument("--train", nargs="+", help="training corpus files/globs")
    p.add_argument("--corpora", metavar="FILE", help="instead of --train/--dev/--test: a corpora config "
                   "(nerservice.corpora.v1); writes OUT/<corpus>/ per corpus and OUT/corpora.json, which "
                   "train.py --data OUT trains as one model with one CRF head per corpus")
    p.add_argument("--dev", nargs="+", default=[], help="dev corpus files/globs")
    p.add_argument("--test", nargs="+", default=[], help="test corpus files/globs")
    p.add_argument("--split", help="TRAIN,DEV[,TEST] ratios dividing the --train inputs by a seeded content "
                   "hash (when the corpus has no dev/test files), e.g. 0.8,0.1,0.1")
    p.add_argument("--seed", type=int, default=42, help="seed of --split and word2vec")
    p.add_argument("--out", required=True, help="output folder (any Spark filesystem)")
    p.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    p.add_argument("--format", dest="fmt", default="auto",
                   choices=["auto", "tsv", "conll", "pubtator", "bioc-xml", "bioc-json", "brat", "jsonl"],
                   help="auto detects tsv/conll and PubTator, BioC, JSON-lines documents per file; BRAT "
                   "(NAME.txt + NAME.ann, e.g. --train 'brat/train/*') needs --format brat")
    p.add_argument("--label-map", action="append", default=[], metavar="FROM[,FROM...]=TO",
                   help="documents: rename labels at load (TO=O leaves them out); repeatable")
    p.add_argument("--sentences", default="split", choices=["split", "lines"],
                   help="documents: sentence splitter (default) or one sentence per line (PubTator: per "
                   "title/abstract line)")
    p.add_argument("--tokens", default="words", choices=["words", "whitespace"],
                   help="documents: the project's tokenizer (default) or whitespace-separated tokens "
                   "(pre-tokenised text)")
    p.add_argument("--scheme", default="auto", choices=["auto", "iob1", "iob2", "iobes"])
    p.add_argument("--word2vec", type=int, metavar="DIM", help="also train DIM-dimensional word2vec vectors "
                   "(Spark MLlib) on all tokens and write OUT/word2vec.txt")
    p.add_argument("--unlabeled", nargs="+", default=[], help="with --word2vec: extra raw text files (one "
                   "text per line), tokenized like the API tokenizes")
    p.add_argument("--w2v-min-count", type=int, default=2)
    p.add_argument("--w2v-window", type=int, default=5)
    p.add_argument("--w2v-iterations", type=int, default=5)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from nerservice.distributed.preprocess_job import PreprocessRequest, run_preprocess
    from nerservice.distributed.session import get_session
    from nerservice.distributed.word2vec import Word2VecOptions
    from nerservice.documents.align import parse_label_map

    if bool(args.corpora) == bool(args.train):
        from nerservice.errors import ConfigError

        raise ConfigError("preprocess needs --train (with --dev/--test) or --corpora FILE, not both")
    w2v = (Word2VecOptions(dim=args.word2vec, min_count=args.w2v_min_count, window=args.w2v_window,
                           iterations=args.w2v_iterations, seed=args.seed) if args.word2vec else None)
    req = PreprocessRequest(out=args.out, train=args.train, dev=args.dev, test=args.test, split=args.split,
                            seed=args.seed, fmt=args.fmt, scheme=args.scheme, overwrite=args.overwrite,
                            word2vec=w2v, unlabeled=args.unlabeled, label_map=parse_label_map(args.label_map),
                            sentences=args.sentences, tokens=args.tokens)
    if args.corpora:
        return preprocess_corpora(args, w2v)
    spark = get_session("nerservice-preprocess")
    try:
        stats = run_preprocess(spark, req)
    finally:
        spark.stop()
    emit_json({"accounting": stats["accounting"], "splits": {k: {"sentences": v["sentences"], "tokens": v["tokens"],
               "entities": v["entities"]} for k, v in stats["splits"].items()}, "word2vec": stats.get("word2vec"),
               "seconds": stats["seconds"], "tokens_per_s": stats["tokens_per_s"]})


def preprocess_corpora(args: argparse.Namespace, w2v: object) -> None:
    from nerservice.distributed.multi_corpora import preprocess_corpora as run
    from nerservice.distributed.session import get_session
    from nerservice.multi.config import CorporaConfig

    config = CorporaConfig.load(args.corpora)  # every check that needs no Spark, before the session starts
    spark = get_session("nerservice-preprocess")
    try:
        stats = run(spark, config, out=args.out, overwrite=args.overwrite, seed=args.seed, word2vec=w2v)
    finally:
        spark.stop()
    emit_json({name: {"accounting": s["accounting"], "splits": {k: {"sentences": v["sentences"], "entities":
               v["entities"]} for k, v in s["splits"].items()}} for name, s in stats.items()})


if __name__ == "__main__":
    run_main(main)
