"""`nerservice serve` footprint per runtime: seconds from process start to /readyz 200, resident memory
when ready and after tagging a corpus through /v1/extract, and the REST throughput of that corpus.

    python bench/serve_footprint.py --model MODEL_DIR --export EXPORT_DIR --corpus TEST.tsv [--rounds 2]
        [--lean-venv VENV]

Starts each server in turn on a free 127.0.0.1 port (the Keras one with NERSERVICE_API_RUNTIME=keras,
the export as served without TensorFlow) and stops it by PID. RSS is VmRSS of the server process
(/proc/PID/status); `imports_tensorflow` says whether TensorFlow was loaded in it (/proc/PID/maps).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _has_tensorflow(pid: int) -> bool:
    return "_pywrap_tensorflow" in Path(f"/proc/{pid}/maps").read_text()


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)


def measure(model: str, runtime: str, texts: list[list[str]], n_tok: int, rounds: int, *, bindir: Path,
            ort_threads: int) -> dict:
    port = _free_port()
    env = {**os.environ, "NERSERVICE_API_RUNTIME": runtime, "TF_CPP_MIN_LOG_LEVEL": "2",
           "NERSERVICE_API_ORT_THREADS": str(ort_threads)}
    cmd = [str(bindir / "nerservice"), "serve", "--model", model, "--port", str(port),
           "--log-level", "warning"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"server exited: {proc.stderr.read()[-3000:]}")
            try:
                with urllib.request.urlopen(url + "/readyz", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            time.sleep(0.05)
        ready = time.perf_counter() - t0
        rss_ready = _rss_mb(proc.pid)
        speeds = []
        for _ in range(rounds):
            t1 = time.perf_counter()
            for chunk in texts:
                _post(url + "/v1/extract", {"texts": chunk})
            speeds.append(n_tok / (time.perf_counter() - t1))
        info = json.load(urllib.request.urlopen(url + "/v1/models", timeout=10))["model"]
        return {"runtime": info["runtime"], "ready_s": round(ready, 2), "rss_ready_mb": round(rss_ready, 1),
                "rss_after_mb": round(_rss_mb(proc.pid), 1), "imports_tensorflow": _has_tensorflow(proc.pid),
                "rest_tokens_per_s": [round(s) for s in speeds]}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="Keras model folder")
    ap.add_argument("--export", required=True, help="its ONNX export")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--texts-per-request", type=int, default=32)
    ap.add_argument("--ort-threads", type=int, default=0, help="NERSERVICE_API_ORT_THREADS (0 = one per core)")
    ap.add_argument("--only", choices=["keras", "onnx_export", "onnx_export_lean_venv"], action="append")
    ap.add_argument("--lean-venv", help="also serve the export from this venv (e.g. a fresh "
                    "`pip install '.[serve]'`: no TensorFlow installed at all)")
    args = ap.parse_args()
    from nerservice.data import read_corpus

    sents = [s.tokens for s in read_corpus(args.corpus).sentences]
    n_tok = sum(map(len, sents))
    flat = [" ".join(s) for s in sents]
    k = args.texts_per_request
    texts = [flat[i:i + k] for i in range(0, len(flat), k)]
    out = {"corpus": args.corpus, "tokens": n_tok, "texts_per_request": k, "load_avg_1min": round(os.getloadavg()[0], 2)}
    here = Path(sys.executable).parent
    runs = [("keras", args.model, "keras", here), ("onnx_export", args.export, "auto", here)]
    if args.lean_venv:
        runs.append(("onnx_export_lean_venv", args.export, "auto", Path(args.lean_venv) / "bin"))
    for name, model, runtime, bindir in runs:
        if args.only and name not in args.only:
            continue
        out[name] = measure(model, runtime, texts, n_tok, args.rounds, bindir=bindir, ort_threads=args.ort_threads)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
