"""One way to start the SparkSession for our jobs.

``spark-submit --conf`` always wins: defaults here are applied only to keys the user did not set.
Environment variables the library needs on executors are forwarded as ``spark.executorEnv.*``,
because variables exported for ``spark-submit`` do not reach executor Python (docs/ARCHITECTURE.md, platform facts).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

# What executors need to find the model store and pick the Keras backend.
FORWARDED_ENV = ("NERSERVICE_STORE_URI", "NERSERVICE_STORE_DIR", "NERSERVICE_CACHE_DIR", "KERAS_BACKEND",
                 "MLFLOW_TRACKING_URI", "TF_CPP_MIN_LOG_LEVEL")
_PATHS = ("NERSERVICE_STORE_DIR", "NERSERVICE_CACHE_DIR")  # executors run in their own work dirs


def executor_env(environ: Mapping[str, str], names: Iterable[str] = FORWARDED_ENV) -> dict[str, str]:
    """Values to forward, with relative store paths made absolute (an executor's cwd is its work dir).
    The embedded store's default folder (./models of the driver) is forwarded too, so executors register
    into the store the driver would use."""
    out = {}
    for name in names:
        value = environ.get(name)
        if value is None and name == "NERSERVICE_STORE_DIR" and not environ.get("NERSERVICE_STORE_URI"):
            value = "models"
        if value is None:
            continue
        if name in _PATHS:
            value = str(Path(value).resolve())
        elif name == "NERSERVICE_STORE_URI" and value.startswith("sqlite:///") and not value.startswith("sqlite:////"):
            value = "sqlite:///" + str(Path(value[len("sqlite:///"):]).resolve())
        out[name] = value
    return out


def get_session(app_name: str, *, defaults: Mapping[str, str] | None = None,
                forward_env: Iterable[str] = FORWARDED_ENV) -> Any:
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    # Start (or attach to spark-submit's) JVM first: only then does SparkConf() see the spark.* properties
    # spark-submit passed; before it, SparkConf() is empty and every "default" would override them.
    SparkContext._ensure_initialized()
    given = SparkConf()
    builder = SparkSession.builder.appName(app_name)
    for key, value in (defaults or {}).items():
        if not given.contains(key):
            builder = builder.config(key, value)
    for name, value in executor_env(os.environ, forward_env).items():
        key = f"spark.executorEnv.{name}"
        if not given.contains(key):
            builder = builder.config(key, value)
    if not given.contains("spark.master"):
        builder = builder.master("local[*]")  # plain `python spark_jobs/x.py` runs locally
    spark = builder.getOrCreate()
    # Spark's INFO stream buries the job's own output; NERSERVICE_SPARK_LOG_LEVEL=INFO brings it back.
    spark.sparkContext.setLogLevel(os.environ.get("NERSERVICE_SPARK_LOG_LEVEL", "WARN"))
    return spark


def run_main(main: Callable[[], Any]) -> None:
    """Run a job's main; a NerServiceError ends it with its coded message (and the same as JSON) on stderr
    and exit status 2, instead of a traceback. Run as plain ``python spark_jobs/x.py`` stdout holds the job's summary
    JSON alone (``emit_json``) and what the job and the library print for people goes to stderr; under
    spark-submit, Spark's PythonRunner merges the driver's stderr into stdout, so there the summary is the last
    document (and OUT/summary.json for train)."""
    import json
    import sys

    from nerservice.errors import NerServiceError
    from nerservice.json_stdout import json_stdout

    # --help: the usage text is then the job's output, so it stays on stdout (argparse prints it to sys.stdout)
    wants_help = bool({"-h", "--help"} & set(sys.argv[1:]))
    try:
        with json_stdout(not wants_help):
            main()
    except NerServiceError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        print(json.dumps({"error": exc.to_dict()}), file=sys.stderr, flush=True)
        sys.exit(2)
