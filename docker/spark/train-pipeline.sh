#!/usr/bin/env bash
# The compose `trainer` service: preprocess -> train on N workers -> register -> promote -> export to ONNX
# (registered and promoted too: the API image serves it without TensorFlow), submitted to a
# standalone master, then ask the API to load the promoted version. Runs in the nerservice Spark image
# (entry point `train-pipeline`); the corpus is mounted read-only on the trainer and on every worker
# (preprocessing parses the files on the executors) and RUNS_DIR is a volume they all share.
#
# Environment (compose sets these; defaults in brackets):
#   SPARK_MASTER_URL [spark://spark-master:7077]   SPARK_MASTER_UI [http://spark-master:8080]
#   CORPUS_DIR [/data/corpus]: train.tsv, dev.tsv or devel.tsv, test.tsv (or TRAIN / DEV / TEST files)
#   RUNS_DIR [/runs]   TRAIN_WORKERS [2]   TASK_CPUS [2: cores of one worker, so each worker runs one task]
#   EPOCHS [4]   TRAIN_ARGS [""]: more spark_jobs/train.py arguments, e.g. "--set training.patience=3"
#   MODEL_NAME [demo]   PROMOTE_ALIAS [production]
#   WAIT_FOR_RESOURCE [""]: count only workers offering this resource (gpu for the GPU trainer)
#   API_URL [""] + NERSERVICE_API_ADMIN_TOKEN: when both are set, POST $API_URL/v1/models/reload at the end
#   SPARK_DRIVER_HOST [this container's IP]   SPARK_DRIVER_BIND [0.0.0.0]
# Rerunning with the same corpus and settings resumes/reuses the same run folder (keyed by their hash).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MASTER="${SPARK_MASTER_URL:-spark://spark-master:7077}"
MASTER_UI="${SPARK_MASTER_UI:-http://spark-master:8080}"
CORPUS_DIR="${CORPUS_DIR:-/data/corpus}"
RUNS_DIR="${RUNS_DIR:-/runs}"
WORKERS="${TRAIN_WORKERS:-2}"
TASK_CPUS="${TASK_CPUS:-2}"
EPOCHS="${EPOCHS:-4}"
MODEL_NAME="${MODEL_NAME:-demo}"
ALIAS="${PROMOTE_ALIAS:-production}"
SUBMIT="$SPARK_HOME/bin/spark-submit"
JOBS="$(python -c 'import os, spark_jobs; print(os.path.dirname(spark_jobs.__file__))')"

say() { printf '\n==> %s\n' "$*"; }
die() { printf 'train-pipeline: error: %s\n' "$*" >&2; exit 1; }

pick() { local f; for f in "$@"; do [ -f "$f" ] && { echo "$f"; return 0; }; done; return 1; }
TRAIN="${TRAIN:-$(pick "$CORPUS_DIR/train.tsv" "$CORPUS_DIR/train.conll" "$CORPUS_DIR/train.txt" || true)}"
DEV="${DEV:-$(pick "$CORPUS_DIR/dev.tsv" "$CORPUS_DIR/devel.tsv" "$CORPUS_DIR/dev.conll" "$CORPUS_DIR/dev.txt" || true)}"
TEST="${TEST:-$(pick "$CORPUS_DIR/test.tsv" "$CORPUS_DIR/test.conll" "$CORPUS_DIR/test.txt" || true)}"
[ -n "$TRAIN" ] || die "no training file in $CORPUS_DIR (want train.tsv; mount a corpus with CORPUS_DIR=/host/path)"
[ -n "$DEV" ] || die "no dev file in $CORPUS_DIR (want dev.tsv or devel.tsv)"
test_args=()
[ -n "$TEST" ] && test_args=(--test "$TEST")

# Executors connect back to this driver: by IP, which works for `compose up` and `compose run` alike.
DRIVER_HOST="${SPARK_DRIVER_HOST:-$(python -c 'import socket; print(socket.gethostbyname(socket.gethostname()))')}"
common=(--master "$MASTER" --conf "spark.driver.host=$DRIVER_HOST"
        --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND:-0.0.0.0}")

