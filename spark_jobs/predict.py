"""spark-submit spark_jobs/predict.py --model ner@production --input texts.jsonl --output preds/

Distributed batch inference with the API's Extractor (loaded once per executor Python worker): text lines,
JSONL or Parquet in (an id and a text column), one row per text out with its entities and character
offsets, as Parquet or JSONL; or documents (PubTator, BioC XML/JSON, BRAT, JSON lines) in and out with
entities at document offsets, streamed through the executors.
"""
from __future__ import annotations

import argparse

from nerservice.distributed.session import run_main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="predict.py", description=__doc__.split("\n\n")[1])
    p.add_argument("--model", required=True, help="store ref (name@alias, name/VERSION) or a model directory "
                   "on storage every executor sees")
    p.add_argument("--input", nargs="+", required=True, help="input files/dirs/globs")
    p.add_argument("--input-format", default="auto", choices=["auto", "text", "jsonl", "parquet", "pubtator",
                   "bioc-xml", "bioc-json", "brat", "jsonl-documents"],
                   help="text/jsonl/parquet: one text per row (id and text columns); the document formats are "
                   "read, annotated and written back on the executors (brat: the NAME.txt files)")
    p.add_argument("--id-col", default="id")
    p.add_argument("--text-col", default="text")
    p.add_argument("--output", required=True)
    p.add_argument("--output-format", default="parquet",
                   choices=["parquet", "jsonl", "pubtator", "bioc-xml", "bioc-json", "brat"],
                   help="documents: jsonl, pubtator, bioc-xml, bioc-json (one file per partition) or brat "
                   "(NAME.txt + NAME.ann, OUTPUT on a filesystem every executor can write)")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--partitions", type=int, help="repartition the input (default: Spark's input splits)")
    p.add_argument("--batch-size", type=int, default=256, help="sentences per model call (GPU workers: 4096)")
    p.add_argument("--token-budget", type=int, default=8192,
                   help="padded tokens per model call at most (GPU workers: 64 x the batch size)")
    p.add_argument("--arrow-batch", type=int, default=2048,
                   help="texts per pandas batch (spark.sql.execution.arrow.maxRecordsPerBatch)")
    p.add_argument("--no-scores", action="store_true", help="skip CRF marginals (faster; scores are 1.0)")
    p.add_argument("--runtime", default="auto", choices=["auto", "onnx", "keras"],
                   help="what computes the emissions: auto = ONNX Runtime when installed (an export from "
                   "`nerservice export` never needs TensorFlow), else Keras")
    p.add_argument("--head", metavar="NAME", help="a multi-corpus model's head NAME (its corpus name) alone: only "
                   "that corpus's types, decoded as that head decodes them (no other head's spans, no overlap "
                   "rule); checked on the driver before any executor starts")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from nerservice.distributed.predict_job import PredictRequest, resolve_model, run_predict
    from nerservice.distributed.session import get_session

    req = PredictRequest(inputs=args.input, output=args.output, model=args.model, input_format=args.input_format,
                         output_format=args.output_format, id_col=args.id_col, text_col=args.text_col,
                         partitions=args.partitions, overwrite=args.overwrite,
                         options={"batch_size": args.batch_size, "token_budget": args.token_budget,
                                  "with_scores": not args.no_scores, "runtime": args.runtime,
                                  "head": args.head})
    # Before the session: a model or head it cannot serve fails here, with no executor started.
    model_dir = resolve_model(req.model, head=args.head)
    spark = get_session("nerservice-predict",
                        defaults={"spark.sql.execution.arrow.maxRecordsPerBatch": str(args.arrow_batch)})
    try:
        run_predict(spark, req, model_dir)
    finally:
        spark.stop()


if __name__ == "__main__":
    run_main(main)
