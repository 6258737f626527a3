"""Starting real uvicorn servers on 127.0.0.1 (free ports, own processes, stopped by PID).

This folder has no __init__.py on purpose: as a package it would be named ``api`` (pytest's rootdir-based
names) and shadow the real ``api`` package in the test process.  Module names here are therefore unique
(``api_harness``, ``test_api_*``)."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# The main server's limits: small, so limit tests need small bodies; still room for 64 concurrent clients.
MAIN_LIMITS = {"NERSERVICE_API_MAX_TEXTS": "16", "NERSERVICE_API_MAX_TEXT_CHARS": "2000",
               "NERSERVICE_API_MAX_BODY_BYTES": "65536", "NERSERVICE_API_MAX_QUEUE": "256"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RunningServer:
    proc: subprocess.Popen
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def metric(self, metric_name: str, /, **labels: str) -> float:
        """Value of one sample from /metrics (0 when absent)."""
        text = httpx.get(self.url + "/metrics").text
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in text.splitlines():
            if line.startswith("#") or not line.startswith(metric_name):
                continue
            head, value = line.rsplit(" ", 1)
            metric, _, label_text = head.partition("{")
            got = ",".join(sorted(label_text.rstrip("}").split(","))) if label_text else ""
            if metric == metric_name and got == want:
                return float(value)
        return 0.0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def start_server(env: dict[str, str], *, log_path: Path, entry: str = "serve", timeout: float = 180.0,
                 wait_ready: bool = True) -> RunningServer:
    """``entry``: "serve" runs ``nerservice serve``; "uvicorn" runs ``uvicorn api.main:app``."""
    port = free_port()
    if entry == "serve":
        cmd = [str(BIN / "nerservice"), "serve", "--host", "127.0.0.1", "--port", str(port)]
    else:
        cmd = [sys.executable, "-m", "uvicorn", "api.main:app", "--host", "127.0.0.1", "--port", str(port)]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("NERSERVICE_")}  # only what we pass
    full_env.update({"TF_CPP_MIN_LOG_LEVEL": "2", **env})
    log = open(log_path, "wb")
    proc = subprocess.Popen(cmd, cwd=REPO, env=full_env, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    server = RunningServer(proc, port, log_path)
    deadline = time.monotonic() + timeout
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}:\n{server.log()[-3000:]}")
            try:
                r = httpx.get(server.url + ("/readyz" if wait_ready else "/healthz"), timeout=2)
                if r.status_code == 200:
                    return server
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"server not ready after {timeout} s:\n{server.log()[-3000:]}")
            time.sleep(0.25)
    except BaseException:
        server.stop()
        raise


def copy_model(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst
