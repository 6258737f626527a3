"""API-test specifics over the shared server harness (tests/server_harness.py).

This folder has no __init__.py on purpose: as a package it would be named ``api`` (pytest's rootdir-based
names) and shadow the real ``api`` package in the test process.  Module names here are therefore unique
(``api_harness``, ``test_api_*``)."""
from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from server_harness import BIN, REPO, free_port, start_server  # noqa: F401 (re-exported for the API tests)
from server_harness import Server as RunningServer  # noqa: F401

# The main server's limits: small, so limit tests need small bodies; still room for 64 concurrent clients.
MAIN_LIMITS = {"NERSERVICE_API_MAX_TEXTS": "16", "NERSERVICE_API_MAX_TEXT_CHARS": "2000",
               "NERSERVICE_API_MAX_BODY_BYTES": "65536", "NERSERVICE_API_MAX_QUEUE": "256"}


def copy_model(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@contextmanager
def inprocess_client(settings: Any) -> Iterator[Any]:
    """The real app (create_app) on ``settings`` through FastAPI's TestClient, once its model is loaded."""
    from fastapi.testclient import TestClient

    from api.main import create_app

    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        deadline = time.monotonic() + 120
        while c.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline, c.get("/readyz").text
            time.sleep(0.05)
        yield c
