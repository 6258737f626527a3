"""Small file operations on any filesystem Spark can reach (local, HDFS, S3A, ...), through the Hadoop
FileSystem API of the running JVM, for the few files a driver writes itself (stats.json, word2vec)."""
from __future__ import annotations

from typing import Any

from nerservice.errors import CorpusError


def _fs(spark: Any, uri: str) -> tuple[Any, Any]:
    sc = spark.sparkContext
    path = sc._jvm.org.apache.hadoop.fs.Path(uri)
    return path.getFileSystem(sc._jsc.hadoopConfiguration()), path


def local_path(spark: Any, uri: str) -> str | None:
    """The local path ``uri`` resolves to (a scheme-less path is resolved against Hadoop's default
    filesystem, which on a cluster is often HDFS), or None when it is not on the local filesystem."""
    fs, path = _fs(spark, uri)
    qualified = fs.makeQualified(path).toUri()
    return str(qualified.getPath()) if qualified.getScheme() == "file" else None


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/")] + [p.strip("/") for p in parts])


def exists(spark: Any, uri: str) -> bool:
    fs, path = _fs(spark, uri)
    return bool(fs.exists(path))


def delete(spark: Any, uri: str) -> None:
    fs, path = _fs(spark, uri)
    if fs.exists(path):
        fs.delete(path, True)


def expand(spark: Any, patterns: list[str]) -> list[str]:
    """Files matching each path or glob, sorted per pattern. A pattern matching nothing is an error
    (Spark would fail later with a less helpful message, or silently read nothing)."""
    out: list[str] = []
    for pattern in patterns:
        fs, path = _fs(spark, pattern)
        statuses = fs.globStatus(path)
        files = sorted(str(s.getPath().toString()) for s in (statuses or []) if s.isFile())
        if not files:
            dirs = [s for s in (statuses or []) if s.isDirectory()]
            hint = ("it is a directory: pass a glob such as DIR/*.tsv" if dirs
                    else "check the path; globs like data/*.conll are expanded by Spark, quote them in the shell")
            raise CorpusError(f"no input files match {pattern!r}", hint=hint, pattern=pattern)
        out.extend(files)
    return out


def write_text(spark: Any, uri: str, text: str) -> None:
    fs, path = _fs(spark, uri)
    stream = fs.create(path, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


def put_file(spark: Any, local_path: str, uri: str) -> None:
    """Copy a local file to ``uri`` (overwriting)."""
    fs, path = _fs(spark, uri)
    src = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(f"file://{local_path}")
    fs.copyFromLocalFile(False, True, src, path)
