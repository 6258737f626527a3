"""Admin endpoints need the token; neither the token nor request texts reach the server log."""
from __future__ import annotations

import httpx
import pytest

pytestmark = [pytest.mark.server, pytest.mark.slow]


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Bearer", "Basic {token}", "Bearer {token}x",
                                    "Bearer {short}", "{token}"])
def test_reload_refuses_without_the_right_token(api_server, admin_token: str, header: str | None) -> None:
    headers = {} if header is None else {"Authorization": header.format(token=admin_token, short=admin_token[:-1])}
    r = httpx.post(api_server.url + "/v1/models/reload", headers=headers)
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "NER602"
    assert r.headers["www-authenticate"] == "Bearer"
    assert admin_token not in r.text


def test_reload_with_the_token_keeps_an_unchanged_model(api_server, admin_token: str) -> None:
    before = httpx.get(api_server.url + "/v1/models").json()["model"]
    r = httpx.post(api_server.url + "/v1/models/reload", headers={"Authorization": f"Bearer {admin_token}"},
                   timeout=120)
    assert r.status_code == 200, r.text
    identity = {"name": before["name"], "version": before["version"]}
    assert r.json() == {"changed": False, "previous": identity, "current": identity}
    assert api_server.metric("nerservice_model_reloads_total", outcome="unchanged") >= 1


def test_no_texts_or_tokens_in_the_log(api_server, admin_token: str) -> None:
    secret_text = "Zqxjv-4417 patient with leukemia took aspirin"
    httpx.post(api_server.url + "/v1/extract", json={"texts": [secret_text]})
    httpx.post(api_server.url + "/v1/extract", json={"texts": [secret_text, 7]})  # a 400 quoting nothing
    httpx.post(api_server.url + "/v1/extract", json={"text": secret_text, "model": "nope"})  # a 404
    httpx.post(api_server.url + "/v1/models/reload", headers={"Authorization": f"Bearer {admin_token}"}, timeout=120)
    httpx.post(api_server.url + "/v1/models/reload", headers={"Authorization": f"Bearer {admin_token}zz"})
    log = api_server.log()
    assert "serving model" in log  # the log is really this server's
    assert "Zqxjv" not in log and admin_token not in log and admin_token[:12] not in log
