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
    fds, threads = rel_server.open_fds(), _threads(rel_server)
    gone_before = rel_server.metric("nerservice_http_requests_total", route="/v1/extract", method="POST", status="499")
    abandoned_before = rel_server.metric("nerservice_abandoned_requests_total")

    socks = []
    for _ in range(24):  # whole request sent, then the client leaves before the answer
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(heavy)
        socks.append(s)
    time.sleep(0.5)
    peak = rel_server.metric("nerservice_queue_depth")
    for s in socks:
        s.close()
    for _ in range(8):  # half a body, then the client leaves
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(heavy[: len(heavy) // 2])
        s.close()
    for _ in range(8):  # headers only
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(heavy[: heavy.index(b"\r\n\r\n") + 4])
        s.close()

    _settle(rel_server)
    gone = rel_server.metric("nerservice_http_requests_total", route="/v1/extract", method="POST",
                             status="499") - gone_before
    abandoned = rel_server.metric("nerservice_abandoned_requests_total") - abandoned_before
    assert peak >= 2, f"the burst never queued (depth {peak}): the test did not test disconnects while queued"
    assert gone >= 1 and abandoned >= 1, (gone, abandoned)  # the server saw the clients go and skipped work

    r = httpx.post(url + "/v1/extract", json={"text": WORDS}, timeout=60)
    assert r.status_code == 200 and r.json()["results"][0]["entities"], r.text
    time.sleep(1.0)
    assert rel_server.open_fds() <= fds + 2, (fds, rel_server.open_fds())
    assert _threads(rel_server) <= threads, (threads, _threads(rel_server))
    log = rel_server.log()
    bad = [line for line in log.splitlines() if line.startswith(("ERROR", "CRITICAL", "Traceback"))]
    assert not bad, bad[:5]
