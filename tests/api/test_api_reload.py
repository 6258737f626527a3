"""POST /v1/models/reload under load loses no request, and every answer comes wholly from the version it
names: from a real embedded model store (move `production`, reload), and from a model folder replaced
in place.

Version 2 is the tiny model with its Chemical emissions pushed down by 30, so the two versions give
visibly different answers and each response can be checked against the version it reports."""
from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_harness import start_server

pytestmark = [pytest.mark.server, pytest.mark.slow]


@pytest.fixture(scope="module")
def v2_model_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    import keras

    from nerservice.artifacts.formats import load_model
    from nerservice.artifacts.model_folder import save_model

    loaded = load_model(tiny_model_dir)
    bias = loaded.model.emission.bias
    values = keras.ops.convert_to_numpy(bias).copy()
    for tag in ("B-Chemical", "I-Chemical"):
        values[loaded.vocabs.tags.id(tag)] -= 30.0
    bias.assign(values)
    return save_model(tmp_path_factory.mktemp("v2") / "model", model=loaded.model, vocabs=loaded.vocabs,
                      config=loaded.config, metrics=loaded.metrics, lineage=loaded.lineage)


@pytest.fixture(scope="module")
def answers_by_version(tiny_extractor, v2_model_dir, demo_texts) -> Callable[[str, str], list[dict[str, Any]]]:
    """What each version says about each text, computed in-process."""
    from nerservice.inference import Extractor

    v2 = Extractor.load(v2_model_dir)
    table = {
        "v1": {t: [e.to_dict() for e in ents] for t, ents in zip(demo_texts, tiny_extractor.extract(demo_texts))},
        "v2": {t: [e.to_dict() for e in ents] for t, ents in zip(demo_texts, v2.extract(demo_texts))},
    }
    labels = {k: {e["label"] for ents in v.values() for e in ents} for k, v in table.items()}
    assert "Chemical" in labels["v1"] and "Chemical" not in labels["v2"]  # the versions are distinguishable
    return lambda version, text: table[version][text]


@dataclass
class Load:
    """Client threads posting continuously; every answer is kept with its send and receive times."""

    url: str
    texts: list[str]
    clients: int = 8
    answers: list[tuple[float, float, int, dict[str, Any], str]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def _run(self, k: int) -> None:
        with httpx.Client(base_url=self.url, timeout=60) as http:
            i = k
            while not self._stop.is_set():
                text = self.texts[i % len(self.texts)]
                i += self.clients
                t0 = time.monotonic()
                try:
                    r = http.post("/v1/extract", json={"texts": [text]})
                    self.answers.append((t0, time.monotonic(), r.status_code, r.json(), text))
                except httpx.HTTPError as exc:  # a lost request: recorded, and fails the test below
                    self.answers.append((t0, time.monotonic(), -1, {"exception": repr(exc)}, text))

    def __enter__(self) -> "Load":
        self._threads = [threading.Thread(target=self._run, args=(k,)) for k in range(self.clients)]
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join()


def reload_under_load(server_url: str, token: str, texts: list[str], swap: Callable[[], None]) -> tuple[dict, float, list]:
    with Load(server_url, texts) as load:
        time.sleep(1.5)
        swap()
        r = httpx.post(server_url + "/v1/models/reload", headers={"Authorization": f"Bearer {token}"}, timeout=180)
        reloaded_at = time.monotonic()
        assert r.status_code == 200, r.text
        time.sleep(1.5)
    return r.json(), reloaded_at, load.answers


def check_answers(answers: list, reloaded_at: float, versions: dict[str, str],
                  expected: Callable[[str, str], list[dict[str, Any]]]) -> None:
    assert len(answers) > 50
    lost = [a for a in answers if a[2] != 200]
    assert not lost, lost[:3]
    seen = {a[3]["model"]["version"] for a in answers}
    assert seen == set(versions), seen  # both versions answered, nothing else
    for sent, _, _, body, text in answers:
        which = versions[body["model"]["version"]]
        got = body["results"][0]["entities"]
        want = expected(which, text)
        assert [(e["start"], e["end"], e["label"]) for e in got] == [(e["start"], e["end"], e["label"]) for e in want]
        if sent > reloaded_at:  # sent after the swap finished: must be the new model
            assert which == "v2"


def test_reload_from_the_store_under_load(tiny_model_dir, v2_model_dir, admin_token, demo_texts, answers_by_version,
                                          tmp_path: Path) -> None:
    from nerservice.store import ModelStore

    store_dir = tmp_path / "store"
    store = ModelStore.embedded(store_dir)
    v1 = store.register(tiny_model_dir, "demo")
    store.set_alias("demo", "production", v1)
    v2 = store.register(v2_model_dir, "demo")
    env = {"NERSERVICE_STORE_DIR": str(store_dir), "NERSERVICE_API_MODEL": "demo@production",
           "NERSERVICE_API_ADMIN_TOKEN": admin_token}
    server = start_server(env, log_path=tmp_path / "server.log")
    try:
        info = httpx.get(server.url + "/v1/models").json()["model"]
        assert (info["source"], info["name"], info["version"], info["aliases"]) == ("store", "demo", str(v1), ["production"])
        # The model field accepts the alias the loaded version holds.
        assert httpx.post(server.url + "/v1/extract", json={"text": "a", "model": "demo@production"}).status_code == 200

        outcome, reloaded_at, answers = reload_under_load(
            server.url, admin_token, demo_texts, lambda: store.set_alias("demo", "production", v2))
        assert outcome == {"changed": True, "previous": {"name": "demo", "version": str(v1)},
                           "current": {"name": "demo", "version": str(v2)}}
        check_answers(answers, reloaded_at, {str(v1): "v1", str(v2): "v2"}, answers_by_version)

        info = httpx.get(server.url + "/v1/models").json()["model"]
        assert (info["version"], info["aliases"]) == (str(v2), ["production"])
        assert server.metric("nerservice_model_info", name="demo", version=str(v2), source="store") == 1.0
        assert server.metric("nerservice_model_info", name="demo", version=str(v1), source="store") == 0.0
        assert server.metric("nerservice_model_reloads_total", outcome="swapped") == 1.0
        # Nothing moved since: a second reload changes nothing.
        r = httpx.post(server.url + "/v1/models/reload", headers={"Authorization": f"Bearer {admin_token}"}, timeout=60)
        assert r.json()["changed"] is False
    finally:
        server.stop()


def test_reload_of_a_folder_replaced_in_place(tiny_model_dir, v2_model_dir, admin_token, demo_texts,
                                              answers_by_version, tmp_path: Path) -> None:
    served = shutil.copytree(tiny_model_dir, tmp_path / "served")
    staged = shutil.copytree(v2_model_dir, tmp_path / "staged")
    env = {"NERSERVICE_API_MODEL": str(served), "NERSERVICE_API_ADMIN_TOKEN": admin_token}
    server = start_server(env, log_path=tmp_path / "server.log")
    try:
        v1 = httpx.get(server.url + "/readyz").json()["model"]["version"]

        def swap() -> None:  # what `nerservice train --out` does: rename the new folder into place
            os.replace(served, tmp_path / "old")
            os.replace(staged, served)

        outcome, reloaded_at, answers = reload_under_load(server.url, admin_token, demo_texts, swap)
        v2 = outcome["current"]["version"]
        assert outcome["changed"] is True and outcome["previous"]["version"] == v1 and v2 != v1
        check_answers(answers, reloaded_at, {v1: "v1", v2: "v2"}, answers_by_version)
    finally:
        server.stop()
