"""The one place where an exception becomes an HTTP answer: ``{"error": {"code", "message", ...}}``.

Core errors (nerservice.errors) carry a stable ``code`` and no HTTP status: statuses belong to the API and
are mapped here, by class (the most specific class in STATUS wins).  The errors only the service raises
(queue full, not ready, too large, no admin token, wrong content type) are defined here too.

Framework errors (unknown route, wrong method, query validation) are rendered with the same shape.  A
client error is logged as one line (rate-limited, never a traceback: a client must not be able to flood
the log); anything else is a 500 with a generic message, logged with its traceback but never echoed.
Bodies are encoded with ``ensure_ascii=True``: a lone surrogate that slipped into a message (it can come
from a ``"\\ud800"`` escape in the request) is escaped instead of failing the answer with a 500.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from nerservice.errors import (
    ConfigError,
    CorpusError,
    DistributedError,
    EmbeddingsError,
    IntegrityError,
    InvalidModelRefError,
    ModelError,
    ModelNotFoundError,
    NerServiceError,
    PromotionRefusedError,
    RequestError,
    StoreError,
)

log = logging.getLogger("nerservice.api")


# --- errors only the service raises -----------------------------------------------------------------
class PayloadTooLargeError(RequestError):
    """A request over a size limit (body bytes, texts, characters per text)."""

    code = "NER601"


class UnauthorizedError(RequestError):
    code = "NER602"


class RequestTooCostlyError(RequestError):
    """Within the size limits, but more model work (tokens, distinct-word characters) than one request
    may cause: NERSERVICE_API_MAX_REQUEST_TOKENS / _MAX_REQUEST_WORD_CHARS."""

    code = "NER603"


class UnsupportedMediaTypeError(RequestError):
    code = "NER604"


class RequestTimeoutError(RequestError):
    code = "NER605"


class OverloadedError(NerServiceError):
    code = "NER700"


class NotReadyError(NerServiceError):
    code = "NER701"


API_ERRORS: dict[str, type[NerServiceError]] = {
    cls.code: cls for cls in (PayloadTooLargeError, UnauthorizedError, RequestTooCostlyError,
                              UnsupportedMediaTypeError, RequestTimeoutError, OverloadedError, NotReadyError)
}

# Status per error class; an error gets the status of the first class of its MRO listed here.
STATUS: dict[type[NerServiceError], int] = {
    NerServiceError: 500,
    ConfigError: 400, CorpusError: 400, EmbeddingsError: 400,
    ModelError: 500, StoreError: 500, ModelNotFoundError: 404, IntegrityError: 500, InvalidModelRefError: 400,
    PromotionRefusedError: 409, DistributedError: 500,
    RequestError: 400, PayloadTooLargeError: 413, UnauthorizedError: 401, RequestTooCostlyError: 413,
    UnsupportedMediaTypeError: 415, RequestTimeoutError: 408, OverloadedError: 429, NotReadyError: 503,
}

# Errors that tell the client to come back later carry Retry-After.
_RETRY_LATER = (OverloadedError, NotReadyError)


def http_status(exc: NerServiceError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]  # type: ignore[index]
    return 500


def error_payload(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """(status, body) for any exception."""
    if isinstance(exc, NerServiceError):
        return http_status(exc), {"error": exc.to_dict()}
    if isinstance(exc, RequestValidationError):
        err = validation_error(exc.errors())
        return http_status(err), {"error": err.to_dict()}
    if isinstance(exc, StarletteHTTPException):
        return exc.status_code, {"error": {"code": RequestError.code, "message": str(exc.detail)}}
    return 500, {"error": {"code": NerServiceError.code, "message": "internal error (logged on the server)"}}


def validation_error(errors: Any, *, what: str = "request") -> RequestError:
    """A pydantic/FastAPI error list as one RequestError. Only locations and messages are quoted, never the
    submitted values: they may be user text."""
    parts = []
    for e in list(errors)[:5]:
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or what
        parts.append(f"{loc}: {e.get('msg', 'invalid')}")
    return RequestError(f"invalid {what}: " + "; ".join(parts),
                        fields=[".".join(str(x) for x in e.get("loc", ())) for e in list(errors)[:5]])


class RateLimitedLog:
    """At most ``burst`` lines per ``window_s``; the count of lines left out is reported with the next line
    that gets through. Thread-safe (errors can be rendered from any thread)."""

    def __init__(self, logger: logging.Logger, *, burst: int = 10, window_s: float = 10.0) -> None:
        self.logger, self.burst, self.window_s = logger, burst, window_s
        self._lock = threading.Lock()
        self._window_start = 0.0
        self._logged = self.suppressed = 0

    def warning(self, msg: str, *args: object) -> bool:
        now = time.monotonic()
        with self._lock:
            if now - self._window_start >= self.window_s:
                self._window_start, self._logged = now, 0
            if self._logged >= self.burst:
                self.suppressed += 1
                return False
            self._logged += 1
            left_out, self.suppressed = self.suppressed, 0
        if left_out:
            msg += " (%d similar lines left out)"
            args = (*args, left_out)
        self.logger.warning(msg, *args)
        return True


CLIENT_ERRORS = RateLimitedLog(log)


class JSONError(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def error_response(exc: BaseException, *, retry_after_s: int | None = None, route: str = "") -> Response:
    status, body = error_payload(exc)
    headers = {}
    if retry_after_s is not None and isinstance(exc, _RETRY_LATER):
        headers["Retry-After"] = str(retry_after_s)
    if isinstance(exc, StarletteHTTPException) and exc.headers:
        headers.update(exc.headers)  # e.g. Allow on 405
    if isinstance(exc, UnauthorizedError):
        headers["WWW-Authenticate"] = "Bearer"
    code = body["error"]["code"]
    if status >= 500 and not isinstance(exc, NerServiceError):
        log.error("unhandled %s", type(exc).__name__, exc_info=exc)
    elif status >= 500 and not isinstance(exc, NotReadyError):  # 503s are expected while loading
        log.warning("request failed: [%s] %s", code, ascii(body["error"]["message"])[1:-1])
    elif 400 <= status < 500 and not isinstance(exc, (OverloadedError, StarletteHTTPException)):
        # One line with the code only: messages may quote request fields, and a 429 storm or a scanner's
        # 404s are counted by /metrics already.
        CLIENT_ERRORS.warning("client error %d [%s] on %s", status, code, route or "?")
    return JSONError(body, status_code=status, headers=headers)


def install_error_handlers(app: FastAPI, *, retry_after_s: int) -> None:
    async def handle(request: Request, exc: Exception) -> Response:
        return error_response(exc, retry_after_s=retry_after_s, route=ascii(request.url.path[:64])[1:-1])

    for kind in (NerServiceError, RequestValidationError, StarletteHTTPException, Exception):
        app.add_exception_handler(kind, handle)
