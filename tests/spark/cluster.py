"""A real Spark standalone cluster on 127.0.0.1 for tests: one master and N workers started with pyspark's
own launch class (``bin/spark-class``), each in its own process group, stopped by PID.

Every worker advertises one fake GPU (``fake_gpu_discovery.sh``, a different address per worker), so jobs
that ask for ``spark.task.resource.gpu.amount=1`` exercise Spark's resource scheduling and our pinning.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from helpers import jvm_env, spark_master_ports  # tests/helpers.py

SPARK_HOME = Path(pyspark.__file__).resolve().parent
PYTHON = sys.executable
REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
LOCAL = "127.0.0.1"

# Every submission: bind the driver to loopback, run executors on this venv's Python, no UI.
SUBMIT_CONF = {
    "spark.driver.host": LOCAL, "spark.driver.bindAddress": LOCAL, "spark.pyspark.python": PYTHON,
    "spark.pyspark.driver.python": PYTHON, "spark.ui.enabled": "false", "spark.executor.memory": "1g",
    "spark.driver.memory": "1g", "spark.ui.showConsoleProgress": "false",
    "spark.executorEnv.TF_CPP_MIN_LOG_LEVEL": "2", "spark.executorEnv.PYTHONUNBUFFERED": "1",
}
GPU_CONF = {"spark.executor.resource.gpu.amount": "1", "spark.task.resource.gpu.amount": "1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOCAL, 0))
        return int(s.getsockname()[1])


@dataclass
class SparkCluster:
    root: Path
    workers: int = 2
    cores: int = 1
    memory: str = "2g"
    master_port: int = 0
    master_ui: int = 0
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://{LOCAL}:{self.master_port}"

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        for name in [k for k in env if k.startswith(("SPARK_", "PYSPARK_"))]:
            env.pop(name)  # nothing from the caller's Spark setup leaks in
        env.update(SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP=LOCAL, SPARK_CONF_DIR=str(self.root / "conf"),
                   SPARK_LOG_DIR=str(self.root / "logs"), SPARK_PID_DIR=str(self.root / "pids"),
                   SPARK_LOCAL_DIRS=str(self.root / "local"), PYSPARK_PYTHON=PYTHON, PYSPARK_DRIVER_PYTHON=PYTHON,
                   SPARK_DAEMON_MEMORY="512m", TF_CPP_MIN_LOG_LEVEL="2",
                   **jvm_env(), **extra)  # JIT and GC options of every JVM here: helpers.JVM_OPTS
        return env

    def _spawn(self, name: str, args: list[str], **env: str) -> subprocess.Popen:
        log = open(self.root / "logs" / f"{name}.out", "wb")
        proc = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], stdout=log,
                                stderr=subprocess.STDOUT, env=self.env(**env), cwd=self.root,
                                start_new_session=True)  # own process group: executors it forks go with it
        log.close()
        self.procs.append(proc)
        return proc

    def start(self, timeout: float = 120.0) -> "SparkCluster":
        for d in ("conf", "logs", "pids", "local"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        script = self.root / "conf" / "fake_gpu_discovery.sh"
        shutil.copy(HERE / "fake_gpu_discovery.sh", script)
        script.chmod(0o755)
        (self.root / "conf" / "master.conf").write_text("spark.master.rest.enabled false\n")
        (self.root / "conf" / "worker.conf").write_text(
            f"spark.worker.resource.gpu.amount 1\nspark.worker.resource.gpu.discoveryScript {script}\n")
        master = self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", LOCAL, "--port",
                                        str(free_port()), "--webui-port", str(free_port()),
                                        "--properties-file", str(self.root / "conf" / "master.conf")])
        # The ports it bound, not the ones asked for: Spark moves on to the next port when one is taken between
        # free_port() and its bind (CI saw this in tests/docker/test_docker_stack_flow.py, whose fix this is).
        self.master_port, self.master_ui = spark_master_ports(self.root / "logs" / "master.out", master, timeout)
        for i in range(self.workers):
            work = self.root / f"work-{i}"
            work.mkdir(exist_ok=True)
            self._spawn(f"worker-{i}", ["org.apache.spark.deploy.worker.Worker", "--host", LOCAL, "--port",
                                        str(free_port()), "--webui-port", str(free_port()), "--cores", str(self.cores),
                                        "--memory", self.memory, "--work-dir", str(work), "--properties-file",
                                        str(self.root / "conf" / "worker.conf"), self.url],
                        FAKE_GPU_ADDRESS=str(i), SPARK_WORKER_DIR=str(work))
        self.wait_for_workers(timeout)
        return self

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://{LOCAL}:{self.master_ui}/json/", timeout=5) as r:
            return json.loads(r.read())

    def wait_for_workers(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"spark process {p.args[1]} exited with {p.returncode}; see {self.root}/logs")
            try:
                last = self.state()
                if int(last.get("aliveworkers", 0)) >= self.workers:
                    return
            except OSError as exc:
                last = exc
            time.sleep(0.2)
        raise TimeoutError(f"{self.workers} workers did not register in {timeout}s (last: {last})")

    def stop(self) -> None:
        """SIGTERM each process we started (workers first), then SIGKILL its process group if anything
        of it (executors, Python workers) is still alive after a grace period."""
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the group we created; executors would be in it
            except ProcessLookupError:
                pass

    def submit(self, script: str, *args: str, conf: dict[str, str] | None = None, env: dict[str, str] | None = None,
               timeout: float = 300.0) -> subprocess.CompletedProcess:
        cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", self.url]
        for key, value in {**SUBMIT_CONF, **(conf or {})}.items():
            cmd += ["--conf", f"{key}={value}"]
        cmd += [str(REPO / script), *args]
        proc = subprocess.Popen(cmd, cwd=REPO, env=self.env(**(env or {})), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the driver JVM and the Python driver it started
            out, err = proc.communicate()
            raise AssertionError(f"spark-submit {script} timed out after {timeout}s\n{err[-5000:]}") from None
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

    def executor_logs(self) -> str:
        """stdout+stderr of every executor of every application (what the training processes printed)."""
        parts = []
        for f in sorted(self.root.glob("work-*/app-*/*/std*")):
            parts.append(f"==> {f}\n{f.read_text(errors='replace')}")
        return "\n".join(parts)
