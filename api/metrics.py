"""Prometheus metrics, one registry per app (tests build several apps in one process), and the ASGI
middleware that counts every request by route and status.

Route labels are the fixed paths of our routes; anything else is ``unmatched``, so a scanner requesting
random URLs cannot blow up the label cardinality.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


class ApiMetrics:
    def __init__(self, routes: Iterable[str]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.routes = frozenset(routes)
        r = self.registry
        self.requests = Counter("nerservice_http_requests", "HTTP requests by route, method and status",
                                ["route", "method", "status"], registry=r)
        self.latency = Histogram("nerservice_http_request_duration_seconds", "Time from request to response",
                                 ["route"], buckets=LATENCY_BUCKETS, registry=r)
        self.batch_texts = Histogram("nerservice_batch_size_texts", "Texts per model call",
                                     buckets=BATCH_BUCKETS, registry=r)
        self.batch_tokens = Histogram("nerservice_batch_size_tokens", "Tokens per model call",
                                      buckets=(16, 64, 256, 1024, 2048, 4096, 8192, 16384, 65536), registry=r)
        self.queue_wait = Histogram("nerservice_queue_wait_seconds", "Time a request waited for its batch",
                                    buckets=LATENCY_BUCKETS, registry=r)
        self.inference = Histogram("nerservice_inference_seconds", "Model time per batch",
                                   buckets=LATENCY_BUCKETS, registry=r)
        self.queue_depth = Gauge("nerservice_queue_depth", "Requests waiting for the model", registry=r)
        self.rejected = Counter("nerservice_rejected_requests", "Requests refused with 429 (queue full)",
                                registry=r)
        self.abandoned = Counter("nerservice_abandoned_requests",
                                 "Accepted requests dropped (unfinished) because their client went away", registry=r)
        self.abandoned_tokens = Counter("nerservice_abandoned_tokens",
                                        "Tokens of dropped requests that were never run", registry=r)
        self.queued_tokens = Gauge("nerservice_queued_tokens", "Tokens of accepted work not run yet", registry=r)
        self.request_tokens = Histogram("nerservice_request_tokens", "Tokens per accepted request",
                                        buckets=(16, 64, 256, 1024, 4096, 16384, 65536, 262144), registry=r)
        self.model_info = Gauge("nerservice_model_info", "The served model (value 1)",
                                ["name", "version", "source"], registry=r)
        self.model_loaded = Gauge("nerservice_model_loaded_timestamp_seconds", "When the model was loaded",
                                  registry=r)
        self.reloads = Counter("nerservice_model_reloads", "Reload calls by outcome", ["outcome"], registry=r)
        self.xla_shapes = Gauge("nerservice_xla_shapes", "Batch shapes of the served model with an XLA program "
                                "(compiled) or being compiled in the background (pending)", ["state"], registry=r)

    def set_queue_depth_source(self, fn: Callable[[], float]) -> None:
        self.queue_depth.set_function(fn)

    def set_xla_source(self, fn: Callable[[], Any]) -> None:
        """``fn`` returns the served model's BackgroundXlaForward, or None (XLA off, no model yet)."""
        self.xla_shapes.labels("compiled").set_function(lambda: getattr(fn(), "compiled", 0))
        self.xla_shapes.labels("pending").set_function(lambda: getattr(fn(), "pending", 0))

    def set_model(self, *, old: tuple[str, str, str] | None, new: tuple[str, str, str], loaded_at: float) -> None:
        if old is not None and old != new:
            self.model_info.remove(*old)
        self.model_info.labels(*new).set(1)
        self.model_loaded.set(loaded_at)

    def route_label(self, path: str) -> str:
        return path if path in self.routes else "unmatched"

    def render(self) -> bytes:
        return generate_latest(self.registry)


class MetricsMiddleware:
    """Pure ASGI (no BaseHTTPMiddleware: it adds a task and a memory stream per request)."""

    def __init__(self, app: ASGIApp, *, metrics: ApiMetrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500  # if the app raises before starting a response, the server answers 500

        async def send_and_record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_record)
        finally:
            route = self.metrics.route_label(scope["path"])
            method = scope["method"] if scope["method"] in ("GET", "POST", "HEAD", "OPTIONS") else "other"
            self.metrics.requests.labels(route, method, str(status)).inc()
            self.metrics.latency.labels(route).observe(time.perf_counter() - start)
