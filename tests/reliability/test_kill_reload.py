"""SIGKILL the API in the middle of a model reload (while it downloads the new version from the store, and
while it loads it into Keras); a restart serves a complete, verified model: the version `production` names,
never a torn copy. The store is an embedded one in a temp dir; v2 carries a 48 MiB extra file (listed in
its manifest) so its download takes long enough to be interrupted."""
from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path

import httpx
import pytest

from .servers import Server, start_server

pytestmark = [pytest.mark.server, pytest.mark.slow]

TEXTS = ["Aspirin reduced the risk of colorectal adenoma in patients with familial adenomatous polyposis .",
         "Tamoxifen caused hepatotoxicity ."]


@pytest.fixture(scope="module")
def v2_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from nerservice.artifacts.files import sha256_file
    from nerservice.artifacts.layout import MANIFEST

    d = tmp_path_factory.mktemp("kill-v2") / "model"
    shutil.copytree(tiny_model_dir, d)
    with open(d / "padding.bin", "wb") as fh:
        for _ in range(48):
            fh.write(os.urandom(1 << 20))
    manifest = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
    manifest["files"] = {p.name: {"sha256": sha256_file(p), "bytes": p.stat().st_size}
                         for p in sorted(d.iterdir()) if p.name != MANIFEST}
    (d / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
    return d


def _send_reload(port: int, token: str) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"POST /v1/models/reload HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
              "Content-Length: 0\r\n\r\n".encode())
    return s


def _wait_for(cond, what: str, timeout: float = 120.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


@pytest.mark.parametrize("phase", ["download", "load"])
def test_sigkill_during_reload_then_restart_serves_a_complete_model(phase: str, tiny_model_dir: Path, v2_dir: Path,
                                                                    rel_token: str, tmp_path: Path) -> None:
    from nerservice.artifacts.formats import verify_manifest
    from nerservice.inference import Extractor
    from nerservice.store import ModelStore

    store_dir = tmp_path / "store"
    store = ModelStore.embedded(store_dir)
    v1 = store.register(tiny_model_dir, "demo")
    store.set_alias("demo", "production", v1)
    env = {"NERSERVICE_STORE_DIR": str(store_dir), "NERSERVICE_API_MODEL": "demo@production",
           "NERSERVICE_API_ADMIN_TOKEN": rel_token}
    first = start_server(env, log_path=tmp_path / "first.log")
    try:
        assert httpx.get(first.url + "/readyz").json()["model"] == {"name": "demo", "version": str(v1)}
        v2 = store.register(v2_dir, "demo")
        store.set_alias("demo", "production", v2)
        cache = store_dir / "cache"  # <cache>/<store hash>/demo/<version>
        conn = _send_reload(first.port, rel_token)
        if phase == "download":  # a partial download folder exists: kill now
            _wait_for(lambda: any(cache.rglob(f".{v2}.download-*")), "the download to start")
        else:  # the download is verified and Keras is loading v2
            _wait_for(lambda: f"loading model demo version {v2}" in first.log(), "the load to start")
        first.kill()
        conn.close()
        log = first.log()
        assert f"serving model demo version {v2}" not in log, "the reload finished before the kill"
    finally:
        first.kill()

    second: Server = start_server(env, log_path=tmp_path / "second.log")
    try:
        assert httpx.get(second.url + "/readyz").json() == {"status": "ready",
                                                            "model": {"name": "demo", "version": str(v2)}}
        info = httpx.get(second.url + "/v1/models", headers={"Authorization": f"Bearer {rel_token}"}).json()["model"]
        verify_manifest(info["path"])  # the copy it serves is whole: every file, every checksum
        assert "padding.bin" in os.listdir(info["path"])
        r = httpx.post(second.url + "/v1/extract", json={"texts": TEXTS}, timeout=60)
        assert r.status_code == 200, r.text
        want = [[(e.start, e.end, e.label) for e in ents] for ents in Extractor.load(tiny_model_dir).extract(TEXTS)]
        got = [[(e["start"], e["end"], e["label"]) for e in res["entities"]] for res in r.json()["results"]]
        assert got == want and any(want)
        slot = Path(info["path"]).parent  # the verified cache slot, never a download folder
        assert (slot.name, slot.parent.name) == (str(v2), "demo") and cache in slot.parents
    finally:
        second.stop()
