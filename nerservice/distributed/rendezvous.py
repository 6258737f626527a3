"""Barrier-stage rendezvous: every task learns every peer's address, then builds ``TF_CONFIG``.

Protocol (verified on a standalone cluster; docs/ARCHITECTURE.md, platform facts): each task reads its host from
``BarrierTaskContext.getTaskInfos()``, picks a free port there, and ``allGather``s a small JSON message;
all tasks get the same list back, sort it by rank (= partition id) and set ``TF_CONFIG`` *before*
TensorFlow is imported.  ``context`` is duck-typed (``partitionId``, ``getTaskInfos``, ``allGather``) so
the logic is testable without Spark.
"""
from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass
from typing import Any

from nerservice.errors import DistributedError


@dataclass(frozen=True)
class Peer:
    rank: int
    host: str
    port: int
    pid: int

    @property
    def address(self) -> str:
        return f"{_bracket(self.host)}:{self.port}"


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def host_of(executor_address: str) -> str:
    """``host:port`` (as in ``BarrierTaskInfo.address``) → host; IPv6 ``[::1]:7077`` → ``::1``."""
    if executor_address.startswith("["):
        return executor_address[1:executor_address.index("]")]
    return executor_address.rsplit(":", 1)[0] if executor_address.count(":") == 1 else executor_address


def free_port(host: str) -> int:
    """A port that is free on ``host`` right now (the OS picks it). TF binds it moments later; the
    small race is accepted, as in every TF/Horovod launcher."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def parse_peers(messages: list[str], *, world: int) -> list[Peer]:
    """allGather results → peers sorted by rank; every rank 0..world-1 exactly once."""
    peers = sorted((Peer(**json.loads(m)) for m in messages), key=lambda p: p.rank)
    if [p.rank for p in peers] != list(range(world)):
        raise DistributedError(f"rendezvous got ranks {[p.rank for p in peers]}, expected 0..{world - 1}",
                               hint="every barrier task must take part exactly once")
    return peers


def tf_config(peers: list[Peer], rank: int) -> str:
    """The ``TF_CONFIG`` JSON for ``rank``: all workers (no chief; worker 0 acts as chief)."""
    return json.dumps({"cluster": {"worker": [p.address for p in peers]}, "task": {"type": "worker", "index": rank}})


def rendezvous(context: Any, *, world: int) -> tuple[int, list[Peer]]:
    """Run inside a barrier task: returns (rank, peers). ``world`` is checked against the stage size."""
    rank = int(context.partitionId())
    infos = context.getTaskInfos()
    if len(infos) != world:
        raise DistributedError(f"barrier stage has {len(infos)} tasks, expected {world}")
    host = host_of(infos[rank].address)
    me = Peer(rank=rank, host=host, port=free_port(host), pid=os.getpid())
    peers = parse_peers(list(context.allGather(json.dumps(asdict(me)))), world=world)
    return rank, peers


def agree(context: Any, value: Any, *, what: str) -> Any:
    """allGather ``value`` (JSON-able) and fail unless every task holds the same one: used before
    training so no worker resumes from a different checkpoint than the others."""
    values = [json.loads(m) for m in context.allGather(json.dumps(value, sort_keys=True))]
    if any(v != values[0] for v in values):
        raise DistributedError(f"workers disagree on {what}: {values}",
                               hint="shared storage must look the same from every executor")
    return values[0]
