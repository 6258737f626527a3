python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD; export KERAS_BACKEND=jax
C=".devdata/NCBI-disease"; G="--embeddings .devdata/glove50-NCBI-disease.txt --set training.epochs=45 --set training.patience=10"
R=()
for s in 42 1 2 3 4; do
  R+=(--run "tr$s: $G --set model.embeddings_trainable=true --set model.dropout=0.5 --set training.seed=$s")
  R+=(--run "fz$s: $G --set model.dropout=0.3 --set training.seed=$s")
done
timeout 470 python3 bench/gpu/sweep.py --corpus $C --out /tmp/sw1 --per-gpu 10 "${R[@]}" 2>&1 | tail -14
M=(); for s in 42 1 2 3 4; do [ -d /tmp/sweep-tr$s/model-best ] && M+=(--member tr$s=/tmp/sweep-tr$s/model-best); done
python3 bench/gpu/ensemble_eval.py --corpus $C "${M[@]}" --sizes 3 5 --json-out $OUT/ens_tr.json 2>&1 | grep -v Warn | tail -8
M=(); for s in 42 1 2 3 4; do [ -d /tmp/sweep-fz$s/model-best ] && M+=(--member fz$s=/tmp/sweep-fz$s/model-best); done
python3 bench/gpu/ensemble_eval.py --corpus $C "${M[@]}" --sizes 3 5 --json-out $OUT/ens_fz.json 2>&1 | grep -v Warn | tail -8
tar czf $OUT/sweep.tgz /tmp/sw1; tar czf $OUT/models.tgz /tmp/sweep-*/model-best 2>/dev/null; ls -la $OUT | head -30
