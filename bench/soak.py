"""Bounded overload soak of the REST service, from this separate process, on loopback.

    .venv/bin/python bench/soak.py --model /tmp/rel-soak/ncbi/model-best \
        --texts /work/shared/data/corpora/NCBI-disease/test.tsv --duration 180

1. Capacity: closed loop, ``--concurrency`` clients each keeping one request in flight for
   ``--capacity-seconds`` (after a short warm-up): answered 200s per second = capacity.
2. Soak: open loop at ``--factor`` x capacity for ``--duration`` seconds: request k is due at
   start + k/rate whatever the server does (latency is counted from that due time, so a slow server cannot
   hide its backlog), sent on an idle keep-alive connection or a new one.
3. Throughout, the server's RSS is read from /proc/<pid>/status every ``--rss-every`` seconds.

Prints the status counts (only 200 and 429 are acceptable under overload), p50/p99 latency, and the RSS
samples with their largest deviation from the first sample after warm-up (capacity phase + ``--warmup``
seconds of the soak); "flat" means within +-10 %.  With ``--model`` it starts ``nerservice serve`` itself
(default settings, free port) and stops it by PID; with ``--url`` and ``--pid`` it uses a running server.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.api.client import HttpConnection  # noqa: E402
from bench.api.server import Server  # noqa: E402

CLIENT_ERRORS = (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, IndexError)
# uvicorn closes a keep-alive connection after 5 s idle; reusing one the server is closing at that moment
# loses the request (an HTTP race, not a server fault), so idle connections older than this are dropped.
MAX_IDLE_S = 2.0


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS in /proc/{pid}/status")


def request_bodies(texts_path: str | None) -> list[bytes]:
    """One-sentence requests: the sentences of an IOB corpus, or of the demo corpus's test split."""
    from nerservice.data import read_corpus

    if texts_path is None:
        from nerservice.demo_corpus import write_demo_corpus

        texts_path = str(write_demo_corpus(Path(tempfile.mkdtemp(prefix="soak-texts-")), sizes=(10, 10, 400),
                                           seed=5)["test"])
    sents = [" ".join(s.tokens) for s in read_corpus(texts_path).sentences]
    return [json.dumps({"texts": [t]}).encode() for t in sents]


class RssSampler:
    def __init__(self, pid: int, every: float) -> None:
        self.pid, self.every = pid, every
        self.samples: list[tuple[float, int]] = []  # (seconds since start, KiB)
        self._t0 = time.perf_counter()

    async def run(self) -> None:
        while True:
            self.samples.append((round(time.perf_counter() - self._t0, 1), rss_kib(self.pid)))
            await asyncio.sleep(self.every)

    def summary(self, warm_from: float) -> dict[str, Any]:
        after = [kib for t, kib in self.samples if t >= warm_from]
        if not after:
            return {"samples": self.samples, "after_warmup": 0}
        base = after[0]
        dev = max(abs(k - base) / base for k in after)
        return {"samples": self.samples, "after_warmup": len(after), "baseline_mib": round(base / 1024, 1),
                "min_mib": round(min(after) / 1024, 1), "max_mib": round(max(after) / 1024, 1),
                "max_deviation": round(dev, 4), "growth": round(after[-1] / base - 1, 4), "flat": dev <= 0.10}


async def capacity(port: int, raws: list[bytes], *, concurrency: int, seconds: float,
                   warmup_s: float = 3.0) -> dict[str, Any]:
    """Closed loop: answered 200s per second once warm."""
    conns = [await HttpConnection.open("127.0.0.1", port) for _ in range(concurrency)]
    statuses: Counter[int] = Counter()
    latencies: list[float] = []
    t_start = time.perf_counter()
    measure_from, deadline = t_start + warmup_s, t_start + warmup_s + seconds
    issued = 0

    async def worker(conn: HttpConnection) -> None:
        nonlocal issued
        while time.perf_counter() < deadline:
            raw = raws[issued % len(raws)]
            issued += 1
            t0 = time.perf_counter()
            status, _ = await conn.send(raw)
            if t0 >= measure_from:
                statuses[status] += 1
                latencies.append(time.perf_counter() - t0)

    try:
        await asyncio.gather(*(worker(c) for c in conns))
    finally:
        for c in conns:
            await c.close()
    ok = statuses.get(200, 0)
    return {"concurrency": concurrency, "seconds": seconds, "statuses": dict(statuses), "rps": ok / seconds,
            "p50_ms": round(percentile(latencies, 0.5) * 1000, 1), "p99_ms": round(percentile(latencies, 0.99) * 1000, 1)}


