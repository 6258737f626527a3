"""Fixtures for the REST service tests: the main server (``nerservice serve`` on the tiny model) and the
in-process Extractor its answers are compared with; for the fast tier, a random-weight model (built in
about a second, no training) and the app on it through FastAPI's TestClient."""
from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_harness import MAIN_LIMITS, REPO, RunningServer, start_server  # noqa: F401 (MAIN_LIMITS re-exported)

# Run as `.venv/bin/pytest`, the repo root is not on sys.path and tests/api (no __init__.py) would be
# found as a namespace package named `api`; with the root on the path the real package wins.
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))


@pytest.fixture(scope="session")
def admin_token() -> str:
    return "tok-" + secrets.token_urlsafe(24)


@pytest.fixture(scope="session")
def api_server(tiny_model_dir: Path, admin_token: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """`nerservice serve` on the tiny model, with an admin token and MAIN_LIMITS."""
    env = {"NERSERVICE_API_MODEL": str(tiny_model_dir), "NERSERVICE_API_ADMIN_TOKEN": admin_token, **MAIN_LIMITS}
    server = start_server(env, log_path=tmp_path_factory.mktemp("api-server") / "server.log")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def tiny_extractor(tiny_model_dir: Path):
    from nerservice.inference import Extractor

    return Extractor.load(tiny_model_dir)


@pytest.fixture(scope="session")
def demo_texts(demo_corpus: dict[str, Path]) -> list[str]:
    """Raw texts from the demo test split: single sentences, and 3-sentence texts with extra spacing so
    offsets into the original text are exercised."""
    from nerservice.data import read_corpus

    sents = [" ".join(s.tokens) for s in read_corpus(demo_corpus["test"]).sentences]
    multi = ["  " + "\n".join(sents[i:i + 3]) + "  " for i in range(0, min(len(sents), 30), 3)]
    return sents[:40] + multi



@pytest.fixture(scope="session")
def random_model_dir(tiny_random_model_dir: Path) -> Path:
    """The fast tier's random-weight model (tests/conftest.py); other variants: tests/random_model.py."""
    return tiny_random_model_dir


@pytest.fixture(scope="session")
def random_extractor(random_model_dir: Path):
    from nerservice.inference import Extractor

    return Extractor.load(random_model_dir)
