"""A server started as `uvicorn api.main:app` with a tiny queue and batch cap: 429 + Retry-After when the
queue is full, the cap holds, a request whose client left is skipped, admin is off without a token."""
from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from api_harness import RunningServer, start_server

pytestmark = [pytest.mark.server, pytest.mark.slow]

SECRET = "Qwzv-9931"


@pytest.fixture(scope="module")
def busy_server(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = {"NERSERVICE_API_MODEL": str(tiny_model_dir), "NERSERVICE_API_MAX_QUEUE": "4",
           "NERSERVICE_API_MAX_BATCH_TEXTS": "2", "NERSERVICE_API_RETRY_AFTER_S": "3"}
    server = start_server(env, entry="uvicorn", log_path=tmp_path_factory.mktemp("busy-server") / "server.log")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def long_text(demo_texts: list[str]) -> str:
    """~19k characters: long enough that the tiny model needs a noticeable time for it."""
    text, i = "", 0
    while len(text) < 19_000:
        text += demo_texts[i % 40] + " "
        i += 1
    return f"{SECRET} {text}"


def test_full_queue_answers_429_with_retry_after(busy_server, long_text) -> None:
    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=busy_server.url, timeout=120,
                                     limits=httpx.Limits(max_connections=40)) as http:
            # 3 long texts each: ~0.5 s of model time per request, so 40 at once overflow a queue of 4.
            return await asyncio.gather(*(http.post("/v1/extract", json={"texts": [long_text] * 3})
                                          for _ in range(40)))

    rejected_before = busy_server.metric("nerservice_rejected_requests_total")
    responses = asyncio.run(burst())
    statuses = [r.status_code for r in responses]
    assert set(statuses) <= {200, 429}, statuses
    too_many = [r for r in responses if r.status_code == 429]
    assert too_many and statuses.count(200) >= 4
    for r in too_many:
        assert r.headers["retry-after"] == "3"
        assert r.json()["error"]["code"] == "NER700" and "NERSERVICE_API_MAX_QUEUE" in r.text
    first_ok = next(r for r in responses if r.status_code == 200).json()
    assert all(r.json() == first_ok | {"timing": r.json()["timing"]} for r in responses if r.status_code == 200)
    assert busy_server.metric("nerservice_rejected_requests_total") - rejected_before == len(too_many)


def test_batches_never_exceed_the_cap(busy_server, demo_texts) -> None:
    def counts() -> tuple[float, float, float]:
        m = busy_server.metric
        return (m("nerservice_batch_size_texts_count"), m("nerservice_batch_size_texts_bucket", le="2.0"),
                m("nerservice_batch_size_texts_bucket", le="1.0"))

    before = counts()

    async def many() -> None:
        async with httpx.AsyncClient(base_url=busy_server.url, timeout=120) as http:
            # Retry 429s: this test is about batch sizes, not the queue.
            async def one(t: str) -> None:
                while (await http.post("/v1/extract", json={"texts": [t]})).status_code == 429:
                    await asyncio.sleep(0.05)
            await asyncio.gather(*(one(t) for t in demo_texts[:30]))

    asyncio.run(many())
    total, upto2, single = (a - b for a, b in zip(counts(), before))  # this test's batches only
    assert total > 0
    assert upto2 == total  # one-text requests, cap 2: no batch above 2
    assert single < total  # and it did batch


def test_request_of_a_client_that_left_is_skipped(busy_server, long_text) -> None:
    before = busy_server.metric("nerservice_abandoned_requests_total")
    # Keep the model busy: two requests of 6 long texts each (each one batch, over the cap of 2).
    occupy = [threading.Thread(target=httpx.post, args=(busy_server.url + "/v1/extract",),
                               kwargs={"json": {"texts": [long_text] * 6}, "timeout": 120}) for _ in range(2)]
    for t in occupy:
        t.start()
    # Once the second one waits in the queue, the first is in the model (~1 s for 6 long texts).
    for _ in range(3000):  # bounded only so a broken server fails instead of hanging
        if busy_server.metric("nerservice_queue_depth") >= 1:
            break
        time.sleep(0.02)
    else:
        pytest.fail("the second long request never queued")
    body = json.dumps({"texts": ["Aspirin caused asthma."]}).encode()
    with socket.create_connection(("127.0.0.1", busy_server.port)) as s:
        s.sendall(b"POST /v1/extract HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        time.sleep(0.005)  # queued behind the long ones (a piece of ~2k tokens runs in tens of ms): hang up now
    for t in occupy:
        t.join()
    deadline = time.monotonic() + 10
    while busy_server.metric("nerservice_abandoned_requests_total") == before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert busy_server.metric("nerservice_abandoned_requests_total") - before == 1
    assert busy_server.metric("nerservice_http_requests_total", route="/v1/extract", method="POST", status="499") >= 1


def test_admin_is_disabled_without_a_token(busy_server) -> None:
    r = httpx.post(busy_server.url + "/v1/models/reload", headers={"Authorization": "Bearer anything"})
    assert r.status_code == 401 and "disabled" in r.json()["error"]["message"]


def test_cors_is_off_by_default(busy_server) -> None:
    r = httpx.post(busy_server.url + "/v1/extract", json={"text": "Aspirin."},
                   headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in r.headers
    r = httpx.options(busy_server.url + "/v1/extract", headers={
        "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in r.headers


def test_access_log_has_paths_but_no_texts(busy_server) -> None:
    log = busy_server.log()
    assert '"POST /v1/extract HTTP/1.1" 200' in log  # uvicorn's access log is on for this entry point
    assert SECRET not in log
