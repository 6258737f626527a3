"""Shared test helpers (imported as ``helpers``: pytest puts ``tests/`` on sys.path via conftest.py)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]

# JVM options for the Spark JVMs the tests start (drivers, executors, masters, workers, spark-class's launcher):
# they live for seconds to minutes, move little data, and share two cores, so C2's compiler threads and G1's
# background threads cost them more CPU than they win back (a local spark-submit of a trivial job: 10 s of
# CPU by default, 5.5 s with these). The JIT tier and the collector do not change what Spark computes.
JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def jvm_env() -> dict[str, str]:
    """Environment that gives ``JVM_OPTS`` to every JVM started through spark-class or spark-submit: the
    launcher, masters and workers, drivers, and (a ``spark.*`` system property of the driver becomes part
    of the application's conf) the executors a standalone worker starts for the application."""
    executors = f'"-Dspark.executor.extraJavaOptions={JVM_OPTS}"'  # spark-class splits the variable, quotes kept
    return {"SPARK_LAUNCHER_OPTS": JVM_OPTS, "SPARK_DAEMON_JAVA_OPTS": JVM_OPTS,
            "SPARK_SUBMIT_OPTS": f"{JVM_OPTS} {executors}"}


def spark_master_ports(log: Path, proc: subprocess.Popen, timeout: float) -> tuple[int, int]:
    """A standalone Spark master's RPC and web UI ports as it bound them, read from its log: Spark moves on to
    the next port when the one asked for was taken between the test's choice and its bind (CI saw workers dial
    the old one), so the ports asked for are not evidence."""
    deadline, text = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        rpc = re.search(r"Starting Spark master at spark://127\.0\.0\.1:(\d+)", text)
        ui = re.search(r"Successfully started service 'MasterUI' on port (\d+)", text)
        if rpc and ui:
            return int(rpc.group(1)), int(ui.group(1))
        if proc.poll() is not None:
            raise RuntimeError(f"the Spark master exited with {proc.returncode}:\n{text[-3000:]}")
        time.sleep(0.2)
    raise TimeoutError(f"the Spark master did not start within {timeout:.0f} s:\n{text[-3000:]}")


# The JAX processes the tests start compile every step and forward pass with XLA for the CPU, and on runs this
# small compiling dominates: without LLVM's optimisation passes (XLA's own HLO passes still run) a 2-epoch JAX
# training takes 16 s of CPU instead of 22 s; the code runs slower, which these few steps do not notice.
# Results agree to float rounding (a loss in the 7th digit), which is what the JAX tests compare to anyway.
JAX_XLA_FLAGS = "--xla_backend_optimization_level=0"


def jax_env(*xla_flags: str) -> dict[str, str]:
    """Environment for a JAX process the tests start: the Keras backend and ``JAX_XLA_FLAGS`` (+ ``xla_flags``)."""
    return {"KERAS_BACKEND": "jax", "XLA_FLAGS": " ".join([JAX_XLA_FLAGS, *xla_flags])}


def assert_config_roundtrip(layer: Any, run: Callable[[Any], Any], *, atol: float = 0.0) -> Any:
    """keras-hub's habit: ``from_config(get_config())`` gives the same config and, once it holds the same
    weights, the same output.  ``run(layer)`` calls the layer on fixed inputs (building it) and returns
    its output (a tensor or a tuple of them).  Also checks the layer survives Keras' registered-name
    serialisation, which is what a saved model's config relies on.  Returns the clone."""
    import keras
    from keras import ops

    expected = run(layer)
    config = layer.get_config()
    json.dumps(config)  # configs are saved as JSON: everything in them must be JSON-serialisable
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    run(clone)  # builds the clone's weights
    src, dst = layer.get_weights(), clone.get_weights()
    assert [w.shape for w in src] == [w.shape for w in dst], "clone has differently shaped weights"
    clone.set_weights(src)
    _assert_outputs_close(expected, run(clone), atol=atol, ops=ops)

    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(restored) is type(layer)
    assert restored.get_config() == config
    return clone


def _assert_outputs_close(a: Any, b: Any, *, atol: float, ops: Any) -> None:
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_outputs_close(x, y, atol=atol, ops=ops)
        return
    np.testing.assert_allclose(ops.convert_to_numpy(a), ops.convert_to_numpy(b), rtol=0, atol=atol)


def run_python(code: str, *, env: dict[str, str] | None = None, timeout: float = 300,
               stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter from the repo root; fail the test with its output if it fails."""
    full_env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONHASHSEED": "0", **(env or {})}
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=full_env, capture_output=True, text=True,
                          timeout=timeout, input=stdin)
    if proc.returncode != 0:
        raise AssertionError(f"subprocess failed (rc={proc.returncode})\n--- stdout\n{proc.stdout[-4000:]}\n"
                             f"--- stderr\n{proc.stderr[-6000:]}")
    return proc


def last_json_line(text: str) -> Any:
    """The last line of ``text`` that parses as JSON (library output may precede it)."""
    for line in reversed(text.strip().splitlines()):
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            continue
    raise AssertionError(f"no JSON line in output:\n{text[-2000:]}")


def tiny_model_config(**overrides: Any) -> Any:
    """A ModelConfig small enough that building and calling a tagger takes milliseconds."""
    from nerservice.config import ModelConfig

    base = dict(char_embedding_dim=5, char_cnn_filters=4, char_cnn_width=3, char_lstm_units=3, max_word_length=10,
                word_embedding_dim=6, dense_units=8, lstm_units=4, lstm_layers=2, dropout=0.0)
    return ModelConfig(**{**base, **overrides})


def brute_force_crf(emissions: np.ndarray, transitions: np.ndarray, start: np.ndarray,
                    end: np.ndarray) -> dict[str, Any]:
    """Enumerate all K^T tag paths of one sentence (emissions (T, K), T ≥ 1): log Z, the best path, the
    per-position marginals and a function scoring any path — written independently of the library."""
    import itertools

    n, k = emissions.shape
    paths = np.array(list(itertools.product(range(k), repeat=n)), dtype=np.int64)  # (K^T, T)

    def score(path: Any) -> float:
        path = np.asarray(path)
        s = start[path[0]] + end[path[-1]] + sum(emissions[i, path[i]] for i in range(n))
        return float(s + sum(transitions[path[i - 1], path[i]] for i in range(1, n)))

    scores = np.array([score(p) for p in paths])
    log_z = float(np.logaddexp.reduce(scores))
    probs = np.exp(scores - log_z)
    marg = np.zeros((n, k))
    for p, pr in zip(paths, probs):
        marg[np.arange(n), p] += pr
    return {"log_z": log_z, "best": paths[int(np.argmax(scores))], "marginals": marg, "score": score,
            "best_margin": float(np.sort(scores)[-1] - np.sort(scores)[-2]) if len(scores) > 1 else np.inf}


def random_crf_problem(seed: int, *, k: int = 3, lengths: tuple[int, ...] = (5, 3, 1, 4, 2),
                       pad: int = 2) -> dict[str, np.ndarray]:
    """A padded batch of random emissions/tags (padding filled with junk, which must be ignored) and
    random CRF parameters on a scale where transitions matter."""
    rng = np.random.default_rng(seed)
    t = max(lengths) + pad
    return {
        "emissions": rng.normal(0, 2, (len(lengths), t, k)),
        "tags": rng.integers(0, k, (len(lengths), t)),
        "lengths": np.array(lengths, dtype=np.int32),
        "transitions": rng.normal(0, 1.5, (k, k)),
        "start": rng.normal(0, 1, k),
        "end": rng.normal(0, 1, k),
    }


# Small enough to train in ~20 s on 2 cores, big enough to learn the demo corpus: test entity F1 1.0 by
# epoch 2-3 for training seeds 1, 2, 3, 7 and corpus seeds 5, 11, 23 (patience 2 stops soon after).
TINY_OVERRIDES = {
    "model.char_embedding_dim": 12, "model.char_cnn_filters": 16, "model.char_lstm_units": 12,
    "model.word_embedding_dim": 32, "model.dense_units": 48, "model.lstm_units": 24, "model.lstm_layers": 2,
    "model.dropout": 0.2, "training.epochs": 12, "training.batch_size": 16, "training.patience": 2,
    "training.learning_rate": 0.005, "training.seed": 3, "training.warmup_epochs": 0,
    # Not the product defaults (GloVe vectors, averaging of the last 5 epochs, a 2-epoch warm-up): tiny fixtures stay fast and
    # learn the demo corpus in a dozen epochs; the defaults have their own tests.
    "model.embeddings": [], "training.average_epochs": 0,
    # Word dropout (default 0.1 since BENCHMARKS session 16) slows a 4-epoch tiny teacher enough that it tags
    # held-out demo text almost all O; its own tests are in tests/model/test_tagger.py and test_replica_dropout.py.
    "model.word_dropout": 0.0,
}


def tiny_sets(**extra: object) -> list[str]:
    """``--set KEY=VALUE`` arguments for the CLI: the tiny test model's overrides plus ``extra``
    (keys with dots passed as a dict: ``tiny_sets(**{"training.epochs": 4})``)."""
    return [x for k, v in {**TINY_OVERRIDES, **extra}.items() for x in ("--set", f"{k}={json.dumps(v)}")]


def tiny_config():
    from nerservice.config import NerConfig

    return NerConfig().with_overrides(TINY_OVERRIDES)


def write_two_corpora(folder: Path, *, sizes: tuple[int, int, int] = (240, 60, 60), seed: int = 5,
                      **config: Any) -> Path:
    """Two synthetic corpora with different label sets, from the demo corpus's sentences: "dis" keeps only
    Disease (chemicals tagged O), "chem" only Chemical, which its label map renames to "Drug". Returns the
    path of a corpora config naming both (relative split paths; ``config`` adds or replaces keys)."""
    from nerservice.data import Sentence
    from nerservice.data.writers import write_corpus
    from nerservice.demo_corpus import generate

    folder.mkdir(parents=True, exist_ok=True)

    def keep(sents: list[Any], label: str) -> list[Any]:
        return [Sentence(s.tokens, tuple(t if t[2:] == label else "O" for t in s.tags)) for s in sents]

    corpora = []
    for c, (name, label) in enumerate((("dis", "Disease"), ("chem", "Chemical"))):
        entry: dict[str, Any] = {"name": name}
        for i, (split, n) in enumerate(zip(("train", "dev", "test"), sizes)):
            path = folder / name / f"{split}.tsv"
            path.parent.mkdir(exist_ok=True)
            write_corpus(keep(generate(n, seed=seed * 1000 + c * 10 + i), label), path, fmt="tsv")
            entry[split] = f"{name}/{split}.tsv"
        corpora.append(entry)
    corpora[1]["label_map"] = {"Chemical": "Drug"}
    path = folder / "corpora.json"
    path.write_text(json.dumps({"corpora": corpora, **config}, indent=2), encoding="utf-8")
    return path

def encode_batch(sentences: Any, vocabs: Any, *, max_word_length: int, tags: Any = None, time_multiple: int = 1,
                 char_multiple: int = 4) -> dict[str, np.ndarray]:
    """One batch of tokenised sentences as the model's input arrays (over ``EncodedCorpus``)."""
    from nerservice.text.features import EncodedCorpus, ShapePolicy

    enc = EncodedCorpus(sentences, vocabs, max_word_length=max_word_length, tags=tags)
    return enc.batch(np.arange(len(enc)), ShapePolicy(time_multiple=time_multiple, char_multiple=char_multiple))

def save_random_model(out: Path, overrides: dict[str, object], *, seed: int = 0) -> Path:
    """A tiny tagger on the demo corpus' vocabularies with random weights large enough that its tags vary."""
    from nerservice.artifacts.model_folder import save_model
    from nerservice.demo_corpus import generate
    from nerservice.model.tagger import build_tagger
    from nerservice.training.trainer import build_vocabularies

    config = tiny_config().with_overrides({**TINY_OVERRIDES, **overrides})
    vocabs = build_vocabularies(generate(120, seed=5))
    model = build_tagger(config.model, n_words=len(vocabs.words), n_chars=len(vocabs.chars),
                         n_tags=len(vocabs.tags), seed=seed)
    rng = np.random.default_rng(seed)
    for v in model.weights:
        v.assign(np.asarray(v.numpy()) + rng.normal(0, 0.3, v.shape).astype("float32"))
    return save_model(out, model=model, vocabs=vocabs, config=config)


def run_side_by_side(specs: dict[int, Any], data: dict[str, Any], *,
                     env: dict[str, str] | None = None) -> dict[int, list[dict[str, Any]]]:
    """``run_local`` for each of ``specs`` ({key: TrainSpec}, e.g. world 2 and its world-1 reference), all
    at once; their results by key. The runs share nothing (each has its own out_dir and rendezvous folder),
    and one run of these tiny models leaves a core idle most of the time (a rank imports, traces or compiles
    on one core: the two tests that ran world 2 then world 1 used ~1 of the 2 cores on average), so the
    reference run no longer waits for the other to finish."""
    from concurrent.futures import ThreadPoolExecutor

    from nerservice.distributed.local_barrier import run_local

    with ThreadPoolExecutor(len(specs)) as pool:
        futures = {key: pool.submit(run_local, spec, data, env=env) for key, spec in specs.items()}
        return {key: f.result() for key, f in futures.items()}


# Prepended to tests/runtime/standalone_onnx.py: the script runs where nerservice, TensorFlow, Keras and JAX
# cannot be imported (what an ONNX export promises its users).
BLOCK_NERSERVICE = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("nerservice", "tensorflow", "keras", "jax"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
sys.argv = ["standalone", sys.argv[1]]
"""


def agreement_with_teacher(student: Any, teacher: Any, untrained: Any, held: list[list[str]]) -> tuple[float, float, float]:
    """A distillation student's share of the teacher's tags on ``held`` sentences, beside the teacher's
    majority-tag rate and the same student untrained (predictors all three): (student, majority, untrained)."""
    want = teacher.predict_tags(held)

    def agreement(got: list[list[str]]) -> float:
        return float(np.mean(np.concatenate([np.array(x) == np.array(y) for x, y in zip(got, want)])))

    flat = np.concatenate([np.array(t) for t in want])
    majority = float(np.unique(flat, return_counts=True)[1].max() / flat.size)
    return agreement(student.predict_tags(held)), majority, agreement(untrained.predict_tags(held))


def json_tail(out: str) -> dict:
    """A CLI's ``--json`` output: the last line that is ``{`` starts the object. Stdout now holds the object
    alone (the summary lines are on stderr); prefer ``json.loads(out)``, which catches a regression."""
    import json

    lines = out.splitlines()
    return json.loads("\n".join(lines[max(i for i, line in enumerate(lines) if line == "{"):]))
