"""The batcher in-process, on a random-weight model (no training): caps on texts and tokens, large requests
split into pieces that interleave with others, abandoned work dropped and counted right before a batch,
429/413 on the queue's and a request's budgets, a request restarted on a reloaded model, answers
identical to the Extractor's. Plus settings and the error map."""
from __future__ import annotations

import asyncio
import gc
import shutil
import threading
import weakref
from pathlib import Path
from typing import Any

import pytest

from api.batching import Batcher
from api.errors import (
    STATUS,
    NotReadyError,
    OverloadedError,
    RequestTooCostlyError,
    error_payload,
    http_status,
)
from api.metrics import ApiMetrics
from api.model_slot import ModelSlot
from api.routes import ROUTES
from api.settings import ApiSettings, load_settings
from nerservice import errors as core_errors
from nerservice.errors import ConfigError, ModelNotFoundError, NerServiceError
from nerservice.text.prepared import Cost


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


def metric(metrics: ApiMetrics, name: str) -> float:
    return metrics.registry.get_sample_value(name) or 0.0


def test_batches_respect_the_text_cap(random_model_dir, random_extractor) -> None:
    texts = [f"Patients {i} with cancer took aspirin." for i in range(10)]

    async def body(batcher: Batcher, slot: ModelSlot, metrics: ApiMetrics) -> list[Any]:
        jobs = [await batcher.submit([t], served=slot.require()) for t in texts]
        batcher.start()
        return [await j.future for j in jobs]

    results = run_with_batcher(random_model_dir, body, max_batch_texts=4, max_wait_ms=0)
    assert [r.batch_texts for r in results] == [4] * 8 + [2] * 2
    for text, r in zip(texts, results):
        assert r.entities[0] == [e.to_dict() for e in random_extractor.extract([text])[0]]


def test_a_large_request_runs_in_pieces_with_later_requests_in_between(random_model_dir, random_extractor) -> None:
    big = ["Patients with colorectal cancer took aspirin . " * 30] * 8  # 8 texts x 30 sentences x 7 tokens
    small = ["Aspirin caused asthma."] * 3

    async def body(batcher: Batcher, slot: ModelSlot, metrics: ApiMetrics) -> tuple[Any, list[Any], list[str]]:
        served = slot.require()
        order: list[str] = []
        big_job = await batcher.submit(big, served=served)
        batcher.start()
        await asyncio.sleep(0)
        small_jobs = []
        for i, t in enumerate(small):
            small_jobs.append(await batcher.submit([t], served=served))
            small_jobs[-1].future.add_done_callback(lambda _, i=i: order.append(f"small{i}"))
        big_job.future.add_done_callback(lambda _: order.append("big"))
        return await big_job.future, [await j.future for j in small_jobs], order

    # pieces of at most 300 tokens (42 whole sentences): the big request (1680 tokens) needs 6 model calls;
    # the small ones go into the calls right after they arrive instead of waiting for all six.
    big_result, small_results, order = run_with_batcher(random_model_dir, body, max_piece_tokens=300,
                                                       max_batch_tokens=400, max_wait_ms=0, merge_wait_ms=0)
    pieces = random_extractor.prepare(big).split(Cost(300, 300 * 16))
    assert [p.cost.tokens for p in pieces] == [294] * 5 + [210]
    assert big_result.batches == 6 and order[-1] == "big"
    assert all(r.batches == 1 for r in small_results)
    assert big_result.entities == [[e.to_dict() for e in ents] for ents in random_extractor.extract(big)]
    assert small_results[0].entities[0] == [e.to_dict() for e in random_extractor.extract(small[:1])[0]]


def test_a_request_over_its_budget_is_refused_with_413_and_the_queue_budget_with_429(random_model_dir) -> None:
    async def body(batcher: Batcher, slot: ModelSlot, metrics: ApiMetrics) -> float:
        served = slot.require()
        with pytest.raises(RequestTooCostlyError) as info:  # one token per "!": 120 tokens in 240 bytes
            await batcher.submit(["! " * 120], served=served)
        assert info.value.context["limit"] == "NERSERVICE_API_MAX_REQUEST_TOKENS" and http_status(info.value) == 413
        # 90 tokens, but 90 distinct words of 24 characters: 2160 for the char encoder, over 16 x 100
        with pytest.raises(RequestTooCostlyError, match="distinct words"):
            await batcher.submit([" ".join(f"{i:0>24}" for i in range(90))], served=served)
        await batcher.submit(["a b c d " * 20], served=served)  # 80 of the queue's 150 tokens
        await batcher.submit(["a b c d " * 15], served=served)  # 140
        with pytest.raises(OverloadedError) as info:
            await batcher.submit(["a b c d e f g h i j k"], served=served)  # 151
        assert info.value.context["limit"] == "NERSERVICE_API_MAX_QUEUE_TOKENS" and http_status(info.value) == 429
        batcher.start()
        return metric(metrics, "nerservice_rejected_requests_total")

    assert run_with_batcher(random_model_dir, body, max_request_tokens=100, max_queue_tokens=150) == 1


