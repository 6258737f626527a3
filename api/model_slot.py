"""The served model: what is loaded, where it came from, and the atomic swap on reload.

A ``ServedModel`` is immutable: the batcher reads ``slot.current`` once per batch, so a batch that started
on the old model finishes on it, and the next batch sees the new one.  Loading runs on its own thread
(not the inference thread), so requests keep being answered by the old model while the new one loads.
"""
from __future__ import annotations

import asyncio
import gc
import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from api.errors import NotReadyError
from api.settings import ApiSettings
from nerservice.artifacts.layout import MANIFEST
from nerservice.errors import ModelLoadError, NerServiceError

log = logging.getLogger("nerservice.api")

WARMUP_TEXT = "Warm-up sentence for the tagger. It has two sentences."
# After a reload, wait this long before collecting the old model (a batch may still be running on it).
RELEASE_DELAY_S = 30.0


def freeze_heap() -> None:
    """Move every object alive now (TensorFlow, Keras, the model: ~500k objects) into the GC's permanent
    generation. Unfrozen, each automatic full collection scanned them all and paused the whole process
    for ~240 ms (measured): that was the p99 of the service under load."""
    gc.freeze()


def release_and_refreeze() -> None:
    """After a reload: let the old model's objects be collected (they are frozen too), then freeze again.
    One full collection: a single pause of a few hundred ms per reload."""
    gc.unfreeze()
    gc.collect()
    freeze_heap()


@dataclass(frozen=True)
class ModelSource:
    """Where a reference points right now, read without loading any weights."""

    ref: str
    path: Path
    kind: str  # "store" or "directory"
    name: str
    version: str
    aliases: tuple[str, ...] = ()
    store_metrics: dict[str, Any] = field(default_factory=dict)

    def same_as(self, other: ModelSource) -> bool:
        return (self.kind, self.name, self.version, self.path) == (other.kind, other.name, other.version, other.path)


@dataclass(frozen=True)
class ServedModel:
    source: ModelSource
    extractor: Any  # nerservice.inference.Extractor (imported lazily: a Keras model pulls in TensorFlow)
    manifest: dict[str, Any]
    loaded_at: float
    load_seconds: float

    @property
    def name(self) -> str:
        return self.source.name

    @property
    def version(self) -> str:
        return self.source.version

    def identity(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version}

    def matches(self, requested: str) -> bool:
        """Whether a client's ``model`` field names this model: the configured reference, the bare name,
        ``name/VERSION``, ``name@VERSION`` or ``name@ALIAS`` for an alias this version held when loaded."""
        s = self.source
        accepted = {s.ref, s.name, f"{s.name}/{s.version}", f"{s.name}@{s.version}",
                    *(f"{s.name}@{a}" for a in s.aliases)}
        return requested.strip() in accepted

    def describe(self, *, paths: bool = False) -> dict[str, Any]:
        """What GET /v1/models shows. ``paths=False`` (no admin token): no server file-system paths, i.e.
        no folder, no folder reference, and absolute paths in the lineage replaced."""
        loaded = self.extractor.loaded
        out = {
            "name": self.name, "version": self.version, "ref": self.source.ref, "source": self.source.kind,
            "aliases": list(self.source.aliases), "path": str(self.source.path),
            "labels": list(self.extractor.labels),
            "metrics": self.source.store_metrics or loaded.metrics,
            "manifest": self.manifest, "lineage": loaded.lineage,
            "loaded_at": self.loaded_at, "load_seconds": round(self.load_seconds, 3),
            "runtime": self.extractor.runtime, "word_cache": self.extractor.word_cache_stats(),
        }
        if not paths:
            del out["path"]
            if self.source.kind != "store":
                del out["ref"]
            out["lineage"] = _without_paths(out["lineage"])
        return out


PATH_HIDDEN = "(a server path: shown with the admin token)"


