"""``/api/docs/`` runs on the project's own assets under a same-origin CSP, and
``/api/schema/`` is generated once per process."""

import re
import shutil
import tempfile
from pathlib import Path

import pytest
from drf_spectacular.generators import SchemaGenerator

pytestmark = pytest.mark.django_db

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ASSET = re.compile(rb"""(?:src|href)=["']([^"']+)["']""")


def _policy(response) -> dict[str, str]:
    directives = (
        part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";")
    )
    return dict(directives)


def test_docs_page_loads_nothing_from_elsewhere(client):
    page = client.get("/api/docs/")
    assert page.status_code == 200
    urls = [url.decode() for url in ASSET.findall(page.content)]
    assert len(urls) >= 4  # the CSS, two bundles, the start-up script (favicon too)
    for url in urls:
        assert url.startswith("/"), url
        assert not url.startswith("//"), url
        asset = client.get(url)
        assert asset.status_code == 200, url
        body = b"".join(asset.streaming_content) if asset.streaming else asset.content
        assert body, url
    # The start-up script is a file, not inline: scripts run under script-src 'self'.
    assert b"<script>" not in page.content


def test_docs_page_and_admin_allow_only_their_own_origin(client):
    for route in ("/api/docs/", "/admin/login/", "/v1/capabilities", "/no/such/route"):
        policy = _policy(client.get(route))
        assert policy["default-src"] == "'self'", route
        assert policy["script-src"] == "'self'", route
        assert policy["connect-src"] == "'self'", route
        assert policy["frame-ancestors"] == "'none'", route


def test_schema_is_generated_once_per_process_and_format(client, monkeypatch):
    from powercontext.api.schema import CachedSchemaView

    monkeypatch.setattr(CachedSchemaView, "_rendered", {})
    calls = []
    generate = SchemaGenerator.get_schema

    def counted(self, *args, **kwargs):
        calls.append(1)
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(SchemaGenerator, "get_schema", counted)
    yaml = [client.get("/api/schema/") for _ in range(3)]
    json_ = [
        client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json") for _ in range(2)
    ]
    assert len(calls) == 2
    assert {r.content for r in yaml} == {yaml[0].content}
    assert yaml[0]["Content-Type"].startswith("application/vnd.oai.openapi")
    assert json_[0].json()["info"]["title"] == "PowerContext API"
    assert b"/v1/context/prepare" in yaml[0].content
    # Query parameters do not mint new cache entries.
    client.get("/api/schema/?lang=de&version=zz")
    assert len(calls) == 2


# -- a browser, offline ----------------------------------------------------------------


@pytest.fixture
def offline_browser():
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail("Debian's chromium and chromium-driver must be installed")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="pc-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        # Offline but for loopback (never proxied): anything from elsewhere fails to load.
        "--proxy-server=http://127.0.0.1:9",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.slow
def test_swagger_ui_renders_offline_under_its_policy(offline_browser, tmp_path, transactional_db):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    from tests.experience.servers import Server

    server = Server(tmp_path)
    try:
        offline_browser.get(server.url + "api/docs/")
        wait = WebDriverWait(offline_browser, 30)
        title = wait.until(
            expected_conditions.visibility_of_element_located(
                (By.CSS_SELECTOR, ".swagger-ui .info .title")
            )
        )
        assert "PowerContext API" in title.text
        # The operations were read from /api/schema/ (connect-src 'self').
        wait.until(
            expected_conditions.presence_of_element_located(
                (By.CSS_SELECTOR, ".opblock-summary-path")
            )
        )
        assert "/v1/context/prepare" in offline_browser.page_source
        violations = [
            entry["message"]
            for entry in offline_browser.get_log("browser")
            if "Content Security Policy" in entry["message"]
        ]
        assert violations == []
    finally:
        server.stop()
