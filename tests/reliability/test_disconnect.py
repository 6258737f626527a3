"""Clients that hang up mid-request (while queued, while their batch runs, or halfway through sending the
body) leave nothing behind: the queue drains to 0, no socket or thread is left open, the log has no error,
and the server keeps answering."""
from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from .servers import Server

pytestmark = [pytest.mark.server, pytest.mark.slow]

WORDS = "Patients with familial adenomatous polyposis were given aspirin and tamoxifen daily ."


def _post_bytes(body: bytes) -> bytes:
    return (b"POST /v1/extract HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body


def _threads(server: Server) -> int:
    for line in open(f"/proc/{server.pid}/status"):
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise RuntimeError("no Threads line")


def _settle(server: Server, *, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while server.metric("nerservice_queue_depth") != 0:
        assert time.monotonic() < deadline, "queue never drained"
        time.sleep(0.2)


def test_disconnects_leave_nothing_behind(rel_server: Server) -> None:
    url, port = rel_server.url, rel_server.port
    _settle(rel_server)
    # Heavy requests (16 texts x ~1,900 chars): each one keeps the model busy, so most of the burst sits
    # in the queue when its client goes.
    heavy = _post_bytes(json.dumps({"texts": [(WORDS + " ") * 22] * 16}).encode())
    assert len(heavy) < 65536
    # The same burst answered in full first, so every pool thread the burst can start exists already.
    warm = [socket.create_connection(("127.0.0.1", port), timeout=120) for _ in range(8)]
    for s in warm:
        s.sendall(heavy)
    for s in warm:
        with s:
            assert s.recv(64).startswith(b"HTTP/1.1 200"), "warm-up request failed"
    _settle(rel_server)
    time.sleep(0.5)
    fds = rel_server.open_fds()
    rounds = [_burst_and_leave(rel_server, heavy) for _ in range(2)]
    for peak, gone, abandoned, _, _ in rounds:
        assert peak >= 2, f"the burst never queued (depth {peak}): the test did not test disconnects while queued"
        assert gone >= 1 and abandoned >= 1, (gone, abandoned)  # the server saw the clients go, skipped work
    # Pools (asyncio's default executor for token counting) may grow up to their bound in round 1;
    # a leak would grow again in round 2.
    assert rounds[1][4] <= rounds[0][4], f"threads grew between identical rounds: {rounds}"
    assert rounds[0][3] <= fds + 2 and rounds[1][3] <= fds + 2, (fds, rounds)  # every socket was closed
    r = httpx.post(url + "/v1/extract", json={"text": WORDS}, timeout=60)
    assert r.status_code == 200 and r.json()["results"][0]["entities"], r.text
    log = rel_server.log()
    bad = [line for line in log.splitlines() if line.startswith(("ERROR", "CRITICAL", "Traceback"))]
    assert not bad, bad[:5]


def _burst_and_leave(server: Server, heavy: bytes) -> tuple[float, float, float, int, int]:
    """24 clients send a whole heavy request and hang up before the answer; 8 hang up halfway through the
    body; 8 after the headers. Returns (peak queue depth, 499s, abandoned jobs, open fds, threads)."""
    port = server.port
    gone_before = server.metric("nerservice_http_requests_total", route="/v1/extract", method="POST", status="499")
    abandoned_before = server.metric("nerservice_abandoned_requests_total")
    socks = []
    for _ in range(24):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(heavy)
        socks.append(s)
    time.sleep(0.5)
    peak = server.metric("nerservice_queue_depth")
    for s in socks:
        s.close()
    for cut in [len(heavy) // 2] * 8 + [heavy.index(b"\r\n\r\n") + 4] * 8:
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(heavy[:cut])
        s.close()
    _settle(server)
    gone = server.metric("nerservice_http_requests_total", route="/v1/extract", method="POST", status="499") - gone_before
    abandoned = server.metric("nerservice_abandoned_requests_total") - abandoned_before
    time.sleep(1.0)
    return peak, gone, abandoned, server.open_fds(), _threads(server)
