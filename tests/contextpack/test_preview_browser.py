"""The pack preview in a real browser (headless Debian Chromium via Selenium) against a real
``manage.py serve``: a reviewer logs in, fills in a scope and a prompt, and sees the pack
prepare returns beside the reasons. The page's screenshot is kept in ``test-artifacts/``."""

import re

import pytest

from tests.experience.servers import Server, manage
from tests.experience.test_browser import (  # noqa: F401 - browser: a fixture
    ARTIFACTS,
    PASSWORD,
    _click,
    browser,
)

SCOPE = "git:example.com/team/preview-browser"
PROMPT = (
    "The nightly importer failed again with a timeout.\n"
    "How should its retries work, and where is the backoff configured?"
)


@pytest.fixture
def lexical_server(tmp_path, transactional_db, monkeypatch):
    # The explanation names the lexical channel's ranks; the semantic channel's are not
    # shown on the page yet, so this page is checked on the lexical ranking.
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    started = Server(tmp_path)
    try:
        yield started
    finally:
        started.stop()


@pytest.mark.slow
def test_a_reviewer_previews_the_pack_and_sees_why(browser, lexical_server, tmp_path):  # noqa: F811
    server = lexical_server
    from selenium.webdriver.common.by import By

    manage(tmp_path, "reviewer_token", "pia", "--create")
    manage(
        tmp_path,
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; "
        "user = get_user_model().objects.get(username='pia'); "
        f"user.is_staff = True; user.set_password({PASSWORD!r}); user.save()",
    )
    texts = [
        "Importer retries back off exponentially; the backoff lives in jobs/nightly.py.",
        "The nightly importer times out after 30 minutes; raise IMPORT_TIMEOUT, not retries.",
        "Importer failures page the on-call only after three consecutive nightly runs.",
        # Over the 2000-byte item cap: shown truncated.
        "Importer timeout log, kept verbatim: " + "retry 1 timed out after 30s; " * 90,
        *(f"Nightly importer note {n}: the retry count is {n}." for n in range(10)),
    ]
    for text in texts:
        status, body = server.post(
            "v1/memory/remember", {"scope_id": SCOPE, "kind": "note", "text": text}
        )
        assert status == 200, body
    status, pack = server.post(
        "v1/context/prepare", {"scope_id": SCOPE, "query": PROMPT, "max_bytes": 8000}
    )
    assert status == 200, pack
    assert pack["status"] == "ready", pack

    browser.get(server.url + "admin/login/?next=/admin/")
    browser.find_element(By.NAME, "username").send_keys("pia")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    _click(browser, By.CSS_SELECTOR, "input[type=submit]")
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "admin-index.png"))
    _click(browser, By.LINK_TEXT, "Pack preview")
    browser.find_element(By.NAME, "scope_id").send_keys(SCOPE)
    browser.find_element(By.NAME, "query").send_keys(PROMPT)
    _click(browser, By.ID, "preview-submit")

    # The prompt went in the body, not the URL.
    assert browser.current_url == server.url + "admin/contextpack/preview/"
    shown = browser.execute_script("return document.getElementById('pack').textContent")
    assert shown == pack["content"]
    assert browser.find_element(By.ID, "pack").value_of_css_property("white-space") == "pre-wrap"
    included = browser.find_element(By.ID, "included").text
    # Each item says which channels found it: its words (fts), its meaning (vector), or both.
    assert re.search(r"Memory #1\n\S+ r\d+ (fts|vector|fts \+ vector) ", included), included
    assert "cut at the 2000-byte item cap" in included
    left_out = browser.find_element(By.ID, "left-out").text
    assert "over the Memory limit: the best 8 were already chosen" in left_out
    terms = browser.find_element(By.ID, "terms").text
    assert "searched: in" in terms
    assert "Function words, never searched:" in terms
    # Readable at 1400 px: the page does not scroll sideways.
    assert browser.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth"
    )
    assert browser.save_screenshot(str(ARTIFACTS / "pack-preview.png"))
    browser.execute_script("document.getElementById('left-out').scrollIntoView()")
    assert browser.save_screenshot(str(ARTIFACTS / "pack-preview-reasons.png"))
