"""Closed-loop load on the REST service from this separate process, against the in-process Extractor.

    .venv/bin/python bench/api_load.py --model /tmp/api-bench-model \
        --texts /work/shared/data/corpora/NCBI-disease/test.tsv

For batching on (the defaults) and off (NERSERVICE_API_MAX_BATCH_TEXTS=1), a fresh server is started on a
free loopback port; for 1-sentence and 10-sentence requests (one text per request, consecutive test
sentences joined) and each concurrency, C clients each keep exactly one request in flight (closed loop)
until --requests are answered or --max-seconds pass, after a warm-up of 4*C requests (no pause between). The baseline is the
Extractor in its own process (loaded once), measured on the same texts right before each cell while the
server sits idle, so both see the same machine load: this machine is shared, and its load swings by 2-3x
within minutes.  Before measuring, the server and the baseline each run the workload once and wait for their
background XLA compiles (api/settings.py ``xla``), so both are measured warm; ``--no-warm`` skips that.

Prints one row per cell (throughput, p50/p99 latency, mean batch size seen by the server) and the target
check: at concurrency 64 with 1-sentence requests, >= 0.7 of in-process throughput with p99 < 150 ms.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.api.client import HttpConnection  # noqa: E402
from bench.api.server import Server  # noqa: E402


def load_texts(path: str, sentences_per_text: int) -> list[str]:
    from nerservice.data import read_corpus

    sents = [" ".join(s.tokens) for s in read_corpus(path).sentences]
    k = sentences_per_text
    return [" ".join(sents[i:i + k]) for i in range(0, len(sents) - k + 1, k)]


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


async def closed_loop(port: int, bodies: list[bytes], *, concurrency: int, requests: int, max_seconds: float,
                      warmup: int) -> dict[str, float]:
    """C workers, one request in flight each, without a pause between warm-up and measurement (a barrier
    would restart every client at once and measure that burst instead of the steady state). Requests
    numbered below ``warmup`` are not measured; throughput counts the measured ones over the time from the
    first measured send to the last answer."""
    conns = [await HttpConnection.open("127.0.0.1", port) for _ in range(concurrency)]
    raws = [conns[0].encode_post("/v1/extract", b) for b in bodies]
    total = warmup + requests
    latencies: list[float] = []
    errors = 0
    issued = 0
    first_measured = last_done = 0.0

    async def worker(conn: HttpConnection, deadline: float) -> None:
        nonlocal issued, errors, first_measured, last_done
        while issued < total and time.perf_counter() < deadline:
            seq = issued
            issued += 1
            raw = raws[seq % len(raws)]  # distinct texts, cycling through the test set
            t0 = time.perf_counter()
            if seq == warmup:
                first_measured = t0
            status, _ = await conn.send(raw)
            if seq >= warmup:
                last_done = time.perf_counter()
                latencies.append(last_done - t0)
                errors += status != 200

    try:
        deadline = time.perf_counter() + max_seconds
        await asyncio.gather(*(worker(c, deadline) for c in conns))
    finally:
        for c in conns:
            await c.close()
    elapsed = last_done - first_measured
    return {"requests": len(latencies), "errors": errors, "seconds": elapsed, "rps": len(latencies) / elapsed,
            "p50_ms": percentile(latencies, 0.50) * 1000, "p99_ms": percentile(latencies, 0.99) * 1000,
            "pcts": {q: round(percentile(latencies, q) * 1000, 1) for q in (0.9, 0.95, 0.99, 0.999, 1.0)}}


def xla_pending(metrics_text: str) -> float:
    for line in metrics_text.splitlines():
        if line.startswith('nerservice_xla_shapes{state="pending"}'):
            return float(line.split()[-1])
    return 0.0


def warm_server(server: Any, corpus_bodies: dict[int, list[bytes]], concurrency: list[int]) -> None:
    """Send each cell's workload once (bounded) and wait for the server's background XLA compiles: the
    cells then measure the steady state a long-running server is in."""
    for bodies in corpus_bodies.values():
        for c in concurrency:
            asyncio.run(closed_loop(server.port, bodies, concurrency=c, requests=min(len(bodies), 40 * c),
                                    max_seconds=30.0, warmup=0))
    deadline = time.time() + 120
    while xla_pending(server.metrics()) > 0 and time.time() < deadline:
        time.sleep(0.5)


def batch_stats(metrics_text: str) -> tuple[float, float]:
    total = count = 0.0
    for line in metrics_text.splitlines():
        if line.startswith("nerservice_batch_size_texts_sum"):
            total = float(line.split()[-1])
        elif line.startswith("nerservice_batch_size_texts_count"):
            count = float(line.split()[-1])
    return total, count


class InProcess:
    """The baseline worker process (bench/api/inprocess.py), loaded once, asked before each cell."""

    def __init__(self, model: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.api.inprocess", model], cwd=ROOT, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert json.loads(self._read())["ready"]

    def _read(self) -> str:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the in-process baseline worker died")
            if line.startswith("{"):
                return line

    def measure(self, texts: Path, *, chunk: int, options: str, max_seconds: float = 4.0) -> float:
        self.proc.stdin.write(json.dumps({"texts": str(texts), "chunk": chunk, "options": options,
                                          "max_seconds": max_seconds}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self._read())["texts_per_s"]

    def warm(self, texts: Path, chunks: list[int]) -> dict[str, int]:
        self.proc.stdin.write(json.dumps({"warm": str(texts), "chunks": chunks}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self._read())["compiled"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="model folder or store reference")
    ap.add_argument("--texts", required=True, help="IOB corpus whose sentences are the request texts")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    ap.add_argument("--sentences", type=int, nargs="+", default=[1, 10], help="sentences per request text")
    ap.add_argument("--batching", nargs="+", default=["on", "off"], choices=["on", "off"])
    ap.add_argument("--requests", type=int, default=1500, help="measured requests per cell (upper bound)")
    ap.add_argument("--max-seconds", type=float, default=20.0, help="time bound per cell")
    ap.add_argument("--json", help="also write all figures to this JSON file")
    ap.add_argument("--no-warm", action="store_true", help="measure from a cold start (no warm-up passes)")
    ap.add_argument("--server-env", action="append", default=[], metavar="KEY=VALUE",
                    help="extra setting for the server (e.g. NERSERVICE_API_MAX_BATCH_TEXTS=32), repeatable")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="api-bench-"))
    corpus = {k: load_texts(args.texts, k) for k in args.sentences}
    files = {}
    for k, texts in corpus.items():
        files[k] = tmp / f"texts-{k}.json"
        files[k].write_text(json.dumps(texts), encoding="utf-8")
    print(f"texts: {', '.join(f'{len(v)} of {k} sentence(s)' for k, v in corpus.items())}; cores: {os.cpu_count()}")
    print("baseline = best of the in-process Extractor with the server's options (64 texts per call) and with "
          "its own defaults (256 per call), measured right before each cell; same = server options, chunk = c; "
          "in-process XLA = the Extractor with background XLA, 256 per call, warm (for reference)")
    base = InProcess(args.model)
    if not args.no_warm:
        for k in corpus:
            print(f"in-process warm-up ({k} sentence texts): XLA shapes compiled "
                  f"{base.warm(files[k], sorted({1, 64, 256, *args.concurrency}))}", flush=True)
    rows = []
    try:
        for mode in args.batching:
            env = dict(kv.split("=", 1) for kv in args.server_env)
            if mode == "off":
                env["NERSERVICE_API_MAX_BATCH_TEXTS"] = "1"
            server = Server(args.model, env=env, log_path=tmp / f"server-{mode}.log")
            try:
                server.wait_ready()
                if not args.no_warm:
                    warm_server(server, {k: [json.dumps({"texts": [t]}).encode() for t in texts]
                                         for k, texts in corpus.items()}, args.concurrency)
                for k, texts in corpus.items():
                    bodies = [json.dumps({"texts": [t]}).encode() for t in texts]
                    for c in args.concurrency:
                        best = max(base.measure(files[k], chunk=64, options="server"),
                                   base.measure(files[k], chunk=256, options="default"))
                        xla = base.measure(files[k], chunk=256, options="default-xla")
                        same = base.measure(files[k], chunk=c, options="server")
                        load = os.getloadavg()[0]
                        before = batch_stats(server.metrics())
                        r = asyncio.run(closed_loop(server.port, bodies, concurrency=c, requests=args.requests,
                                                    max_seconds=args.max_seconds, warmup=4 * c))
                        after = batch_stats(server.metrics())
                        n_batches = after[1] - before[1]
                        r["mean_batch"] = (after[0] - before[0]) / n_batches if n_batches else 0.0
                        r.update(mode=mode, sentences=k, concurrency=c, baseline=best, baseline_same_chunk=same,
                                 vs_best=r["rps"] / best, vs_same_chunk=r["rps"] / same, loadavg=load,
                                 in_process_xla=xla)
                        rows.append(r)
                        print(f"batching {mode:>3} | {k:>2} sent | c={c:>3} | {r['rps']:7.1f} req/s | "
                              f"p50 {r['p50_ms']:7.1f} ms | p99 {r['p99_ms']:7.1f} ms | batch {r['mean_batch']:5.1f} | "
                              f"in-process best {best:6.1f}/s -> {r['vs_best']:.2f}, same chunk {same:6.1f}/s -> "
                              f"{r['vs_same_chunk']:.2f} | in-process XLA {xla:6.1f}/s | "
                              f"{r['requests']} req, {r['errors']} errors | load {load:.1f}",
                              flush=True)
            finally:
                server.stop()
    finally:
        base.close()

    target = [r for r in rows if r["mode"] == "on" and r["sentences"] == 1 and r["concurrency"] == 64]
    for r in target:
        ok = r["vs_best"] >= 0.7 and r["p99_ms"] < 150
        print(f"target (c=64, 1 sentence, batching on): {r['vs_best']:.2f} of best in-process (>= 0.7), "
              f"p99 {r['p99_ms']:.0f} ms (< 150): {'MET' if ok else 'NOT MET'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=2))
    return 0 if all(r["errors"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
