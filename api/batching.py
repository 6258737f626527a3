"""Dynamic micro-batching: one background task owns the queue, forms batches, and runs them on the one
inference thread.

Shape borrowed from text-embeddings-inference's router: handlers only enqueue a ``Job`` and await its
future; the batcher takes the first waiting job, adds whatever else is already queued while the batch stays
under ``max_batch_texts`` and ``max_batch_tokens``, and only when the queue is empty waits up to
``max_wait_ms`` (counted from the first job's arrival) for company.  Right after a batch it also waits up
to ``merge_wait_ms`` for the requests its clients are about to send (see settings.py: without it, clients
under steady load split into groups that alternate with half-size, less efficient model calls).  A
request is never split: one bigger than a cap runs alone.  Jobs whose future is already done (the client
went away) are skipped, never run.

Keras/TF calls are not safe to run on the event loop (they block it for the whole batch), so inference
runs on a single dedicated thread; batching, not more threads, gives the throughput on 2 cores.
"""
from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from api.metrics import ApiMetrics
from api.model_slot import ModelSlot, ServedModel
from api.settings import ApiSettings
from nerservice.errors import ModelNotFoundError, NerServiceError, NotReadyError, OverloadedError

log = logging.getLogger("nerservice.api")


@dataclass(eq=False)
class Job:
    texts: list[str]
    tokens: int
    model: str | None  # what the client asked for, checked against the model that runs the batch
    future: asyncio.Future[Any]
    enqueued: float = field(default_factory=time.perf_counter)
    # The texts split into sentences of tokens by the handler (it had to tokenise them to count tokens);
    # tokenising depends on no weights, so a model swapped in meanwhile takes them as they are.
    sentences: list[list[Any]] | None = None


@dataclass(frozen=True)
class JobResult:
    entities: list[list[dict[str, Any]]]
    model: dict[str, str]
    queue_s: float
    inference_s: float
    batch_texts: int


def wrong_model(requested: str, served: ServedModel) -> ModelNotFoundError:
    return ModelNotFoundError(
        f"model {requested!r} is not served here; this server serves {served.name} version {served.version}",
        requested=requested, served=served.identity(),
        hint=f"omit 'model' or send one of: {served.source.ref!r}, {served.name!r}, "
        f"'{served.name}/{served.version}'")


