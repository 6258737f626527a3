#!/usr/bin/env bash
# The main job on embedded defaults: local Spark, the embedded model store (./models), the API on
# 127.0.0.1. `make quickstart` runs it after setting up the venv.
#
#   scripts/quickstart.sh            spark-submit preprocess -> spark-submit train (register + promote)
#                                    -> serve in the background -> one example request
#   scripts/quickstart.sh stop       stop the API started by a previous run (PID in runs/api.pid)
#   scripts/quickstart.sh status     is it running, and where
#
# Settings (environment):
#   CORPUS_DIR    folder with train.tsv, dev.tsv (or devel.tsv) and test.tsv   [examples/demo-corpus]
#                 (the public corpora's folders, e.g. NCBI-disease, have exactly these names)
#   TRAIN, DEV, TEST   explicit corpus files instead (any format the core reads: IOB TSV, CoNLL)
#   EPOCHS        training epochs [10: enough for the demo corpus at the default batch of 128 (4 gave dev F1 0.88, 10 gave 1.0); use 30+ on a real corpus]
#   QUICKSTART_ENGINE  spark (spark_jobs/ on local Spark) | core (nerservice train) | auto [auto: spark
#                 when spark_jobs/ and Java are there]
#   MODEL_NAME    model store name [demo];  ALIAS  alias served by the API [production]
#   PORT          API port on 127.0.0.1 [8000]
#   RUNS_DIR      outputs, logs and the API's PID file [runs]
#   VENV          the virtualenv with nerservice installed [.venv]
#   NERSERVICE_STORE_URI / NERSERVICE_STORE_DIR   the model store (default: embedded under ./models)
#
# Idempotent: a second run with the same corpus and settings reuses the finished training (the run folder is
# keyed by a hash of both) instead of registering another version, and restarts the API.
set -euo pipefail

cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PY="$VENV/bin/python"
NER="$VENV/bin/nerservice"
SPARK_SUBMIT="$VENV/bin/spark-submit"
RUNS_DIR="${RUNS_DIR:-runs}"
PORT="${PORT:-8000}"
MODEL_NAME="${MODEL_NAME:-demo}"
ALIAS="${ALIAS:-production}"
EPOCHS="${EPOCHS:-10}"
READY_TIMEOUT="${READY_TIMEOUT:-180}"
PID_FILE="$RUNS_DIR/api.pid"
API_LOG="$RUNS_DIR/api.log"
URL="http://127.0.0.1:$PORT"
EXAMPLE_TEXT="Cisplatin-induced nephrotoxicity was observed in patients with breast cancer who also received tamoxifen."

say() { printf '\n==> %s\n' "$*"; }
die() { printf 'quickstart: error: %s\n' "$*" >&2; exit 1; }

# --- the API process ---------------------------------------------------------------------------------
api_pid() {
  # The PID from the file, only if that process is still our server (a PID can be reused after a reboot).
  [ -f "$PID_FILE" ] || return 1
  local pid
  pid="$(cat "$PID_FILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "nerservice serve" || return 1
  echo "$pid"
}

stop_api() {
  local pid
  if ! pid="$(api_pid)"; then
    rm -f "$PID_FILE"
    echo "quickstart: no API running (no live process in $PID_FILE)"
    return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 30); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "quickstart: API (PID $pid) ignored SIGTERM for 15 s; sending SIGKILL"
    kill -KILL "$pid"
  fi
  rm -f "$PID_FILE"
  echo "quickstart: stopped the API (PID $pid)"
}

http_get() {  # URL -> body on stdout; status code in HTTP_STATUS
  local out
  out="$("$PY" - "$1" <<'EOF'
import sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
        body, code = r.read().decode("utf-8", "replace"), r.status
except urllib.error.HTTPError as e:
    body, code = e.read().decode("utf-8", "replace"), e.code
except OSError:
    body, code = "", 0
print(code)
print(body)
EOF
)"
  HTTP_STATUS="${out%%$'\n'*}"
  HTTP_BODY="${out#*$'\n'}"
}

case "${1:-start}" in
  stop) stop_api; exit 0 ;;
  status)
    if pid="$(api_pid)"; then echo "API running: PID $pid, $URL/ (log: $API_LOG)"; else echo "API not running"; fi
    exit 0 ;;
  start) ;;
  -h|--help|help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
  *) die "unknown command '$1' (use: start, stop, status)" ;;
esac

[ -x "$NER" ] || die "$NER not found: run 'make quickstart' (it creates the venv), or set VENV"

