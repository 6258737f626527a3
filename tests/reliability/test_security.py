"""The admin surface and the request path hold under hostile input: tokens, model references, body sizes
(declared and chunked), CORS, and what reaches the log."""
from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from .servers import BIN, REPO, Server, start_server

pytestmark = [pytest.mark.server, pytest.mark.slow]

RELOAD = "/v1/models/reload"
SECRET_TEXT = "Qwv-8812-zorblax patient with leukemia took aspirin"
BAD_REFS = ["../x", "a/b/c", "../../etc/passwd", "demo@../../etc", "n" * 5000, "demo/0", "demo/../1", "", " "]


def raw_exchange(port: int, head: bytes, body_chunks: list[bytes] = (), *, pause_s: float = 0.0,
                 timeout: float = 15.0) -> tuple[int, bytes, int]:
    """Send ``head`` then the chunks (stopping early if the server answers or closes); return
    (status, response bytes, body bytes the server let us send)."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head)
        s.setblocking(False)
        response = b""
        for chunk in body_chunks:
            try:
                response += s.recv(65536)
            except BlockingIOError:
                pass
            if response:
                break
            try:
                s.sendall(chunk)
                sent += len(chunk)
            except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                break
            if pause_s:
                time.sleep(pause_s)
        s.setblocking(True)
        s.settimeout(timeout)
        try:
            while not _complete(response):
                data = s.recv(65536)
                if not data:
                    break
                response += data
        except (ConnectionResetError, TimeoutError):
            pass
    assert response.startswith(b"HTTP/1.1 "), response[:200]
    return int(response.split(b" ", 2)[1]), response, sent


def _complete(response: bytes) -> bool:
    """Headers and the Content-Length body have arrived."""
    head, sep, body = response.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return True


# --- admin token -------------------------------------------------------------------------------------

@pytest.mark.parametrize("header", [None, "Bearer wrong", "Bearer ", "Bearer", "Bearer {token}x", "Bearer {prefix}",
                                    "Basic {token}", "{token}", "bearer  {token} extra"])
def test_reload_refused_without_the_exact_token(rel_server: Server, rel_token: str, header: str | None) -> None:
    # Raw bytes: httpx refuses to send header values with trailing spaces, which are exactly the edge cases.
    line = "" if header is None else f"Authorization: {header.format(token=rel_token, prefix=rel_token[:-1])}\r\n"
    status, response, _ = raw_exchange(rel_server.port, f"POST {RELOAD} HTTP/1.1\r\nHost: 127.0.0.1\r\n{line}"
                                       "Content-Length: 0\r\nConnection: close\r\n\r\n".encode())
    assert status == 401 and b"NER602" in response, response[:400]
    assert rel_token.encode() not in response


def test_reload_accepted_with_the_token(rel_server: Server, rel_token: str) -> None:
    r = httpx.post(rel_server.url + RELOAD, headers={"Authorization": f"Bearer {rel_token}"}, timeout=120)
    assert r.status_code == 200 and r.json()["changed"] is False, r.text


def test_require_admin_in_process() -> None:
    """Unset and empty tokens both disable the admin endpoints, whatever the request sends."""
    from fastapi.security import HTTPAuthorizationCredentials

    from api.errors import UnauthorizedError
    from api.routes import check_admin
    from api.settings import ApiSettings

    empty = HTTPAuthorizationCredentials(scheme="Bearer", credentials="")
    for settings in (ApiSettings(), ApiSettings(admin_token=""), ApiSettings(admin_token="s3cret")):
        for creds in (None, empty):
            with pytest.raises(UnauthorizedError):
                check_admin(settings, creds)
    check_admin(ApiSettings(admin_token="s3cret"), HTTPAuthorizationCredentials(scheme="Bearer", credentials="s3cret"))


def test_empty_configured_token_disables_admin(tiny_model_dir: Path, tmp_path: Path) -> None:
    """NERSERVICE_API_ADMIN_TOKEN="" must not mean "the empty string is the password"."""
    server = start_server({"NERSERVICE_API_MODEL": str(tiny_model_dir), "NERSERVICE_API_ADMIN_TOKEN": ""},
                          log_path=tmp_path / "server.log")
    try:
        for line in ("", "Authorization: Bearer \r\n", "Authorization: Bearer\r\n", "Authorization: \r\n"):
            status, response, _ = raw_exchange(server.port, f"POST {RELOAD} HTTP/1.1\r\nHost: 127.0.0.1\r\n{line}"
                                               "Content-Length: 0\r\nConnection: close\r\n\r\n".encode())
            assert status == 401 and b"disabled" in response, (line, response[:400])
        assert server.metric("nerservice_model_reloads_total", outcome="unchanged") == 0
    finally:
        server.stop()


def test_misspelled_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A typo in a limit (or in the token's variable name) must not silently leave the default in place."""
    from api.settings import load_settings
    from nerservice.errors import ConfigError

    monkeypatch.setenv("NERSERVICE_API_ADMIN_TOKN", "s3cret")
    with pytest.raises(ConfigError, match="NERSERVICE_API_ADMIN_TOKN"):
        load_settings()


# --- model references --------------------------------------------------------------------------------

@pytest.mark.parametrize("ref", BAD_REFS, ids=lambda r: r[:20] or "empty")
def test_api_model_field_never_resolves_a_bad_reference(rel_server: Server, ref: str) -> None:
    """The `model` field is only compared with the served model's names, never looked up on disk."""
    r = httpx.post(rel_server.url + "/v1/extract", json={"text": "aspirin", "model": ref}, timeout=30)
    assert r.status_code in (400, 404), (r.status_code, r.text[:300])
    assert r.json()["error"]["code"] in ("NER501", "NER600")


