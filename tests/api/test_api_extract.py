"""POST /v1/extract on a real server: same answers as the in-process Extractor, for one client and for
64 concurrent ones; model identity, timing, health, models and metrics endpoints."""
from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

pytestmark = [pytest.mark.server, pytest.mark.slow]


def expected(extractor: Any, texts: list[str]) -> list[list[dict[str, Any]]]:
    return [[e.to_dict() for e in ents] for ents in extractor.extract(texts)]


def assert_same_entities(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    """Offsets, labels and texts exactly; scores to 1e-4 (a different batch composition may change the
    last float digits of the model's output)."""
    assert [(e["start"], e["end"], e["label"], e["text"]) for e in got] == \
           [(e["start"], e["end"], e["label"], e["text"]) for e in want]
    for g, w in zip(got, want):
        assert g["score"] == pytest.approx(w["score"], abs=1e-4)


def test_answers_equal_in_process_extractor(api_server, tiny_extractor, demo_texts) -> None:
    texts = demo_texts[:16]
    r = httpx.post(api_server.url + "/v1/extract", json={"texts": texts}, timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    want = expected(tiny_extractor, texts)
    assert len(body["results"]) == len(texts)
    assert sum(len(w) for w in want) > 10  # the tiny model does find entities: the comparison means something
    for text, res, w in zip(texts, body["results"], want):
        assert_same_entities(res["entities"], w)
        for e in res["entities"]:
            assert text[e["start"]:e["end"]] == e["text"]


def test_long_multi_sentence_text_offsets_refer_to_original(api_server, tiny_extractor, demo_texts) -> None:
    multi = [t for t in demo_texts if "\n" in t]
    text = "\n\n".join(multi[:4])  # paragraphs, leading spaces: offsets must still index this string
    r = httpx.post(api_server.url + "/v1/extract", json={"text": text}, timeout=60)
    assert r.status_code == 200, r.text
    (res,) = r.json()["results"]
    assert_same_entities(res["entities"], expected(tiny_extractor, [text])[0])
    assert res["entities"] and all(text[e["start"]:e["end"]] == e["text"] for e in res["entities"])


def test_unicode_and_empty_texts(api_server, tiny_extractor) -> None:
    texts = ["", "   ", "Naïve café patients with leukemia — 45 mg/kg cyclophosphamide 🙂.", "Ωmega"]
    r = httpx.post(api_server.url + "/v1/extract", json={"texts": texts}, timeout=60)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert results[0]["entities"] == [] and results[1]["entities"] == []
    for res, w in zip(results, expected(tiny_extractor, texts)):
        assert_same_entities(res["entities"], w)


def test_model_identity_timing_and_model_field(api_server, tiny_model_dir, admin_token: str) -> None:
    models = httpx.get(api_server.url + "/v1/models", headers={"Authorization": f"Bearer {admin_token}"}).json()
    assert models["state"] == "ready"
    info = models["model"]
    assert info["source"] == "directory" and info["path"] == str(tiny_model_dir)
    assert str(tiny_model_dir) not in httpx.get(api_server.url + "/v1/models").text  # paths: admin only
    assert "files" in info["manifest"] and "dev" in info["metrics"]
    assert set(info["labels"]) >= {"Disease", "Chemical"}
    name, version = info["name"], info["version"]

    for model in (None, name, f"{name}/{version}", str(tiny_model_dir)):
        body: dict[str, Any] = {"text": "Aspirin caused asthma."}
        if model is not None:
            body["model"] = model
        r = httpx.post(api_server.url + "/v1/extract", json=body, timeout=30)
        assert r.status_code == 200, (model, r.text)
        out = r.json()
        assert out["model"] == {"name": name, "version": version}
        t = out["timing"]
        assert t["queue_ms"] >= 0 and t["inference_ms"] > 0 and t["total_ms"] >= t["inference_ms"]
        assert t["batch_texts"] >= 1

    r = httpx.post(api_server.url + "/v1/extract", json={"text": "x", "model": "other@production"})
    assert r.status_code == 404
    err = r.json()["error"]
    assert err["code"] == "NER501" and "other@production" in err["message"] and version in err["message"]


def test_health_ready(api_server) -> None:
    assert httpx.get(api_server.url + "/healthz").json() == {"status": "ok"}
    r = httpx.get(api_server.url + "/readyz")
    assert r.status_code == 200 and r.json()["status"] == "ready" and r.json()["model"]["version"]


def test_64_concurrent_clients_each_get_their_own_answers(api_server, tiny_extractor, demo_texts) -> None:
    # 64 clients, 3 rounds each, every request a distinct combination of texts: a mix-up between
    # requests batched together would hand someone another client's entities.
    n_clients, rounds = 64, 3
    pool = demo_texts

    def texts_for(client: int, round_: int) -> list[str]:
        k = client * rounds + round_
        return [pool[k % len(pool)], pool[(k * 7 + 3) % len(pool)]][: 1 + k % 2]

    all_texts = sorted({t for c in range(n_clients) for r in range(rounds) for t in texts_for(c, r)})
    want = dict(zip(all_texts, expected(tiny_extractor, all_texts)))
    batch_count_before = api_server.metric("nerservice_batch_size_texts_count")

    async def client(i: int, http: httpx.AsyncClient) -> list[tuple[list[str], dict[str, Any], int]]:
        out = []
        for r in range(rounds):
            texts = texts_for(i, r)
            resp = await http.post("/v1/extract", json={"texts": texts})
            out.append((texts, resp.json(), resp.status_code))
        return out

    async def run() -> list[Any]:
        limits = httpx.Limits(max_connections=n_clients)
        async with httpx.AsyncClient(base_url=api_server.url, limits=limits, timeout=120) as http:
            return await asyncio.gather(*(client(i, http) for i in range(n_clients)))

    answers = [a for per_client in asyncio.run(run()) for a in per_client]
    assert len(answers) == n_clients * rounds
    for texts, body, status in answers:
        assert status == 200, body
        assert len(body["results"]) == len(texts)
        for text, res in zip(texts, body["results"]):
            assert_same_entities(res["entities"], want[text])
    # Requests really were batched together (otherwise this test would not test batching).
    batches = api_server.metric("nerservice_batch_size_texts_count") - batch_count_before
    assert batches < n_clients * rounds


def test_metrics_endpoint(api_server) -> None:
    httpx.post(api_server.url + "/v1/extract", json={"text": "Aspirin caused asthma."})
    httpx.post(api_server.url + "/v1/extract", json={"texts": []})
    text = httpx.get(api_server.url + "/metrics").text
    assert api_server.metric("nerservice_http_requests_total", route="/v1/extract", method="POST", status="200") >= 1
    assert api_server.metric("nerservice_http_requests_total", route="/v1/extract", method="POST", status="400") >= 1
    assert 'nerservice_http_request_duration_seconds_bucket{le="0.05",route="/v1/extract"}' in text
    assert api_server.metric("nerservice_batch_size_texts_count") >= 1
    assert "nerservice_queue_depth " in text
    info = httpx.get(api_server.url + "/v1/models").json()["model"]
    assert api_server.metric("nerservice_model_info", name=info["name"], version=info["version"],
                             source="directory") == 1.0
    httpx.get(api_server.url + "/no/such/path")
    assert api_server.metric("nerservice_http_requests_total", route="unmatched", method="GET", status="404") >= 1
