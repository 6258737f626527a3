"""The batcher in-process, with the real tiny model: caps on texts and tokens, skipped abandoned jobs,
429 on a full queue, the model check, and answers identical to the Extractor's. Plus settings and the
error map."""
from __future__ import annotations

import asyncio
import gc
import shutil
import weakref
from pathlib import Path
from typing import Any

import pytest

from api.batching import Batcher
from api.errors import error_payload
from api.metrics import ApiMetrics
from api.model_slot import ModelSlot
from api.routes import ROUTES
from api.settings import ApiSettings, load_settings
from nerservice.errors import ConfigError, ModelNotFoundError, NotReadyError, OverloadedError

pytestmark = pytest.mark.slow  # needs the tiny model (trained once per session)


def run_with_batcher(model_dir: Path, body: Any, **limits: Any) -> Any:
    """Load the model into a slot, hand (batcher, slot, metrics) to ``body`` (an async function) *before*
    the batcher task starts, so jobs submitted first are all waiting when it forms its first batch."""
    settings = ApiSettings(model=str(model_dir), xla="off", **limits)

    async def main() -> Any:
        metrics = ApiMetrics(ROUTES)
        slot = ModelSlot(settings.model, settings)
        await slot.load_initial()
        batcher = Batcher(slot, settings, metrics)
        try:
            return await body(batcher, slot, metrics)
        finally:
            await batcher.stop()
            slot.close()

    try:
        return asyncio.run(main())
    finally:
        gc.unfreeze()  # the slot froze the heap (as the server does); give the test process its GC back


def test_batches_respect_the_text_cap(tiny_model_dir, tiny_extractor, demo_texts) -> None:
    texts = demo_texts[:10]

    async def body(batcher: Batcher, slot: ModelSlot, metrics: ApiMetrics) -> list[Any]:
        jobs = [batcher.submit([t], tokens=slot.current.extractor.count_tokens([t]), model=None) for t in texts]
        batcher.start()
        return [await j.future for j in jobs]

    results = run_with_batcher(tiny_model_dir, body, max_batch_texts=4, max_wait_ms=0)
    assert [r.batch_texts for r in results] == [4] * 8 + [2] * 2
    for text, r in zip(texts, results):
        assert r.entities[0] == [e.to_dict() for e in tiny_extractor.extract_one(text)]


def test_batches_respect_the_token_budget_and_never_split_a_request(tiny_model_dir) -> None:
    async def body(batcher: Batcher, slot: ModelSlot, metrics: ApiMetrics) -> list[int]:
        jobs = [batcher.submit(["Aspirin caused asthma."] * n, tokens=t, model=None)
                for n, t in [(1, 20), (1, 20), (1, 20), (3, 90), (1, 20)]]
        batcher.start()
        return [(await j.future).batch_texts for j in jobs]

    # budget 50 tokens: 20+20 | 20 (next is 90: over budget, held) | 90 alone (bigger than the budget,
    # still one batch) | 20
    assert run_with_batcher(tiny_model_dir, body, max_batch_tokens=50, max_wait_ms=0) == [2, 2, 1, 3, 1]


def test_abandoned_jobs_are_skipped(tiny_model_dir) -> None:
    async def body(batcher: Batcher, slot: ModelSlot, metrics: ApiMetrics) -> tuple[list[int], float]:
        jobs = [batcher.submit([f"Patient {i} had leukemia."], tokens=5, model=None) for i in range(3)]
        jobs[1].future.cancel()  # what the handler does when its client disconnects
        batcher.start()
        sizes = [(await jobs[i].future).batch_texts for i in (0, 2)]
        return sizes, metrics.registry.get_sample_value("nerservice_abandoned_requests_total")

    sizes, abandoned = run_with_batcher(tiny_model_dir, body, max_wait_ms=0)
    assert sizes == [2, 2] and abandoned == 1


def test_full_queue_refuses_with_429(tiny_model_dir) -> None:
    async def body(batcher: Batcher, slot: ModelSlot, metrics: ApiMetrics) -> float:
        batcher.submit(["a"], tokens=1, model=None)
        batcher.submit(["b"], tokens=1, model=None)
        with pytest.raises(OverloadedError) as info:
            batcher.submit(["c"], tokens=1, model=None)
        assert info.value.http_status == 429 and "NERSERVICE_API_MAX_QUEUE" in str(info.value.context)
        batcher.start()
        return metrics.registry.get_sample_value("nerservice_rejected_requests_total")

    assert run_with_batcher(tiny_model_dir, body, max_queue=2) == 1


