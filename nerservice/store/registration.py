"""Registration, ordered so nothing is ever half-visible.

1. the model dir is verified against its own manifest (a broken dir is refused up front), and a file the
   manifest does not list is refused too (store/contents.py);
2. its files are uploaded to the run (``<run artifacts>/model``) and the upload is checked file by file
   against the manifest sizes;
3. a registry version is created, carrying metrics, lineage and the artifact path as tags;
4. **commit point**: the tag ``nerservice.manifest_sha256`` is set.  Until then ``resolve`` refuses the
   version and ``name@latest`` skips it, so a process SIGKILLed at any step leaves at most an inert
   incomplete version (shown as such by ``list``), never a resolvable broken one.  Failures we survive
   delete the half-made version.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from nerservice.artifacts.files import sha256_file
from nerservice.artifacts.formats import verify_manifest
from nerservice.artifacts.layout import CONFIG, LINEAGE, MANIFEST, METRICS
from nerservice.errors import InvalidModelRefError, ModelLoadError, StoreError
from nerservice.store import runs
from nerservice.store._mlflow import error_code, mlflow_exception, translated
from nerservice.store.contents import refuse_unlisted
from nerservice.store.refs import validate_name


class StoreSession(Protocol):
    """What registration uses of ``model_store.ModelStore`` (a protocol, so that module can import this one
    without a circle)."""

    @property
    def tracking_uri(self) -> str: ...

    @property
    def client(self) -> Any: ...

    def call(self, what: str, fn: Any, *args: Any, not_found: str | None = None, **kwargs: Any) -> Any: ...

    def start_run(self, *, run_name: str, params: dict[str, str] | None = None,
                  tags: dict[str, str] | None = None) -> str: ...

    def end_run(self, run_id: str, status: str = "FINISHED") -> None: ...


def register_model(store: StoreSession, model_dir: str | Path, name: str, *, run_id: str | None = None,
                   tags: dict[str, str] | None = None) -> int:
    """Upload ``model_dir`` and register it as the next version of ``name``; returns the version.
    Without ``run_id`` a run is created for it (params from its config, metrics, lineage)."""
    validate_name(name)
    user_tags = {str(k): str(v) for k, v in (tags or {}).items()}
    reserved = [k for k in user_tags if k.startswith(runs.TAG_PREFIX) or k.startswith("mlflow.")]
    if reserved:
        raise InvalidModelRefError(f"tag keys {reserved} are reserved for the store itself", tags=reserved)
    src = Path(model_dir)
    if not src.is_dir() or not (src / MANIFEST).is_file():
        raise ModelLoadError(f"{src}: not a saved model directory (no {MANIFEST})", path=str(src),
                             hint="register the model-best folder written by `nerservice train`")
    manifest = verify_manifest(src)  # never store a model that is already broken
    refuse_unlisted(src, what="not registered")  # nor files nobody checksummed
    manifest_sha = sha256_file(src / MANIFEST)
    expected = {n: int(m["bytes"]) for n, m in manifest.get("files", {}).items()}
    expected[MANIFEST] = (src / MANIFEST).stat().st_size
    metrics = runs.summary_metrics(runs.read_saved_json(src, METRICS))
    lineage = runs.read_saved_json(src, LINEAGE)

    own_run = run_id is None
    if run_id is None:
        run_id = store.start_run(
            run_name=f"register-{name}", params=runs.flatten(runs.read_saved_json(src, CONFIG)),
            tags={**runs.lineage_tags(lineage), runs.TAG_MODEL_NAME: name,
                  **({runs.GIT_COMMIT_TAG: str(lineage["git_sha"])} if lineage.get("git_sha") else {})})
    version: int | None = None
    try:
        if own_run:
            with translated("logging metrics", uri=store.tracking_uri):
                runs.log_metrics(store.client, run_id, metrics, step=int(metrics.get("best_epoch", 0)))
        run = store.call("reading the run", store.client.get_run, run_id, not_found=f"run {run_id!r} does not exist")
        artifact_path = _free_artifact_path(store, run_id)
        store.call(f"uploading {src}", store.client.log_artifacts, run_id, str(src), artifact_path)
        _check_upload(store, run_id, artifact_path, expected)
        _ensure_registered_model(store, name)
        version_tags = {**user_tags, **runs.lineage_tags(lineage), runs.TAG_ARTIFACT_PATH: artifact_path,
                        **{f"{runs.TAG_METRIC}{k}": repr(v) for k, v in metrics.items()}}
        mv = store.call("creating the model version", store.client.create_model_version, name,
                         f"{run.info.artifact_uri}/{artifact_path}", run_id=run_id, tags=version_tags,
                         await_creation_for=0)
        version = int(mv.version)
        # The commit point (see the module docstring).
        store.call("completing the model version", store.client.set_model_version_tag, name, str(version),
                    runs.TAG_MANIFEST, manifest_sha)
    except BaseException:
        # Best effort for failures we survive; a SIGKILL leaves an incomplete version nobody resolves.
        if version is not None:
            try:
                store.client.delete_model_version(name, str(version))
            except Exception:  # noqa: BLE001 - the original error matters more
                pass
        if own_run:
            try:
                store.client.set_terminated(run_id, "FAILED")
            except Exception:  # noqa: BLE001
                pass
        raise
    if own_run:
        store.end_run(run_id)
    return version


def _free_artifact_path(store: StoreSession, run_id: str) -> str:
    """``model``, or ``model-2``... when the run already holds one (re-registration never overwrites the
    bytes an earlier version points at)."""
    taken = {f.path for f in store.call("listing run artifacts", store.client.list_artifacts, run_id)}
    path, n = "model", 1
    while path in taken:
        n += 1
        path = f"model-{n}"
    return path


def _check_upload(store: StoreSession, run_id: str, artifact_path: str, expected: dict[str, int]) -> None:
    listed = store.call("listing uploaded artifacts", store.client.list_artifacts, run_id, artifact_path)
    sizes = {Path(f.path).name: f.file_size for f in listed if not f.is_dir}
    bad = sorted(n for n, b in expected.items() if sizes.get(n) != b)
    if bad:
        raise StoreError(f"upload to run {run_id} is incomplete: {bad} missing or of the wrong size",
                         run_id=run_id, files=bad)


def _ensure_registered_model(store: StoreSession, name: str) -> None:
    MlflowException = mlflow_exception()
    with translated(f"creating registered model {name!r}", uri=store.tracking_uri):
        try:
            store.client.create_registered_model(name)
        except MlflowException as exc:
            if error_code(exc) != "RESOURCE_ALREADY_EXISTS":
                raise

