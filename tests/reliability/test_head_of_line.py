"""No request can hold the model hostage (`nerservice serve`, real uvicorn, a full-size random-weight model:
what a served model pays per token, without training):

* a request as costly as one request may be (65,536 tokens of punctuation, ~4-7 s of model time here) runs
  in pieces; small requests sent while it is in flight are answered with a p99 under SMALL_P99_S;
* its client hanging up after 0.3 s drops the rest of its work (counted), and a request sent right after
  is answered at once;
* the issue's attack, 512 KB of punctuation in 64 texts (~500k tokens), is refused with 413 NER603
  before any model time is spent.
"""
from __future__ import annotations

import json
import socket
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .servers import Server, start_server

pytestmark = [pytest.mark.server, pytest.mark.slow]

# Stated in RELIABILITY.md: small requests' p99 stays under a quarter of the big request's time (they do not
# wait for it) and under 3 s even on a loaded CI machine (~1 s measured at load average 12 on 2 cores).
SMALL_P99_S = 3.0
BIG = {"texts": ["!" * 1024] * 64}  # 65,536 one-char tokens: exactly the default per-request budget


@pytest.fixture(scope="module")
def full_size_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    from random_model import build_random_model

    model = build_random_model(tmp_path_factory.mktemp("full-size") / "full", full_size=True)
    server = start_server({"NERSERVICE_API_MODEL": str(model)}, log_path=model.parent / "server.log")
    try:
        yield server
    finally:
        server.stop()


def _small_latencies(url: str, stop: threading.Event, out: list[float], statuses: list[int]) -> None:
    with httpx.Client(base_url=url, timeout=60) as c:
        while not stop.is_set():
            t0 = time.perf_counter()
            r = c.post("/v1/extract", json={"text": "Patients with colorectal cancer took aspirin."})
            out.append(time.perf_counter() - t0)
            statuses.append(r.status_code)
            time.sleep(0.02)


def test_small_requests_stay_fast_while_the_costliest_request_runs(full_size_server: Server) -> None:
    url = full_size_server.url
    latencies: list[float] = []
    statuses: list[int] = []
    stop = threading.Event()
    clients = [threading.Thread(target=_small_latencies, args=(url, stop, latencies, statuses)) for _ in range(4)]
    t0 = time.perf_counter()
    for t in clients:
        t.start()
    big = httpx.post(url + "/v1/extract", json=BIG, timeout=300)
    big_s = time.perf_counter() - t0
    stop.set()
    for t in clients:
        t.join()
    assert big.status_code == 200, big.text
    assert big.json()["timing"]["batches"] >= 16  # 64 texts of 1024 tokens (4 sentence chunks each)
    assert set(statuses) == {200}
    p99 = statistics.quantiles(latencies, n=100)[98] if len(latencies) >= 20 else max(latencies)
    print(f"\nbig request: {big_s:.2f} s in {big.json()['timing']['batches']} batches; small requests while it "
          f"ran: {len(latencies)}, p50 {statistics.median(latencies) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, "
          f"max {max(latencies) * 1000:.0f} ms")
    assert len(latencies) >= 20, "the big request finished too soon to measure anything"
    assert p99 < SMALL_P99_S and p99 < big_s / 4


def test_a_disconnected_request_is_dropped_and_counted(full_size_server: Server) -> None:
    before = (full_size_server.metric("nerservice_abandoned_requests_total"),
              full_size_server.metric("nerservice_abandoned_tokens_total"))
    body = json.dumps(BIG).encode()
    s = socket.create_connection(("127.0.0.1", full_size_server.port))
    s.sendall(b"POST /v1/extract HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    time.sleep(0.3)
    s.close()  # the client hangs up: the server notices at once and drops the rest before the next batch
    time.sleep(0.5)
    t0 = time.perf_counter()
    r = httpx.post(full_size_server.url + "/v1/extract", json={"text": "Aspirin caused asthma."}, timeout=60)
    after_s = time.perf_counter() - t0
    assert r.status_code == 200
    deadline = time.monotonic() + 10
    while full_size_server.metric("nerservice_abandoned_requests_total") == before[0]:
        assert time.monotonic() < deadline, "the abandoned request was never counted"
        time.sleep(0.1)
    dropped = full_size_server.metric("nerservice_abandoned_tokens_total") - before[1]
    print(f"\nrequest sent 0.8 s after the hang-up: {after_s * 1000:.0f} ms; tokens dropped unrun: {dropped:.0f} of 65536")
    assert after_s < SMALL_P99_S
    assert dropped > 65536 / 2  # most of its work never ran


def test_the_issues_attack_is_refused_before_any_model_time(full_size_server: Server) -> None:
    attack = {"texts": ["!?" * 4000] * 64}  # 512 KB of punctuation, every character a token
    body = json.dumps(attack).encode()
    assert len(body) <= 512 * 1024
    before = full_size_server.metric("nerservice_batch_size_tokens_count")
    t0 = time.perf_counter()
    r = httpx.post(full_size_server.url + "/v1/extract", content=body,
                   headers={"content-type": "application/json"}, timeout=60)
    elapsed = time.perf_counter() - t0
    assert r.status_code == 413 and r.json()["error"]["code"] == "NER603", r.text
    assert "NERSERVICE_API_MAX_REQUEST_TOKENS" in r.text
    assert full_size_server.metric("nerservice_batch_size_tokens_count") == before  # no model call for it
    print(f"\n512 KB punctuation attack refused in {elapsed * 1000:.0f} ms")
    assert elapsed < 5
    assert "Traceback" not in full_size_server.log()


def test_a_connection_left_open_without_reading_holds_nothing(full_size_server: Server, tmp_path: Path) -> None:
    """A client that sends a request and never reads the answer: the answer is small, the socket buffers
    take it, the handler finishes and other clients are served."""
    s = socket.create_connection(("127.0.0.1", full_size_server.port))
    body = json.dumps({"texts": ["Aspirin caused asthma."] * 8}).encode()
    for _ in range(20):  # pipelined, never read
        s.sendall(b"POST /v1/extract HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
    t0 = time.perf_counter()
    r = httpx.post(full_size_server.url + "/v1/extract", json={"text": "Aspirin caused asthma."}, timeout=60)
    assert r.status_code == 200 and time.perf_counter() - t0 < SMALL_P99_S
    s.close()
