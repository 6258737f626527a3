"""The scripts baked into the images: GPU discovery (with a fake nvidia-smi on PATH), the requirements
generator and the healthcheck."""
from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from docker_tools import REPO
from packaging.markers import Marker
from packaging.requirements import Requirement

DISCOVERY = REPO / "docker" / "spark" / "gpu-discovery.sh"
REQUIREMENTS = REPO / "docker" / "requirements.py"
HEALTHCHECK = REPO / "docker" / "healthcheck.py"
ENTRYPOINT = REPO / "docker" / "spark" / "entrypoint.sh"


def _fake_smi(bin_dir: Path, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + body + "\n")
    smi.chmod(0o755)


def _discover(bin_dir: Path | None) -> subprocess.CompletedProcess[str]:
    # PATH without the real system folders' nvidia-smi (none here, but a GPU CI machine has one).
    path = f"{bin_dir}:/usr/bin:/bin" if bin_dir else "/usr/bin:/bin"
    env = {**os.environ, "PATH": path}
    env.pop("NVIDIA_SMI", None)
    return subprocess.run(["bash", str(DISCOVERY)], env=env, capture_output=True, text=True, timeout=30)


def test_discovery_prints_spark_resource_json(tmp_path):
    # What nvidia-smi prints for two GPUs, including its trailing spaces on some driver versions.
    _fake_smi(tmp_path, 'case "$*" in *"--query-gpu=index --format=csv,noheader"*) printf "0\\n1 \\n";; '
                        '*) echo "unexpected args: $*" >&2; exit 2;; esac')
    proc = _discover(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"name": "gpu", "addresses": ["0", "1"]}
    assert proc.stdout.count("\n") == 1  # Spark parses the whole stdout as one JSON object


def test_discovery_with_one_gpu(tmp_path):
    _fake_smi(tmp_path, 'echo 0')
    assert json.loads(_discover(tmp_path).stdout) == {"name": "gpu", "addresses": ["0"]}


def test_discovery_with_no_gpus_prints_an_empty_list(tmp_path):
    _fake_smi(tmp_path, 'exit 0')
    proc = _discover(tmp_path)
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == {"name": "gpu", "addresses": []}


def test_discovery_fails_loudly_when_nvidia_smi_fails(tmp_path):
    _fake_smi(tmp_path, 'echo "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver"; exit 9')
    proc = _discover(tmp_path)
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert "could not communicate with the NVIDIA driver" in proc.stderr


def test_discovery_fails_loudly_without_nvidia_smi(tmp_path):
    proc = _discover(tmp_path / "empty")
    assert proc.returncode != 0 and proc.stdout == ""
    assert "not found on PATH" in proc.stderr


def test_discovery_rejects_unexpected_output(tmp_path):
    _fake_smi(tmp_path, 'echo "No devices were found"')
    proc = _discover(tmp_path)
    assert proc.returncode != 0 and proc.stdout == ""
    assert "No devices were found" in proc.stderr


def _requirements(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, str(REQUIREMENTS), "--pyproject", str(REPO / "pyproject.toml"), *args],
                          capture_output=True, text=True, timeout=30)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def _by_name(text: str) -> dict[str, Requirement]:
    return {Requirement(line).name: Requirement(line) for line in text.splitlines()}


def test_requirements_for_the_spark_image_come_from_pyproject():
    reqs = _by_name(_requirements("--extras", "train,spark,store").stdout)
    assert str(reqs["pyspark"].specifier) == "==4.3.0"
    assert str(reqs["mlflow"].specifier) == "==3.17.2"
    assert "tensorflow-cpu" in reqs and "keras" in reqs
    assert "fastapi" not in reqs and "nerservice" not in reqs


def test_requirements_expand_self_referencing_extras():
    reqs = _by_name(_requirements("--extras", "all").stdout)
    assert {"pyspark", "mlflow", "fastapi", "jax", "pytest"} <= set(reqs)