async def open_loop(port: int, raws: list[bytes], *, rate: float, seconds: float,
                    max_connections: int) -> dict[str, Any]:
    idle: list[tuple[HttpConnection, float]] = []  # (connection, idle since)
    opened = peak_open = 0
    statuses: Counter[int] = Counter()
    errors: Counter[str] = Counter()
    lat: dict[str, list[float]] = {"200": [], "429": [], "all": []}
    not_sent = 0  # due while every allowed connection was busy: the client's limit, reported
    tasks: set[asyncio.Task[None]] = set()

    async def one(conn: HttpConnection | None, raw: bytes, due: float) -> None:
        nonlocal opened
        try:
            if conn is None:
                conn = await HttpConnection.open("127.0.0.1", port)
            status, _ = await conn.send(raw)
        except CLIENT_ERRORS as exc:
            errors[type(exc).__name__] += 1
            opened -= 1
            if conn is not None:
                await conn.close()
            return
        took = time.perf_counter() - due
        statuses[status] += 1
        lat["all"].append(took)
        if str(status) in lat:
            lat[str(status)].append(took)
        idle.append((conn, time.perf_counter()))

    start = time.perf_counter()
    k = 0
    max_late = 0.0
    while (now := time.perf_counter() - start) < seconds:
        due_count = min(int(now * rate) + 1, int(seconds * rate))
        while k < due_count:
            due = start + k / rate
            max_late = max(max_late, time.perf_counter() - due)
            while idle and time.perf_counter() - idle[0][1] > MAX_IDLE_S:  # oldest first
                stale, _ = idle.pop(0)
                stale.writer.close()
                opened -= 1
            if idle:
                conn: HttpConnection | None = idle.pop()[0]
            elif opened < max_connections:
                conn, opened = None, opened + 1
                peak_open = max(peak_open, opened)
            else:
                not_sent += 1
                k += 1
                continue
            task = asyncio.ensure_future(one(conn, raws[k % len(raws)], due))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            k += 1
        await asyncio.sleep(max(0.0005, (k / rate) - (time.perf_counter() - start)))
    if tasks:
        await asyncio.wait(list(tasks), timeout=60)
    for conn, _ in idle:
        await conn.close()
    return {"rate": round(rate, 1), "seconds": seconds, "offered": k, "statuses": dict(sorted(statuses.items())),
            "client_errors": dict(errors), "not_sent": not_sent, "unfinished": len(tasks),
            "connections_peak": peak_open, "dispatch_max_late_ms": round(max_late * 1000, 1),
            "ok_rps": round(statuses.get(200, 0) / seconds, 1),
            **{f"{key}_p{int(q * 100)}_ms": round(percentile(v, q) * 1000, 1)
               for key, v in lat.items() for q in (0.5, 0.99)}}


