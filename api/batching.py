"""Dynamic micro-batching: the batcher owns the queue, the tokenising and costing of requests, forms
micro-batches and runs them on the one inference thread.

Shape borrowed from text-embeddings-inference's router: handlers only ``await batcher.submit(...)`` and
then await the job's future.  ``submit`` prepares the texts (``Extractor.prepare``: tokens, and what the
forward pass will pay for them, see ``nerservice.inference.Cost``), refuses a request that costs more than
one request may (413) or that does not fit the queue's budget (429), and cuts it into pieces of at most
``max_piece_tokens``.  The batch loop takes one piece of each waiting request in turn (round robin, the
requests served in a batch move to the back), while the batch stays under ``max_batch_texts`` and
``max_batch_tokens``; so a large request runs as several model calls with everyone else's requests in
between, instead of holding the model for all of its work.  When nothing is waiting it waits up to
``max_wait_ms`` (counted from the first job's arrival) for company, and right after a batch up to
``merge_wait_ms`` for the requests its clients are about to send (see settings.py).

Right before each batch runs, pieces of requests whose client went away (the handler cancelled the
future) are dropped: the request and its dropped tokens are counted (``nerservice_abandoned_*``).  All the
pieces of one request run on the same model: after a reload, a half-done request starts again on the new
one, so an answer never mixes two models.

Keras/TF calls are not safe to run on the event loop (they block it for the whole batch), so inference
runs on a single dedicated thread; batching, not more threads, gives the throughput on 2 cores.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from api.errors import NotReadyError, OverloadedError, RequestTooCostlyError
from api.metrics import ApiMetrics
from api.model_slot import ModelSlot, ServedModel
from api.settings import ApiSettings
from nerservice.errors import ModelNotFoundError, NerServiceError
from nerservice.text.prepared import Cost, Prepared

log = logging.getLogger("nerservice.api")

EntityDicts = list[list[dict[str, Any]]]  # per text, its entities as JSON-ready dicts
PREPARE_THREADS = 2


@dataclass(eq=False)
class Job:
    pieces: list[Prepared]
    model: str | None  # what the client asked for (already checked against ``served`` by the handler)
    served: ServedModel  # the model the request was accepted for
    future: asyncio.Future[JobResult]
    enqueued: float = field(default_factory=time.perf_counter)
    next: int = 0  # index of the next piece to run
    ran_on: ServedModel | None = None  # the model its pieces ran on so far
    entities: EntityDicts = field(default_factory=list)
    started: float | None = None
    inference_s: float = 0.0
    batches: int = 0
    first_batch_texts: int = 0

    @property
    def n_texts(self) -> int:
        return len(self.pieces[0].texts)

    @property
    def remaining(self) -> Cost:
        return sum((p.cost for p in self.pieces[self.next:]), Cost())

    @property
    def gone(self) -> bool:
        return self.future.done()


@dataclass(frozen=True)
class JobResult:
    entities: EntityDicts
    model: dict[str, str]
    queue_s: float
    inference_s: float
    batch_texts: int
    batches: int


def wrong_model(requested: str, served: ServedModel) -> ModelNotFoundError:
    # ascii(): the requested name is client text and may hold anything, a lone surrogate included.
    return ModelNotFoundError(
        f"model {requested[:200]!a} is not served here; this server serves {served.name} version {served.version}",
        served=served.identity(),
        hint=f"omit 'model' or send one of: {served.source.ref!r}, {served.name!r}, "
        f"'{served.name}/{served.version}'")


def piece_texts(piece: Prepared) -> int:
    """Texts a piece holds sentences of (at least 1: a piece of empty texts still takes a slot)."""
    return max(1, len({i for i, _ in piece.sentences}))


class Batcher:
    def __init__(self, slot: ModelSlot, settings: ApiSettings, metrics: ApiMetrics) -> None:
        self.slot, self.settings, self.metrics = slot, settings, metrics
        self._queue: asyncio.Queue[Job] = asyncio.Queue(maxsize=settings.max_queue)  # arrivals
        self._active: deque[Job] = deque()  # accepted, pieces left to run, in round-robin order
        self._queued_tokens = 0  # tokens of the pieces not run yet, of every accepted job
        self._task: asyncio.Task[None] | None = None
        self._after_batch = False  # the previous loop ran a batch (its clients will be back shortly)
        self._infer_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nerservice-infer")
        # Tokenising is CPU-bound on a 2-core budget: more threads only contend, and a fixed bound keeps the
        # server's thread count flat under bursts (tests/reliability/test_disconnect.py checks it).
        self._prepare_pool = ThreadPoolExecutor(max_workers=PREPARE_THREADS, thread_name_prefix="nerservice-tokens")
        metrics.set_queue_depth_source(lambda: self.depth)
        metrics.queued_tokens.set_function(lambda: self._queued_tokens)
        metrics.set_xla_source(lambda: getattr(getattr(slot.current, "extractor", None), "background_xla", None))

    @property
    def depth(self) -> int:
        return self._queue.qsize() + len(self._active)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="nerservice-batcher")
        # Start both tokenising threads now (a pool starts them on demand): the thread count is flat from
        # the first request on, which is what a leak check can rely on.
        both = threading.Barrier(PREPARE_THREADS)
        for _ in range(PREPARE_THREADS):
            self._prepare_pool.submit(both.wait, 5.0)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        gone = NotReadyError("the server is shutting down")
        for job in self._drain():
            if not job.gone:
                job.future.set_exception(gone)
        self._infer_thread.shutdown(wait=True, cancel_futures=True)
        self._prepare_pool.shutdown(wait=False, cancel_futures=True)

    # --- accepting requests -----------------------------------------------------------------------
    def _check_room(self, tokens: int) -> None:
        s = self.settings
        if self._queue.full():
            self._reject(f"the request queue is full ({s.max_queue} requests waiting)", "NERSERVICE_API_MAX_QUEUE",
                         s.max_queue)
        if self._queued_tokens and self._queued_tokens + tokens > s.max_queue_tokens:
            self._reject(f"the queue holds {self._queued_tokens} tokens of work; this request's {tokens} would "
                         f"pass the limit of {s.max_queue_tokens}", "NERSERVICE_API_MAX_QUEUE_TOKENS",
                         s.max_queue_tokens)

    def _reject(self, message: str, limit: str, value: int) -> None:
        self.metrics.rejected.inc()
        raise OverloadedError(message, limit=limit, max=value, hint="retry after the Retry-After delay")

    async def prepare(self, served: ServedModel, texts: Sequence[str]) -> Prepared:
        """Tokenise and cost (inline when small, else on the tokenising threads: the event loop keeps
        answering other clients meanwhile), stopping as soon as a request is over its budget."""
        prepare = functools.partial(served.extractor.prepare, texts, budget=self.settings.request_budget)
        if sum(map(len, texts)) <= self.settings.count_tokens_inline_chars:
            return prepare()
        return await asyncio.get_running_loop().run_in_executor(self._prepare_pool, prepare)

    async def submit(self, texts: Sequence[str], *, served: ServedModel, model: str | None = None) -> Job:
        """Prepare and queue a request for ``served`` (the handler's one ``slot.require()``); raises at
        once when it costs more than a request may (413) or the queue has no room for it (429)."""
        s = self.settings
        self._check_room(0)  # full already: refuse before paying for tokenising
        prepared = await self.prepare(served, texts)
        cost = prepared.cost
        request_budget = s.request_budget
        if prepared.over_budget or not cost.within(request_budget):
            what = ("tokens", cost.tokens, request_budget.tokens)
            if cost.tokens <= request_budget.tokens:
                what = ("characters of distinct words", cost.word_chars, request_budget.word_chars)
            at_least = "at least " if prepared.over_budget else ""
            raise RequestTooCostlyError(
                f"the request has {at_least}{what[1]} {what[0]}; one request may have at most {what[2]}",
                limit="NERSERVICE_API_MAX_REQUEST_TOKENS", max=what[2], got=what[1],
                hint="split the texts over several requests (punctuation and symbols count one token each)")
        self._check_room(cost.tokens)
        job = Job(prepared.split(s.piece_budget), model, served, asyncio.get_running_loop().create_future())
        job.entities = [[] for _ in texts]
        self._queue.put_nowait(job)  # cannot be full: checked above, and nothing awaited since
        self._queued_tokens += cost.tokens
        self.metrics.request_tokens.observe(cost.tokens)
        return job

    # --- forming batches --------------------------------------------------------------------------
    def _drain(self) -> list[Job]:
        jobs = list(self._active)
        self._active.clear()
        while not self._queue.empty():
            jobs.append(self._queue.get_nowait())
        self._queued_tokens = 0
        return jobs

    def _retire(self, job: Job) -> None:
        """Take a job out of the rotation (done, failed or abandoned); its unrun tokens leave the queue."""
        self._queued_tokens -= job.remaining.tokens
        job.next = len(job.pieces)
        try:
            self._active.remove(job)
        except ValueError:
            pass

    def _abandon(self, job: Job) -> None:
        dropped = job.remaining.tokens
        self._retire(job)
        self.metrics.abandoned.inc()
        self.metrics.abandoned_tokens.inc(dropped)

    async def _arrival(self, deadline: float | None) -> Job | None:
        """The next newly queued job; waits until ``deadline`` (None = forever)."""
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

    def _candidate(self, taken: set[Job]) -> Job | None:
        """The first job of the rotation without a piece in this batch yet (arrivals join the rotation)."""
        while not self._queue.empty():
            self._active.append(self._queue.get_nowait())
        return next((j for j in self._active if j not in taken), None)

    async def _collect(self) -> list[tuple[Job, Prepared]]:
        s = self.settings
        wait, merge = s.max_wait_ms / 1000.0, s.merge_wait_ms / 1000.0
        ready = time.perf_counter()
        # Right after a batch, its clients are about to send their next requests: wait for those too (see
        # merge_wait_ms), else the clients split into groups that alternate with half-size model calls.
        merge_until = ready + merge if self._after_batch and merge > 0 else None
        self._after_batch = False
        budget = s.batch_budget
        batch: list[tuple[Job, Prepared]] = []
        taken: set[Job] = set()
        texts, cost = 0, Cost()
        first_enqueued: float | None = None
        last_fresh: float | None = None  # arrival of the latest job that came after `ready`
        while texts < s.max_batch_texts and cost.tokens < budget.tokens:
            job = self._candidate(taken)
            if job is None:
                deadline = None  # the first job is awaited for as long as it takes
                if first_enqueued is not None:
                    deadline = first_enqueued + wait
                    if merge_until is not None:  # until the first fresh arrival, then while they keep coming
                        more = merge_until if last_fresh is None else min(merge_until, last_fresh + wait)
                        deadline = max(deadline, more)
                job = await self._arrival(deadline)
                if job is None:
                    break
                self._active.append(job)
            if job.gone:  # client went away while queued
                self._abandon(job)
                continue
            piece = job.pieces[job.next]
            n = piece_texts(piece)
            if batch and (texts + n > s.max_batch_texts or not (cost + piece.cost).within(budget)):
                break  # it stays in the rotation, first in line for the next batch
            batch.append((job, piece))
            taken.add(job)
            texts, cost = texts + n, cost + piece.cost
            if first_enqueued is None:
                first_enqueued = job.enqueued
            if job.enqueued > ready:
                last_fresh = job.enqueued
        # Round robin: the jobs served in this batch go behind the ones that waited.
        for job, _ in batch:
            self._active.remove(job)
            self._active.append(job)
        return batch

    # --- running batches --------------------------------------------------------------------------
    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._collect()
            try:
                await self._run_batch(loop, batch)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.exception("batcher error")
                for job, _ in batch:
                    self._fail(job, exc)

    def _fail(self, job: Job, exc: BaseException) -> None:
        self._retire(job)
        if not job.gone:
            job.future.set_exception(exc)

    async def _run_batch(self, loop: asyncio.AbstractEventLoop, batch: list[tuple[Job, Prepared]]) -> None:
        if not batch:
            return
        try:
            served = self.slot.require()  # read once: the whole batch runs on this model
        except NotReadyError as exc:
            for job, _ in batch:
                self._fail(job, exc)
            return
        runnable = []
        for job, piece in batch:
            if job.gone:  # the client left while the batch was forming: drop its work, count it
                self._abandon(job)
            elif job.model is not None and served is not job.served and not served.matches(job.model):
                self._fail(job, wrong_model(job.model, served))  # a reload happened meanwhile
            elif job.ran_on is not None and job.ran_on is not served:
                self._restart(job)  # earlier pieces ran on the previous model: redo them on this one
            else:
                runnable.append((job, piece))
        if runnable:
            await self._infer(loop, served, runnable)
            self._after_batch = True

    def _restart(self, job: Job) -> None:
        self._queued_tokens += sum(p.cost.tokens for p in job.pieces[:job.next])
        job.next, job.ran_on, job.entities = 0, None, [[] for _ in range(job.n_texts)]

    async def _infer(self, loop: asyncio.AbstractEventLoop, served: ServedModel,
                     batch: list[tuple[Job, Prepared]]) -> None:
        pieces = [piece for _, piece in batch]
        started = time.perf_counter()
        try:
            results = await loop.run_in_executor(self._infer_thread, _extract, served, pieces)
        except asyncio.CancelledError:
            for job, _ in batch:
                self._fail(job, NotReadyError("the server is shutting down"))
            raise
        except Exception as exc:
            if len(batch) > 1:  # isolate the request that fails: the others in its batch still get answers
                for one in batch:
                    await self._infer(loop, served, [one])
                return
            if not isinstance(exc, NerServiceError):
                log.exception("inference failed on a piece of %d sentences", len(pieces[0].sentences))
            self._fail(batch[0][0], exc)
            return
        inference_s = time.perf_counter() - started
        m = self.metrics
        texts = sum(piece_texts(p) for p in pieces)
        m.batch_texts.observe(texts)
        m.batch_tokens.observe(sum(p.cost.tokens for p in pieces))
        m.inference.observe(inference_s)
        for (job, piece), found in zip(batch, results):
            self._queued_tokens -= piece.cost.tokens
            job.next += 1
            job.ran_on = served
            if job.started is None:
                job.started, job.first_batch_texts = started, texts
                m.queue_wait.observe(started - job.enqueued)
            job.inference_s += inference_s
            job.batches += 1
            for i, ents in enumerate(found):
                job.entities[i].extend(ents)
            if job.next == len(job.pieces):
                self._active.remove(job)
                if not job.gone:
                    job.future.set_result(JobResult(job.entities, served.identity(), job.started - job.enqueued,
                                                    job.inference_s, job.first_batch_texts, job.batches))


def _extract(served: ServedModel, pieces: list[Prepared]) -> list[EntityDicts]:
    """On the inference thread: the Extractor, and the conversion to plain dicts (off the event loop)."""
    return [[[e.to_dict() for e in ents] for ents in per_piece] for per_piece in served.extractor.run(pieces)]