def test_requirements_gpu_swap_keeps_the_version_range():
    reqs = _by_name(_requirements("--extras", "train,spark,store", "--replace",
                                  "tensorflow-cpu=tensorflow[and-cuda]").stdout)
    cpu = _by_name(_requirements("--extras", "train").stdout)["tensorflow-cpu"]
    assert "tensorflow-cpu" not in reqs
    assert reqs["tensorflow"].extras == {"and-cuda"}
    assert reqs["tensorflow"].specifier == cpu.specifier
    assert reqs["tensorflow"].marker is None


@pytest.mark.parametrize("machine,expected", [("x86_64", "tensorflow-cpu"), ("aarch64", "tensorflow")])
def test_requirements_complement_picks_exactly_one_tensorflow_per_platform(machine, expected):
    lines = _requirements("--extras", "train", "--complement", "tensorflow-cpu=tensorflow").stdout.splitlines()
    tf = [Requirement(ln) for ln in lines if ln.startswith("tensorflow")]
    assert len(tf) == 2
    env = {"platform_machine": machine}
    chosen = [r.name for r in tf if r.marker is None or r.marker.evaluate(env)]
    assert chosen == [expected]
    Marker(str(tf[1].marker))  # valid PEP 508 (no `not`)


def test_the_serve_extra_pulls_no_tensorflow_or_keras():
    """The API image's dependency list (Dockerfile.api): ONNX Runtime and the service, no training stack."""
    reqs = _by_name(_requirements("--extras", "serve,store").stdout)
    assert {"onnxruntime", "fastapi", "uvicorn", "mlflow", "numpy", "pydantic"} <= set(reqs)
    assert not {"tensorflow", "tensorflow-cpu", "keras", "jax", "onnx", "h5py"} & set(reqs)
    assert "--extras serve,store" in (REPO / "docker" / "Dockerfile.api").read_text(encoding="utf-8")


def test_requirements_store_only_is_just_mlflow():
    assert _requirements("--no-base", "--extras", "store").stdout.split() == ["mlflow==3.17.2"]


def test_requirements_refuses_an_unknown_extra():
    proc = _requirements("--extras", "spark,sotre", check=False)
    assert proc.returncode != 0
    assert "sotre" in proc.stderr and proc.stdout == ""


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self.send_response(200 if self.path == "/readyz" else 503)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_healthcheck_follows_the_status_code():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        ok = subprocess.run([sys.executable, str(HEALTHCHECK), f"{base}/readyz"], capture_output=True, text=True)
        bad = subprocess.run([sys.executable, str(HEALTHCHECK), f"{base}/other"], capture_output=True, text=True)
    finally:
        server.shutdown()
        server.server_close()
    assert ok.returncode == 0, ok.stderr
    assert bad.returncode == 1 and "HTTP 503" in bad.stderr
    down = subprocess.run([sys.executable, str(HEALTHCHECK), f"{base}/readyz", "--timeout", "2"],
                          capture_output=True, text=True)
    assert down.returncode == 1 and "unhealthy" in down.stderr


def _spark_home() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent)


def test_entrypoint_refuses_to_run_without_spark_home(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SPARK_HOME"}
    proc = subprocess.run(["bash", str(ENTRYPOINT), "master"], env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert "SPARK_HOME must name the pyspark package folder" in proc.stderr


def test_entrypoint_passes_other_commands_through():
    proc = subprocess.run(["bash", str(ENTRYPOINT), "python", "-c", "print('through')"],
                          env={**os.environ, "SPARK_HOME": _spark_home()}, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and proc.stdout.strip() == "through"
    helped = subprocess.run(["bash", str(ENTRYPOINT)], env={**os.environ, "SPARK_HOME": _spark_home()},
                            capture_output=True, text=True, timeout=30)
    assert helped.returncode == 0 and "worker [MASTER_URL]" in helped.stdout