# --- corpus ------------------------------------------------------------------------------------------
CORPUS_DIR="${CORPUS_DIR:-examples/demo-corpus}"
pick() {  # first existing file among the candidates
  local f
  for f in "$@"; do [ -f "$f" ] && { echo "$f"; return 0; }; done
  return 1
}
TRAIN="${TRAIN:-$(pick "$CORPUS_DIR/train.tsv" "$CORPUS_DIR/train.conll" "$CORPUS_DIR/train.txt" || true)}"
DEV="${DEV:-$(pick "$CORPUS_DIR/dev.tsv" "$CORPUS_DIR/devel.tsv" "$CORPUS_DIR/dev.conll" "$CORPUS_DIR/dev.txt" || true)}"
TEST="${TEST:-$(pick "$CORPUS_DIR/test.tsv" "$CORPUS_DIR/test.conll" "$CORPUS_DIR/test.txt" || true)}"
[ -n "$TRAIN" ] && [ -f "$TRAIN" ] || die "no training file: expected $CORPUS_DIR/train.tsv (or set TRAIN=path)"
[ -n "$DEV" ] && [ -f "$DEV" ] || die "no dev file: expected $CORPUS_DIR/dev.tsv or devel.tsv (or set DEV=path)"
[ -n "$TEST" ] && [ -f "$TEST" ] || die "no test file: expected $CORPUS_DIR/test.tsv (or set TEST=path)"
# Absolute paths: Spark resolves relative ones against each process's own working directory.
TRAIN="$(realpath "$TRAIN")"; DEV="$(realpath "$DEV")"; TEST="$(realpath "$TEST")"

mkdir -p "$RUNS_DIR"
RUNS_DIR="$(realpath "$RUNS_DIR")"
PID_FILE="$RUNS_DIR/api.pid"
API_LOG="$RUNS_DIR/api.log"
stop_api >/dev/null  # idempotent: a previous run's server is replaced by this run's

# Spark path (spark_jobs/preprocess.py + train.py on local Spark) when the jobs and a JVM are there; else the
# core CLI, which runs the same library code in one process. QUICKSTART_ENGINE=spark|core forces one.
ENGINE="${QUICKSTART_ENGINE:-auto}"
if [ "$ENGINE" = auto ]; then
  if [ -f spark_jobs/preprocess.py ] && [ -f spark_jobs/train.py ] && [ -x "$SPARK_SUBMIT" ]; then
    if command -v java >/dev/null 2>&1 || [ -n "${JAVA_HOME:-}" ]; then
      ENGINE=spark
    else
      echo "quickstart: no Java found, so Spark cannot run here; training with the core CLI instead." >&2
      echo "quickstart: for the Spark path install a JDK 17 (scripts/install-system-deps.sh does)." >&2
      ENGINE=core
    fi
  else
    ENGINE=core
  fi
fi

# The run folder is keyed by the corpus contents and the settings: same inputs -> same folder -> reuse.
KEY="$(cat "$TRAIN" "$DEV" "$TEST" | "$PY" -c "
import hashlib, sys
h = hashlib.sha256(sys.stdin.buffer.read())
h.update('|'.join(sys.argv[1:]).encode())
print(h.hexdigest()[:12])" "$ENGINE" "$EPOCHS" "$MODEL_NAME" "$ALIAS" "${NERSERVICE_STORE_URI:-}" "${NERSERVICE_STORE_DIR:-}")"
RUN="$RUNS_DIR/quickstart-$KEY"
STAMP="$RUN/registered.json"

say "corpus: train=$TRAIN dev=$DEV test=$TEST -> $RUN"

# --- train + register + promote ----------------------------------------------------------------------
run_logged() {  # LOG CMD... : run, keep the full output in LOG, show its tail if it fails
  local log="$1"
  shift
  if ! "$@" > "$log" 2>&1; then
    tail -n 40 "$log" >&2
    die "step failed: $* (full output: $log)"
  fi
}

train_spark() {
  # The venv's Python on the driver and in the executors; pyspark's own folder as SPARK_HOME (otherwise the
  # spark-submit launcher looks for pyspark with whatever `python3` is first on PATH).
  SPARK_HOME="$("$PY" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
  export SPARK_HOME PYSPARK_PYTHON="$PY" PYSPARK_DRIVER_PYTHON="$PY" SPARK_LOCAL_IP=127.0.0.1
  local cores
  cores="$(nproc 2>/dev/null || echo 2)"
  local common=(--conf spark.driver.host=127.0.0.1 --conf spark.driver.bindAddress=127.0.0.1
                --conf spark.ui.showConsoleProgress=false)
  if [ -f "$RUN/prep/stats.json" ]; then
    say "preprocessed corpus already in $RUN/prep"
  else
    say "spark-submit --master local[*] spark_jobs/preprocess.py -> $RUN/prep  (log: $RUN/preprocess.log)"
    run_logged "$RUN/preprocess.log" "$SPARK_SUBMIT" --master "local[*]" "${common[@]}" spark_jobs/preprocess.py \
      --train "$TRAIN" --dev "$DEV" --test "$TEST" --out "$RUN/prep" --overwrite
  fi
  # One training worker that gets every core (spark.task.cpus = cores: one barrier slot, TF uses them all).
  say "spark-submit --master local[$cores] spark_jobs/train.py --workers 1, $EPOCHS epochs, register $MODEL_NAME, promote to $ALIAS  (log: $RUN/train.log)"
  run_logged "$RUN/train.log" "$SPARK_SUBMIT" --master "local[$cores]" --conf "spark.task.cpus=$cores" "${common[@]}" \
    spark_jobs/train.py --data "$RUN/prep" --out "$RUN/train" --workers 1 --set "training.epochs=$EPOCHS" \
    --register "$MODEL_NAME" --promote "$ALIAS"
  "$PY" - "$RUN/train/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
test = (s.get("test") or {}).get("micro", {})
print(f"trained: best epoch {s['best_epoch']} of {s['epochs_completed']}, dev entity F1 {s['dev']['micro']['f1']:.4f}"
      + (f", test entity F1 {test['f1']:.4f}" if test else "") + f"; model {s['model_dir']}")
EOF
}

