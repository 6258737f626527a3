"""``ModelStore``: MLflow's tracking server and Model Registry behind a small facade.

Embedded by default (a SQLite DB and an artifact root under ./models); the same code runs against an
``mlflow server`` URL.  Registration commits last (registration.py), so a version is resolvable only once
all its artifacts and their checksums are stored.  ``resolve`` downloads a version once per
(store, name, version) and re-verifies the copy against its manifest and the committed manifest checksum
on every call (cache.py).
"""
from __future__ import annotations

import builtins
import hashlib
import os
from pathlib import Path
from typing import Any

from nerservice.errors import ModelNotFoundError, PromotionRefusedError, StoreError
from nerservice.store import runs
from nerservice.store._mlflow import error_code, import_mlflow, make_client, mlflow_exception, translated
from nerservice.store.cache import DownloadCache
from nerservice.store.refs import ModelRef, parse_ref, validate_alias, validate_name, validate_version
from nerservice.store.registration import register_model
from nerservice.store.versions import is_complete, metric_of, version_info

DEFAULT_DIR = "models"
DB_FILE, ARTIFACTS, CACHE = "mlflow.db", "artifacts", "cache"
EXPERIMENT = "nerservice"


def _sqlite_path(uri: str) -> Path | None:
    return Path(uri[len("sqlite:///"):]) if uri.startswith("sqlite:///") else None


