"""HTTP routes. Handlers validate, enqueue and format; the batcher does the work."""
from __future__ import annotations

import asyncio
import hmac
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.responses import HTMLResponse, Response
from starlette.types import Receive

from api.batching import Batcher, Job, JobResult
from api.limits import parse_extract, read_body
from api.metrics import ApiMetrics
from api.model_slot import ModelSlot
from api.page import PAGE_HTML
from api.schemas import (ExtractRequest, ExtractResponse, ModelsResponse, ReloadResponse, Status,
                         error_responses)
from api.settings import ApiSettings
from nerservice.errors import NerServiceError, UnauthorizedError
from nerservice.inference import count_tokens

ROUTES = ("/", "/v1/extract", "/v1/models", "/v1/models/reload", "/healthz", "/readyz", "/metrics")
CLIENT_GONE = 499  # nginx's "client closed request": nobody reads it, but the metrics count it


@dataclass
class Service:
    settings: ApiSettings
    metrics: ApiMetrics
    slot: ModelSlot
    batcher: Batcher


def service(request: Request) -> Service:
    return request.app.state.service


class JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _extract_body_schema(settings: ApiSettings) -> dict[str, Any]:
    """The request body schema with this server's limits filled in (the handler reads the body itself, so
    the byte limit applies before any parsing)."""
    schema = ExtractRequest.model_json_schema()
    props = schema["properties"]
    text_schema = {"type": "string", "maxLength": settings.max_text_chars}
    props["texts"] = {"anyOf": [{"type": "array", "items": text_schema, "minItems": 1,
                                 "maxItems": settings.max_texts}, {"type": "null"}],
                      "description": props["texts"].get("description", "")}
    props["text"] = {"anyOf": [text_schema, {"type": "null"}], "description": props["text"].get("description", "")}
    return {"requestBody": {"required": True, "description": f"At most {settings.max_body_bytes} bytes.",
                            "content": {"application/json": {"schema": schema}}}}


async def _client_gone(receive: Receive) -> None:
    """Returns when the client disconnects (the body is already read, so only http.disconnect can come)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def _wait(request: Request, job: Job) -> JobResult | None:
    watcher = asyncio.ensure_future(_client_gone(request.receive))
    try:
        await asyncio.wait((job.future, watcher), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
    if job.future.done():
        return job.future.result()
    job.future.cancel()  # the batcher skips cancelled jobs
    return None


# A small pool of its own (not asyncio's shared default executor, up to cpu+4 threads created on demand):
# tokenising is CPU-bound on a 2-core budget, so more threads only contend, and a fixed bound keeps the
# server's thread count flat under bursts (tests/reliability/test_disconnect.py checks it).
_TOKEN_COUNTER = ThreadPoolExecutor(max_workers=2, thread_name_prefix="nerservice-tokens")


async def _tokenize(extractor: Any, texts: list[str], settings: ApiSettings) -> list[list[Any]]:
    """Sentences of tokens per text: counted for the batch's token cap, then handed to the Extractor."""
    if sum(map(len, texts)) <= settings.count_tokens_inline_chars:
        return extractor.tokenize(texts)
    return await asyncio.get_running_loop().run_in_executor(_TOKEN_COUNTER, extractor.tokenize, texts)


def _require_admin(settings: ApiSettings, credentials: HTTPAuthorizationCredentials | None) -> None:
    hint = "send the token as 'Authorization: Bearer <token>'"
    if settings.admin_token is None or not settings.admin_token.get_secret_value():  # empty = disabled
        raise UnauthorizedError("admin endpoints are disabled on this server",
                                hint="set NERSERVICE_API_ADMIN_TOKEN to enable them")
    given = credentials.credentials.encode("utf-8", "surrogateescape") if credentials is not None else b""
    expected = settings.admin_token.get_secret_value().encode("utf-8", "surrogateescape")
    # Constant-time: the comparison must not reveal how many leading characters were right.
    if not given or not hmac.compare_digest(given, expected):
        raise UnauthorizedError("missing or wrong admin token", hint=hint)


def build_router(settings: ApiSettings) -> APIRouter:
    router = APIRouter()
    bearer = HTTPBearer(auto_error=False, description="NERSERVICE_API_ADMIN_TOKEN")

    @router.post("/v1/extract", response_model=ExtractResponse, openapi_extra=_extract_body_schema(settings),
                 responses=error_responses(400, 404, 413, 429, 503), summary="Extract entities from texts")
    async def extract(request: Request) -> Response:
        svc = service(request)
        t0 = time.perf_counter()
        parsed = parse_extract(await read_body(request, limit=svc.settings.max_body_bytes), svc.settings)
        served = svc.slot.require()
        sentences = await _tokenize(served.extractor, parsed.texts, svc.settings)
        job = svc.batcher.submit(parsed.texts, tokens=count_tokens(sentences), model=parsed.model, sentences=sentences)
        result = await _wait(request, job)
        if result is None:
            return Response(status_code=CLIENT_GONE)
        return JSON({
            "model": result.model,
            "results": [{"entities": ents} for ents in result.entities],
            "timing": {"queue_ms": round(result.queue_s * 1000, 3), "inference_ms": round(result.inference_s * 1000, 3),
                       "total_ms": round((time.perf_counter() - t0) * 1000, 3), "batch_texts": result.batch_texts},
        })

    @router.get("/v1/models", response_model=ModelsResponse, summary="The loaded model, its manifest and metrics")
    async def models(request: Request) -> Response:
        slot = service(request).slot
        current = slot.current
        error = slot.error.to_dict() if isinstance(slot.error, NerServiceError) else None
        return JSON({"state": slot.state, "ref": slot.ref, "model": current.describe() if current else None,
                     "error": error})

    @router.post("/v1/models/reload", response_model=ReloadResponse, responses=error_responses(401, 404, 500, 503),
                 summary="Admin: load the version the configured reference points at now, and swap atomically")
    async def reload(request: Request,
                     credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Response:
        svc = service(request)
        _require_admin(svc.settings, credentials)
        try:
            outcome = await svc.slot.reload()
        except Exception:
            svc.metrics.reloads.labels("failed").inc()
            raise
        svc.metrics.reloads.labels("swapped" if outcome["changed"] else "unchanged").inc()
        return JSON(outcome)

    @router.get("/healthz", response_model=Status, summary="Liveness: the process answers")
    async def healthz() -> Response:
        return JSON({"status": "ok"})

    @router.get("/readyz", response_model=Status, responses=error_responses(503),
                summary="Readiness: a model is loaded")
    async def readyz(request: Request) -> Response:
        served = service(request).slot.require()
        return JSON({"status": "ready", "model": served.identity()})

    @router.get("/metrics", summary="Prometheus metrics", response_class=Response,
                responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text format"}})
    async def metrics(request: Request) -> Response:
        return Response(service(request).metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @router.get("/", include_in_schema=False)
    async def page() -> HTMLResponse:
        return HTMLResponse(PAGE_HTML)

    return router