train_core() {
  say "nerservice train ($EPOCHS epochs), register $MODEL_NAME, promote to $ALIAS  (log: $RUN/train.log)"
  run_logged "$RUN/train.log" "$NER" train --train "$TRAIN" --dev "$DEV" --test "$TEST" --out "$RUN/train" \
    --epochs "$EPOCHS" --register "$MODEL_NAME" --promote "$ALIAS" --quiet
  grep -E '^(dev|test):|^  micro' "$RUN/train.log" || true
}

if [ -f "$STAMP" ] && "$NER" models show "$MODEL_NAME@$ALIAS" >/dev/null 2>&1; then
  say "already trained and registered on these inputs ($STAMP); skipping to serving"
else
  mkdir -p "$RUN"
  case "$ENGINE" in
    spark) train_spark ;;
    core) train_core ;;
    *) die "QUICKSTART_ENGINE must be auto, spark or core (got '$ENGINE')" ;;
  esac
  "$NER" models show "$MODEL_NAME@$ALIAS" --json > "$STAMP" \
    || die "training finished but $MODEL_NAME@$ALIAS does not resolve in the model store"
fi

# --- serve -------------------------------------------------------------------------------------------
http_get "$URL/healthz"
[ "$HTTP_STATUS" = "0" ] || die "something already answers on $URL (HTTP $HTTP_STATUS); stop it or set PORT=..."

say "starting the API on $URL (model $MODEL_NAME@$ALIAS; log $API_LOG)"
nohup "$NER" serve --host 127.0.0.1 --port "$PORT" --model "$MODEL_NAME@$ALIAS" > "$API_LOG" 2>&1 &
echo $! > "$PID_FILE"

deadline=$(( $(date +%s) + READY_TIMEOUT ))
while :; do
  http_get "$URL/readyz"
  [ "$HTTP_STATUS" = "200" ] && break
  if ! api_pid >/dev/null; then
    tail -n 30 "$API_LOG" >&2 || true
    rm -f "$PID_FILE"
    die "the API exited before it was ready (log above: $API_LOG)"
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    tail -n 30 "$API_LOG" >&2 || true
    die "the API was not ready after ${READY_TIMEOUT}s (last /readyz: HTTP $HTTP_STATUS $HTTP_BODY); it is still running: scripts/quickstart.sh stop"
  fi
  sleep 1
done
echo "ready: $HTTP_BODY"

say "one example request"
BODY="$("$PY" -c 'import json, sys; print(json.dumps({"text": sys.argv[1]}))' "$EXAMPLE_TEXT")"
echo "curl -s -X POST $URL/v1/extract -H 'Content-Type: application/json' -d '$BODY'"
if command -v curl >/dev/null 2>&1; then
  ANSWER="$(curl -sS --fail-with-body -X POST "$URL/v1/extract" -H 'Content-Type: application/json' -d "$BODY")" \
    || die "the example request failed: $ANSWER"
else  # no curl on this machine: the same request from Python
  ANSWER="$("$PY" - "$URL/v1/extract" "$BODY" <<'EOF'
import sys, urllib.request
req = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(), headers={"Content-Type": "application/json"})
print(urllib.request.urlopen(req, timeout=30).read().decode())
EOF
)"
fi
printf '%s' "$ANSWER" | "$PY" -m json.tool

say "done"
echo "  web page:     $URL/"
echo "  API docs:     $URL/docs"
echo "  stop the API: scripts/quickstart.sh stop   (or: make stop)"
echo "  the model store (${NERSERVICE_STORE_URI:-embedded under ${NERSERVICE_STORE_DIR:-./models}}):"
"$NER" models list "$MODEL_NAME" | sed 's/^/    /' || true