class ModelStore:
    def __init__(self, tracking_uri: str | None = None, *, registry_uri: str | None = None,
                 artifact_root: str | None = None, cache_dir: str | Path | None = None,
                 experiment: str = EXPERIMENT) -> None:
        """``tracking_uri``: an ``http(s)://`` MLflow server or a ``sqlite:///`` file; None = the embedded
        store under ./models.  For SQLite stores artifacts default to ``artifacts/`` beside the DB file (a
        server decides for itself).  ``cache_dir`` holds verified downloads (default: ``cache/`` beside the
        DB file, or under $NERSERVICE_STORE_DIR / ./models for a server)."""
        if tracking_uri is None:
            tracking_uri = f"sqlite:///{(Path(DEFAULT_DIR).resolve() / DB_FILE).as_posix()}"
        db = _sqlite_path(tracking_uri)
        if db is not None:
            db = db.resolve()
            tracking_uri = f"sqlite:///{db.as_posix()}"
        home = db.parent if db is not None else Path(os.environ.get("NERSERVICE_STORE_DIR", DEFAULT_DIR)).resolve()
        if artifact_root is None and not tracking_uri.startswith(("http://", "https://")):
            artifact_root = (home / ARTIFACTS).as_uri()
        elif artifact_root is not None and "://" not in artifact_root:  # a plain local path
            artifact_root = Path(artifact_root).resolve().as_uri()
        self.tracking_uri = tracking_uri
        self.registry_uri = registry_uri or tracking_uri
        self.artifact_root = artifact_root
        self.experiment = experiment
        self._db = db
        # Keyed by store so a name/version of one store never serves another store's bytes.
        key = hashlib.sha256(f"{self.tracking_uri}|{self.registry_uri}".encode()).hexdigest()[:12]
        self.cache = DownloadCache(Path(cache_dir or home / CACHE).resolve() / key)
        self._client: Any = None
        self._experiment_id: str | None = None

    @classmethod
    def embedded(cls, store_dir: str | Path, *, cache_dir: str | Path | None = None) -> "ModelStore":
        """SQLite DB, artifacts and cache all under ``store_dir``."""
        d = Path(store_dir).resolve()
        return cls(f"sqlite:///{(d / DB_FILE).as_posix()}", cache_dir=cache_dir or d / CACHE)

    @classmethod
    def from_env(cls, *, uri: str | None = None) -> "ModelStore":
        """NERSERVICE_STORE_URI (MLflow server URL or sqlite URI; default: embedded under
        NERSERVICE_STORE_DIR, itself ./models by default); NERSERVICE_CACHE_DIR (default <store dir>/cache).
        ``uri`` overrides NERSERVICE_STORE_URI (the CLI's ``--store``)."""
        store_dir = Path(os.environ.get("NERSERVICE_STORE_DIR") or DEFAULT_DIR)
        cache = os.environ.get("NERSERVICE_CACHE_DIR") or None
        uri = uri or os.environ.get("NERSERVICE_STORE_URI") or None
        if uri is None:
            return cls.embedded(store_dir, cache_dir=cache)
        return cls(uri, cache_dir=cache or (store_dir / CACHE if _sqlite_path(uri) is None else None))

    def __repr__(self) -> str:
        return f"ModelStore({self.tracking_uri!r})"

    # --- MLflow plumbing -----------------------------------------------------------------------------
    @property
    def client(self) -> Any:
        if self._client is None:
            if self._db is not None:
                self._db.parent.mkdir(parents=True, exist_ok=True)
            with translated("connecting", uri=self.tracking_uri):
                self._client = make_client(self.tracking_uri, self.registry_uri)
        return self._client

    def call(self, what: str, fn: Any, *args: Any, not_found: str | None = None, **kwargs: Any) -> Any:
        with translated(what, uri=self.tracking_uri, not_found=not_found):
            return fn(*args, **kwargs)

    def experiment_id(self) -> str:
        if self._experiment_id is None:
            MlflowException = mlflow_exception()
            exp = self.call("reading the experiment", self.client.get_experiment_by_name, self.experiment)
            if exp is None:
                with translated("creating the experiment", uri=self.tracking_uri):
                    try:
                        return self._set_experiment(self.client.create_experiment(
                            self.experiment, artifact_location=self.artifact_root))
                    except MlflowException as exc:  # created concurrently by another process
                        if error_code(exc) != "RESOURCE_ALREADY_EXISTS":
                            raise
                exp = self.call("reading the experiment", self.client.get_experiment_by_name, self.experiment)
            self._experiment_id = exp.experiment_id
        return self._experiment_id

    def _set_experiment(self, experiment_id: str) -> str:
        self._experiment_id = experiment_id
        return experiment_id

    def start_run(self, *, run_name: str, params: dict[str, str] | None = None,
                  tags: dict[str, str] | None = None) -> str:
        from nerservice.store.cleanup import owner_tags

        run = self.call("creating a run", self.client.create_run, self.experiment_id(), run_name=run_name)
        run_id = run.info.run_id
        with translated("logging run parameters", uri=self.tracking_uri):
            if params:
                runs.log_params(self.client, run_id, params)
            # Who owns the run: after a crash, cleanup.py tells an abandoned RUNNING run from a live one.
            runs.log_tags(self.client, run_id, {**(tags or {}), **owner_tags()})
        return run_id

    def run_url(self, run_id: str) -> str:
        """Where to look at a run: the MLflow UI page in server mode, else the run's id and store."""
        if self.tracking_uri.startswith(("http://", "https://")):
            return f"{self.tracking_uri.rstrip('/')}/#/experiments/{self.experiment_id()}/runs/{run_id}"
        return f"run {run_id} in {self.tracking_uri} (browse with `mlflow ui --backend-store-uri {self.tracking_uri}`)"

    def end_run(self, run_id: str, status: str = "FINISHED") -> None:
        self.call("ending the run", self.client.set_terminated, run_id, status)

    # --- registration --------------------------------------------------------------------------------
    def register(self, model_dir: str | Path, name: str, *, run_id: str | None = None,
                 tags: dict[str, str] | None = None) -> int:
        """Upload ``model_dir`` and register it as the next version of ``name``; returns the version.
        Without ``run_id`` a run is created for it (params from its config, metrics, lineage).  See
        registration.py for the order that keeps a killed registration invisible."""
        return register_model(self, model_dir, name, run_id=run_id, tags=tags)

    # --- lookup --------------------------------------------------------------------------------------
    def _empty(self) -> bool:
        """An embedded store nobody has registered into yet: reads answer without creating it."""
        return self._db is not None and not self._db.exists()

    def _require_model_store(self, name: str) -> None:
        if self._empty():
            where = self._db.parent if self._db is not None else self.tracking_uri
            raise ModelNotFoundError(f"no model named {name!r}: the store at {where} is empty",
                                     hint="register a model first, e.g. with `nerservice train ... --register NAME`")

    def _aliases(self, name: str) -> dict[str, int]:
        self._require_model_store(name)
        rm = self.call("reading the registered model", self.client.get_registered_model, name,
                       not_found=f"no model named {name!r} in the store")
        return {alias: int(v) for alias, v in (rm.aliases or {}).items()}

    def _versions(self, name: str) -> list[Any]:
        self._aliases(name)  # a clear "no model named" instead of an empty list
        out, token = [], None
        while True:
            page = self.call("listing versions", self.client.search_model_versions, f"name='{name}'",
                             page_token=token)
            out.extend(page)
            token = page.token
            if not token:
                return sorted(out, key=lambda mv: int(mv.version), reverse=True)

    def _find(self, ref: ModelRef) -> Any:
        self._require_model_store(ref.name)
        if ref.version is not None:
            return self.call("reading the version", self.client.get_model_version, ref.name, str(ref.version),
                             not_found=f"{ref}: model {ref.name!r} has no version {ref.version}")
        if ref.alias is not None:
            aliases = self._aliases(ref.name)  # MLflow reports a missing alias as a bad parameter; we say 404
            if ref.alias not in aliases:
                raise ModelNotFoundError(f"{ref}: model {ref.name!r} has no alias {ref.alias!r}",
                                         hint=f"its aliases: {sorted(aliases) or 'none'}")
            return self._find(ModelRef(ref.name, version=aliases[ref.alias]))
        for mv in self._versions(ref.name):
            if is_complete(mv):
                return mv
        raise ModelNotFoundError(f"{ref}: model {ref.name!r} has no complete version yet")

    def describe(self, ref: str) -> dict[str, Any]:
        """name, version, status, aliases, metrics, lineage, tags, run_id, created, source."""
        mv = self._find(parse_ref(ref))
        return version_info(mv, self._aliases(mv.name))

    def list(self, name: str | None = None) -> list[dict[str, Any]]:
        """Every version (newest first per model), complete or not, with metrics and aliases."""
        names = [validate_name(name)] if name is not None else self._model_names()
        out: list[dict[str, Any]] = []
        for n in names:
            aliases = self._aliases(n)
            out.extend(version_info(mv, aliases) for mv in self._versions(n))
        return out

    def _model_names(self) -> builtins.list[str]:
        if self._empty():
            return []
        names: list[str] = []
        token = None
        while True:
            page = self.call("listing models", self.client.search_registered_models, page_token=token)
            names.extend(rm.name for rm in page)
            token = page.token
            if not token:
                return sorted(names)

    def resolve(self, ref: str) -> Path:
        """A local, verified model dir for ``ref`` (downloaded once per version, checked on every call)."""
        r = parse_ref(ref)
        mv = self._find(r)
        if not is_complete(mv):
            raise ModelNotFoundError(
                f"{ref}: {mv.name}/{mv.version} is incomplete (its registration was interrupted before all "
                "artifacts and checksums were stored) and cannot be used", hint="register the model again")

        def download(dst: Path) -> Path:
            dst.mkdir(parents=True, exist_ok=True)
            with translated(f"downloading {mv.name}/{mv.version}", uri=self.tracking_uri):
                return Path(import_mlflow().artifacts.download_artifacts(
                    artifact_uri=mv.source, dst_path=str(dst), tracking_uri=self.tracking_uri))

        return self.cache.fetch(mv.name, int(mv.version), mv.tags[runs.TAG_MANIFEST], download=download)

    # --- aliases -------------------------------------------------------------------------------------
    def set_alias(self, name: str, alias: str, version: int) -> None:
        validate_name(name)
        validate_alias(alias)
        mv = self._find(ModelRef(name, version=validate_version(version)))
        if not is_complete(mv):
            raise StoreError(f"{name}/{version} is incomplete and cannot carry the alias {alias!r}",
                             hint="register the model again")
        self.call("setting the alias", self.client.set_registered_model_alias, name, alias, str(version))

    def promote(self, name: str, version: int, *, alias: str = "production", if_better: str | None = "dev_f1") -> bool:
        """Point ``alias`` at ``version``. With ``if_better``, refuse (PromotionRefusedError) when the
        candidate's metric is worse than the current holder's; equal is fine.  Metrics whose name ends in
        ``loss`` count lower as better.  Returns False when the alias already pointed there."""
        validate_name(name)
        validate_alias(alias)
        candidate = self._find(ModelRef(name, version=validate_version(version)))
        current = self._aliases(name).get(alias)
        if current == int(version):
            return False
        if if_better and current is not None:
            holder = self._find(ModelRef(name, version=current))
            cand_v, cur_v = metric_of(candidate, if_better), metric_of(holder, if_better)
            if cand_v is None:
                raise PromotionRefusedError(
                    f"{name}/{version} has no {if_better!r} metric to compare with {name}@{alias} "
                    f"(version {current})", hint="promote without the comparison (CLI: --force)")
            lower_better = if_better.endswith("loss")
            worse = cur_v is not None and (cand_v > cur_v if lower_better else cand_v < cur_v)
            if worse:
                raise PromotionRefusedError(
                    f"{name}/{version} was not promoted to {alias!r}: its {if_better} {cand_v:.4f} is worse than "
                    f"{cur_v:.4f} of version {current}, which keeps the alias",
                    hint="promote without the comparison to override (CLI: --force)",
                    candidate=cand_v, current=cur_v, holder=current)
        self.set_alias(name, alias, int(version))
        return True
