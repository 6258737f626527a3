python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD; export KERAS_BACKEND=jax
G="--embeddings .devdata/glove50-NCBI-disease.txt --set model.dropout=0.3"
R=(); T=()
for s in 1 2 3; do
  R+=(--run "fz$s: $G --set training.epochs=40 --set training.patience=8 --set training.seed=$s")
  T+=(--run "td$s: $G --set training.epochs=28 --set training.patience=28 --set training.seed=$s")
done
timeout 430 python3 bench/gpu/sweep.py --corpus .devdata/NCBI-disease --out /tmp/sw1 --per-gpu 3 "${R[@]}" > /tmp/sw1.out 2>&1 &
timeout 430 python3 bench/gpu/sweep.py --corpus .devdata/NCBI-trdev --out /tmp/sw2 --per-gpu 3 "${T[@]}" > /tmp/sw2.out 2>&1 &
wait; tail -5 /tmp/sw1.out /tmp/sw2.out
M=(); for s in 1 2 3; do M+=(--member fz$s=/tmp/sweep-fz$s/model-best); done
python3 bench/gpu/ensemble_eval.py --corpus .devdata/NCBI-disease "${M[@]}" --sizes 3 --json-out $OUT/ens_fz.json 2>&1 | grep -v Warn | tail -5
M=(); for s in 1 2 3; do M+=(--member td$s=/tmp/sweep-td$s/model-last); done
python3 bench/gpu/ensemble_eval.py --corpus .devdata/NCBI-disease "${M[@]}" --sizes 3 --json-out $OUT/ens_td.json 2>&1 | grep -v Warn | tail -5
tar czf $OUT/sweep.tgz /tmp/sw1 /tmp/sw2 /tmp/sw1.out /tmp/sw2.out 2>/dev/null; ls $OUT
