"""An ensemble folder (``nerservice ensemble``) served by a real server: the same answers as the in-process
Extractor on that folder, and /v1/models describes the members."""
from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from api_harness import MAIN_LIMITS, start_server

pytestmark = [pytest.mark.server, pytest.mark.slow]


def test_serves_an_ensemble_like_a_single_model(tiny_ensemble_dir: Path, tiny_model_dir: Path, demo_texts,
                                                tmp_path: Path) -> None:
    from nerservice.inference import Extractor

    texts = demo_texts[:12]
    want = [[e.to_dict() for e in ents] for ents in Extractor.load(tiny_ensemble_dir).extract(texts)]
    alone = [[e.to_dict() for e in ents] for ents in Extractor.load(tiny_model_dir).extract(texts)]
    assert sum(map(len, want)) > 0 and want != alone  # the ensemble is not just its first member
    server = start_server({"NERSERVICE_API_MODEL": str(tiny_ensemble_dir), **MAIN_LIMITS},
                          log_path=tmp_path / "server.log")
    try:
        r = httpx.post(server.url + "/v1/extract", json={"texts": texts}, timeout=60)
        assert r.status_code == 200, r.text
        got = [res["entities"] for res in r.json()["results"]]
        assert [[(e["start"], e["end"], e["label"]) for e in g] for g in got] == \
               [[(e["start"], e["end"], e["label"]) for e in w] for w in want]
        for g, w in zip(got, want):
            assert [e["score"] for e in g] == pytest.approx([e["score"] for e in w], abs=1e-4)
        info = httpx.get(server.url + "/v1/models").json()["model"]
        assert info["manifest"]["format"] == "nerservice.ensemble.v1"
        assert len(info["lineage"]["members"]) == 2 and set(info["labels"]) >= {"Disease", "Chemical"}
    finally:
        server.stop()
