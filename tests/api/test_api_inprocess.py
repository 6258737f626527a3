"""The fast tier of the API: the real app (create_app) on a random-weight model, driven in-process through
FastAPI's TestClient: answers equal the Extractor's, the declared response model, every refusal a JSON 4xx
with a code (no 500, no traceback, one log line), the media type, the request budgets, /v1/models paths
only for the admin."""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_harness import inprocess_client
from fastapi.testclient import TestClient

from api.errors import CLIENT_ERRORS
from api.settings import ApiSettings

TOKEN = "inproc-" + "k" * 20
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def client(random_model_dir: Path) -> Iterator[TestClient]:
    settings = ApiSettings(model=str(random_model_dir), admin_token=TOKEN, max_texts=8, max_text_chars=3000,
                           max_body_bytes=32768, max_request_tokens=1000, max_queue_tokens=4000, max_piece_tokens=200)
    with inprocess_client(settings) as c:
        yield c


def test_answers_are_the_extractors_through_the_response_model(client: TestClient, random_extractor) -> None:
    texts = ["Patients with colorectal cancer took aspirin.", "", "  Cisplatin therapy . Asthma after it.  "]
    r = client.post("/v1/extract", json={"texts": texts})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"model", "results", "timing"}
    assert set(body["timing"]) == {"queue_ms", "inference_ms", "total_ms", "batch_texts", "batches"}
    assert [res["entities"] for res in body["results"]] == \
        [[e.to_dict() for e in ents] for ents in random_extractor.extract(texts)]
    assert client.post("/v1/extract", json={"text": texts[0]}).json()["results"][0] == body["results"][0]


def test_a_large_request_is_answered_whole_from_several_batches(client: TestClient, random_extractor) -> None:
    texts = ["Patients with cancer took aspirin . " * 20] * 4  # 560 tokens, pieces of <= 200
    r = client.post("/v1/extract", json={"texts": texts})
    assert r.status_code == 200, r.text
    assert r.json()["timing"]["batches"] == 3
    assert [res["entities"] for res in r.json()["results"]] == \
        [[e.to_dict() for e in ents] for ents in random_extractor.extract(texts)]


BAD = {
    # name: (raw body, headers, status, code)
    "lone surrogate in model": ('{"text": "a", "model": "\\ud800"}', JSON, 400, "NER600"),
    "lone surrogate inside model": ('{"text": "a", "model": "x\\udc00y"}', JSON, 400, "NER600"),
    "lone surrogate in text": ('{"text": "abc \\ud800 def"}', JSON, 400, "NER600"),
    "4400-digit integer": ('{"text": "a", "n": ' + "1" * 4400 + "}", JSON, 400, "NER600"),
    "4400-digit model": ('{"text": "a", "model": ' + "9" * 4400 + "}", JSON, 400, "NER600"),
    "huge exponent": ('{"text": "a", "n": 1e999999}', JSON, 400, "NER600"),
    "model name too long": (json.dumps({"text": "a", "model": "m" * 300}), JSON, 400, "NER600"),
    "wrong model": (json.dumps({"text": "a", "model": "other\u00e9"}), JSON, 404, "NER501"),
    "text/plain": ('{"text": "a"}', {"content-type": "text/plain"}, 415, "NER604"),
    "form": ('{"text": "a"}', {"content-type": "application/x-www-form-urlencoded"}, 415, "NER604"),
    "no content type": ('{"text": "a"}', {}, 415, "NER604"),
    "punctuation over the request budget": (json.dumps({"texts": ["!" * 2000]}), JSON, 413, "NER603"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_requests_get_a_coded_json_4xx_and_one_log_line(client: TestClient, name: str, caplog) -> None:
    body, headers, status, code = BAD[name]
    CLIENT_ERRORS._window_start = 0.0  # a fresh rate-limit window for this case
    with caplog.at_level(logging.WARNING, logger="nerservice"):
        r = client.post("/v1/extract", content=body.encode("utf-8", "surrogatepass"), headers=headers)
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json" and r.json()["error"]["code"] == code
    lines = [rec for rec in caplog.records if rec.name.startswith("nerservice")]
    assert len(lines) == 1 and lines[0].exc_info is None, [rec.getMessage() for rec in lines]
    assert code in lines[0].getMessage() and "\n" not in lines[0].getMessage()


def test_client_error_lines_are_rate_limited(client: TestClient, caplog) -> None:
    CLIENT_ERRORS._window_start = time.monotonic()
    CLIENT_ERRORS._logged = 0
    with caplog.at_level(logging.WARNING, logger="nerservice"):
        for _ in range(50):
            assert client.post("/v1/extract", content=b"{", headers=JSON).status_code == 400
    assert len([rec for rec in caplog.records if rec.name.startswith("nerservice")]) == CLIENT_ERRORS.burst
    assert CLIENT_ERRORS.suppressed == 50 - CLIENT_ERRORS.burst


def test_models_shows_paths_only_to_the_admin(client: TestClient, random_model_dir: Path) -> None:
    public = client.get("/v1/models")
    assert public.status_code == 200
    assert str(random_model_dir) not in public.text and str(random_model_dir.parent) not in public.text
    assert public.json()["model"]["name"] == random_model_dir.name and public.json()["ref"] is None
    admin = client.get("/v1/models", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert admin["model"]["path"] == str(random_model_dir) and admin["ref"] == str(random_model_dir)
    wrong = client.get("/v1/models", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "NER602"
    ready = client.get("/readyz")
    assert ready.json()["status"] == "ready" and str(random_model_dir) not in ready.text


def test_openapi_documents_the_limits_and_the_media_type(client: TestClient) -> None:
    op = client.get("/openapi.json").json()["paths"]["/v1/extract"]["post"]
    schema = op["requestBody"]["content"]["application/json"]["schema"]
    assert list(op["requestBody"]["content"]) == ["application/json"]
    assert schema["properties"]["texts"]["anyOf"][0]["maxItems"] == 8
    assert {"413", "415", "429"} <= set(op["responses"])
