"""The desk as a reviewer sees it, in real headless Chromium against a real ``manage.py
serve``: the queue readable at 1400 and 900 px, a candidate whose proposal has a
7,990-character unbroken line and a right-to-left override, a revise round trip that
changes nothing, and the Memory browser. Screenshots go to ``test-artifacts/``."""

import pytest

from tests.experience.conftest import proposal
from tests.experience.servers import manage
from tests.experience.test_browser import ARTIFACTS, PASSWORD, _click, browser, server

__all__ = ["browser", "server"]  # fixtures, used by name

SCOPE = "desk-scope"
SOURCE = {"name": "content", "source_id": "desk-prompt"}
LONG_LINE = "x" * 7990
TRICKY = {
    "situation": "First line\nsecond line\rafter a lone CR, then a NUL \x00 here.",
    "action": "Renamed the attachment \u202egnp.exe before sending it.",
    "outcome": "Windows text\r\nwith CRLF\r\nline ends.",
    "lesson": "Check attachments whose names contain bidi controls.",
}


def _log_in(browser, server, home, next_url):
    from selenium.webdriver.common.by import By

    manage(home, "reviewer_token", "rita", "--create")
    manage(
        home,
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; "
        "user = get_user_model().objects.get(username='rita'); "
        f"user.is_staff = True; user.set_password({PASSWORD!r}); user.save()",
    )
    browser.get(server.url + "admin/login/?next=" + next_url)
    browser.find_element(By.NAME, "username").send_keys("rita")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    _click(browser, By.CSS_SELECTOR, "input[type=submit]")


def _propose(server, fields, **extra):
    status, candidate = server.post(
        "v1/experience/propose",
        {"scope_id": SCOPE, "proposal": fields, "source_refs": [SOURCE], **extra},
    )
    assert status == 201, candidate
    return candidate


def _fits(browser) -> tuple[int, int]:
    """The page's width against the viewport's; a changelist's table counts too, since
    the admin scrolls a too-wide table inside its own box rather than the page."""
    return browser.execute_script(
        "const table = document.querySelector('#changelist .results');"
        "const inner = table ? table.scrollWidth - table.clientWidth : 0;"
        "return [document.documentElement.scrollWidth + Math.max(inner, 0), window.innerWidth]"
    )


def _shot(browser, name, full_height=True):
    ARTIFACTS.mkdir(exist_ok=True)
    if full_height:
        height = browser.execute_script("return document.documentElement.scrollHeight")
        width = browser.get_window_size()["width"]
        browser.set_window_size(width, min(max(height + 140, 600), 6000))
    assert browser.save_screenshot(str(ARTIFACTS / name))


def _candidate_url(server, candidate):
    from django.contrib.admin.utils import quote

    return f"{server.url}admin/experience/candidate/{quote(candidate['candidate_id'])}/change/"


def _get_candidate(server, candidate):
    status, found = server.post(
        "v1/artifact-candidates/get",
        {"scope_id": SCOPE, "candidate_id": candidate["candidate_id"]},
    )
    assert status == 200, found
    return found


