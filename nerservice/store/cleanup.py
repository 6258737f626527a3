"""What a crash leaves in the store, found and cleared: MLflow runs still RUNNING after their process died,
and registry versions whose registration never reached its commit point (registration.py).

A run we start records the host and process id that own it (``nerservice.host``, ``nerservice.pid``). A
RUNNING run is *abandoned* when its owner is a process of this host that no longer exists, or, for runs of
other hosts (Spark executors) and runs without those tags, when it started more than ``stale_after_s`` ago.
Abandoned runs are ended as KILLED (tag ``nerservice.ended_by`` says who ended them).  The training
callback ends this host's dead runs whenever it starts a new one, so a resumed training closes the run
its killed predecessor left open; ``nerservice models cleanup`` does the rest.

An incomplete version older than ``older_than_s`` (a registration in flight is incomplete for seconds) is
deleted; it was never resolvable, so nothing that serves models can depend on it.
"""
from __future__ import annotations

import os
import socket
import time
from datetime import datetime
from typing import Any

TAG_HOST, TAG_PID, TAG_ENDED_BY = "nerservice.host", "nerservice.pid", "nerservice.ended_by"


def owner_tags() -> dict[str, str]:
    return {TAG_HOST: socket.gethostname(), TAG_PID: str(os.getpid())}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _abandoned(run: Any, *, stale_after_s: float | None, now: float) -> str | None:
    """Why ``run`` (RUNNING) is abandoned, or None."""
    tags = run.data.tags or {}
    host, pid = tags.get(TAG_HOST), tags.get(TAG_PID)
    if host == socket.gethostname() and pid and pid.isdigit():
        if int(pid) == os.getpid():
            return None
        return None if _alive(int(pid)) else f"its process {pid} on this host is gone"
    age = now - (run.info.start_time or 0) / 1000
    if stale_after_s is not None and age > stale_after_s:
        return f"started {age / 3600:.1f} h ago on {host or 'an unknown host'}"
    return None


def end_abandoned_runs(store: Any, *, stale_after_s: float | None = None, dry_run: bool = False,
                       ended_by: str = "cleanup") -> list[dict[str, str]]:
    """End every abandoned RUNNING run of the store's experiment as KILLED; returns what was (or, with
    ``dry_run``, would be) ended. ``stale_after_s=None``: only this host's runs whose process is gone."""
    client = store.client
    found, token, now = [], None, time.time()
    while True:
        page = store.call("listing running runs", client.search_runs, [store.experiment_id()],
                          filter_string="attributes.status = 'RUNNING'", max_results=500, page_token=token)
        for run in page:
            why = _abandoned(run, stale_after_s=stale_after_s, now=now)
            if why is not None:
                found.append({"run_id": run.info.run_id, "name": run.info.run_name or "", "reason": why})
        token = page.token
        if not token:
            break
    if not dry_run:
        for item in found:
            store.call("tagging the run", client.set_tag, item["run_id"], TAG_ENDED_BY, ended_by)
            store.call("ending the run", client.set_terminated, item["run_id"], "KILLED")
    return found


def prune_incomplete(store: Any, name: str | None = None, *, older_than_s: float = 3600.0,
                     dry_run: bool = False) -> list[dict[str, Any]]:
    """Delete incomplete versions (of ``name``, or of every model) created more than ``older_than_s`` ago;
    returns their records (``store.list``'s)."""
    now = time.time()
    gone = [r for r in store.list(name) if r["status"] != "complete"
            and now - datetime.fromisoformat(r["created"]).timestamp() >= older_than_s]
    if not dry_run:
        for r in gone:
            store.call("deleting an incomplete version", store.client.delete_model_version, r["name"],
                       str(r["version"]))
    return gone
