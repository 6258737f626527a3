"""Running the app: ``uvicorn.run(create_app(settings))`` with a connection guard in front of it.

uvicorn bounds an idle kept-alive connection (``timeout_keep_alive``) but not a client that connects and
then sends its headers (or its body) a byte at a time, or nothing at all: each such connection holds a file
descriptor forever, and a few thousand of them make the process unable to accept anyone.  ``guarded``
wraps uvicorn's HTTP protocol (httptools) with:

* a connection cap (``max_connections``): a connection over it has one second to send its request, which
  is answered 429 (``Retry-After``) without reaching the app, and is closed; beyond twice the cap a new
  connection is closed at once;
* a header deadline (``header_timeout_s``) from connecting, and from the first byte of each later request
  on a kept-alive connection, and a header size cap (``MAX_HEADER_BYTES``; httptools has none): 408/431;
* a body deadline (``body_timeout_s``) from the end of the headers to the end of the body: 408.
Answers are written straight to the socket (the app never saw a request) and the connection is closed.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from api.errors import RateLimitedLog
from api.settings import ApiSettings

log = logging.getLogger("nerservice.api")
GUARD_LOG = RateLimitedLog(log)
MAX_HEADER_BYTES = 64 * 1024  # request line + headers; far above any browser's or client library's
OVER_CAP_HEADER_S = 1.0  # how long a connection over the cap may take to send the request it is refused


async def _too_many(scope: Any, receive: Any, send: Any) -> None:
    """The answer to a request on a connection over the cap (the app never sees it)."""
    body = b'{"error":{"code":"NER700","message":"too many open connections; retry later"}}'
    await send({"type": "http.response.start", "status": 429,
                "headers": [(b"content-type", b"application/json"), (b"retry-after", b"1"),
                            (b"connection", b"close"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _raw_answer(status: int, reason: str, code: str, message: str, extra: str = "") -> bytes:
    body = f'{{"error":{{"code":"{code}","message":"{message}"}}}}'.encode("ascii")
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            f"{extra}connection: close\r\n\r\n").encode("ascii") + body


# Over the cap is overload like a full queue: 429 NER700 with Retry-After, what clients already back off on.
FULL = _raw_answer(429, "Too Many Requests", "NER700", "too many open connections; retry later",
                   "retry-after: 1\r\n")
SLOW_HEADERS = _raw_answer(408, "Request Timeout", "NER605", "request headers not received in time")
SLOW_BODY = _raw_answer(408, "Request Timeout", "NER605", "request body not received in time")
BIG_HEADERS = _raw_answer(431, "Request Header Fields Too Large", "NER601", "request headers too large")


def guarded(settings: ApiSettings) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with the limits of ``settings`` (a class, as ``uvicorn.run(http=...)``
    takes one)."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    max_connections, header_s, body_s = settings.max_connections, settings.header_timeout_s, settings.body_timeout_s

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        _timer: asyncio.TimerHandle | None = None
        _reading_headers = True
        _header_bytes = 0

        _over_cap = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            open_now = len(self.connections)
            if open_now <= max_connections:
                self._arm(header_s, SLOW_HEADERS)
                return
            GUARD_LOG.warning("over the connection cap: %d open (NERSERVICE_API_MAX_CONNECTIONS)", open_now - 1)
            if open_now > 2 * max_connections:  # a flood: close at once (the client may see a reset)
                self._refuse(FULL)
                return
            # Over the cap: read the request (so closing is not a reset that hides the answer from the
            # client), answer 429, close; one second for the headers instead of header_timeout_s.
            self._over_cap = True
            self._arm(min(header_s, OVER_CAP_HEADER_S), FULL)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._reading_headers:
                self._header_bytes += len(data)
            super().data_received(data)
            if self._reading_headers and self._header_bytes > MAX_HEADER_BYTES and not self.transport.is_closing():
                self._refuse(BIG_HEADERS)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._reading_headers = True
            if self._timer is None:  # a later request on a kept-alive connection: its headers' deadline
                self._header_bytes = 0
                self._arm(header_s, SLOW_HEADERS)

        def on_headers_complete(self) -> None:
            self._reading_headers, self._header_bytes = False, 0
            self._arm(body_s, SLOW_BODY)
            if self._over_cap:
                self.app = _too_many  # type: ignore[assignment]  # this connection's one request
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._disarm()
            super().on_message_complete()

        def _arm(self, seconds: float, answer: bytes) -> None:
            self._disarm()
            self._timer = self.loop.call_later(seconds, self._expire, answer)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _expire(self, answer: bytes) -> None:
            self._timer = None
            if self.transport.is_closing():
                return
            GUARD_LOG.warning("connection closed: %s", {SLOW_HEADERS: "headers too slow", SLOW_BODY: "body too slow"}
                              .get(answer, "over the connection cap"))
            started = self.cycle is not None and self.cycle.response_started and not self.cycle.response_complete
            self._refuse(None if started else answer)

        def _refuse(self, answer: bytes | None) -> None:
            self._disarm()
            if answer is not None:
                self.transport.write(answer)
            self.transport.close()

    return GuardedHttpToolsProtocol


def serve(settings: ApiSettings, *, host: str, port: int, log_level: str = "info", access_log: bool = False,
          **uvicorn_options: Any) -> None:
    """Build the app from ``settings`` and run it until SIGINT/SIGTERM."""
    import uvicorn

    from api.main import create_app

    # One process: the model is loaded once and its single inference thread owns the CPU cores; more
    # uvicorn workers would each load a copy and fight over the same cores.
    # ws="none": the API has no WebSocket route, so an upgrade request is just an HTTP request.
    uvicorn.run(create_app(settings), host=host, port=port, log_level=log_level, access_log=access_log,
                http=guarded(settings), ws="none", timeout_keep_alive=settings.keep_alive_s,
                timeout_graceful_shutdown=10, **uvicorn_options)
