#!/usr/bin/env bash
# Entry point of the nerservice Spark image: one image, every role.
#   master                  standalone master (SPARK_MASTER_HOST, SPARK_MASTER_PORT, SPARK_MASTER_WEBUI_PORT)
#   worker [MASTER_URL]     standalone worker (SPARK_MASTER_URL, SPARK_WORKER_CORES, SPARK_WORKER_MEMORY,
#                           SPARK_WORKER_HOST, SPARK_WORKER_WEBUI_PORT, SPARK_WORKER_DIR); GPU workers get their
#                           spark.worker.resource.gpu.* settings from $SPARK_CONF_DIR/spark-defaults.conf
#   submit ARGS...          spark-submit ARGS...
#   train-pipeline          preprocess -> train -> register -> promote (docker/spark/train-pipeline.sh)
#   anything else           run as a command (e.g. `nerservice --help`, `bash`)
# Runs the JVM classes with pyspark's own bin/spark-class: the pyspark wheel has no sbin/start-*.sh scripts.
# Works outside Docker too (the tests run it on 127.0.0.1 with SPARK_HOME = the venv's pyspark folder).
set -euo pipefail

: "${SPARK_HOME:?SPARK_HOME must name the pyspark package folder (python -c 'import pyspark; print(pyspark.__path__[0])')}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
role="${1:-help}"
[ $# -gt 0 ] && shift

case "$role" in
  master)
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
      --host "${SPARK_MASTER_HOST:-$(hostname)}" \
      --port "${SPARK_MASTER_PORT:-7077}" \
      --webui-port "${SPARK_MASTER_WEBUI_PORT:-8080}" \
      "$@"
    ;;
  worker)
    master_url="${1:-${SPARK_MASTER_URL:-spark://spark-master:7077}}"
    [ $# -gt 0 ] && shift
    args=(--webui-port "${SPARK_WORKER_WEBUI_PORT:-8081}")
    # Unset means Spark's own defaults: all cores, all memory but 1 GiB, the container's hostname.
    [ -n "${SPARK_WORKER_HOST:-}" ] && args+=(--host "$SPARK_WORKER_HOST")
    [ -n "${SPARK_WORKER_PORT:-}" ] && args+=(--port "$SPARK_WORKER_PORT")
    [ -n "${SPARK_WORKER_CORES:-}" ] && args+=(--cores "$SPARK_WORKER_CORES")
    [ -n "${SPARK_WORKER_MEMORY:-}" ] && args+=(--memory "$SPARK_WORKER_MEMORY")
    [ -n "${SPARK_WORKER_DIR:-}" ] && args+=(--work-dir "$SPARK_WORKER_DIR")
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker "${args[@]}" "$@" "$master_url"
    ;;
  submit)
    exec "$SPARK_HOME/bin/spark-submit" "$@"
    ;;
  train-pipeline)
    exec "$here/train-pipeline.sh" "$@"
    ;;
  help|--help|-h)
    sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    ;;
  *)
    exec "$role" "$@"
    ;;
esac
