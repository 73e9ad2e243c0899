"""The home page in a real browser (headless Debian Chromium) against ``manage.py serve``,
with captured prompts present: the screenshot is kept in ``test-artifacts/home.png``."""

import pytest

from tests.experience.servers import REPO_ROOT, Server
from tests.experience.test_browser import browser  # noqa: F401 - the shared fixture

ARTIFACTS = REPO_ROOT / "test-artifacts"
SCOPE = "git:example.com/acme/browser-home"
PROMPT = "Never show this prompt on the home page"


@pytest.fixture
def server(tmp_path, transactional_db):
    started = Server(tmp_path)
    try:
        yield started
    finally:
        started.stop()


@pytest.mark.slow
def test_home_page_in_a_browser(browser, server):  # noqa: F811
    from selenium.webdriver.common.by import By

    for turn, agent in enumerate(("codex", "codex", "claude")):
        status, _ = server.post(
            "v1/sources/content",
            {
                "scope_id": SCOPE,
                "source_id": f"prompt:{turn}",
                "content": PROMPT,
                "metadata": {"agent": agent, "event": "UserPromptSubmit", "session_id": agent},
            },
        )
        assert status == 202
    browser.set_window_size(1280, 2100)
    browser.get(server.url)
    assert browser.title == "PowerContext"
    status = browser.find_element(By.ID, "status").text
    assert "ready" in status
    agents = browser.find_element(By.ID, "agents").text
    assert "Codex prompts" in agents
    assert "Claude Code prompt" in agents
    page = browser.find_element(By.TAG_NAME, "body").text
    assert SCOPE not in page
    assert PROMPT not in page
    assert server.url.rstrip("/") + "/mcp" in browser.find_element(By.ID, "connect").text
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "home.png"))
    # The desk link works: it asks a visitor to log in.
    browser.find_element(By.LINK_TEXT, "Review desk").click()
    assert "/admin/login/" in browser.current_url