def test_abandoned_work_is_dropped_before_its_batch_and_counted(random_model_dir) -> None:
    async def body(batcher: Batcher, slot: ModelSlot, metrics: ApiMetrics) -> tuple[list[int], float, float, int]:
        served = slot.require()
        jobs = [await batcher.submit([f"Patient {i} had leukemia."], served=served) for i in range(3)]
        big = await batcher.submit(["Patients had cancer . " * 50], served=served)  # 200 tokens, 5 pieces
        jobs[1].future.cancel()  # what the handler does when its client disconnects
        batcher.start()
        sizes = [(await jobs[i].future).batch_texts for i in (0, 2)]
        while big.batches < 1:  # its first piece ran with the others; then its client leaves
            await asyncio.sleep(0.001)
        big.future.cancel()
        for _ in range(200):
            if metric(metrics, "nerservice_abandoned_requests_total") == 2:
                break
            await asyncio.sleep(0.005)
        unrun = sum(p.cost.tokens for p in big.pieces[big.batches:])
        return (sizes, metric(metrics, "nerservice_abandoned_requests_total"),
                metric(metrics, "nerservice_abandoned_tokens_total"), big.batches, unrun)

    sizes, abandoned, tokens, big_batches, unrun = run_with_batcher(
        random_model_dir, body, max_wait_ms=0, merge_wait_ms=0, max_piece_tokens=50)
    assert sizes == [3, 3] and abandoned == 2
    assert big_batches < 5 and tokens == 5 + unrun > 5  # the cancelled small one, and the big one's unrun pieces


def test_full_queue_refuses_with_429(random_model_dir) -> None:
    async def body(batcher: Batcher, slot: ModelSlot, metrics: ApiMetrics) -> float:
        served = slot.require()
        await batcher.submit(["a"], served=served)
        await batcher.submit(["b"], served=served)
        with pytest.raises(OverloadedError) as info:
            await batcher.submit(["c"], served=served)
        assert http_status(info.value) == 429 and "NERSERVICE_API_MAX_QUEUE" in str(info.value.context)
        batcher.start()
        return metric(metrics, "nerservice_rejected_requests_total")

    assert run_with_batcher(random_model_dir, body, max_queue=2) == 1


def test_a_reload_between_pieces_restarts_the_request_on_the_new_model(random_model_dir, tmp_path: Path) -> None:
    served_dir = shutil.copytree(random_model_dir, tmp_path / "served")
    texts = ["Patients with cancer took aspirin . " * 20] * 3

    async def body(batcher: Batcher, slot: ModelSlot, metrics: ApiMetrics) -> tuple[Any, str]:
        from random_model import build_random_model

        job = await batcher.submit(texts, served=slot.require(), model=slot.require().name)
        assert len(job.pieces) >= 4
        batcher.start()
        while job.batches < 1:
            await asyncio.sleep(0.001)
        gate = threading.Event()  # hold the inference thread while the new version loads
        batcher._infer_thread.submit(gate.wait)
        shutil.rmtree(served_dir)
        build_random_model(served_dir, seed=99)
        await slot.reload()
        gate.set()
        result = await job.future
        return result, slot.require().version

    result, version = run_with_batcher(served_dir, body, max_piece_tokens=60, max_wait_ms=0, merge_wait_ms=0)
    from nerservice.inference import Extractor

    assert result.model["version"] == version  # every piece ran on the new model
    assert result.entities == [[e.to_dict() for e in ents] for ents in Extractor.load(served_dir).extract(texts)]


def test_error_statuses_live_in_the_api() -> None:
    assert not hasattr(NerServiceError, "http_status")  # the core knows codes, not HTTP
    for cls in vars(core_errors).values():
        if isinstance(cls, type) and issubclass(cls, NerServiceError):
            assert http_status(cls.__new__(cls)) in (400, 404, 409, 500), cls
    assert http_status(ModelNotFoundError("x")) == 404 and http_status(NotReadyError("x")) == 503
    assert len({cls.code for cls in STATUS}) == len(STATUS)  # one code per class


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


def test_reload_swaps_and_frees_the_old_model(random_model_dir, tmp_path: Path, monkeypatch) -> None:
    from api import model_slot
    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.model_folder import save_model

    monkeypatch.setattr(model_slot, "RELEASE_DELAY_S", 0.01)
    served = shutil.copytree(random_model_dir, tmp_path / "served")
    settings = ApiSettings(model=str(served), xla="off", runtime="keras")  # the Keras model and TF heap

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
