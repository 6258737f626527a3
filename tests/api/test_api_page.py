"""The page at GET / in headless Chromium (Debian's /usr/bin/chromium): type a text, click, see the
entities highlighted with the right labels and scores; it loads nothing from another origin."""
from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

pytestmark = [pytest.mark.server, pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path(shutil.which("chromium") or "/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/install-system-deps.sh (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS)
        try:
            yield b
        finally:
            b.close()


def test_page_is_self_contained(api_server) -> None:
    r = httpx.get(api_server.url + "/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    html = r.text.lower()
    assert "<script src" not in html and "<link" not in html and "http://" not in html and "https://" not in html


def test_type_click_see_highlighted_entities(api_server, browser, tiny_extractor) -> None:
    text = ("Treatment with cyclophosphamide and paracetamol was well tolerated .\n"
            "No cases of leukemia were reported in the control group .")
    want = tiny_extractor.extract_one(text)
    assert {e.label for e in want} == {"Chemical", "Disease"}  # the page has both labels to show

    page = browser.new_page()
    foreign: list[str] = []
    page.on("request", lambda req: None if req.url.startswith(api_server.url) else foreign.append(req.url))
    try:
        page.goto(api_server.url + "/")
        page.fill("#text", text)
        page.click("#extract")
        page.wait_for_selector("mark.ent", timeout=30_000)
        marks = page.locator("mark.ent")
        assert marks.count() == len(want)
        for i, e in enumerate(want):
            mark = marks.nth(i)
            assert mark.get_attribute("data-label") == e.label
            assert float(mark.get_attribute("data-score")) == pytest.approx(e.score, abs=1e-4)
            # The highlighted text is exactly the entity; the tag beside it shows the label and score.
            assert mark.evaluate("m => m.firstChild.textContent") == e.text
            assert mark.locator(".tag").inner_text() == f"{e.label} {e.score:.2f}"
        colors = {marks.nth(i).evaluate("m => m.style.background") for i in range(marks.count())}
        assert len(colors) == 2  # one colour per label
        # The whole text is still there, in order, around the highlights.
        shown = page.evaluate("""() => Array.from(document.querySelector('#output').childNodes)
            .map(n => n.nodeType === 3 ? n.textContent : n.firstChild.textContent).join('')""")
        assert shown == text
        assert page.locator("#legend span").all_inner_texts() == sorted({e.label for e in want}, key=[x.label for x in want].index)
        assert "entit" in page.inner_text("#status")
        assert page.locator("#entities tbody tr").count() == len(want)
        assert not foreign
    finally:
        page.close()


def test_page_shows_errors(api_server, browser) -> None:
    page = browser.new_page()
    try:
        page.goto(api_server.url + "/")
        page.fill("#text", "x" * 2001)  # over this server's NERSERVICE_API_MAX_TEXT_CHARS=2000
        page.click("#extract")
        page.wait_for_selector("#status.error", timeout=30_000)
        assert "NER601" in page.inner_text("#status")
    finally:
        page.close()


def test_api_docs_render_offline(api_server, browser) -> None:
    """/docs (Swagger UI) works without internet: every file it loads comes from this server, and it renders
    the operations of our OpenAPI schema."""
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    try:
        page.goto(api_server.url + "/docs")
        page.wait_for_selector(".opblock-summary-path", timeout=30_000)
        paths = {p.strip().replace("\u200b", "") for p in page.locator(".opblock-summary-path").all_inner_texts()}
        assert {"/v1/extract", "/v1/models", "/healthz"} <= paths
    finally:
        page.close()
    assert requests and all(u.startswith(api_server.url) for u in requests), requests
    assert any(u.endswith("/static/swagger-ui/swagger-ui-bundle.js") for u in requests)
    assert httpx.get(api_server.url + "/redoc").status_code == 404  # ReDoc would need a CDN: off
