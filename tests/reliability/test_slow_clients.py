"""Slow and silent clients cannot hold the server's sockets: `nerservice serve` (real uvicorn, the
connection guard of api/server.py) closes connections that do not send their headers or body in time, and
refuses connections beyond its cap at once, so file descriptors stay bounded and other clients are served
again as soon as the slow ones time out. (No model is configured: the guard sits below the app.)"""
from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from .servers import Server, start_server

pytestmark = [pytest.mark.server]

HEADER_S, BODY_S, CAP = 3.0, 2.0, 200
SLOW = 450  # connections opened by the slowloris: 200 under the cap, 200 over it, 50 over twice the cap


@pytest.fixture(scope="module")
def guarded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {"NERSERVICE_API_HEADER_TIMEOUT_S": str(HEADER_S), "NERSERVICE_API_BODY_TIMEOUT_S": str(BODY_S),
           "NERSERVICE_API_MAX_CONNECTIONS": str(CAP)}
    server = start_server(env, log_path=tmp_path_factory.mktemp("guarded") / "server.log", wait_ready=False)
    try:
        yield server
    finally:
        server.stop()


def _connect(port: int, first_bytes: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if first_bytes:
        s.sendall(first_bytes)
    return s


def _closed_by_server(s: socket.socket, deadline: float) -> tuple[bool, bytes]:
    """Read until EOF or ``deadline``: (closed, what the server sent)."""
    got = b""
    while time.monotonic() < deadline:
        s.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = s.recv(4096)
        except TimeoutError:
            return False, got
        except ConnectionResetError:
            return True, got
        if not chunk:
            return True, got
        got += chunk
    return False, got


def test_450_slow_connections_are_closed_in_time_and_capped(guarded_server: Server) -> None:
    port = guarded_server.port
    baseline_fds = guarded_server.open_fds()
    kinds = [b"", b"POST /v1/extract HTTP/1.1\r\nHost: x\r\n", b"GET /healthz HTTP/1.1\r\nHo"]
    start = time.monotonic()
    socks = [_connect(port, kinds[i % 3]) for i in range(SLOW)]
    opened = time.monotonic() - start
    assert opened < 0.8, f"{opened:.2f} s to open the connections: too slow for the test to tell the phases apart"
    time.sleep(0.3)  # the server accepts them (the over-cap ones get 1 s from then: none answered yet)
    held_fds = guarded_server.open_fds()
    # Beyond twice the cap: 429 and closed at once.
    flood = select.select(socks, [], [], 0)[0]
    first = [_closed_by_server(s, time.monotonic() + 1.0) for s in flood]
    assert all(closed and b" 429 " in got for closed, got in first)
    assert SLOW - 2 * CAP - 5 <= len(flood) <= SLOW - 2 * CAP, len(flood)
    # Over the cap: one second to send a request, then 429 (with Retry-After) and closed.
    rest = [s for s in socks if s not in flood]
    deadline = time.monotonic() + 2.5
    over: list[socket.socket] = []
    while time.monotonic() < deadline and len(over) < CAP:
        over += [s for s in select.select([s for s in rest if s not in over], [], [], 0.1)[0]]
    over_cap = [_closed_by_server(s, time.monotonic() + 1.0) for s in over]
    over_s = time.monotonic() - start
    assert len(over) == CAP and all(closed and b" 429 " in got and b"retry-after: 1" in got for closed, got in over_cap)
    assert over_s < HEADER_S, "the connections over the cap were held as long as the others"
    assert held_fds - baseline_fds <= 2 * CAP + 5, (baseline_fds, held_fds)
    # Under the cap: closed with a 408 once the header deadline passes.
    held = [s for s in rest if s not in over]
    results = [_closed_by_server(s, start + HEADER_S + 3.0) for s in held]
    elapsed = time.monotonic() - start
    assert all(closed for closed, _ in results), f"{sum(not c for c, _ in results)} connections still open"
    assert elapsed < HEADER_S + 3.0
    assert all(b" 408 " in got for _, got in results)
    print(f"\n{SLOW} slow connections: {len(flood)} refused at once (429), {len(over)} over the cap answered 429 "
          f"by {over_s:.2f} s, {len(results)} closed with 408 {elapsed:.2f} s after the first connect (header "
          f"deadline {HEADER_S} s); fds {baseline_fds} -> {held_fds} while held")
    for s in socks:
        s.close()
    # Served again, and the descriptors are back.
    assert httpx.get(guarded_server.url + "/healthz", timeout=5).status_code == 200
    time.sleep(0.2)
    assert guarded_server.open_fds() <= baseline_fds + 3


def test_a_request_over_the_cap_gets_its_429_not_a_reset(guarded_server: Server) -> None:
    held = [_connect(guarded_server.port, b"") for _ in range(CAP)]
    try:
        s = _connect(guarded_server.port, b"POST /v1/extract HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                     b"\r\nContent-Length: 13\r\n\r\n{\"text\": \"a\"}")
        closed, got = _closed_by_server(s, time.monotonic() + 2.0)
        assert closed and got.startswith(b"HTTP/1.1 429 ") and b"NER700" in got
        s.close()
    finally:
        for h in held:
            h.close()


def test_a_body_sent_too_slowly_is_cut_off_with_408(guarded_server: Server) -> None:
    s = _connect(guarded_server.port, b"POST /v1/extract HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 1000\r\n\r\n{\"text\": \"")
    start = time.monotonic()
    got = b""
    closed = False
    while time.monotonic() - start < BODY_S + 3 and not closed:  # a byte every 0.2 s: never done in time
        try:
            s.sendall(b"a")
        except (BrokenPipeError, ConnectionResetError):
            break
        closed, chunk = _closed_by_server(s, time.monotonic() + 0.2)
        got += chunk
    assert b" 408 " in got or closed
    assert time.monotonic() - start < BODY_S + 1.5
    s.close()


def test_oversized_headers_are_refused_with_431(guarded_server: Server) -> None:
    s = _connect(guarded_server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    try:
        for _ in range(100):  # 100 x 1 KiB of header lines, fast: the size cap, not the deadline
            s.sendall(b"X-Pad: " + b"p" * 1017 + b"\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    closed, got = _closed_by_server(s, time.monotonic() + HEADER_S - 0.3)
    assert closed and b" 431 " in got
    s.close()


def test_normal_keep_alive_clients_are_unaffected(guarded_server: Server) -> None:
    with httpx.Client(base_url=guarded_server.url, timeout=5) as c:
        for _ in range(5):  # one kept-alive connection, several requests, pauses under the header deadline
            assert c.get("/healthz").status_code == 200
            time.sleep(HEADER_S / 3)
    assert "Traceback" not in guarded_server.log()