def _without_paths(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_paths(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_paths(v) for v in value]
    if isinstance(value, str) and (value.startswith(("/", "~", "\\")) or (len(value) > 2 and value[1:3] == ":\\")):
        return PATH_HIDDEN
    return value


def locate(ref: str) -> ModelSource:
    """Resolve ``ref`` (a folder or a store reference) to a concrete, pinned version."""
    from nerservice.artifacts.resolve import resolve

    r = resolve(ref)
    return ModelSource(ref=r.ref, path=r.path, kind=r.kind, name=r.name, version=r.version, aliases=r.aliases,
                       store_metrics=r.store_metrics)


def extractor_options(settings: ApiSettings) -> dict[str, Any]:
    """Extractor keyword arguments for these settings (the benchmark's in-process baseline uses them too)."""
    return {"max_sentence_tokens": settings.max_sentence_tokens, "batch_size": settings.model_batch_sentences,
            "token_budget": settings.max_batch_tokens,
            "jit_compile": "background" if settings.xla == "background" else False,
            "runtime": settings.runtime, "threads": settings.ort_threads or None, "word_cache": settings.word_cache,
            "head": settings.head}


def load_served_model(source: ModelSource, settings: ApiSettings) -> ServedModel:
    """Blocking: load weights, build the Extractor, run one warm-up extraction."""
    from nerservice.inference import Extractor

    t0 = time.perf_counter()
    extractor = Extractor.load(source.path, **extractor_options(settings))
    if settings.warmup:
        extractor.extract([WARMUP_TEXT])
    manifest = json.loads((source.path / MANIFEST).read_text(encoding="utf-8"))
    return ServedModel(source, extractor, manifest, loaded_at=time.time(), load_seconds=time.perf_counter() - t0)


class ModelSlot:
    """Holds the current model; loads and swaps on its own thread. ``current`` is None until loaded."""

    def __init__(self, ref: str | None, settings: ApiSettings, *,
                 on_swap: Callable[[ServedModel | None, ServedModel], None] | None = None) -> None:
        self.ref, self.settings = ref, settings
        self.current: ServedModel | None = None
        self.state = "empty" if ref is None else "loading"
        self.error: NerServiceError | None = None
        self._on_swap = on_swap
        self._lock = asyncio.Lock()
        self._loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nerservice-loader")
        self._release: asyncio.Task[None] | None = None

    @property
    def ref_is_path(self) -> bool:
        """The configured reference names a folder (then it is a server path, not shown to the public)."""
        if self.ref is None:
            return False
        if self.ref.startswith(("/", "./", "../", "~")):
            return True
        try:
            return Path(self.ref).exists()
        except OSError:  # e.g. ENAMETOOLONG
            return False

    def require(self) -> ServedModel:
        model = self.current
        if model is None:
            raise self.not_ready_error()
        return model

    def not_ready_error(self) -> NotReadyError:
        if self.ref is None:
            return NotReadyError("no model configured", hint="set NERSERVICE_API_MODEL to a model folder or "
                                 "a store reference such as demo@production")
        # Not the reference itself when it is a folder: /readyz is public, server paths are not.
        what = "the configured model folder" if self.ref_is_path else f"model {self.ref!r}"
        if self.state == "failed" and self.error is not None:
            return NotReadyError(f"{what} failed to load: [{self.error.code}]", cause=self.error.code,
                                 hint="the server log and GET /v1/models with the admin token say why")
        return NotReadyError(f"{what} is still loading")

    async def load_initial(self) -> None:
        try:
            await self.reload()
        except NerServiceError as exc:  # stay alive and say why in /readyz; a later reload may succeed
            log.error("model %r failed to load: [%s] %s", self.ref, exc.code, exc.message)
        except Exception as exc:
            log.exception("model %r failed to load", self.ref)
            self.state, self.error = "failed", ModelLoadError(f"{type(exc).__name__}: {exc}")

    async def reload(self) -> dict[str, Any]:
        """Re-resolve the configured reference; load and swap if it points somewhere new."""
        if self.ref is None:
            raise self.not_ready_error()
        loop = asyncio.get_running_loop()
        async with self._lock:  # one reload at a time; a second caller re-checks after the first
            previous = self.current
            try:
                source = await loop.run_in_executor(self._loader, locate, self.ref)
                if previous is not None and previous.source.same_as(source):
                    return {"changed": False, "previous": previous.identity(), "current": previous.identity()}
                log.info("loading model %s version %s from %s", source.name, source.version, source.path)
                model = await loop.run_in_executor(self._loader, load_served_model, source, self.settings)
            except NerServiceError as exc:
                if previous is None:
                    self.state, self.error = "failed", exc
                raise
            self.current, self.state, self.error = model, "ready", None  # the swap: one assignment
            if previous is None:
                freeze_heap()
            else:
                self._release = loop.create_task(self._release_later(), name="nerservice-release-old-model")
            log.info("serving model %s version %s (loaded in %.1f s)", model.name, model.version, model.load_seconds)
            if self._on_swap is not None:
                self._on_swap(previous, model)
            return {"changed": True, "previous": previous.identity() if previous else None,
                    "current": model.identity()}

    async def _release_later(self) -> None:
        await asyncio.sleep(RELEASE_DELAY_S)
        await asyncio.get_running_loop().run_in_executor(self._loader, release_and_refreeze)

    def close(self) -> None:
        if self._release is not None:
            self._release.cancel()
        self._loader.shutdown(wait=False, cancel_futures=True)
