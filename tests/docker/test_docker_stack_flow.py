"""The compose stack's flow with real processes instead of containers, all on 127.0.0.1:

  mlflow server  ← started with the exact arguments of docker-compose.yml's `mlflow` service (only host,
                   port and paths changed), reached with the Host header containers send (mlflow:5000)
  Spark master + 2 workers ← docker/spark/entrypoint.sh master / worker, as the compose services run them
  API            ← `nerservice serve` with NERSERVICE_STORE_URI + NERSERVICE_MODEL=demo@production, started
                   before any model exists (not ready), like `docker compose up`
  trainer        ← docker/spark/train-pipeline.sh: wait for workers, spark-submit preprocess, spark-submit
                   train --workers 2 --register --promote, export to ONNX (registered, promoted), then
                   POST /v1/models/reload to the API

Everything started here is stopped by PID in the fixture's teardown."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from docker_tools import REPO, compose_model, free_ports

from helpers import jvm_env, spark_master_ports

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.server]

BIN = Path(sys.executable).parent
# The compose defaults (GloVe vectors included) with the recurrent stack and dense layer shrunk to the tiny
# fixtures' sizes: nothing below depends on the model's size or quality, and the default 3 x 128-unit stack
# spent most of the training stage tracing and training (TRAIN_ARGS is split on spaces by the script).
TRAIN_ARGS = " ".join(f"--set {k}={v}" for k, v in {
    "training.batch_size": 16, "model.lstm_layers": 1, "model.lstm_units": 24, "model.dense_units": 48,
    "model.char_embedding_dim": 12, "model.char_cnn_filters": 16, "model.char_lstm_units": 12}.items())


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _get(url: str, *, headers: dict[str, str] | None = None, timeout: float = 10) -> tuple[int, str]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


def _wait_for(url: str, *, proc: subprocess.Popen, log: Path, timeout: float = 120, status: int = 200) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _get(url)[0] == status:
            return
        assert proc.poll() is None, f"{proc.args[:3]} exited: {log.read_text()[-3000:]}"
        time.sleep(0.2)
    raise AssertionError(f"{url} not {status} after {timeout}s: {log.read_text()[-3000:]}")


def _mlflow_args(*, port: int, root: Path) -> list[str]:
    """docker-compose.yml's mlflow command with host, port, workers and the volume paths swapped."""
    cmd = list(compose_model()["services"]["mlflow"]["command"])
    swaps = {"--host": "127.0.0.1", "--port": str(port), "--workers": "1",
             "--backend-store-uri": f"sqlite:///{root}/mlflow.db", "--artifacts-destination": str(root / "artifacts")}
    for flag, value in swaps.items():
        cmd[cmd.index(flag) + 1] = value
    # the compose network name with the compose port stays allowed; the local port is added for this test
    i = cmd.index("--allowed-hosts") + 1
    cmd[i] = f"{cmd[i]},127.0.0.1:{port}"
    assert cmd[:2] == ["mlflow", "server"]
    return [str(BIN / "mlflow"), *cmd[1:]]


@pytest.fixture
def stack(tmp_path, demo_corpus):
    procs: list[subprocess.Popen] = []
    logs = tmp_path / "logs"
    logs.mkdir()

    def start(name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        proc = subprocess.Popen(args, stdout=open(logs / f"{name}.log", "w"), stderr=subprocess.STDOUT, env=env,
                                cwd=tmp_path)
        procs.append(proc)
        return proc

    import pyspark

    names = ("mlflow", "master", "master_ui", "w1_ui", "w2_ui", "api")
    ports = dict(zip(names, free_ports(len(names))))
    store_uri = f"http://127.0.0.1:{ports['mlflow']}"
    base = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "TF_CPP_MIN_LOG_LEVEL": "2",
            "NERSERVICE_STORE_DIR": str(tmp_path / "client-cache")}
    # jvm_env(): the JIT and GC options of every Spark JVM the tests start (helpers.JVM_OPTS), here for the
    # master, the workers and the pipeline's spark-submits.
    spark_env = {**base, **jvm_env(), "SPARK_HOME": str(Path(pyspark.__file__).parent), "SPARK_LOCAL_IP": "127.0.0.1",
                 "SPARK_CONF_DIR": str(REPO / "docker" / "spark"), "PYSPARK_PYTHON": sys.executable,
                 "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_DIRS": str(tmp_path / "spark-local")}
    try:
        (tmp_path / "mlflow").mkdir()
        mlflow = start("mlflow", _mlflow_args(port=ports["mlflow"], root=tmp_path / "mlflow"), base)
        _wait_for(f"{store_uri}/health", proc=mlflow, log=logs / "mlflow.log")
        api = start("api", [str(BIN / "nerservice"), "serve", "--host", "127.0.0.1", "--port", str(ports["api"])],
                    {**base, "NERSERVICE_STORE_URI": store_uri, "NERSERVICE_MODEL": "demo@production",
                     "NERSERVICE_API_ADMIN_TOKEN": "test-token"})
        _wait_for(f"http://127.0.0.1:{ports['api']}/healthz", proc=api, log=logs / "api.log")
        # Our API, not another server that took its port first (a Spark UI also answers 200 to any path).
        assert _get(f"http://127.0.0.1:{ports['api']}/healthz")[1].lstrip().startswith("{")
        # Spark after the API: its JVMs bind ephemeral ports too, and one could be the API's before it starts.
        master = start("master", ["bash", str(REPO / "docker/spark/entrypoint.sh"), "master"],
                       {**spark_env, "SPARK_MASTER_HOST": "127.0.0.1", "SPARK_MASTER_PORT": str(ports["master"]),
                        "SPARK_MASTER_WEBUI_PORT": str(ports["master_ui"])})
        # Spark moves to the next port when one is taken meanwhile (CI saw 'could not bind on port 59715.
        # Attempting port 59716.', and the workers then dialled the old one): the workers and the test use the
        # ports the master bound.
        ports["master"], ports["master_ui"] = spark_master_ports(logs / "master.log", master, 120)
        for n in (1, 2):
            start(f"worker{n}", ["bash", str(REPO / "docker/spark/entrypoint.sh"), "worker"],
                  {**spark_env, "SPARK_MASTER_URL": f"spark://127.0.0.1:{ports['master']}",
                   "SPARK_WORKER_HOST": "127.0.0.1", "SPARK_WORKER_CORES": "1", "SPARK_WORKER_MEMORY": "2g",
                   "SPARK_WORKER_WEBUI_PORT": str(ports[f"w{n}_ui"]), "SPARK_WORKER_DIR": str(tmp_path / f"work{n}"),
                   "NERSERVICE_STORE_URI": store_uri})
        yield {"tmp": tmp_path, "logs": logs, "ports": ports, "store_uri": store_uri, "spark_env": spark_env,
               "corpus": demo_corpus, "master": master}
    finally:
        for proc in reversed(procs):
            _stop(proc)


