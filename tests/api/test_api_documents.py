"""POST /v1/documents in-process (the real app on a random-weight model): entities at document offsets,
equal to the Extractor's on each passage; the formats as content; the same limits and coded errors as
/v1/extract (a malformed file is a 400 naming its line)."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_harness import inprocess_client
from fastapi.testclient import TestClient

from api.settings import ApiSettings
from nerservice.documents import read_documents

TITLE = "Patients with colorectal cancer took aspirin."
ABSTRACT = "Asthma after cisplatin therapy . Patients with cancer took aspirin ."
PUBTATOR = f"11|t|{TITLE}\n11|a|{ABSTRACT}\n11\t14\t31\tcolorectal cancer\tDisease\n\n22|t|Nothing.\n\n"


@pytest.fixture(scope="module")
def client(random_model_dir: Path) -> Iterator[TestClient]:
    settings = ApiSettings(model=str(random_model_dir), max_texts=4, max_text_chars=300, max_body_bytes=8192,
                           max_request_tokens=1000, max_queue_tokens=4000, max_piece_tokens=200)
    with inprocess_client(settings) as c:
        yield c


def expected(extractor, passages: list[tuple[int, str]]) -> list[dict]:
    out = []
    for j, ((offset, text), ents) in enumerate(zip(passages, extractor.extract([t for _, t in passages]))):
        out += [{**e.to_dict(), "start": e.start + offset, "end": e.end + offset, "passage": j} for e in ents]
    return out


def test_documents_answer_entities_at_document_offsets(client: TestClient, random_extractor) -> None:
    passages = [(0, TITLE), (len(TITLE) + 1, ABSTRACT)]
    r = client.post("/v1/documents", json={"documents": [
        {"id": "a", "passages": [{"offset": o, "text": t} for o, t in passages]},
        {"id": "b", "passages": [{"offset": 100, "text": ABSTRACT, "type": "abstract"}]}]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"model", "documents", "content", "timing"} and body["content"] is None
    a, b = body["documents"]
    assert a["id"] == "a" and a["entities"] == expected(random_extractor, passages)
    assert b["entities"] == expected(random_extractor, [(100, ABSTRACT)])
    assert a["entities"] and all(e["end"] > e["start"] for e in a["entities"])


@pytest.mark.parametrize("out_fmt", ["pubtator", "bioc-xml", "bioc-json", "jsonl"])
def test_a_pubtator_file_in_and_any_format_out(client: TestClient, random_extractor, out_fmt: str,
                                               tmp_path: Path) -> None:
    r = client.post("/v1/documents", json={"format": "pubtator", "content": PUBTATOR, "output": out_fmt})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [d["id"] for d in body["documents"]] == ["11", "22"]
    assert body["documents"][0]["entities"] == expected(random_extractor, [(0, TITLE), (len(TITLE) + 1, ABSTRACT)])
    f = tmp_path / f"out.{out_fmt}"
    f.write_text(body["content"], encoding="utf-8")
    docs = read_documents(f, fmt=out_fmt)
    assert [(p.offset, p.text) for p in docs[0].passages] == [(0, TITLE), (len(TITLE) + 1, ABSTRACT)]
    assert [(a.start, a.end, a.label, a.score) for a in docs[0].annotations] == \
        [(e["start"], e["end"], e["label"], e["score"]) for e in body["documents"][0]["entities"]]


BAD = {
    # name: (json body, status, code, words in the message)
    "both": ({"documents": [], "format": "pubtator", "content": "x"}, 400, "NER600", ["exactly one"]),
    "content without format": ({"content": "1|t|a\n"}, 400, "NER600", ["needs 'format'"]),
    "broken pubtator": ({"format": "pubtator", "content": "1|t|a\n1\tx\t2\tab\tX\n"}, 400, "NER210", ["content:2"]),
    "broken xml": ({"format": "bioc-xml", "content": "<collection><document>"}, 400, "NER210", ["broken XML"]),
    "too many passages": ({"documents": [{"id": "a", "passages": [{"offset": i * 10, "text": "x"}
                                                                   for i in range(5)]}]}, 413, "NER601", ["5 passages"]),
    "passage too long": ({"documents": [{"id": "a", "passages": [{"offset": 0, "text": "x " * 200}]}]}, 413,
                         "NER601", ["document 0 passage 0", "400 characters"]),
    "overlapping passages": ({"documents": [{"id": "a", "passages": [{"offset": 0, "text": "abc"},
                                                                     {"offset": 2, "text": "d"}]}]}, 400, "NER600",
                             ["inside the passage before it"]),
    "negative offset": ({"documents": [{"id": "a", "passages": [{"offset": -1, "text": "a"}]}]}, 400, "NER600", []),
    "no passages": ({"documents": [{"id": "a", "passages": []}]}, 400, "NER600", ["no passages"]),
    "unknown field": ({"documents": [{"id": "a", "passages": [], "x": 1}]}, 400, "NER600", []),
    "wrong model": ({"documents": [{"id": "a", "passages": [{"offset": 0, "text": "a"}]}], "model": "zzz"}, 404,
                    "NER501", []),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_requests_get_a_coded_json_error(client: TestClient, name: str) -> None:
    body, status, code, words = BAD[name]
    r = client.post("/v1/documents", content=json.dumps(body), headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code and all(w in err["message"] for w in words), err


def test_the_body_limit_and_media_type_are_extracts(client: TestClient) -> None:
    r = client.post("/v1/documents", content=b'{"content": "' + b"x" * 9000 + b'"}',
                    headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "NER601"
    r = client.post("/v1/documents", content=b"{}", headers={"content-type": "text/plain"})
    assert r.status_code == 415


def test_openapi_describes_the_documents_body_with_this_servers_limits(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    body = spec["paths"]["/v1/documents"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert "documents" in body["properties"] and "content" in body["properties"]
    assert spec["components"]["schemas"]["PassageIn"]["properties"]["text"]["maxLength"] == 300
