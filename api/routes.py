"""HTTP routes. Handlers validate, submit to the batcher and return what the response model declares; the
batcher owns tokenising, costing and running (api/batching.py).

Routes are module-level; what they need comes in through dependencies (``ServiceDep``, ``AdminDep``), so a
new endpoint (e.g. documents) follows the same shape: ``async def handler(svc: ServiceDep, ...)``.
"""
from __future__ import annotations

import asyncio
import hmac
import time
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.responses import HTMLResponse, Response
from starlette.types import Receive

from api.batching import Batcher, Job, JobResult, wrong_model
from api.documents import document_results, format_output, parse_documents
from api.errors import UnauthorizedError
from api.limits import parse_extract, read_body, require_json
from api.metrics import ApiMetrics
from api.model_slot import ModelSlot
from api.page import PAGE_HTML
from api.schemas import (
    DocumentsRequest,
    DocumentsResponse,
    ExtractRequest,
    ExtractResponse,
    ModelsResponse,
    ReloadResponse,
    Status,
    error_responses,
)
from api.settings import ApiSettings
from nerservice.errors import NerServiceError

ROUTES = ("/", "/v1/extract", "/v1/documents", "/v1/models", "/v1/models/reload", "/healthz", "/readyz", "/metrics")
CLIENT_GONE = 499  # nginx's "client closed request": nobody reads it, but the metrics count it


@dataclass
class Service:
    settings: ApiSettings
    metrics: ApiMetrics
    slot: ModelSlot
    batcher: Batcher


# Dependencies are coroutines: FastAPI runs a plain ``def`` dependency on a worker thread, a thread hop
# per request (and threads that the disconnect test sees appear under load).
async def get_service(request: Request) -> Service:
    return request.app.state.service  # type: ignore[no-any-return]  # set by the lifespan (api/main.py)


ServiceDep = Annotated[Service, Depends(get_service)]
_bearer = HTTPBearer(auto_error=False, description="NERSERVICE_API_ADMIN_TOKEN")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def check_admin(settings: ApiSettings, credentials: HTTPAuthorizationCredentials | None) -> None:
    if settings.admin_token is None or not settings.admin_token.get_secret_value():  # empty = disabled
        raise UnauthorizedError("admin endpoints are disabled on this server",
                                hint="set NERSERVICE_API_ADMIN_TOKEN to enable them")
    given = credentials.credentials.encode("utf-8", "surrogateescape") if credentials is not None else b""
    expected = settings.admin_token.get_secret_value().encode("utf-8", "surrogateescape")
    # Constant-time: the comparison must not reveal how many leading characters were right.
    if not given or not hmac.compare_digest(given, expected):
        raise UnauthorizedError("missing or wrong admin token",
                                hint="send the token as 'Authorization: Bearer <token>'")


async def require_admin(svc: ServiceDep, credentials: Credentials) -> None:
    check_admin(svc.settings, credentials)


async def admin_view(svc: ServiceDep, credentials: Credentials) -> bool:
    """True with the right admin token, False with none; a wrong token (or any token while admin is
    disabled) is a 401, so a client never mistakes a typo for the public view."""
    if credentials is None:
        return False
    check_admin(svc.settings, credentials)
    return True


AdminView = Annotated[bool, Depends(admin_view)]
AdminDep = Annotated[None, Depends(require_admin)]


def extract_body_schema(settings: ApiSettings) -> dict[str, Any]:
    """The request body schema with this server's limits filled in (the handler reads the body itself, so
    the byte limit applies before any parsing); api/main.py puts it into the OpenAPI document."""
    schema = ExtractRequest.model_json_schema()
    props = schema["properties"]
    text_schema = {"type": "string", "maxLength": settings.max_text_chars}
    props["texts"] = {"anyOf": [{"type": "array", "items": text_schema, "minItems": 1,
                                 "maxItems": settings.max_texts}, {"type": "null"}],
                      "description": props["texts"].get("description", "")}
    props["text"] = {"anyOf": [text_schema, {"type": "null"}], "description": props["text"].get("description", "")}
    return {"required": True, "description": f"At most {settings.max_body_bytes} bytes, as application/json.",
            "content": {"application/json": {"schema": schema}}}


def documents_body_schema(settings: ApiSettings) -> tuple[dict[str, Any], dict[str, Any]]:
    """/v1/documents' request body schema with this server's limits, and the component schemas it refers to."""
    schema = DocumentsRequest.model_json_schema(ref_template="#/components/schemas/{model}")
    defs = schema.pop("$defs", {})
    defs["PassageIn"]["properties"]["text"]["maxLength"] = settings.max_text_chars
    docs = schema["properties"]["documents"]
    for option in docs.get("anyOf", []):
        if option.get("type") == "array":
            option["maxItems"] = settings.max_texts
    body = {"required": True, "description": f"At most {settings.max_body_bytes} bytes, as application/json; "
            f"at most {settings.max_texts} passages in all, {settings.max_text_chars} characters each.",
            "content": {"application/json": {"schema": schema}}}
    return body, defs


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
    job.future.cancel()  # the batcher drops the rest of its work before the next batch, and counts it
    return None