def test_trainer_pipeline_trains_on_two_workers_registers_promotes_and_reloads_the_api(stack, capsys):
    ports, store_uri = stack["ports"], stack["store_uri"]
    api = f"http://127.0.0.1:{ports['api']}"

    # The store accepts API calls addressed the way containers address it, and still refuses other hosts.
    search = f"{store_uri}/api/2.0/mlflow/experiments/search?max_results=1"
    assert _get(search, headers={"Host": "mlflow:5000"})[0] == 200
    assert _get(search, headers={"Host": "evil.example:5000"})[0] == 403

    # Before training: the API is up but not ready (no demo@production yet), as after `compose up`.
    status, body = _get(f"{api}/readyz")
    assert status == 503, body

    corpus = stack["corpus"]
    env = {**stack["spark_env"],
           "SPARK_MASTER_URL": f"spark://127.0.0.1:{ports['master']}",
           "SPARK_MASTER_UI": f"http://127.0.0.1:{ports['master_ui']}",
           "SPARK_DRIVER_HOST": "127.0.0.1", "SPARK_DRIVER_BIND": "127.0.0.1",
           "NERSERVICE_STORE_URI": store_uri, "CORPUS_DIR": str(Path(corpus["train"]).parent),
           "RUNS_DIR": str(stack["tmp"] / "runs"), "TRAIN_WORKERS": "2", "TASK_CPUS": "1", "EPOCHS": "2",
           "MODEL_NAME": "demo", "PROMOTE_ALIAS": "production", "WAIT_TIMEOUT": "150",
           "TRAIN_ARGS": TRAIN_ARGS,
           "API_URL": api, "NERSERVICE_API_ADMIN_TOKEN": "test-token"}
    proc = subprocess.run(["bash", str(REPO / "docker/spark/train-pipeline.sh")], env=env, capture_output=True,
                          text=True, timeout=900, cwd=stack["tmp"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:] + "\n" + "\n".join(
        f"--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted(stack["logs"].iterdir()))
    assert "2 worker(s) ready" in out
    assert "trained on 2 worker(s)" in out and "identical weights on all workers: True" in out

    (run,) = [p for p in (stack["tmp"] / "runs").iterdir() if p.name.startswith("demo-")]
    summary = json.loads((run / "train" / "summary.json").read_text())
    assert summary["weights_identical"] is True and len(summary["weights_digests"]) == 2
    assert (run / "prep" / "stats.json").is_file()

    # Registered and promoted in the server store; the reload step swapped it into the running API.
    # The CLI's own entry point, in this process (a new interpreter would only add its import time).
    from nerservice.cli.main import main

    assert main(["models", "list", "demo", "--json", "--store", store_uri]) == 0
    versions = json.loads(capsys.readouterr().out)
    assert any("production" in v.get("aliases", []) for v in versions), versions
    assert '"changed":true' in out.replace(" ", "")
    status, body = _get(f"{api}/readyz")
    assert status == 200, body
    assert json.loads(body)["model"]["name"] == "demo"
    # What the API serves is the pipeline's ONNX export of the trained version (the API image has no TensorFlow).
    info = json.loads(_get(f"{api}/v1/models")[1])["model"]
    assert info["manifest"]["format"] == "nerservice.onnx.v1" and info["runtime"] == "onnx"
    assert info["manifest"]["source"]["ref"] == f"demo/{summary['registered']['version']}"

    req = urllib.request.Request(f"{api}/v1/extract", data=json.dumps({"text": "Cisplatin caused renal failure ."}).encode(),
                                 headers={"Content-Type": "application/json"})
    answer = json.load(urllib.request.urlopen(req, timeout=60))
    assert answer["model"]["name"] == "demo" and len(answer["results"]) == 1