def test_api_model_field_accepts_the_served_model(rel_server: Server) -> None:
    served = httpx.get(rel_server.url + "/readyz").json()["model"]
    r = httpx.post(rel_server.url + "/v1/extract", json={"text": "aspirin", "model": served["name"]}, timeout=30)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("ref", ["../x", "a/b/c", "n" * 5000, "demo@../../etc"], ids=["dotdot", "abc", "long", "alias"])
def test_cli_refuses_bad_references_before_touching_the_store(ref: str, tmp_path: Path) -> None:
    store = tmp_path / "store"
    for args in (["models", "show", ref], ["models", "download", ref, "--to", str(tmp_path / "dl")]):
        proc = subprocess.run([str(BIN / "nerservice"), *args, "--store", f"sqlite:///{store}/mlflow.db"],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr[-2000:])
        assert "NER503" in proc.stderr and "Traceback" not in proc.stderr
    assert not store.exists() and not (tmp_path / "dl").exists()


@pytest.mark.parametrize("ref", [
    "a/b/c", "demo@../../etc", "x/-1", "x/1/2",
    "n" * 5000,  # a path component over NAME_MAX: must be a coded error, not a bare OSError
], ids=["abc", "alias", "negative", "x12", "long"])
def test_serving_a_bad_reference_is_a_coded_error_and_touches_nothing(ref: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from api.model_slot import locate
    from nerservice.errors import NerServiceError

    monkeypatch.setenv("NERSERVICE_STORE_DIR", str(tmp_path / "store"))
    with pytest.raises(NerServiceError):
        locate(ref)
    assert not (tmp_path / "store").exists()


# --- body size ---------------------------------------------------------------------------------------

def _head(extra: str) -> bytes:
    return f"POST /v1/extract HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{extra}\r\n".encode()


def test_huge_content_length_refused_before_reading(rel_server: Server) -> None:
    t0 = time.monotonic()
    status, response, _ = raw_exchange(rel_server.port, _head("Content-Length: 100000000000\r\n"))
    assert status == 413 and b"NER601" in response, response[:300]
    assert time.monotonic() - t0 < 10  # answered without waiting for the (never sent) body


def test_chunked_body_without_length_cut_at_the_limit(rel_server: Server) -> None:
    chunk = b'"' + b"x" * 8190 + b'"'
    framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    rss_before = _rss(rel_server)
    status, response, sent = raw_exchange(rel_server.port, _head("Transfer-Encoding: chunked\r\n"),
                                          [b"1\r\n[\r\n"] + [framed] * 2000, pause_s=0.002)
    assert status == 413 and b"NER601" in response, response[:300]
    assert sent < 4 * 1024 * 1024, f"server kept reading: {sent} bytes accepted"  # 16 MiB were on offer
    assert _rss(rel_server) - rss_before < 32 * 1024  # KiB: the body was not buffered
    assert httpx.get(rel_server.url + "/readyz").status_code == 200


def _rss(server: Server) -> int:
    from .servers import rss_kib

    return rss_kib(server.pid)


# --- CORS ----------------------------------------------------------------------------------------------

def test_cors_is_off_by_default(rel_server: Server) -> None:
    origin = {"Origin": "https://evil.example"}
    pre = httpx.options(rel_server.url + "/v1/extract",
                        headers={**origin, "Access-Control-Request-Method": "POST",
                                 "Access-Control-Request-Headers": "content-type,authorization"})
    assert pre.status_code in (400, 404, 405), pre.status_code
    post = httpx.post(rel_server.url + "/v1/extract", json={"text": "aspirin"}, headers=origin, timeout=30)
    assert post.status_code == 200
    for r in (pre, post, httpx.get(rel_server.url + "/v1/models", headers=origin)):
        assert not any(h.lower().startswith("access-control-") for h in r.headers), dict(r.headers)


# --- logs ----------------------------------------------------------------------------------------------

def test_no_token_or_request_text_in_the_log(rel_server: Server, rel_token: str) -> None:
    url = rel_server.url
    auth = {"Authorization": f"Bearer {rel_token}"}
    assert httpx.post(url + "/v1/extract", json={"texts": [SECRET_TEXT]}, timeout=30).status_code == 200
    assert httpx.post(url + "/v1/extract", json={"texts": [SECRET_TEXT, 7]}).status_code == 400
    assert httpx.post(url + "/v1/extract", json={"text": SECRET_TEXT, "model": SECRET_TEXT}).status_code == 404
    assert httpx.post(url + "/v1/extract", json={"text": SECRET_TEXT * 100}).status_code == 413
    assert httpx.post(url + "/v1/extract", content=SECRET_TEXT.encode()).status_code == 415  # no JSON type
    assert httpx.post(url + "/v1/extract", content=SECRET_TEXT.encode(), headers={"content-type": "application/json"}
                      ).status_code == 400
    assert httpx.post(url + RELOAD, headers=auth, timeout=120).status_code == 200
    assert httpx.post(url + RELOAD, headers={"Authorization": f"Bearer {rel_token}zz"}).status_code == 401
    assert httpx.get(url + f"/nowhere/{SECRET_TEXT}", headers=auth).status_code == 404
    time.sleep(0.5)
    log = rel_server.log()
    assert "serving model" in log  # really this server's log, at its default level
    for secret in (rel_token, rel_token[7:19], "Qwv-8812", "zorblax"):
        assert secret not in log, f"{secret!r} found in the server log"
