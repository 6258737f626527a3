"""Store fixtures: the same tests run against the embedded store and a real ``mlflow server`` process.

The server (127.0.0.1, free port, own SQLite backend and proxied artifact root in a temp dir) is started
once per session and stopped by its process group id afterwards.  Each test gets a fresh download cache
and a model name of its own, so tests sharing a store cannot see each other's versions.
"""
from __future__ import annotations

import urllib.parse
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class StoreEnv:
    kind: str  # "embedded" | "server"
    uri: str
    artifacts: Path  # where the stored bytes live on this machine (to tamper with, or watch uploads)

    def store(self, cache_dir: Path):
        from nerservice.store import ModelStore

        return ModelStore(self.uri, cache_dir=cache_dir)

    def stored_dir(self, source: str) -> Path:
        """The on-disk folder behind a version's ``source`` URI."""
        parsed = urllib.parse.urlparse(source)
        if parsed.scheme == "file":
            return Path(urllib.parse.unquote(parsed.path))
        assert parsed.scheme == "mlflow-artifacts", source
        return self.artifacts / urllib.parse.unquote(parsed.path).lstrip("/")

    def env(self) -> dict[str, str]:
        """Environment for a subprocess (CLI) that should use this store."""
        return {"NERSERVICE_STORE_URI": self.uri}


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory):
    from nerservice.store.local_server import LocalMlflowServer

    server = LocalMlflowServer(tmp_path_factory.mktemp("mlflow-server"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def embedded_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One SQLite DB for the session: creating MLflow's schema costs seconds, so tests share it and stay
    # apart through their model names.
    return tmp_path_factory.mktemp("embedded-store")


@pytest.fixture(params=["embedded", pytest.param("server", marks=[pytest.mark.server, pytest.mark.slow])])
def store_env(request: pytest.FixtureRequest, embedded_root: Path) -> StoreEnv:
    if request.param == "embedded":
        return StoreEnv("embedded", f"sqlite:///{(embedded_root / 'mlflow.db').as_posix()}", embedded_root / "artifacts")
    server = request.getfixturevalue("mlflow_server")
    return StoreEnv("server", server.uri, server.artifacts)


@pytest.fixture
def store(store_env: StoreEnv, tmp_path: Path):
    return store_env.store(tmp_path / "cache")


@pytest.fixture
def model_name() -> str:
    return f"ner-{uuid.uuid4().hex[:10]}"
