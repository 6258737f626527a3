"""Wait until a Spark standalone master has N ALIVE workers (optionally each offering a resource such as
``gpu``), reading the master UI's ``/json/`` endpoint.

Why: a barrier stage needs all its slots at once; submitting before the workers have registered costs
minutes of retries (or fails). Compose's ``depends_on`` only knows that the worker *containers* are healthy,
not that the master has accepted them. Standard library only.

Usage: python wait_for_workers.py --master-ui http://spark-master:8080 --count 2 [--resource gpu] [--timeout 300]
Exit 0 when ready, 1 on timeout (with what the master reported last).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from typing import Any


def ready_workers(state: dict[str, Any], *, resource: str | None = None) -> list[str]:
    """Ids of ALIVE workers (with at least one address of ``resource`` when given)."""
    out = []
    for w in state.get("workers", []):
        if w.get("state") != "ALIVE":
            continue
        if resource and not w.get("resources", {}).get(resource, {}).get("addresses"):
            continue
        out.append(str(w.get("id", w.get("host", "?"))))
    return out


def fetch(url: str, *, timeout: float = 5.0) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (URL from our own config)
        return json.load(resp)


def wait(master_ui: str, *, count: int, resource: str | None = None, timeout: float = 300.0,
         interval: float = 2.0) -> list[str]:
    url = master_ui.rstrip("/") + "/json/"
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while True:
        try:
            workers = ready_workers(fetch(url), resource=resource)
            last = f"{len(workers)} ready worker(s): {workers}"
            if len(workers) >= count:
                return workers
        except (urllib.error.URLError, OSError, ValueError) as exc:
            last = f"{url}: {getattr(exc, 'reason', exc)}"
        if time.monotonic() >= deadline:
            what = f"{count} ALIVE worker(s)" + (f" with {resource}" if resource else "")
            raise TimeoutError(f"waited {timeout:.0f}s for {what} at {url}; last: {last}")
        time.sleep(interval)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="wait for N ALIVE workers on a Spark standalone master")
    p.add_argument("--master-ui", required=True, help="master web UI, e.g. http://spark-master:8080")
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--resource", help="count only workers offering this resource (e.g. gpu)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds")
    args = p.parse_args(argv)
    if args.count < 1:
        p.error("--count must be at least 1")
    try:
        workers = wait(args.master_ui, count=args.count, resource=args.resource, timeout=args.timeout)
    except TimeoutError as exc:
        print(f"wait_for_workers: {exc}", file=sys.stderr)
        return 1
    print(f"wait_for_workers: {len(workers)} worker(s) ready: {', '.join(workers)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
