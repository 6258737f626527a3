"""Running the app: ``uvicorn.run(create_app(settings))`` with a connection guard in front of it.

uvicorn bounds an idle kept-alive connection (``timeout_keep_alive``) but not a client that connects and
then sends its headers (or its body) a byte at a time, or nothing at all: each such connection holds a file
descriptor forever, and a few thousand of them make the process unable to accept anyone.  ``guarded``
wraps uvicorn's HTTP protocol (httptools) with:

* a connection cap (``max_connections``): one more is answered 429 (``Retry-After``) and closed at once;
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

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                GUARD_LOG.warning("connection refused: %d open connections (NERSERVICE_API_MAX_CONNECTIONS)",
                                  len(self.connections) - 1)
                self._refuse(FULL)
                return
            self._arm(header_s, SLOW_HEADERS)

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
            GUARD_LOG.warning("connection closed: %s", "headers too slow" if answer is SLOW_HEADERS else "body too slow")
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
