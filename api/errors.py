"""The one place where an exception becomes an HTTP answer: ``{"error": {"code", "message", ...}}``.

Our own errors carry ``code`` and ``http_status`` (nerservice.errors); framework errors (unknown route,
wrong method, query validation) are rendered with the same shape; anything else is a 500 with a generic
message, logged with its traceback but never echoed to the client.
"""
from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response

from nerservice.errors import NerServiceError, NotReadyError, OverloadedError, RequestError, UnauthorizedError

log = logging.getLogger("nerservice.api")

# Errors that tell the client to come back later carry Retry-After.
_RETRY_LATER = (OverloadedError, NotReadyError)


def error_payload(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """(status, body) for any exception."""
    if isinstance(exc, NerServiceError):
        return exc.http_status, {"error": exc.to_dict()}
    if isinstance(exc, RequestValidationError):
        err = validation_error(exc.errors())
        return err.http_status, {"error": err.to_dict()}
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


def error_response(exc: BaseException, *, retry_after_s: int | None = None) -> Response:
    status, body = error_payload(exc)
    headers = {}
    if retry_after_s is not None and isinstance(exc, _RETRY_LATER):
        headers["Retry-After"] = str(retry_after_s)
    if isinstance(exc, StarletteHTTPException) and exc.headers:
        headers.update(exc.headers)  # e.g. Allow on 405
    if isinstance(exc, UnauthorizedError):
        headers["WWW-Authenticate"] = "Bearer"
    if status >= 500 and not isinstance(exc, NerServiceError):
        log.error("unhandled %s", type(exc).__name__, exc_info=exc)
    elif status >= 500 and not isinstance(exc, NotReadyError):  # 503s are expected while loading
        log.warning("request failed: [%s] %s", body["error"]["code"], body["error"]["message"])
    return JSONResponse(body, status_code=status, headers=headers)


def install_error_handlers(app: FastAPI, *, retry_after_s: int) -> None:
    async def handle(request: Request, exc: Exception) -> Response:
        return error_response(exc, retry_after_s=retry_after_s)

    for kind in (NerServiceError, RequestValidationError, StarletteHTTPException, Exception):
        app.add_exception_handler(kind, handle)