router = APIRouter()


@router.post("/v1/extract", response_model=ExtractResponse, summary="Extract entities from texts",
             responses=error_responses(400, 404, 408, 413, 415, 429, 503))
async def extract(request: Request, svc: ServiceDep) -> Any:
    t0 = time.perf_counter()
    require_json(request)
    parsed = parse_extract(await read_body(request, limit=svc.settings.max_body_bytes), svc.settings)
    result = await _run(request, svc, parsed.texts, parsed.model)
    if result is None:
        return Response(status_code=CLIENT_GONE)
    return {"model": result.model, "results": [{"entities": ents} for ents in result.entities],
            "timing": _timing(result, t0)}


@router.post("/v1/documents", response_model=DocumentsResponse,
             responses=error_responses(400, 404, 408, 413, 415, 429, 503),
             summary="Extract entities from whole documents; entities at document offsets")
async def documents(request: Request, svc: ServiceDep) -> Any:
    """Every passage is one text of /v1/extract's pipeline: same limits, costing, batching, errors."""
    t0 = time.perf_counter()
    require_json(request)
    parsed = parse_documents(await read_body(request, limit=svc.settings.max_body_bytes), svc.settings)
    result = await _run(request, svc, parsed.texts, parsed.model)
    if result is None:
        return Response(status_code=CLIENT_GONE)
    docs = document_results(parsed.documents, result.entities)
    content = format_output(parsed.documents, docs, parsed.output) if parsed.output else None
    return {"model": result.model, "documents": docs, "content": content, "timing": _timing(result, t0)}


async def _run(request: Request, svc: Service, texts: list[str], model: str | None) -> JobResult | None:
    """Texts through the batcher for the model served now; None when the client left first."""
    served = svc.slot.require()  # once: the request is accepted for this model
    if model is not None and not served.matches(model):
        raise wrong_model(model, served)
    return await _wait(request, await svc.batcher.submit(texts, served=served, model=model))


def _timing(result: JobResult, t0: float) -> dict[str, Any]:
    return {"queue_ms": round(result.queue_s * 1000, 3), "inference_ms": round(result.inference_s * 1000, 3),
            "total_ms": round((time.perf_counter() - t0) * 1000, 3), "batch_texts": result.batch_texts,
            "batches": result.batches}


@router.get("/v1/models", response_model=ModelsResponse, responses=error_responses(401),
            summary="The loaded model, its manifest and metrics; file paths only with the admin token")
async def models(svc: ServiceDep, admin: AdminView) -> Any:
    slot = svc.slot
    current = slot.current
    error = slot.error.to_dict() if isinstance(slot.error, NerServiceError) else None
    if error is not None and not admin:  # load errors name files and folders
        error = {"code": error["code"], "message": "the model failed to load (details with the admin token)"}
    public_ref = admin or current is None or current.source.kind == "store"
    return {"state": slot.state, "ref": slot.ref if public_ref and (admin or not slot.ref_is_path) else None,
            "model": current.describe(paths=admin) if current else None, "error": error}


@router.post("/v1/models/reload", response_model=ReloadResponse, responses=error_responses(401, 404, 500, 503),
             summary="Admin: load the version the configured reference points at now, and swap atomically")
async def reload(svc: ServiceDep, _: AdminDep) -> Any:
    try:
        outcome = await svc.slot.reload()
    except Exception:
        svc.metrics.reloads.labels("failed").inc()
        raise
    svc.metrics.reloads.labels("swapped" if outcome["changed"] else "unchanged").inc()
    return outcome


@router.get("/healthz", response_model=Status, response_model_exclude_none=True,
            summary="Liveness: the process answers")
async def healthz() -> Any:
    return {"status": "ok"}


@router.get("/readyz", response_model=Status, response_model_exclude_none=True, responses=error_responses(503),
            summary="Readiness: a model is loaded")
async def readyz(svc: ServiceDep) -> Any:
    return {"status": "ready", "model": svc.slot.require().identity()}


@router.get("/metrics", summary="Prometheus metrics", response_class=Response,
            responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text format"}})
async def metrics(svc: ServiceDep) -> Response:
    return Response(svc.metrics.render(), media_type=CONTENT_TYPE_LATEST)


@router.get("/", include_in_schema=False)
async def page() -> HTMLResponse:
    return HTMLResponse(PAGE_HTML)
