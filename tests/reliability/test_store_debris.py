"""What a SIGKILL leaves in the model store is found and cleared through the CLI: a registration killed at
its commit point leaves a RUNNING run and an incomplete version; `nerservice models list --incomplete` shows
the version, `nerservice models cleanup` ends the run as KILLED and deletes the version, and the store
serves its complete versions throughout. A folder with a file its manifest does not list is refused."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]

KILLED_AT_COMMIT = """
import os, signal, sys
from nerservice.store import ModelStore
store = ModelStore(sys.argv[1], cache_dir=sys.argv[2])
client = store.client
real = client.set_model_version_tag
def die(name, version, key, value):  # the commit point: everything else is written
    os.kill(os.getpid(), signal.SIGKILL)
client.set_model_version_tag = die
store.register(sys.argv[3], sys.argv[4])
"""


def _cli(uri: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NERSERVICE_STORE_URI": uri, "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run([sys.executable, "-m", "nerservice.cli.main", "models", *args], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_debris_of_a_killed_registration_is_listed_and_cleaned(tmp_path: Path) -> None:
    from random_model import build_random_model

    from nerservice.store import ModelStore

    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    (tmp_path / "store").mkdir()
    model = build_random_model(tmp_path / "model")
    store = ModelStore(uri, cache_dir=tmp_path / "cache")
    v1 = store.register(model, "demo")
    out = subprocess.run([sys.executable, "-c", KILLED_AT_COMMIT, uri, str(tmp_path / "c2"), str(model), "demo"],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == -9, out.stderr
    running = store.client.search_runs([store.experiment_id()], filter_string="attributes.status = 'RUNNING'")
    assert len(running) == 1  # the killed registration's own run

    listed = _cli(uri, "list", "demo", "--incomplete", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [r["version"] for r in json.loads(listed.stdout)] == [v1 + 1]
    kept = _cli(uri, "cleanup", "--json")  # default grace period: the fresh version is kept
    assert json.loads(kept.stdout)["versions"] == [] and len(json.loads(kept.stdout)["runs"]) == 1
    cleaned = _cli(uri, "cleanup", "--older-than", "0", "--json")
    assert cleaned.returncode == 0, cleaned.stderr
    report = json.loads(cleaned.stdout)
    assert report["runs"] == [] and [r["version"] for r in report["versions"]] == [v1 + 1]
    assert store.client.get_run(running[0].info.run_id).info.status == "KILLED"
    assert [(r["version"], r["status"]) for r in store.list("demo")] == [(v1, "complete")]
    assert store.resolve("demo").parent.name == str(v1)
    assert "nothing to clean up" in _cli(uri, "cleanup", "--older-than", "0").stdout

    evil = shutil.copytree(model, tmp_path / "evil")
    (evil / "evil.py").write_text("import os\n")
    refused = _cli(uri, "register", str(evil), "demo")
    assert refused.returncode != 0 and "evil.py" in refused.stderr and "Traceback" not in refused.stderr
    assert [r["version"] for r in store.list("demo")] == [v1]
