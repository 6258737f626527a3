"""The Spark image's entry point, run outside Docker: a real standalone master and a GPU worker (fake
nvidia-smi on PATH, the image's own spark-defaults files), on 127.0.0.1, stopped by PID afterwards.

This is what the compose services `spark-master` and `spark-worker-gpu-*` run, minus the container; it
checks the entry point's argument handling, that the GPU worker config plus the discovery script make the
master see the worker's GPUs, and the wait/health scripts the trainer and the healthchecks use."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from docker_tools import REPO, free_port

from helpers import jvm_env

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ENTRYPOINT = REPO / "docker" / "spark" / "entrypoint.sh"
WAIT = REPO / "docker" / "spark" / "wait_for_workers.py"
HEALTHCHECK = REPO / "docker" / "healthcheck.py"


def _spark_home() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
def gpu_cluster(tmp_path):
    conf = tmp_path / "conf"
    conf.mkdir()
    # The GPU image's spark-defaults.conf is the two files concatenated (docker/Dockerfile.gpu); only the
    # discovery script's in-image path is swapped for its path in the repository.
    text = (REPO / "docker/spark/spark-defaults.conf").read_text() + \
        (REPO / "docker/spark/spark-defaults.gpu.conf").read_text()
    assert "/opt/nerservice/gpu-discovery.sh" in text
    (conf / "spark-defaults.conf").write_text(
        text.replace("/opt/nerservice/gpu-discovery.sh", str(REPO / "docker/spark/gpu-discovery.sh")))
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    smi = fake_bin / "nvidia-smi"
    smi.write_text('#!/bin/sh\nprintf "0\\n1\\n"\n')
    smi.chmod(0o755)
    ports = {name: free_port() for name in ("master", "master_ui", "worker_ui")}
    env = {
        **os.environ,
        **jvm_env(),  # the JIT and GC options of every Spark JVM the tests start (helpers.JVM_OPTS)
        "SPARK_HOME": _spark_home(),
        "SPARK_CONF_DIR": str(conf),
        "SPARK_LOCAL_IP": "127.0.0.1",  # also binds the web UIs to loopback
        "SPARK_LOCAL_DIRS": str(tmp_path / "local"),
        "PATH": f"{fake_bin}:{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    logs = tmp_path / "logs"
    logs.mkdir()
    master = subprocess.Popen(
        ["bash", str(ENTRYPOINT), "master"], stdout=open(logs / "master.log", "w"), stderr=subprocess.STDOUT,
        env={**env, "SPARK_MASTER_HOST": "127.0.0.1", "SPARK_MASTER_PORT": str(ports["master"]),
             "SPARK_MASTER_WEBUI_PORT": str(ports["master_ui"])})
    worker = None
    try:
        worker = subprocess.Popen(
            ["bash", str(ENTRYPOINT), "worker", f"spark://127.0.0.1:{ports['master']}"],
            stdout=open(logs / "worker.log", "w"), stderr=subprocess.STDOUT,
            env={**env, "SPARK_WORKER_HOST": "127.0.0.1", "SPARK_WORKER_CORES": "1", "SPARK_WORKER_MEMORY": "1g",
                 "SPARK_WORKER_WEBUI_PORT": str(ports["worker_ui"]), "SPARK_WORKER_DIR": str(tmp_path / "work"),
                 # a worker with two GPUs: the override the config file's comment documents
                 "SPARK_WORKER_OPTS": "-Dspark.worker.resource.gpu.amount=2"})
        yield {"master_ui": f"http://127.0.0.1:{ports['master_ui']}",
               "worker_ui": f"http://127.0.0.1:{ports['worker_ui']}", "logs": logs, "master": master,
               "worker": worker}
    finally:
        if worker is not None:
            _stop(worker)
        _stop(master)


def _run(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout)


def test_master_sees_the_gpu_workers_gpus(gpu_cluster):
    waited = _run(str(WAIT), "--master-ui", gpu_cluster["master_ui"], "--count", "1", "--resource", "gpu",
                  "--timeout", "150")
    logs = gpu_cluster["logs"]
    assert waited.returncode == 0, (waited.stderr, (logs / "master.log").read_text()[-3000:],
                                    (logs / "worker.log").read_text()[-3000:])
    assert "1 worker(s) ready" in waited.stdout

    state = json.load(urllib.request.urlopen(gpu_cluster["master_ui"] + "/json/", timeout=10))
    (worker,) = state["workers"]
    assert worker["state"] == "ALIVE"
    assert worker["resources"]["gpu"]["addresses"] == ["0", "1"]  # from the discovery script
    assert worker["cores"] == 1 and worker["memory"] == 1024  # SPARK_WORKER_CORES / _MEMORY reached it
    # The entry point execs the JVM: the PID we started is the Java process (signals reach Spark directly).
    assert "java" in Path(f"/proc/{gpu_cluster['master'].pid}/cmdline").read_bytes().decode(errors="replace")

    # The compose healthchecks' URLs answer on both roles.
    for url in (gpu_cluster["master_ui"] + "/json/", gpu_cluster["worker_ui"] + "/json/"):
        check = _run(str(HEALTHCHECK), url, timeout=30)
        assert check.returncode == 0, (url, check.stderr)

    # More workers than exist: the wait gives up with the master's last answer, not a hang.
    short = _run(str(WAIT), "--master-ui", gpu_cluster["master_ui"], "--count", "2", "--timeout", "3")
    assert short.returncode == 1
    assert "waited 3s for 2 ALIVE worker(s)" in short.stderr and "1 ready worker(s)" in short.stderr
