"""Reading and checking an extraction request: byte limit before parsing, then JSON, types and limits.

Every refusal is a coded error whose message names the limit and the setting that controls it.  Messages
never quote the submitted text (it may be private and error messages end up in logs).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from starlette.requests import ClientDisconnect, Request

from api.errors import PayloadTooLargeError, UnsupportedMediaTypeError, validation_error
from api.schemas import ExtractRequest
from api.settings import ApiSettings
from nerservice.errors import RequestError


@dataclass(frozen=True)
class ParsedExtract:
    texts: list[str]
    model: str | None


def _too_large(size: str, limit: int) -> PayloadTooLargeError:
    return PayloadTooLargeError(f"request body is {size}; the limit is {limit} bytes",
                                limit="NERSERVICE_API_MAX_BODY_BYTES", max=limit,
                                hint="split the texts over several requests")


def require_json(request: Request) -> None:
    """Only ``application/json`` (any parameters, e.g. charset): ``text/plain`` and form types are what a
    browser sends cross-origin without a CORS preflight, so accepting them would let any web page make a
    visitor's browser post to this service."""
    ctype = request.headers.get("content-type", "")
    if ctype.split(";", 1)[0].strip().lower() != "application/json":
        raise UnsupportedMediaTypeError(f"Content-Type must be application/json, got {ctype[:100]!a}",
                                        hint="send the header 'Content-Type: application/json'")


async def read_body(request: Request, *, limit: int) -> bytes:
    """The body, refused as soon as it is known to exceed ``limit``: from Content-Length before reading
    anything, and by counting the streamed bytes (chunked uploads, or a Content-Length that lies). How long
    the client may take to send it is bounded by the connection guard (api/server.py, body_timeout_s)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise RequestError("invalid Content-Length header", header="content-length")
        if int(declared) > limit:
            raise _too_large(f"{int(declared)} bytes (Content-Length)", limit)
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise _too_large(f"over {limit} bytes (counted while streaming)", limit)
    except ClientDisconnect:
        raise RequestError("the client closed the connection before sending the whole body") from None
    return bytes(body)


def load_json_object(body: bytes, *, example: str) -> dict[str, Any]:
    """The body as a JSON object, or a coded 400 saying what is wrong (``example`` shows the shape)."""
    if not body:
        raise RequestError(f"empty body; send JSON like {example}")
    try:
        data = json.loads(body)
    except UnicodeDecodeError:
        raise RequestError("body is not UTF-8 encoded JSON") from None
    except json.JSONDecodeError as exc:
        raise RequestError(f"body is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise RequestError("body is not acceptable JSON (nested too deeply)") from None
    except ValueError:  # e.g. an integer of more than 4300 digits (Python's int-from-string limit)
        raise RequestError("body is not acceptable JSON (a number is too long)") from None
    if not isinstance(data, dict):
        raise RequestError(f"body must be a JSON object like {example}, got a JSON {_json_type(data)}")
    return data


def parse_extract(body: bytes, settings: ApiSettings) -> ParsedExtract:
    data = load_json_object(body, example='{"texts": ["..."]} or {"text": "..."}')
    try:
        req = ExtractRequest.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc.errors(), what="request body") from None
    if (req.texts is None) == (req.text is None):
        raise RequestError("send exactly one of 'texts' (a list of strings) or 'text' (a string)")
    texts: list[str] = req.texts if req.texts is not None else [req.text or ""]
    check_texts(texts, settings)
    if req.model is not None and not is_unicode(req.model):
        raise RequestError("'model' is not valid Unicode (it holds a lone surrogate)", field="model")
    return ParsedExtract(texts=texts, model=req.model)


def is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a "\ud800" escape: not a character
        return False
    return True


def check_texts(texts: list[str], settings: ApiSettings) -> None:
    if not texts:
        raise RequestError(f"'texts' is empty; send 1 to {settings.max_texts} texts", limit="NERSERVICE_API_MAX_TEXTS",
                           max=settings.max_texts)
    if len(texts) > settings.max_texts:
        raise PayloadTooLargeError(f"{len(texts)} texts in one request; the limit is {settings.max_texts}",
                                   limit="NERSERVICE_API_MAX_TEXTS", max=settings.max_texts,
                                   hint="split them over several requests")
    for i, text in enumerate(texts):
        if len(text) > settings.max_text_chars:
            raise PayloadTooLargeError(f"text {i} has {len(text)} characters; the limit is {settings.max_text_chars}",
                                       limit="NERSERVICE_API_MAX_TEXT_CHARS", max=settings.max_text_chars, index=i,
                                       hint="split long documents into parts")
        if not is_unicode(text):
            raise RequestError(f"text {i} is not valid Unicode (it holds a lone surrogate)", index=i)


def _json_type(value: object) -> str:
    return {list: "array", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)