KEY="$(cat "$TRAIN" "$DEV" ${TEST:+"$TEST"} | python -c "
import hashlib, sys
h = hashlib.sha256(sys.stdin.buffer.read())
h.update('|'.join(sys.argv[1:]).encode())
print(h.hexdigest()[:12])" "$WORKERS" "$EPOCHS" "$MODEL_NAME" "$ALIAS" "${TRAIN_ARGS:-}")"
RUN="$RUNS_DIR/$MODEL_NAME-$KEY"
mkdir -p "$RUN"
say "corpus: train=$TRAIN dev=$DEV test=${TEST:-none}; run folder $RUN; store ${NERSERVICE_STORE_URI:-embedded}"

say "waiting for $WORKERS worker(s)${WAIT_FOR_RESOURCE:+ with $WAIT_FOR_RESOURCE} at $MASTER_UI"
wait_args=(--master-ui "$MASTER_UI" --count "$WORKERS" --timeout "${WAIT_TIMEOUT:-300}")
[ -n "${WAIT_FOR_RESOURCE:-}" ] && wait_args+=(--resource "$WAIT_FOR_RESOURCE")
python "$here/wait_for_workers.py" "${wait_args[@]}"

if [ -f "$RUN/prep/stats.json" ]; then
  say "preprocessed corpus already in $RUN/prep"
else
  say "spark-submit preprocess.py -> $RUN/prep"
  "$SUBMIT" "${common[@]}" "$JOBS/preprocess.py" --train "$TRAIN" --dev "$DEV" "${test_args[@]}" \
    --out "$RUN/prep" --overwrite
fi

say "spark-submit train.py --workers $WORKERS ($EPOCHS epochs) --register $MODEL_NAME --promote $ALIAS"
# spark.task.cpus = a worker's cores: one training task per worker, and TensorFlow sizes its thread pools to
# the task's cores. TRAIN_ARGS is split on spaces on purpose (a list of arguments).
# shellcheck disable=SC2086
"$SUBMIT" "${common[@]}" --conf "spark.task.cpus=$TASK_CPUS" "$JOBS/train.py" \
  --data "$RUN/prep" --out "$RUN/train" --workers "$WORKERS" --set "training.epochs=$EPOCHS" \
  --register "$MODEL_NAME" --promote "$ALIAS" ${TRAIN_ARGS:-} > "$RUN/summary.stdout.json"
python - "$RUN/train/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
test = (s.get("test") or {}).get("micro", {})
print(f"trained on {len(s.get('weights_digests', []))} worker(s): best epoch {s['best_epoch']} of "
      f"{s['epochs_completed']}, dev entity F1 {s['dev']['micro']['f1']:.4f}"
      + (f", test entity F1 {test['f1']:.4f}" if test else "")
      + f"; identical weights on all workers: {s.get('weights_identical')}")
EOF
# The API image has no TensorFlow: it serves the ONNX export of the version just trained, registered as the
# next version with the same metrics and promoted the same way (nerservice export --register --promote).
VERSION="$(python -c 'import json, sys; print(json.load(open(sys.argv[1]))["registered"]["version"])' "$RUN/train/summary.json")"
say "nerservice export $MODEL_NAME/$VERSION --format onnx --register $MODEL_NAME --promote $ALIAS"
nerservice export "$MODEL_NAME/$VERSION" --format onnx --out "$RUN/onnx" --register "$MODEL_NAME" --promote "$ALIAS"
nerservice models list "$MODEL_NAME" || true

if [ -n "${API_URL:-}" ] && [ -n "${NERSERVICE_API_ADMIN_TOKEN:-}" ]; then
  say "asking the API at $API_URL to load $MODEL_NAME@$ALIAS"
  python - "$API_URL/v1/models/reload" <<'EOF'
import os, sys, urllib.error, urllib.request
req = urllib.request.Request(sys.argv[1], method="POST", data=b"",
                             headers={"Authorization": "Bearer " + os.environ["NERSERVICE_API_ADMIN_TOKEN"]})
try:
    print(urllib.request.urlopen(req, timeout=120).read().decode())
except (urllib.error.URLError, OSError) as exc:  # the model is registered either way; say how to load it
    body = exc.read().decode() if isinstance(exc, urllib.error.HTTPError) else ""
    print(f"reload failed ({exc}) {body}; run `docker compose restart api`", file=sys.stderr)
EOF
else
  echo "(the API loads it on its next start: docker compose restart api, or set NERSERVICE_API_ADMIN_TOKEN so this step reloads it)"
fi