@pytest.mark.slow
def test_desk_queue_detail_and_revise_in_a_browser(browser, server, tmp_path):
    from selenium.webdriver.common.by import By

    captured = {"scope_id": SCOPE, "source_id": SOURCE["source_id"], "content": "A prompt."}
    assert server.post("v1/sources/content", captured)[0] == 202
    lessons = [
        "Retry the flaky importer with exponential backoff and a jittered cap, and alert "
        "after the third failure instead of looping: the nightly job then finishes and the "
        "on-call engineer sees the real cause in the morning rather than a wall of retries.",
        "Pin the database image in CI.",
        "Run the migration tests after changing persistence.",
    ]
    for lesson in lessons:
        _propose(server, proposal(lesson))
    wide = _propose(server, {**proposal("Wrap long words."), "situation": LONG_LINE})
    status, memory = server.post(
        "v1/memory/remember",
        {"scope_id": SCOPE, "kind": "note", "text": "Attachments are scanned on upload."},
    )
    assert status == 200, memory
    tricky = _propose(server, TRICKY, artifact_refs=[memory["memory"]])
    retire = {"scope_id": SCOPE, "citation": memory["entry"]["citation"], "reason": "Moved."}
    assert server.post("v1/memory/entries/retire", retire)[0] == 200

    _log_in(browser, server, tmp_path, "/admin/experience/candidate/")
    for width in (1400, 900):
        browser.set_window_size(width, 1000)
        browser.get(server.url + "admin/experience/candidate/")
        _shot(browser, f"desk-queue-{width}.png")
        scroll_width, inner_width = _fits(browser)
        assert scroll_width <= inner_width, (width, scroll_width, inner_width)
        lesson_cell = browser.find_element(By.CSS_SELECTOR, "td.field-lesson_excerpt")
        # Readable: the lesson column is wide enough for a phrase, not a word a line.
        assert lesson_cell.size["width"] >= (300 if width == 1400 else 180), lesson_cell.size
        assert "Retry the flaky importer" in browser.page_source

    browser.set_window_size(1400, 1000)
    browser.get(_candidate_url(server, wide))
    scroll_width, inner_width = _fits(browser)
    assert scroll_width <= inner_width, (scroll_width, inner_width)
    assert browser.find_element(By.ID, "evidence").is_displayed()
    _shot(browser, "desk-candidate-long-line.png", full_height=False)

    browser.set_window_size(1400, 1000)
    browser.get(_candidate_url(server, tricky))
    mark = browser.find_element(By.CSS_SELECTOR, "#proposal .proposal-action .pc-mark")
    assert mark.is_displayed()
    assert mark.text == "⟨U+202E⟩"
    action = browser.find_element(By.CSS_SELECTOR, "#proposal .proposal-action").text
    assert "⟨U+202E⟩gnp.exe" in action
    evidence = browser.find_element(By.ID, "evidence").text
    assert "Attachments are scanned on upload." in evidence
    assert "active at the cited revision; retired now" in evidence
    _shot(browser, "desk-candidate-bidi.png")

    # Revise, submit without touching anything: nothing is written.
    browser.set_window_size(1400, 1000)
    _click(browser, By.ID, "revise-link")
    _shot(browser, "desk-revise-form.png")
    _click(browser, By.ID, "preview-revise")
    assert "No changes" in browser.find_element(By.CSS_SELECTOR, "ul.messagelist").text
    unchanged = _get_candidate(server, tricky)
    assert unchanged["version"] == 1
    assert unchanged["proposal"] == TRICKY

    # Revise one field: the others keep their NUL, lone CR and CRLFs.
    _click(browser, By.ID, "revise-link")
    lesson = browser.find_element(By.NAME, "lesson")
    lesson.clear()
    lesson.send_keys("Check attachment names for bidi controls.\nReject them.")
    _click(browser, By.ID, "preview-revise")
    _shot(browser, "desk-revise-confirm.png")
    _click(browser, By.ID, "confirm-revise")
    revised = _get_candidate(server, tricky)
    assert revised["version"] == 2
    assert revised["proposal"] == {
        **TRICKY,
        "lesson": "Check attachment names for bidi controls.\nReject them.",
    }


@pytest.mark.slow
def test_memory_browser_in_a_browser(browser, server, tmp_path):
    from selenium.webdriver.common.by import By

    status, kept = server.post(
        "v1/memory/remember",
        {"scope_id": SCOPE, "kind": "decision", "text": "Load tests use the staging database."},
    )
    assert status == 200, kept
    status, gone = server.post(
        "v1/memory/remember",
        {"scope_id": SCOPE, "kind": "note", "text": "The importer runs at 02:00 " + "y" * 3000},
    )
    assert status == 200, gone
    status, retired = server.post(
        "v1/memory/entries/retire",
        {
            "scope_id": SCOPE,
            "citation": gone["entry"]["citation"],
            "reason": "The importer was replaced by a stream.",
        },
    )
    assert status == 200, retired

    _log_in(browser, server, tmp_path, "/admin/memory/memoryentryversion/")
    for width in (1400, 900):
        browser.set_window_size(width, 1000)
        browser.get(server.url + "admin/memory/memoryentryversion/")
        _shot(browser, f"desk-memory-entries-{width}.png")
        scroll_width, inner_width = _fits(browser)
        assert scroll_width <= inner_width, (width, scroll_width, inner_width)
        cells = browser.find_elements(By.CSS_SELECTOR, "td.field-state_badge")
        assert sorted(cell.text for cell in cells) == ["active", "retired"]

    browser.set_window_size(1400, 1000)
    _click(browser, By.PARTIAL_LINK_TEXT, "The importer runs at 02:00")
    history = browser.find_element(By.ID, "entry-history").text
    assert "The importer was replaced by a stream." in history
    assert "retired" in history
    scroll_width, inner_width = _fits(browser)
    assert scroll_width <= inner_width, (scroll_width, inner_width)
    _shot(browser, "desk-memory-entry.png")
