"""MLflow behind a lazy import, with its noise turned down and its exceptions turned into ours.

``import mlflow`` costs ~2.3 s, so nothing here imports it at module level: the CLI's ``--help`` and the
parts of the API that never touch the store stay fast.  Environment defaults are set with ``setdefault``
so an operator's explicit choice always wins.
"""
from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from typing import Any

from nerservice.errors import ModelNotFoundError, StoreError

_QUIET_ENV = {
    "MLFLOW_LOGGING_LEVEL": "WARNING",  # MLflow logs INFO lines for DB migrations and every version wait
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",  # tqdm bars on stderr for every download
    # MLflow retries HTTP 7 times with backoff factor 2 (minutes) before it reports a dead server; a
    # model store that is down should say so within seconds.
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "60",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",  # it would corrupt `--json` output on stdout
    "MLFLOW_DISABLE_TELEMETRY": "true",  # a service should not phone home (and these hosts are offline)
    "GIT_PYTHON_REFRESH": "quiet",  # MLflow probes git through GitPython and warns when git is missing
}


def import_mlflow() -> Any:
    for key, value in _QUIET_ENV.items():
        os.environ.setdefault(key, value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # import-time deprecation/future warnings from MLflow's deps
        import mlflow
    # Only MLflow's own chatter is silenced; warnings from other packages stay visible.
    for category in (FutureWarning, UserWarning, DeprecationWarning):
        warnings.filterwarnings("ignore", category=category, module=r"mlflow(\..*)?$")
    return mlflow


def mlflow_exception() -> type[Exception]:
    import_mlflow()
    from mlflow.exceptions import MlflowException

    return MlflowException


def make_client(tracking_uri: str, registry_uri: str) -> Any:
    import_mlflow()
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=tracking_uri, registry_uri=registry_uri)


def error_code(exc: BaseException) -> str | None:
    return getattr(exc, "error_code", None)


@contextlib.contextmanager
def translated(what: str, *, uri: str, not_found: str | None = None) -> Iterator[None]:
    """Run an MLflow call; its failures come out as coded StoreErrors that say what we were doing."""
    import_mlflow()  # first, so our quiet defaults are in place before MLflow configures its loggers
    from mlflow.exceptions import MlflowException

    try:
        yield
    except MlflowException as exc:
        code = error_code(exc)
        if code == "RESOURCE_DOES_NOT_EXIST" and not_found is not None:
            raise ModelNotFoundError(not_found, store=uri) from None
        text = str(exc.message if hasattr(exc, "message") else exc)
        if "Max retries exceeded" in text or "Failed to establish a new connection" in text:
            raise StoreError(f"model store: {what} failed: cannot connect to the MLflow server at {uri}",
                             hint="is it running and reachable? The URI comes from NERSERVICE_STORE_URI or --store",
                             store=uri) from None
        raise StoreError(f"model store: {what} failed: {_short(text)}", store=uri, mlflow_code=code) from None
    except OSError as exc:  # local artifact roots: disk full, permissions
        raise StoreError(f"model store: {what} failed: {exc}", store=uri) from None


def _short(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