class Batcher:
    def __init__(self, slot: ModelSlot, settings: ApiSettings, metrics: ApiMetrics) -> None:
        self.slot, self.settings, self.metrics = slot, settings, metrics
        self._queue: asyncio.Queue[Job] = asyncio.Queue(maxsize=settings.max_queue)
        self._held: Job | None = None  # taken from the queue but did not fit the previous batch
        self._task: asyncio.Task[None] | None = None
        self._after_batch = False  # the previous loop ran a batch (its clients will be back shortly)
        self._infer_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nerservice-infer")
        metrics.set_queue_depth_source(lambda: self.depth)
        metrics.set_xla_source(lambda: getattr(getattr(slot.current, "extractor", None), "background_xla", None))

    @property
    def depth(self) -> int:
        return self._queue.qsize() + (self._held is not None)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="nerservice-batcher")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        gone = NotReadyError("the server is shutting down")
        for job in self._drain():
            if not job.future.done():
                job.future.set_exception(gone)
        self._infer_thread.shutdown(wait=True, cancel_futures=True)

    def submit(self, texts: list[str], *, tokens: int, model: str | None,
               sentences: list[list[Any]] | None = None) -> Job:
        """Queue a request (raises at once when no model is ready or the queue is full)."""
        served = self.slot.require()
        if model is not None and not served.matches(model):
            raise wrong_model(model, served)
        job = Job(texts, tokens, model, asyncio.get_running_loop().create_future(), sentences=sentences)
        try:
            self._queue.put_nowait(job)
        except asyncio.QueueFull:
            self.metrics.rejected.inc()
            raise OverloadedError(f"the request queue is full ({self.settings.max_queue} requests waiting)",
                                  limit="NERSERVICE_API_MAX_QUEUE", max=self.settings.max_queue,
                                  hint="retry after the Retry-After delay") from None
        return job

    def _drain(self) -> list[Job]:
        jobs = [self._held] if self._held is not None else []
        self._held = None
        while not self._queue.empty():
            jobs.append(self._queue.get_nowait())
        return jobs

    async def _next_job(self, deadline: float | None) -> Job | None:
        """The held job, else the next queued one; waits until ``deadline`` (None = forever)."""
        if self._held is not None:
            job, self._held = self._held, None
            return job
        if deadline is None:
            return await self._queue.get()
        try:
            return self._queue.get_nowait()
        except asyncio.QueueEmpty:
            pass
        timeout = deadline - time.perf_counter()
        if timeout <= 0:
            return None
        try:
            return await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return None

    async def _collect(self) -> list[Job]:
        s = self.settings
        wait, merge = s.max_wait_ms / 1000.0, s.merge_wait_ms / 1000.0
        ready = time.perf_counter()
        # Right after a batch, its clients are about to send their next requests: wait for those too (see
        # merge_wait_ms), else the clients split into groups that alternate with half-size model calls.
        merge_until = ready + merge if self._after_batch and merge > 0 else None
        self._after_batch = False
        batch: list[Job] = []
        texts = tokens = 0
        last_fresh: float | None = None  # arrival of the latest job that came after `ready`
        while texts < s.max_batch_texts and tokens < s.max_batch_tokens:
            deadline = None  # the first job is awaited for as long as it takes
            if batch:
                deadline = batch[0].enqueued + wait
                if merge_until is not None:  # until the first fresh arrival, then while they keep coming
                    more = merge_until if last_fresh is None else min(merge_until, last_fresh + wait)
                    deadline = max(deadline, more)
            job = await self._next_job(deadline)
            if job is None:
                break
            if job.future.done():  # client went away while queued
                self.metrics.abandoned.inc()
                continue
            if batch and (texts + len(job.texts) > s.max_batch_texts or tokens + job.tokens > s.max_batch_tokens):
                self._held = job
                break
            batch.append(job)
            texts, tokens = texts + len(job.texts), tokens + job.tokens
            if job.enqueued > ready:
                last_fresh = job.enqueued
        return batch

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._collect()
            try:
                await self._run_batch(loop, batch)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 — a bug here must fail one batch, not every later request
                log.exception("batcher error")
                for job in batch:
                    if not job.future.done():
                        job.future.set_exception(exc)

    async def _run_batch(self, loop: asyncio.AbstractEventLoop, batch: list[Job]) -> None:
        if not batch:
            return
        try:
            served = self.slot.require()  # read once: the whole batch runs on this model
        except NotReadyError as exc:
            for job in batch:
                if not job.future.done():
                    job.future.set_exception(exc)
            return
        runnable = []
        for job in batch:
            if job.model is not None and not served.matches(job.model):  # a reload happened meanwhile
                if not job.future.done():
                    job.future.set_exception(wrong_model(job.model, served))
            else:
                runnable.append(job)
        if runnable:
            await self._infer(loop, served, runnable)
            self._after_batch = True

    async def _infer(self, loop: asyncio.AbstractEventLoop, served: ServedModel, batch: list[Job]) -> None:
        texts = [t for job in batch for t in job.texts]
        sentences = ([s for job in batch for s in job.sentences]
                     if all(job.sentences is not None for job in batch) else None)
        started = time.perf_counter()
        try:
            entities = await loop.run_in_executor(self._infer_thread, _extract, served, texts, sentences)
        except asyncio.CancelledError:
            for job in batch:
                if not job.future.done():
                    job.future.set_exception(NotReadyError("the server is shutting down"))
            raise
        except Exception as exc:  # noqa: BLE001 — the batcher must survive a failing batch
            if len(batch) > 1:  # isolate the request that fails: the others in its batch still get answers
                for job in batch:
                    await self._infer(loop, served, [job])
                return
            if not isinstance(exc, NerServiceError):
                log.exception("inference failed on a request of %d texts", len(texts))
            if not batch[0].future.done():
                batch[0].future.set_exception(exc)
            return
        inference_s = time.perf_counter() - started
        m = self.metrics
        m.batch_texts.observe(len(texts))
        m.batch_tokens.observe(sum(job.tokens for job in batch))
        m.inference.observe(inference_s)
        identity = served.identity()
        i = 0
        for job in batch:
            n = len(job.texts)
            queue_s = started - job.enqueued
            m.queue_wait.observe(queue_s)
            if not job.future.done():
                job.future.set_result(JobResult(entities[i:i + n], identity, queue_s, inference_s, len(texts)))
            i += n


def _extract(served: ServedModel, texts: list[str], sentences: list[list[Any]] | None) -> list[list[dict[str, Any]]]:
    """On the inference thread: the Extractor, and the conversion to plain dicts (off the event loop)."""
    return [[e.to_dict() for e in ents] for ents in served.extractor.extract(texts, sentences=sentences)]
