"""Every kind of bad input gets its 4xx with a coded JSON error naming the limit; never a 500.

The main server runs with MAIN_LIMITS (16 texts, 2000 chars per text, 64 KiB body)."""
from __future__ import annotations

import json
import socket

import httpx
import pytest
from api_harness import MAIN_LIMITS

pytestmark = [pytest.mark.server, pytest.mark.slow]

MAX_TEXTS = int(MAIN_LIMITS["NERSERVICE_API_MAX_TEXTS"])
MAX_CHARS = int(MAIN_LIMITS["NERSERVICE_API_MAX_TEXT_CHARS"])
MAX_BODY = int(MAIN_LIMITS["NERSERVICE_API_MAX_BODY_BYTES"])

CASES = {
    # name: (raw body, status, code, words the message must contain)
    "empty list": (b'{"texts": []}', 400, "NER600", ["empty", str(MAX_TEXTS)]),
    "too many texts": (json.dumps({"texts": ["a"] * (MAX_TEXTS + 1)}).encode(), 413, "NER601",
                       [str(MAX_TEXTS + 1), str(MAX_TEXTS)]),
    "text over size limit": (json.dumps({"texts": ["ok", "x" * (MAX_CHARS + 1)]}).encode(), 413, "NER601",
                             ["text 1", str(MAX_CHARS)]),
    "single text over size limit": (json.dumps({"text": "x" * (MAX_CHARS + 1)}).encode(), 413, "NER601",
                                    [str(MAX_CHARS)]),
    "body over byte limit": (json.dumps({"texts": ["y" * 1000] * 80}).encode(), 413, "NER601", [str(MAX_BODY)]),
    "body over byte limit, not even JSON": (b"{" * (MAX_BODY + 1), 413, "NER601", [str(MAX_BODY)]),
    "texts not a list": (b'{"texts": "just a string"}', 400, "NER600", ["texts"]),
    "text item not a string": (b'{"texts": ["fine", 42]}', 400, "NER600", ["texts.1"]),
    "text not a string": (b'{"text": ["a"]}', 400, "NER600", ["text"]),
    "model not a string": (b'{"text": "a", "model": 3}', 400, "NER600", ["model"]),
    "null text": (b'{"text": null}', 400, "NER600", ["exactly one"]),
    "both text and texts": (b'{"text": "a", "texts": ["b"]}', 400, "NER600", ["exactly one"]),
    "neither": (b'{}', 400, "NER600", ["exactly one"]),
    "unknown field": (b'{"texts": ["a"], "lang": "en"}', 400, "NER600", ["lang"]),
    "array body": (b'["a", "b"]', 400, "NER600", ["JSON object", "array"]),
    "string body": (b'"hello"', 400, "NER600", ["JSON object", "string"]),
    "non-JSON": (b"texts=hello", 400, "NER600", ["not valid JSON"]),
    "truncated JSON": (b'{"texts": ["a"', 400, "NER600", ["not valid JSON"]),
    "not UTF-8": (b'{"text": "\xff\xfe"}', 400, "NER600", ["UTF-8"]),
    "empty body": (b"", 400, "NER600", ["empty body"]),
    "deeply nested": (b"[" * 30000 + b"]" * 30000, 400, "NER600", []),
    "lone surrogate": (b'{"text": "abc \\ud800 def"}', 400, "NER600", ["surrogate"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_gets_coded_4xx(api_server, name: str) -> None:
    body, status, code, words = CASES[name]
    r = httpx.post(api_server.url + "/v1/extract", content=body, headers={"content-type": "application/json"},
                   timeout=30)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code
    for w in words:
        assert w in err["message"], (w, err)
    assert "yyyy" not in r.text and "fine" not in r.text  # submitted text is never echoed back


def test_limit_errors_name_the_setting(api_server) -> None:
    r = httpx.post(api_server.url + "/v1/extract", json={"texts": ["a"] * (MAX_TEXTS + 1)})
    assert r.json()["error"]["context"] == {"limit": "NERSERVICE_API_MAX_TEXTS", "max": MAX_TEXTS}
    r = httpx.post(api_server.url + "/v1/extract", json={"text": "x" * (MAX_CHARS + 1)})
    assert r.json()["error"]["context"]["limit"] == "NERSERVICE_API_MAX_TEXT_CHARS"


def _raw_exchange(port: int, head: bytes, chunks: list[bytes], *, finish: bool) -> tuple[int, dict]:
    """Send a request head and some body bytes, and read the answer without completing the body."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(head)
        for c in chunks:
            s.sendall(c)
        if finish:
            s.sendall(b"0\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            data += s.recv(65536)
        head_bytes, _, rest = data.partition(b"\r\n\r\n")
        length = int(next(line.split(b":")[1] for line in head_bytes.split(b"\r\n")
                          if line.lower().startswith(b"content-length")))
        while len(rest) < length:
            rest += s.recv(65536)
        return int(head_bytes.split()[1]), json.loads(rest[:length])


def test_content_length_over_limit_is_refused_before_the_body_arrives(api_server) -> None:
    # Announce 100 MB, send 10 bytes, never the rest: the answer must come from the header alone (a
    # server that waited for the body would never answer, and the socket timeout fails the test).
    head = (b"POST /v1/extract HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000000\r\n\r\n")
    status, body = _raw_exchange(api_server.port, head, [b'{"texts": '], finish=False)
    assert status == 413 and body["error"]["code"] == "NER601"
    assert "Content-Length" in body["error"]["message"]


def test_chunked_body_is_counted_while_streaming(api_server) -> None:
    # No Content-Length: chunks that pass the limit are refused before the body ends (the terminating
    # chunk is never sent, so a server that read everything first would hang here).
    head = b"POST /v1/extract HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    piece = b"z" * 16384
    chunks = [b"%x\r\n%s\r\n" % (len(piece), piece)] * (MAX_BODY // len(piece) + 2)
    status, body = _raw_exchange(api_server.port, head, chunks, finish=False)
    assert status == 413 and body["error"]["code"] == "NER601"
    assert "streaming" in body["error"]["message"]


def test_chunked_body_under_limit_is_accepted(api_server) -> None:
    payload = json.dumps({"text": "Aspirin caused asthma."}).encode()
    head = b"POST /v1/extract HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunks = [b"%x\r\n%s\r\n" % (len(payload[:10]), payload[:10]), b"%x\r\n%s\r\n" % (len(payload[10:]), payload[10:])]
    status, body = _raw_exchange(api_server.port, head, chunks, finish=True)
    assert status == 200 and len(body["results"]) == 1


@pytest.mark.parametrize("method,path,status", [("GET", "/v1/extract", 405), ("DELETE", "/healthz", 405),
                                                ("GET", "/nope", 404), ("POST", "/v1/models", 405)])
def test_framework_errors_have_the_same_shape(api_server, method: str, path: str, status: int) -> None:
    r = httpx.request(method, api_server.url + path)
    assert r.status_code == status
    assert r.json()["error"]["code"] == "NER600"


def test_no_5xx_recorded_after_all_bad_inputs(api_server) -> None:
    text = httpx.get(api_server.url + "/metrics").text
    # (/readyz answers 503 while the model loads; that is its job, not an error)
    assert not [line for line in text.splitlines() if line.startswith("nerservice_http_requests_total")
                and 'status="5' in line and 'route="/readyz"' not in line]
