"""Spark batch inference on documents: files are read, annotated and formatted on the executors, one
partition at a time, and written as text part files (``saveAsTextFile``), so documents never pass
through the driver.

    PubTator / JSON lines   every part file is a valid file of that format (documents one after another)
    BioC XML / BioC JSON    every part file is one collection: header, documents as they stream, footer
    BRAT                    NAME.txt + NAME.ann per document, written by the executor into OUTPUT, which
                            must then be a shared filesystem path (file:), as BRAT has no single-file form

Inputs: whole files (``binaryFiles``), or for BRAT the NAME.txt files (their .ann, if any, is ignored).
A file that cannot be parsed yields no documents and one entry in the job's ``errors`` (code, file,
line); nothing is dropped silently.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nerservice.distributed.file_result import display_path
from nerservice.errors import NerServiceError

TEXT_FORMATS = ("pubtator", "bioc-xml", "bioc-json", "jsonl")


def parse_input(kv: tuple[str, bytes], *, fmt: str) -> list[tuple[str, Any]]:
    """One input file → [("doc", Document), ...] or [("error", {...})]."""
    from nerservice.documents.formats import parse_brat_files, parse_bytes, sniff

    uri, data = kv
    path = display_path(uri)
    try:
        if fmt == "brat":
            if not path.endswith(".txt"):
                return []
            return [("doc", parse_brat_files(bytes(data), None, name=path[: -len(".txt")], need_ann=False))]
        used = sniff(bytes(data[:4096])) if fmt == "auto" else fmt
        if used is None:
            raise NerServiceError(f"{path}: not a document format I can detect", hint="pass --input-format")
        return [("doc", d) for d in parse_bytes(bytes(data), source=path, fmt=used)]
    except NerServiceError as exc:
        return [("error", {"file": path, "code": exc.code, "line": int(exc.context.get("line", 0) or 0),
                           "message": exc.message})]


def annotate_partition(items: Iterator[tuple[str, Any]], *, model_dir: str, out_format: str, output: str,
                       options: dict[str, Any], errors: Any, counts: Any, batch: int = 64) -> Iterator[str]:
    """mapPartitions body: parsed inputs → formatted output text (one element per document, plus a
    header/footer for BioC collections).  ``errors``/``counts`` are accumulators."""
    from nerservice.distributed.batch_predict import extractor_for

    def docs() -> Iterator[Any]:
        for kind, value in items:
            if kind == "error":
                errors.add([value])
            else:
                yield value

    head, sep, tail = _collection_parts(out_format)
    first = True
    for doc in _lazy(docs(), lambda: extractor_for(model_dir, **options), batch):
        counts.add({"documents": 1, "entities": len(doc.annotations)})
        if out_format == "brat":
            _write_brat(doc, output)
            continue
        body = _format_one(doc, out_format)
        if first and head:
            yield head
        yield (body if first else sep + body) if sep else body
        first = False
    if not first and tail:
        yield tail


def _lazy(docs: Iterator[Any], load: Any, batch: int) -> Iterator[Any]:
    """Annotated documents; the model loads only when a partition has any document."""
    from nerservice.documents.annotate import annotate

    buf: list[Any] = []
    extractor = None
    for d in docs:
        buf.append(d)
        if len(buf) >= batch:
            extractor = extractor or load()
            yield from annotate(extractor, buf)
            buf = []
    if buf:
        extractor = extractor or load()
        yield from annotate(extractor, buf)


def _format_one(doc: Any, fmt: str) -> str:
    from nerservice.documents.bioc_write import to_bioc
    from nerservice.documents.jsonl import document_dict
    from nerservice.documents.pubtator import format_document

    if fmt == "pubtator":
        return format_document(doc).rstrip("\n") + "\n"  # saveAsTextFile adds the line break: one blank line
    if fmt == "jsonl":
        return json.dumps(document_dict(doc), ensure_ascii=False)
    collection = to_bioc([doc])
    if fmt == "bioc-json":
        from bioc.biocjson.encoder import toJSON

        return json.dumps(toJSON(collection.documents[0]), ensure_ascii=False)
    from bioc.biocxml.encoder import encode_document
    from lxml import etree

    return etree.tostring(encode_document(collection.documents[0]), encoding="unicode")


def _collection_parts(fmt: str) -> tuple[str, str, str]:
    if fmt == "bioc-xml":
        return ("<?xml version='1.0' encoding='utf-8' standalone='yes'?>\n<collection><source>nerservice</source>"
                "<date></date><key>nerservice.key</key>", "", "</collection>")
    if fmt == "bioc-json":
        return ('{"source": "nerservice", "date": "", "key": "nerservice.key", "infons": {}, "documents": [',
                ",", "]}")
    return "", "", ""


def _write_brat(doc: Any, output: str) -> None:
    from nerservice.documents.formats import write_documents

    write_documents([doc], Path(display_path(output)), "brat")


def check_output(out_format: str, output: str) -> None:
    from nerservice.errors import ConfigError

    if out_format == "brat" and "://" in output.replace("file://", "") and not output.startswith("file:"):
        raise ConfigError(f"BRAT output from Spark is written by the executors to a shared filesystem; {output!r} "
                          "is not a local path", hint="pass a path every executor can write (NFS), or pick "
                          "--output-format pubtator / bioc-xml / bioc-json / jsonl")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


class ListParam:
    """Accumulator of small lists (file errors): Spark applies each successful task's updates once."""

    def zero(self, value: list[Any]) -> list[Any]:
        return []

    def addInPlace(self, a: list[Any], b: list[Any]) -> list[Any]:
        a.extend(b)
        return a


class CountsParam:
    def zero(self, value: dict[str, int]) -> dict[str, int]:
        return {}

    def addInPlace(self, a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
        for k, v in b.items():
            a[k] = a.get(k, 0) + v
        return a


def run_predict_documents(spark: Any, *, inputs: list[str], output: str, model_dir: str, input_format: str,
                          output_format: str, partitions: int | None, options: dict[str, Any]) -> dict[str, Any]:
    """Driver side: wire the executors' work; returns the counts (the driver sees counts, not documents)."""
    from functools import partial

    from nerservice.distributed import hadoopfs

    check_output(output_format, output)
    sc = spark.sparkContext
    errors = sc.accumulator([], ListParam())  # duck-typed AccumulatorParam: no pyspark import at module level
    counts = sc.accumulator({}, CountsParam())
    paths = hadoopfs.expand(spark, inputs)
    files = sc.binaryFiles(",".join(paths), minPartitions=partitions or min(len(paths), sc.defaultParallelism))
    parsed = files.flatMap(partial(parse_input, fmt=input_format))
    if partitions:
        parsed = parsed.repartition(partitions)
    body = partial(annotate_partition, model_dir=model_dir, out_format=output_format, output=output,
                   options=options, errors=errors, counts=counts)
    formatted = parsed.mapPartitions(body)
    if output_format == "brat":
        Path(display_path(output)).mkdir(parents=True, exist_ok=True)
        formatted.count()  # the executors write the files; nothing comes back but counts
    else:
        formatted.saveAsTextFile(output)
    return {"documents": int(counts.value.get("documents", 0)), "entities": int(counts.value.get("entities", 0)),
            "files": len(paths), "errors": list(errors.value), "partitions": parsed.getNumPartitions()}
