"""A multi-corpus model served by a real server: the API is unchanged for clients, with more labels."""
from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from api_harness import MAIN_LIMITS, start_server

pytestmark = [pytest.mark.server, pytest.mark.slow]


def test_serves_a_multi_corpus_model(tiny_multi_run: Path, tmp_path: Path) -> None:
    from nerservice.inference import Extractor

    texts = ["Patients with breast cancer were treated with cisplatin .", "", "No cases of asthma were reported ."]
    want = [[e.to_dict() for e in ents] for ents in Extractor.load(tiny_multi_run / "model-best").extract(texts)]
    assert {e["label"] for ents in want for e in ents} == {"Disease", "Drug"}
    server = start_server({"NERSERVICE_API_MODEL": str(tiny_multi_run / "model-best"), **MAIN_LIMITS},
                          log_path=tmp_path / "server.log")
    try:
        r = httpx.post(server.url + "/v1/extract", json={"texts": texts}, timeout=60)
        assert r.status_code == 200, r.text
        got = [res["entities"] for res in r.json()["results"]]
        assert [[(e["start"], e["end"], e["label"]) for e in g] for g in got] == \
               [[(e["start"], e["end"], e["label"]) for e in w] for w in want]
        info = httpx.get(server.url + "/v1/models").json()["model"]
        assert info["manifest"]["format"] == "nerservice.multi.v1" and set(info["labels"]) == {"Disease", "Drug"}
    finally:
        server.stop()


def test_serves_one_head_of_a_multi_corpus_model(tiny_multi_run: Path, tmp_path: Path) -> None:
    """NERSERVICE_API_HEAD: the server answers with that corpus's types only, as the Extractor's head does."""
    from nerservice.inference import Extractor

    texts = ["Patients with breast cancer were treated with cisplatin .", "No cases of asthma were reported ."]
    want = [[(e.start, e.end, e.label) for e in ents]
            for ents in Extractor.load(tiny_multi_run / "model-best", head="dis").extract(texts)]
    assert {lab for ents in want for _, _, lab in ents} == {"Disease"}
    server = start_server({"NERSERVICE_API_MODEL": str(tiny_multi_run / "model-best"), "NERSERVICE_API_HEAD": "dis",
                           **MAIN_LIMITS}, log_path=tmp_path / "server.log")
    try:
        r = httpx.post(server.url + "/v1/extract", json={"texts": texts}, timeout=60)
        assert r.status_code == 200, r.text
        got = [[(e["start"], e["end"], e["label"]) for e in res["entities"]] for res in r.json()["results"]]
        assert got == want
        assert httpx.get(server.url + "/v1/models").json()["model"]["labels"] == ["Disease"]
    finally:
        server.stop()
