#!/usr/bin/env bash
# Issues 19/20 in one device call on the lent H200 (bench/results/gpu.md, "Spark task body on JAX").
# Needs the git-ignored .devdata/scale/whl/ (keras and the pure-Python deps the H200 lacks) and .devdata/scale/ (NCBI-disease
# and GloVe 6B 50d rows for its vocabulary) named in the call's `carry`. Results land in $OUT.
#   A: throughput, one run at a time on a quiet GPU: `nerservice train`, the Spark task body as 1 process,
#      the task body as 2 processes sharing the GPU.
#   B: accuracy of --scaling grow: the single-process equivalent of N workers (global batch 32 x N) for
#      N = 1, 2, 4, 8, several trainings side by side on the GPU (their tokens/s are not benchmarks).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site ${WHEELS:-.devdata/scale/whl}/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD KERAS_BACKEND=jax PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2
export JAX_COMPILATION_CACHE_DIR=/tmp/jax-cache XLA_PYTHON_CLIENT_PREALLOCATE=false
D=.devdata/scale
C="--corpus $D/NCBI-disease --embeddings $D/glove50-ncbi.txt"
A_EPOCHS=${A_EPOCHS:-6}
B_EPOCHS=${B_EPOCHS:-10}
B_MINUTES=${B_MINUTES:-1.7}
SA="--set model.dropout=0.3 --set training.batch_size=256 --set training.learning_rate=0.002 --set training.patience=50 --set training.epochs=$A_EPOCHS"
nvidia-smi --query-gpu=name,memory.used,utilization.gpu --format=csv
t0=$(date +%s)
# A1: the core trainer (what `nerservice train` runs), single process.
timeout 90 python3 -m nerservice.cli.main train --train $D/NCBI-disease/train.tsv --dev $D/NCBI-disease/devel.tsv \
  --test $D/NCBI-disease/test.tsv --embeddings $D/glove50-ncbi.txt $SA --out /tmp/a1 --no-resume --json --quiet \
  > $OUT/a1.json 2> $OUT/a1.err; echo "A1 rc=$? $(( $(date +%s) - t0 ))s"
cp /tmp/a1/model-best/history.json $OUT/a1_history.json 2>/dev/null
# A2: the Spark task body (run_worker, rendezvous, backend jax) as one process.
timeout 70 python3 bench/gpu/scaling_gpu.py task-body --world 1 $C $SA --out /tmp/a2 --json-out $OUT/a2.json \
  > $OUT/a2.log 2>&1; echo "A2 rc=$? $(( $(date +%s) - t0 ))s"; tail -c 600 $OUT/a2.log
# A3: the task body as two processes of one jax.distributed job sharing the one GPU (own process group, so
# ranks left hanging are ended before B starts).
setsid timeout 45 python3 bench/gpu/scaling_gpu.py task-body --world 2 --gpus 0 0 $C $SA --out /tmp/a3 \
  --timeout 25 > $OUT/a3.log 2>&1 & a3=$!; wait $a3; echo "A3 rc=$? $(( $(date +%s) - t0 ))s"; kill -- -$a3 2>/dev/null
grep -m4 -iE "nccl|duplicate|error|task-body" $OUT/a3.log | cut -c1-400
# B: accuracy of growing global batches (sqrt rule, 3 seeds; linear rule, 1 seed).
SB="--set model.dropout=0.3 --set training.patience=50 --set training.epochs=$B_EPOCHS --set training.max_minutes=$B_MINUTES"
mkdir -p /tmp/b
timeout ${B_TIMEOUT:-155} python3 bench/gpu/scaling_gpu.py sweep $C $SB --workers 1 2 4 8 --rules sqrt \
  --seeds 42 1 2 --out /tmp/b >> $OUT/b.jsonl 2>/tmp/b/sqrt.err &
timeout ${B_TIMEOUT:-155} python3 bench/gpu/scaling_gpu.py sweep $C $SB --workers 2 4 8 --rules linear \
  --seeds 42 --out /tmp/b >> $OUT/b.jsonl 2>/tmp/b/linear.err &
wait
echo "B done $(( $(date +%s) - t0 ))s"
cut -c1-300 $OUT/b.jsonl; tail -c 1500 /tmp/b/*.err
