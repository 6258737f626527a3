"""Fixtures for the reliability and security tests: one shared server on the tiny model with a known admin
token and small limits; tests that need a server of their own (soak, kill, empty token) start it."""
from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .servers import REPO, Server, start_server

if str(REPO) not in sys.path:  # bench/ (the soak) and api/ are imported from the repo root
    sys.path.append(str(REPO))

# Small limits so limit tests need small bodies.
LIMITS = {"NERSERVICE_API_MAX_TEXTS": "16", "NERSERVICE_API_MAX_TEXT_CHARS": "2000",
          "NERSERVICE_API_MAX_BODY_BYTES": "65536", "NERSERVICE_API_MAX_QUEUE": "64"}


@pytest.fixture(scope="session")
def rel_token() -> str:
    return "reltok-" + secrets.token_urlsafe(24)


@pytest.fixture(scope="session")
def rel_server(tiny_model_dir: Path, rel_token: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`nerservice serve` at its default log level on the tiny model, admin token set, LIMITS."""
    env = {"NERSERVICE_API_MODEL": str(tiny_model_dir), "NERSERVICE_API_ADMIN_TOKEN": rel_token, **LIMITS}
    server = start_server(env, log_path=tmp_path_factory.mktemp("rel-server") / "server.log")
    try:
        yield server
    finally:
        server.stop()
