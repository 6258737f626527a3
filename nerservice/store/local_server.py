"""A real ``mlflow server`` on 127.0.0.1 for tests and benchmarks (server mode against a throwaway store).

It proxies artifacts (``--serve-artifacts``: clients upload and download over HTTP through
``mlflow-artifacts:/``), keeps its SQLite DB and artifacts under ``root``, and runs in its own process
group so ``stop()`` ends exactly the processes it started (the server and the uvicorn worker it spawns).
MLflow 3's background job runner (a handful of huey consumers, ~20 s of extra start-up on 2 cores) is
switched off: the model store does not use it.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from nerservice.errors import StoreError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalMlflowServer:
    def __init__(self, root: str | Path, *, port: int | None = None) -> None:
        self.root = Path(root).resolve()
        self.port = port or free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.db = self.root / "server.db"
        self.artifacts = self.root / "artifacts"
        self.log = self.root / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *, timeout: float = 180.0) -> str:
        self.root.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(self.port),
               "--backend-store-uri", f"sqlite:///{self.db.as_posix()}", "--serve-artifacts",
               "--artifacts-destination", str(self.artifacts), "--workers", "1"]
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_DISABLE_TELEMETRY": "true"}
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.root,
                                         start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise StoreError(f"mlflow server exited with {self.proc.returncode}: {self._log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as resp:
                    if resp.status == 200:
                        return self.uri
            except OSError:
                pass
            time.sleep(0.25)
        self.stop()
        raise StoreError(f"mlflow server did not answer on {self.uri} within {timeout:.0f} s: {self._log_tail()}")

    def stop(self) -> None:
        if self.proc is None:
            return
        pgid = self.proc.pid  # start_new_session: the group is ours, numbered after our child
        _signal_group(pgid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + 10  # the uvicorn worker may outlive its parent for a moment
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.proc = None

    def _log_tail(self, n: int = 2000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return "(no log)"

    def __enter__(self) -> "LocalMlflowServer":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
