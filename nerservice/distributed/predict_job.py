"""Driver side of ``spark_jobs/predict.py``: texts (text lines, JSONL, Parquet) → entities with character
offsets (Parquet or JSONL), through the same ``Extractor`` as the REST API."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from nerservice.distributed import hadoopfs
from nerservice.distributed.batch_predict import OUTPUT_SCHEMA, predict_frames
from nerservice.errors import ConfigError
from nerservice.json_stdout import emit_json

InputFormat = Literal["auto", "text", "jsonl", "parquet", "pubtator", "bioc-xml", "bioc-json", "brat",
                      "jsonl-documents"]
DOCUMENT_INPUTS = ("pubtator", "bioc-xml", "bioc-json", "brat", "jsonl-documents")


@dataclass
class PredictRequest:
    inputs: list[str]
    output: str
    model: str  # store ref (name@alias, name/3), a model dir, or a training output dir
    input_format: InputFormat = "auto"
    output_format: Literal["parquet", "jsonl", "pubtator", "bioc-xml", "bioc-json", "brat"] = "parquet"
    id_col: str = "id"
    text_col: str = "text"
    partitions: int | None = None
    overwrite: bool = False
    # Extractor.load options (batch_size, token_budget, head, ...), the same on every executor
    options: dict[str, Any] = field(default_factory=dict)


def detect_format(paths: list[str]) -> str:
    first = paths[0].rstrip("/").lower()
    if first.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if first.endswith(".parquet") or "." not in first.rsplit("/", 1)[-1]:
        return "parquet"  # Spark writes Parquet as directories without an extension
    return "text"


def read_texts(spark: Any, req: PredictRequest) -> tuple[Any, str]:
    """A DataFrame with columns (id, text); returns it and the Spark type of ``id``.
    Text files: one text per line, id = the line's 0-based index over the input in Spark's read order."""
    fmt = detect_format(req.inputs) if req.input_format == "auto" else req.input_format
    if fmt == "text":
        lines = spark.read.text(req.inputs).rdd.zipWithIndex().map(lambda p: (p[1], p[0]["value"]))
        return spark.createDataFrame(lines, "id long, text string"), "long"
    df = spark.read.json(req.inputs) if fmt == "jsonl" else spark.read.parquet(*req.inputs)
    missing = [c for c in (req.id_col, req.text_col) if c not in df.columns]
    if missing:
        raise ConfigError(f"input has no column(s) {missing}; it has {df.columns}",
                          hint="pass --id-col / --text-col naming the id and text columns")
    id_type = df.schema[req.id_col].dataType.simpleString()
    return df.select(df[req.id_col].alias("id"), df[req.text_col].cast("string").alias("text")), id_type


def resolve_model(ref: str, *, head: str | None = None) -> Path:
    """On the driver, once: a store ref becomes one concrete verified version, so every executor serves
    the same model even if the alias moves during the job.  ``head``: checked against the folder's tags
    here (``check_folder_head``, the Extractor's own rule), so a wrong one fails once, with the Extractor's
    coded error, instead of in every task after the model loads."""
    from nerservice.artifacts.formats import verify_manifest
    from nerservice.artifacts.resolve import resolve

    path = resolve(ref).path.resolve()
    verify_manifest(path)
    if head is not None:
        from nerservice.multi.head_view import check_folder_head

        check_folder_head(path, head)
    return path


def run_predict(spark: Any, req: PredictRequest, model_dir: Path | None = None) -> dict[str, Any]:
    """``model_dir``: what ``resolve_model`` gave for this request (``spark_jobs/predict.py`` resolves before
    its Spark session, and so its executors, start); resolved here when not given."""
    started = time.perf_counter()
    # The model first: a request it cannot serve fails before the output is touched or a stage starts.
    if model_dir is None:
        model_dir = resolve_model(req.model, head=req.options.get("head"))
    if hadoopfs.exists(spark, req.output):
        if not req.overwrite:
            raise ConfigError(f"output {req.output} exists", hint="pass --overwrite to replace it")
        hadoopfs.delete(spark, req.output)
    if req.input_format in DOCUMENT_INPUTS or req.output_format not in ("parquet", "jsonl"):
        return _predict_documents(spark, req, model_dir, started)
    texts, id_type = read_texts(spark, req)
    if req.partitions:
        texts = texts.repartition(req.partitions)
    sc = spark.sparkContext
    loads, busy = sc.accumulator(0), sc.accumulator(0.0)
    fn = partial(predict_frames, model_dir=str(model_dir), id_col="id", text_col="text", loads=loads,
                 busy=busy, options=req.options)
    result = texts.mapInPandas(fn, OUTPUT_SCHEMA.format(id_type=id_type))
    writer = result.write
    t0 = time.perf_counter()
    (writer.parquet if req.output_format == "parquet" else writer.json)(req.output)
    infer_seconds = time.perf_counter() - t0
    written = spark.read.parquet(req.output) if req.output_format == "parquet" else spark.read.json(req.output)
    counts = written.selectExpr("count(*) as texts", "sum(if(entities is null, 0, size(entities))) as entities",
                                "count(error) as errors").first()
    summary = {
        "model": req.model, "model_dir": str(model_dir), "head": req.options.get("head"), "inputs": req.inputs,
        "output": req.output, "texts": int(counts["texts"]), "entities": int(counts["entities"] or 0),
        "errors": int(counts["errors"]),
        "partitions": texts.rdd.getNumPartitions(), "extractor_loads": int(loads.value),
        # Wall time of the inference+write stage (executor Python start and model loads included), and the
        # seconds all tasks together spent inside Extractor.extract.
        "infer_seconds": round(infer_seconds, 3), "extract_seconds": round(float(busy.value), 3),
        "seconds": round(time.perf_counter() - started, 3),
    }
    emit_json(summary, indent=None)
    return summary


def _predict_documents(spark: Any, req: PredictRequest, model_dir: Path, started: float) -> dict[str, Any]:
    from nerservice.distributed.predict_docs import run_predict_documents

    fmt = "jsonl" if req.input_format == "jsonl-documents" else req.input_format
    if fmt not in DOCUMENT_INPUTS and fmt not in ("jsonl", "auto"):
        raise ConfigError(f"--output-format {req.output_format} needs document input",
                          hint="pass --input-format pubtator|bioc-xml|bioc-json|brat|jsonl-documents")
    if req.output_format == "parquet":
        raise ConfigError("document input is written as documents", hint="pick --output-format jsonl, pubtator, "
                          "bioc-xml, bioc-json or brat")
    summary = run_predict_documents(spark, inputs=req.inputs, output=req.output, model_dir=str(model_dir),
                                    input_format=fmt, output_format=req.output_format, partitions=req.partitions,
                                    options=req.options)
    summary.update({"model": req.model, "model_dir": str(model_dir), "head": req.options.get("head"),
                    "inputs": req.inputs, "output": req.output, "output_format": req.output_format,
                    "seconds": round(time.perf_counter() - started, 3)})
    emit_json(summary, indent=None)
    return summary