def server_counters(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for name in ("nerservice_rejected_requests_total", "nerservice_abandoned_requests_total", "nerservice_queue_depth"):
        m = re.search(rf"^{name} (\S+)$", text, re.M)
        out[name] = float(m.group(1)) if m else 0.0
    return out


async def soak(port: int, pid: int, raws: list[bytes], *, concurrency: int = 32, capacity_seconds: float = 20.0,
               factor: float = 2.0, duration: float = 180.0, warmup_s: float = 30.0, rss_every: float = 5.0,
               max_connections: int = 2000, log: Any = print) -> dict[str, Any]:
    sampler = RssSampler(pid, rss_every)
    sampling = asyncio.ensure_future(sampler.run())
    try:
        cap = await capacity(port, raws, concurrency=concurrency, seconds=capacity_seconds)
        log(f"capacity (closed loop, {concurrency} clients, {capacity_seconds:.0f} s): {cap['rps']:.1f} req/s "
            f"answered 200, p50 {cap['p50_ms']} ms, p99 {cap['p99_ms']} ms, statuses {cap['statuses']}")
        if cap["rps"] <= 0:
            raise RuntimeError(f"no request answered 200 in the capacity phase: {cap}")
        warm_from = time.perf_counter() - sampler._t0 + warmup_s
        rate = factor * cap["rps"]
        log(f"soak: open loop at {rate:.1f} req/s ({factor}x) for {duration:.0f} s ...")
        run = await open_loop(port, raws, rate=rate, seconds=duration, max_connections=max_connections)
    finally:
        sampling.cancel()
    rss = sampler.summary(warm_from)
    statuses = run["statuses"]
    result = {"capacity": cap, "soak": run, "rss": rss,
              "only_200_429": set(statuses) <= {200, 429} and not run["client_errors"] and not run["unfinished"]}
    return result


def report(result: dict[str, Any]) -> str:
    r, rss = result["soak"], result["rss"]
    lines = [
        f"offered {r['offered']} requests at {r['rate']} req/s for {r['seconds']:.0f} s "
        f"(peak {r['connections_peak']} connections, dispatch at most {r['dispatch_max_late_ms']} ms late, "
        f"{r['not_sent']} not sent)",
        f"statuses {r['statuses']}; client errors {r['client_errors'] or 'none'}; unfinished {r['unfinished']}",
        f"answered 200: {r['ok_rps']} req/s; latency 200 p50 {r['200_p50_ms']} ms p99 {r['200_p99_ms']} ms; "
        f"429 p50 {r['429_p50_ms']} ms p99 {r['429_p99_ms']} ms; all p50 {r['all_p50_ms']} ms p99 {r['all_p99_ms']} ms",
        f"RSS after warm-up: {rss.get('after_warmup')} samples, baseline {rss.get('baseline_mib')} MiB, "
        f"min {rss.get('min_mib')} max {rss.get('max_mib')} MiB, max deviation {rss.get('max_deviation', 0) * 100:.1f} %, "
        f"end growth {rss.get('growth', 0) * 100:.1f} % -> {'flat (within 10 %)' if rss.get('flat') else 'NOT flat'}",
        f"only 200/429: {result['only_200_429']}",
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--model", help="start `nerservice serve` on this model folder or store reference")
    where.add_argument("--url", help="a running server, e.g. http://127.0.0.1:8000 (needs --pid)")
    ap.add_argument("--pid", type=int, help="the running server's PID (for RSS)")
    ap.add_argument("--texts", help="IOB corpus whose sentences are the requests (default: demo corpus)")
    ap.add_argument("--concurrency", type=int, default=32, help="closed-loop clients for the capacity phase")
    ap.add_argument("--capacity-seconds", type=float, default=20.0)
    ap.add_argument("--factor", type=float, default=2.0, help="offered load as a multiple of capacity")
    ap.add_argument("--duration", type=float, default=180.0, help="seconds of open-loop overload")
    ap.add_argument("--warmup", type=float, default=30.0, help="seconds of the soak before RSS must stay flat")
    ap.add_argument("--rss-every", type=float, default=5.0)
    ap.add_argument("--max-connections", type=int, default=2000)
    ap.add_argument("--json", help="also write every figure (RSS samples included) to this file")
    args = ap.parse_args()
    if args.url and args.pid is None:
        ap.error("--url needs --pid")

    raws_body = request_bodies(args.texts)
    server = None
    if args.model:
        tmp = Path(tempfile.mkdtemp(prefix="soak-"))
        server = Server(args.model, log_path=tmp / "server.log")
        server.wait_ready(timeout=300)
        url, pid = server.url, server.proc.pid
        print(f"server pid {pid} at {url}; log {tmp / 'server.log'}")
    else:
        url, pid = args.url.rstrip("/"), args.pid
    port = int(url.rsplit(":", 1)[1])
    head = HttpConnection(None, None, "127.0.0.1")  # type: ignore[arg-type]  # only to encode requests
    raws = [head.encode_post("/v1/extract", b) for b in raws_body]
    try:
        t0 = time.time()
        result = asyncio.run(soak(port, pid, raws, concurrency=args.concurrency,
                                  capacity_seconds=args.capacity_seconds, factor=args.factor,
                                  duration=args.duration, warmup_s=args.warmup, rss_every=args.rss_every,
                                  max_connections=args.max_connections))
        result["server_counters"] = server_counters(url)
        result["wall_s"] = round(time.time() - t0, 1)
        if server is not None:
            log_text = Path(server.log.name).read_text(errors="replace")
            result["server_log_errors"] = [ln for ln in log_text.splitlines()
                                           if ln.startswith(("ERROR", "CRITICAL", "Traceback"))][:20]
    finally:
        if server is not None:
            server.stop()
    print(report(result))
    print(f"server counters after: {result['server_counters']}")
    if "server_log_errors" in result:
        print(f"server log error lines: {len(result['server_log_errors'])}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0 if result["only_200_429"] and result["rss"].get("flat") else 1


if __name__ == "__main__":
    sys.exit(main())
