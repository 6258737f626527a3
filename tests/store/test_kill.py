"""A registration SIGKILLed in the middle of its upload leaves the store consistent."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nerservice.errors import ModelNotFoundError

from .store_helpers import rewrite_manifest, tree_digest

PADDING_MB = 256  # big enough that the upload takes a while (>= ~0.1 s even as a local copy)

REGISTER = """
import sys
from nerservice.store import ModelStore
ModelStore(sys.argv[1], cache_dir=sys.argv[2]).register(sys.argv[3], sys.argv[4])
print("registration finished", flush=True)
"""


@pytest.fixture(scope="module")
def big_model_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A valid saved model with a large extra file listed in its manifest."""
    d = tmp_path_factory.mktemp("big-model") / "model"
    shutil.copytree(tiny_model_dir, d)
    block = os.urandom(1 << 20)
    with open(d / "padding.bin", "wb") as fh:
        for _ in range(PADDING_MB):
            fh.write(block)
    rewrite_manifest(d)
    return d


def _upload_dirs(artifacts: Path) -> set[Path]:
    return set(artifacts.glob("**/artifacts/model")) if artifacts.exists() else set()


@pytest.mark.slow
def test_sigkill_during_upload_leaves_no_resolvable_version(store_env, store, model_name, big_model_dir,
                                                            tiny_model_dir, tmp_path):
    before = _upload_dirs(store_env.artifacts)
    # The child runs at the lowest priority so that, on a busy machine, this watcher still sees the upload
    # begin long before it ends.  `nice` execs the child (same PID), where a preexec_fn would make subprocess
    # fork this worker, which JAX (imported by an earlier test in it) warns against.
    proc = subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", REGISTER, store_env.uri,
                             str(tmp_path / "child-cache"), str(big_model_dir), model_name],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    target: Path | None = None
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            new = _upload_dirs(store_env.artifacts) - before
            if new:  # the upload has begun: kill it now
                os.kill(proc.pid, signal.SIGKILL)
                target = new.pop()
                break
            time.sleep(0.002)
    finally:
        if proc.poll() is None and target is None:
            os.kill(proc.pid, signal.SIGKILL)
        out = proc.communicate(timeout=30)[0].decode(errors="replace")
    assert target is not None, f"the registration ended before its upload could be interrupted:\n{out}"
    assert proc.returncode == -signal.SIGKILL, out
    assert "registration finished" not in out

    # It really died mid-upload: some file never reached the store in full.
    full = {p.name: p.stat().st_size for p in big_model_dir.iterdir()}
    stored = {p.name: p.stat().st_size for p in target.iterdir()} if target.exists() else {}
    assert any(stored.get(n) != size for n, size in full.items()), "upload was complete before the kill"

    # Nothing resolvable, nothing half-visible.
    for ref in (model_name, f"{model_name}@latest", f"{model_name}/1"):
        with pytest.raises(ModelNotFoundError):
            store.resolve(ref)
    try:
        leftovers = store.list(model_name)
    except ModelNotFoundError:
        leftovers = []
    assert all(r["status"] == "incomplete" for r in leftovers)

    # And the store carries on: the next registration is complete and resolves to the right bytes.
    version = store.register(tiny_model_dir, model_name)
    assert store.describe(f"{model_name}@latest")["version"] == version
    assert tree_digest(store.resolve(model_name)) == tree_digest(tiny_model_dir)
