"""The barrier task body without Spark: N local processes, one ``run_worker`` each, with a real rendezvous.

``FolderBarrier`` speaks the part of ``pyspark.BarrierTaskContext`` that ``run_worker`` uses
(``partitionId``, ``getTaskInfos``, ``allGather``, ``barrier``, ...) through files in a folder all ranks
see: each ``allGather`` round writes one file per rank (atomically: temp file + rename) and waits for the
others. So the rendezvous, the checkpoint agreement and the multi-worker training of the TF and JAX paths
run exactly as in a Spark barrier stage, on one host, where Spark is absent (a GPU box, a test).

    results = run_local(spec, data, world=2)          # one JSON result per rank, rank order

``run_local`` starts the ranks with the ``spawn`` method (fresh interpreters: each sets its Keras backend
before importing Keras), waits for all, and fails with every rank's exit status if one did not finish; as
in Spark, no rank is restarted.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from nerservice.errors import DistributedError


class FolderBarrier:
    """One rank's barrier context; the camelCase method names are pyspark's ``BarrierTaskContext``'s."""

    def __init__(self, folder: str | Path, *, rank: int, world: int, host: str = "127.0.0.1",
                 attempt: int = 0, timeout_s: float = 600.0, gpus: list[str] | None = None) -> None:
        self.folder, self.rank, self.world, self.host = Path(folder), rank, world, host
        self.attempt, self.timeout_s, self.gpus = attempt, timeout_s, gpus or []
        self._round = 0
        self.folder.mkdir(parents=True, exist_ok=True)

    def partitionId(self) -> int:
        return self.rank

    def getTaskInfos(self) -> list[Any]:
        return [SimpleNamespace(address=f"{self.host}:0") for _ in range(self.world)]

    def allGather(self, message: str = "") -> list[str]:
        r = self._round
        self._round += 1
        mine = self.folder / f"round{r}-rank{self.rank}.json"
        tmp = mine.with_suffix(".tmp")
        tmp.write_text(json.dumps(message), encoding="utf-8")
        tmp.replace(mine)
        deadline = time.monotonic() + self.timeout_s
        paths = [self.folder / f"round{r}-rank{k}.json" for k in range(self.world)]
        while not all(p.exists() for p in paths):
            if time.monotonic() > deadline:
                missing = [k for k, p in enumerate(paths) if not p.exists()]
                raise DistributedError(f"allGather round {r}: ranks {missing} did not arrive in {self.timeout_s:.0f}s")
            time.sleep(0.02)
        return [json.loads(p.read_text(encoding="utf-8")) for p in paths]

    def barrier(self) -> None:
        self.allGather("")

    def taskAttemptId(self) -> int:
        return self.attempt * self.world + self.rank

    def stageId(self) -> int:
        return 0

    def resources(self) -> dict[str, Any]:
        return {"gpu": SimpleNamespace(addresses=self.gpus)} if self.gpus else {}


def _rank_main(spec: Any, data: dict[str, Any], rank: int, folder: str, env: dict[str, str],
               result_path: str, gpus: list[str]) -> None:
    os.environ.update(env)  # before anything imports Keras or JAX
    from nerservice.distributed.worker import run_worker

    ctx = FolderBarrier(folder, rank=rank, world=spec.world, timeout_s=spec.collective_timeout_s, gpus=gpus)
    result = run_worker(spec, data, ctx)
    Path(result_path).write_text(json.dumps(result), encoding="utf-8")


def run_local(spec: Any, data: dict[str, Any], *, world: int | None = None, env: dict[str, str] | None = None,
              gpus_per_rank: list[list[str]] | None = None, timeout_s: float = 3600.0) -> list[dict[str, Any]]:
    """Run ``spec.world`` ranks of the barrier task body as local processes; their results in rank order.
    ``gpus_per_rank`` plays Spark's GPU resources (each rank's ``CUDA_VISIBLE_DEVICES``)."""
    world = world or spec.world
    if world != spec.world:
        raise DistributedError(f"spec.world={spec.world} but {world} ranks were asked for")
    work = Path(spec.out_dir) / ".local-barrier" / f"{os.getpid()}-{time.time_ns()}"
    work.mkdir(parents=True)
    ctx = multiprocessing.get_context("spawn")
    procs = []
    for rank in range(world):
        gpus = gpus_per_rank[rank] if gpus_per_rank else []
        p = ctx.Process(target=_rank_main, name=f"nerservice-rank{rank}",
                        args=(spec, data, rank, str(work), dict(env or {}), str(work / f"result{rank}.json"), gpus))
        p.start()
        procs.append(p)
    deadline = time.monotonic() + timeout_s
    for p in procs:
        p.join(max(deadline - time.monotonic(), 0.1))
    codes = [p.exitcode for p in procs]
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    if any(c != 0 for c in codes):
        raise DistributedError(f"local ranks ended with exit codes {codes} (None = still running at the timeout)")
    return [json.loads((work / f"result{r}.json").read_text(encoding="utf-8")) for r in range(world)]
