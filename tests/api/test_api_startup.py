"""Starting up: bad settings stop `nerservice serve` with a coded message; without a usable model the
process stays alive (/healthz) but is not ready (/readyz and /v1/extract answer 503 with the reason)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx
import pytest
from api_harness import BIN, REPO, start_server


def test_serve_refuses_bad_settings() -> None:
    env = {**os.environ, "NERSERVICE_API_MAX_QUEUE": "lots"}
    out = subprocess.run([str(BIN / "nerservice"), "serve", "--port", "1"], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "NER100" in out.stderr and "NERSERVICE_API_MAX_QUEUE" in out.stderr


@pytest.mark.server
@pytest.mark.parametrize("model,reason", [(None, "no model configured"),
                                          ("/nonexistent/model-dir", "failed to load")])
def test_alive_but_not_ready_without_a_usable_model(tmp_path: Path, model: str | None, reason: str) -> None:
    # An empty admin token (docker-compose passes one through when the shell has it empty) means admin off.
    env = {"NERSERVICE_API_ADMIN_TOKEN": "", **({"NERSERVICE_API_MODEL": model} if model else {})}
    server = start_server(env, log_path=tmp_path / "server.log", wait_ready=False)
    try:
        assert httpx.get(server.url + "/healthz").json() == {"status": "ok"}
        r = httpx.get(server.url + "/readyz")
        assert r.status_code == 503 and r.json()["error"]["code"] == "NER701" and reason in r.text
        r = httpx.post(server.url + "/v1/extract", json={"text": "Aspirin caused asthma."})
        assert r.status_code == 503 and r.json()["error"]["code"] == "NER701"
        assert r.headers["retry-after"] == "1"
        models = httpx.get(server.url + "/v1/models").json()
        assert models["model"] is None and models["state"] == ("empty" if model is None else "failed")
        if model is not None:
            assert models["error"]["code"] == "NER401"
        for headers in ({}, {"Authorization": "Bearer"}, {"Authorization": "Bearer x"}):
            r = httpx.post(server.url + "/v1/models/reload", headers=headers)
            assert r.status_code == 401 and "disabled" in r.json()["error"]["message"]
        # Bad input is still refused as bad input, before the missing model matters.
        assert httpx.post(server.url + "/v1/extract", json={"texts": []}).status_code == 400
    finally:
        server.stop()


def test_importing_the_app_loads_no_model_and_no_keras() -> None:
    code = ("import sys, api.main; heavy = [m for m in ('keras', 'tensorflow', 'jax', 'mlflow') if m in sys.modules]; "
            "print(type(api.main.app).__name__, heavy)")
    out = subprocess.run([str(BIN / "python"), "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "NERSERVICE_API_MODEL": "/nonexistent/model-dir"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "FastAPI []"
