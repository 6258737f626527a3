"""App factory and lifespan: ``create_app(settings)`` builds the service; ``nerservice serve`` runs it with
``uvicorn.run(app)`` behind the connection guard (api/server.py).  ``uvicorn api.main:app`` also works:
``app`` is built from the environment on first access (importing this module reads nothing).

The model is loaded in the lifespan, in the background, so the port opens at once: /healthz answers
immediately and /readyz turns 200 when the model is in.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

from api.batching import Batcher
from api.errors import install_error_handlers
from api.metrics import ApiMetrics, MetricsMiddleware
from api.model_slot import ModelSlot, ServedModel
from api.routes import (
    ROUTES,
    Service,
    documents_body_schema,
    extract_body_schema,
    router,
)
from api.settings import ApiSettings, load_settings
from nerservice import __version__

log = logging.getLogger("nerservice.api")


def _ensure_logging() -> None:
    """Our INFO lines (model loaded / reloaded) show up beside uvicorn's unless the host app configured
    logging itself. Request texts and tokens are never logged at any level."""
    logger = logging.getLogger("nerservice")
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s:     %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


SWAGGER_UI = Path(__file__).resolve().parent / "static" / "swagger-ui"  # swagger-ui-dist, see SOURCE.txt


def _offline_docs(app: FastAPI) -> None:
    """Interactive API docs at /docs with Swagger UI's files served by this process (no other origin)."""
    app.mount("/static/swagger-ui", StaticFiles(directory=SWAGGER_UI), name="swagger-ui")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title="nerservice API",
                                   swagger_js_url="/static/swagger-ui/swagger-ui-bundle.js",
                                   swagger_css_url="/static/swagger-ui/swagger-ui.css",
                                   swagger_favicon_url="/static/swagger-ui/favicon-32x32.png")


def _openapi_with_limits(app: FastAPI, settings: ApiSettings) -> None:
    """The /v1/extract and /v1/documents handlers read their bodies themselves (byte limit first, 415 for
    other media types), so FastAPI cannot derive the request body schemas: put them in, with this server's
    limits."""
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = FastAPI.openapi(app)
            schema["paths"]["/v1/extract"]["post"]["requestBody"] = extract_body_schema(settings)
            body, defs = documents_body_schema(settings)
            schema["paths"]["/v1/documents"]["post"]["requestBody"] = body
            schema.setdefault("components", {}).setdefault("schemas", {}).update(defs)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def create_app(settings: ApiSettings) -> FastAPI:
    metrics = ApiMetrics(ROUTES)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        def on_swap(old: ServedModel | None, new: ServedModel) -> None:
            def key(m: ServedModel) -> tuple[str, str, str]:
                return (m.name, m.version, m.source.kind)

            metrics.set_model(old=key(old) if old else None, new=key(new), loaded_at=new.loaded_at)

        _ensure_logging()
        slot = ModelSlot(settings.model, settings, on_swap=on_swap)
        batcher = Batcher(slot, settings, metrics)
        app.state.service = Service(settings, metrics, slot, batcher)
        batcher.start()
        loading = asyncio.create_task(slot.load_initial(), name="nerservice-initial-load")
        if settings.model is None:
            log.warning("no model configured: set NERSERVICE_API_MODEL; /readyz answers 503")
        try:
            yield
        finally:
            loading.cancel()
            await batcher.stop()
            slot.close()

    # docs_url/redoc_url off: FastAPI's built-in pages load Swagger UI / ReDoc from a CDN, which an
    # air-gapped deployment cannot reach; /docs is served below from the bundled copy instead.
    app = FastAPI(title="nerservice", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Biomedical named-entity recognition (Bi-LSTM-CNN-Char-CRF) with dynamic "
                  "micro-batching. Errors are JSON: {\"error\": {\"code\", \"message\"}}.")
    _offline_docs(app)
    install_error_handlers(app, retry_after_s=settings.retry_after_s)
    app.include_router(router)
    _openapi_with_limits(app, settings)
    if settings.cors_origins:  # off by default: the page is same-origin and needs no CORS
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["GET", "POST"],
                           allow_headers=["Content-Type", "Authorization"])
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app


_from_env: FastAPI | None = None


def __getattr__(name: str) -> Any:
    """``api.main.app`` for ``uvicorn api.main:app``: built from the environment on first access."""
    global _from_env
    if name != "app":
        raise AttributeError(name)
    if _from_env is None:
        _from_env = create_app(load_settings())
    return _from_env
