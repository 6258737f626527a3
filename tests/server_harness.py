"""Real API servers for tests (tests/api, tests/reliability): ``nerservice serve`` or ``uvicorn api.main:app``
on a free 127.0.0.1 port in its own process, stdout+stderr captured to a file, stopped (or SIGKILLed) by PID.

Top-level module (like ``helpers``): pytest puts ``tests/`` on sys.path through tests/conftest.py."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid: int) -> int:
    """Resident set size from /proc/<pid>/status (what the soak samples)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


@dataclass
class Server:
    proc: subprocess.Popen
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def metric(self, name: str, /, **labels: str) -> float:
        """One sample from /metrics (0 when absent)."""
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in httpx.get(self.url + "/metrics", timeout=10).text.splitlines():
            if line.startswith("#") or not line.startswith(name):
                continue
            head, value = line.rsplit(" ", 1)
            metric, _, label_text = head.partition("{")
            got = ",".join(sorted(label_text.rstrip("}").split(","))) if label_text else ""
            if metric == name and got == want:
                return float(value)
        return 0.0

    def kill(self) -> None:
        """SIGKILL: no cleanup of any kind runs in the server."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def start_server(env: dict[str, str], *, log_path: Path, entry: str = "serve", timeout: float = 240.0,
                 wait_ready: bool = True, args: tuple[str, ...] = ()) -> Server:
    """Start with exactly the NERSERVICE_* variables given (none inherited), default log level.
    ``entry``: "serve" runs ``nerservice serve``; "uvicorn" runs ``uvicorn api.main:app``."""
    port = free_port()
    if entry == "serve":
        cmd = [str(BIN / "nerservice"), "serve", "--host", "127.0.0.1", "--port", str(port), *args]
    else:
        cmd = [sys.executable, "-m", "uvicorn", "api.main:app", "--host", "127.0.0.1", "--port", str(port), *args]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("NERSERVICE_")}
    full_env.update({"TF_CPP_MIN_LOG_LEVEL": "2", **env})
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=full_env, stdout=log, stderr=subprocess.STDOUT)
    server = Server(proc, port, log_path)
    deadline = time.monotonic() + timeout
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}:\n{server.log()[-3000:]}")
            try:
                if httpx.get(server.url + ("/readyz" if wait_ready else "/healthz"), timeout=2).status_code == 200:
                    return server
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"server not ready after {timeout} s:\n{server.log()[-3000:]}")
            time.sleep(0.2)
    except BaseException:
        server.stop()
        raise