def test_model_check_and_not_ready(tiny_model_dir) -> None:
    async def body(batcher: Batcher, slot: ModelSlot, metrics: ApiMetrics) -> None:
        name, version = slot.current.name, slot.current.version
        for ok in (name, f"{name}/{version}", f"{name}@{version}", str(tiny_model_dir)):
            batcher.submit(["x"], tokens=1, model=ok)
        with pytest.raises(ModelNotFoundError):
            batcher.submit(["x"], tokens=1, model=f"{name}/999")
        slot.current = None  # as before the first load
        with pytest.raises(NotReadyError):
            batcher.submit(["x"], tokens=1, model=None)

    run_with_batcher(tiny_model_dir, body)


def test_settings_from_env_and_errors(monkeypatch) -> None:
    monkeypatch.setenv("NERSERVICE_MODEL", "fallback@production")
    assert load_settings().model == "fallback@production"
    monkeypatch.setenv("NERSERVICE_API_MODEL", "demo@production")
    assert load_settings().model == "demo@production"  # the prefixed name wins
    monkeypatch.setenv("NERSERVICE_API_MAX_QUEUE", "lots")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "NERSERVICE_API_MAX_QUEUE" in str(info.value)
    monkeypatch.setenv("NERSERVICE_API_MAX_QUEUE", "0")
    with pytest.raises(ConfigError):
        load_settings()
    monkeypatch.setenv("NERSERVICE_API_MAX_QUEUE", "8")
    assert load_settings().max_queue == 8
    monkeypatch.setenv("NERSERVICE_API_IMAGE", "nerservice-api:dev")  # compose's image name: not a setting
    assert load_settings().max_queue == 8
    monkeypatch.setenv("NERSERVICE_API_MAX_TEXT", "5")  # a typo of MAX_TEXTS must not pass silently
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "NERSERVICE_API_MAX_TEXT" in err.value.message and "NERSERVICE_API_MAX_TEXTS" in (err.value.hint or "")


def test_settings_defaults_keep_cors_off_and_admin_disabled() -> None:
    s = ApiSettings()
    assert s.cors_origins == [] and s.admin_token is None
    assert "secret" not in repr(ApiSettings(admin_token="secret"))  # SecretStr never prints
    assert ApiSettings(admin_token="").admin_token is None  # empty = admin off, never "no token needed"
    assert ApiSettings(admin_token="  ").admin_token is None


def test_unknown_exceptions_become_a_generic_500() -> None:
    status, body = error_payload(RuntimeError("patient John Doe has leukemia"))
    assert status == 500 and body["error"]["code"] == "NER000"
    assert "John" not in str(body)  # internal messages may hold request text: never echoed


def test_reload_swaps_and_frees_the_old_model(tiny_model_dir, tmp_path: Path, monkeypatch) -> None:
    import api.model_slot as model_slot
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.model_folder import save_model

    monkeypatch.setattr(model_slot, "RELEASE_DELAY_S", 0.01)
    served = shutil.copytree(tiny_model_dir, tmp_path / "served")
    settings = ApiSettings(model=str(served), xla="off")

    async def main() -> tuple[dict[str, Any], Any, int]:
        slot = ModelSlot(settings.model, settings)
        await slot.load_initial()
        assert gc.get_freeze_count() > 100_000  # TF + Keras + the model, out of the GC's way
        old_model = weakref.ref(slot.current.extractor.loaded.model)
        loaded = load_model(served)  # a new version in place: same weights, different metrics
        save_model(served, model=loaded.model, vocabs=loaded.vocabs, config=loaded.config,
                   metrics={**loaded.metrics, "note": "v2"}, lineage=loaded.lineage)
        del loaded
        outcome = await slot.reload()
        await slot._release  # the delayed collection of the old model
        slot.close()
        return outcome, old_model, gc.get_freeze_count()

    try:
        outcome, old_model, frozen = asyncio.run(main())
    finally:
        gc.unfreeze()
    assert outcome["changed"] and outcome["previous"]["version"] != outcome["current"]["version"]
    assert old_model() is None  # collected, not kept alive in the frozen generation
    assert frozen > 100_000  # and the heap is frozen again afterwards
