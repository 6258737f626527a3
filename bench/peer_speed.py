"""Side-by-side inference speed: spaCy 3.8 (efficiency NER) vs our Extractor, same run, same sentences.

    python bench/peer_speed.py --model /tmp/speed-model/model-best \
        --corpus /work/shared/data/corpora/NCBI-disease/test.tsv \
        --spacy-train .../NCBI-disease/train.tsv --spacy-dev .../NCBI-disease/devel.tsv [--rounds 5]
    # another runtime of ours: --ours-kwargs '{"jit_compile": "background"}'  (any Extractor keyword)

spaCy lives in its own virtualenv outside the repo (``--spacy-venv``, created with ``pip install
'spacy>=3.8,<3.9'`` if absent); a one-epoch spaCy NER is trained on ``--spacy-train`` if ``--spacy-model`` is
absent (speed does not depend on accuracy). Four long-lived timing workers, two per tool: one pinned to core 0
(``taskset -c 0``; ours also with one TensorFlow thread) and one on the whole machine (spaCy with ``n_process``
= cores; ours one process with its default threads). Each does warm-up passes, then the rounds alternate the
tools (spaCy first in even rounds, ours first in odd ones) over four measurements: pre-tokenised input and
raw text (each tool's own tokenizer: the corpus's sentences joined by spaces, ``--group`` sentences per text),
on one core and on the whole machine. tokens/s counts the corpus's tokens (times ``--repeat``); medians over
rounds and the load average are printed, and a JSON summary with ``--json-out``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = Path.home() / ".cache" / "nerservice-bench"
MODES = ("pretok", "raw")


def ensure_spacy(venv: Path) -> Path:
    python = venv / "bin" / "python"
    if python.exists() and subprocess.run([str(python), "-c", "import spacy"], check=False, capture_output=True).returncode == 0:
        return python
    print(f"installing spaCy 3.8 into {venv}", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "spacy>=3.8,<3.9"], check=True)
    return python


def ensure_spacy_model(python: Path, model: Path, train: str | None, dev: str | None) -> Path:
    if (model / "meta.json").exists():
        return model
    if not (train and dev):
        sys.exit(f"no spaCy model at {model}: pass --spacy-train and --spacy-dev to train one")
    work = model.parent.parent  # <work>/trained/model-last
    subprocess.run([str(python), str(HERE / "peer_spacy.py"), "train", "--train", train, "--dev", dev,
                    "--out", str(work)], check=True)
    return model


class Worker:
    """A timing process that answers one JSON command per stdin line with a ``RESULT {...}`` line."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.name = name
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env={**os.environ, **(env or {})})
        self._read("READY")

    def _read(self, prefix: str) -> str:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(prefix):
                return line[len(prefix):].strip()
        raise RuntimeError(f"worker {self.name} exited (rc={self.proc.wait()})")

    def run(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return json.loads(self._read("RESULT "))

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def serve_ours(model: str, data: str, kwargs: dict[str, Any], threads: int | None) -> None:
    """Our timing worker (``--worker``): the Extractor's path — ``predictor.tag`` on tokens, ``extract`` on text."""
    if threads:
        from nerservice.distributed.threads import limit_tensorflow_threads

        limit_tensorflow_threads(threads)
    import inspect

    from nerservice.inference import Extractor

    if threads and "threads" in inspect.signature(Extractor.load).parameters:  # a runtime with its own pools
        kwargs = {"threads": threads, **kwargs}
    ex = Extractor.load(model, **kwargs)
    print(f"ours: runtime {getattr(ex, 'runtime', 'keras')}, options {kwargs}", file=sys.stderr, flush=True)
    d = json.loads(Path(data).read_text(encoding="utf-8"))
    sentences, texts = d["sentences"], d["texts"]

    def run(mode: str) -> dict[str, Any]:
        t0 = time.perf_counter()
        if mode == "pretok":
            tagged = ex.predictor.tag(sentences, with_scores=ex.with_scores)
            tokens = sum(len(t.tags) for t in tagged)
            entities = sum(tag.startswith("B-") for t in tagged for tag in t.tags)
        else:
            found = ex.extract(texts)
            tokens, entities = ex.count_tokens(texts), sum(len(f) for f in found)
        return {"seconds": time.perf_counter() - t0, "tokens": tokens, "entities": entities}

    for mode in MODES:
        run(mode)
    if ex.background_xla is not None:  # let background compiles finish, then warm the compiled path
        ex.background_xla.wait()
        for mode in MODES:
            run(mode)
    print("READY", flush=True)
    for line in sys.stdin:
        print("RESULT " + json.dumps(run(json.loads(line)["mode"])), flush=True)


def write_data(corpus: str, repeat: int, group: int, path: Path) -> int:
    from nerservice.data import read_corpus

    sentences = [s.tokens for s in read_corpus(corpus).sentences] * repeat
    texts = [" ".join(" ".join(s) for s in sentences[i:i + group]) for i in range(0, len(sentences), group)]
    path.write_text(json.dumps({"sentences": sentences, "texts": texts}), encoding="utf-8")
    return sum(len(s) for s in sentences)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="our model folder")
    ap.add_argument("--ours-kwargs", default="{}", help="JSON: Extractor keywords (runtime choice)")
    ap.add_argument("--corpus", required=True, help="IOB2 TSV whose sentences are tagged")
    ap.add_argument("--repeat", type=int, default=2, help="corpus copies per pass")
    ap.add_argument("--group", type=int, default=10, help="sentences per raw text")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--spacy-venv", type=Path, default=CACHE / "spacy-venv")
    ap.add_argument("--spacy-model", type=Path, default=CACHE / "spacy-ncbi" / "trained" / "model-last")
    ap.add_argument("--spacy-train")
    ap.add_argument("--spacy-dev")
    ap.add_argument("--json-out")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return serve_ours(args.model, args.data, json.loads(args.ours_kwargs), args.threads)

    python = ensure_spacy(args.spacy_venv)
    spacy_model = ensure_spacy_model(python, args.spacy_model, args.spacy_train, args.spacy_dev)
    tmp = Path(tempfile.mkdtemp(prefix="peer-speed-"))
    data = tmp / "data.json"
    n_tok = write_data(args.corpus, args.repeat, args.group, data)
    pin = ["taskset", "-c", "0"]
    ours = [sys.executable, str(Path(__file__).resolve()), "--worker", "--model", args.model, "--data", str(data),
            "--corpus", args.corpus,
            "--ours-kwargs", args.ours_kwargs]
    spacy_argv = [str(python), str(HERE / "peer_spacy.py"), "serve", "--model", str(spacy_model), "--data", str(data)]
    env = {"PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "2"}
    one_core_env = {**env, "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "1"}
    print(f"starting workers ({n_tok:,} tokens per pass, {args.rounds} rounds)", flush=True)
    workers = {
        ("spacy", "one core"): Worker("spacy/1", pin + spacy_argv, {"OMP_NUM_THREADS": "1"}),
        ("ours", "one core"): Worker("ours/1", pin + ours + ["--threads", "1"], one_core_env),
        ("spacy", "machine"): Worker("spacy/all", spacy_argv),
        ("ours", "machine"): Worker("ours/all", ours, env),
    }
    times: dict[tuple[str, str, str], list[float]] = {}
    counts: dict[tuple[str, str, str], Any] = {}
    loads = [os.getloadavg()]
    for r in range(args.rounds):
        tools = ("spacy", "ours") if r % 2 == 0 else ("ours", "spacy")
        for where in ("one core", "machine"):
            for mode in MODES:
                for tool in tools:
                    cmd: dict[str, Any] = {"mode": mode}
                    if tool == "spacy" and where == "machine":
                        cmd["n_process"] = args.cores
                    res = workers[(tool, where)].run(**cmd)
                    times.setdefault((tool, where, mode), []).append(res["seconds"])
                    counts[(tool, where, mode)] = (res["tokens"], res["entities"])
        loads.append(os.getloadavg())
        print(f"round {r + 1}: load average {loads[-1][0]:.2f}", flush=True)
    for w in workers.values():
        w.close()

    summary: dict[str, Any] = {"tokens_per_pass": n_tok, "rounds": args.rounds, "cores": args.cores,
                               "ours_kwargs": json.loads(args.ours_kwargs), "model": args.model,
                               "load_average_1min": [round(x[0], 2) for x in loads], "results": {}}
    print(f"\n{n_tok:,} tokens per pass; median of {args.rounds} rounds; 1-min load average "
          f"{min(x[0] for x in loads):.2f}-{max(x[0] for x in loads):.2f} (shared machine: noisy)")
    print(f"{'':22s} {'spaCy tok/s':>12s} {'ours tok/s':>12s} {'ours/spaCy':>10s}")
    for where in ("one core", "machine"):
        for mode in MODES:
            rate = {tool: n_tok / statistics.median(times[(tool, where, mode)]) for tool in ("spacy", "ours")}
            label = f"{where}, {'pre-tokenised' if mode == 'pretok' else 'raw text'}"
            print(f"{label:22s} {rate['spacy']:12,.0f} {rate['ours']:12,.0f} {rate['ours'] / rate['spacy']:10.2f}")
            summary["results"][label] = {
                "spacy_tokens_per_s": round(rate["spacy"]), "ours_tokens_per_s": round(rate["ours"]),
                "ratio": round(rate["ours"] / rate["spacy"], 3),
                "spacy_seconds": times[("spacy", where, mode)], "ours_seconds": times[("ours", where, mode)],
                "tokens_entities": {"spacy": counts[("spacy", where, mode)], "ours": counts[("ours", where, mode)]}}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(summary, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
