"""Container healthcheck: exit 0 when URL answers 2xx within the timeout, else 1 with the reason on stderr.

Why a script: the slim images carry no curl or wget, and every image has Python. Usage:
    python /opt/nerservice/healthcheck.py http://localhost:8000/readyz [--timeout 3]
"""
from __future__ import annotations

import argparse
import sys
import urllib.error
import urllib.request


def check(url: str, *, timeout: float) -> str | None:
    """None when healthy, else a one-line reason."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (URL comes from the healthcheck)
            if 200 <= resp.status < 300:
                return None
            return f"{url}: HTTP {resp.status}"
    except urllib.error.HTTPError as exc:
        return f"{url}: HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return f"{url}: {getattr(exc, 'reason', exc)}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="exit 0 when URL answers 2xx")
    p.add_argument("url")
    p.add_argument("--timeout", type=float, default=3.0)
    args = p.parse_args(argv)
    reason = check(args.url, timeout=args.timeout)
    if reason:
        print(f"unhealthy: {reason}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
