"""The desk's lists never cut a word in a narrow column ("preferenc e", "conventio n"), in
real headless Chromium against a real ``manage.py serve``."""

import pytest

from tests.experience.test_browser import browser, server
from tests.experience.test_desk_browser import _log_in, _shot

__all__ = ["browser", "server"]  # fixtures, used by name

SCOPE = "git:github.com/acme/widgets"
# How many lines each cell's text takes, word by word: a word on two lines was cut.
CUT_WORDS = """
const cut = [];
for (const cell of document.querySelectorAll(arguments[0])) {
  const text = cell.firstChild && cell.firstChild.nodeType === 3 ? cell.firstChild : null;
  const node = text || cell.querySelector('*') && cell.querySelector('*').firstChild;
  if (!node || node.nodeType !== 3) continue;
  let start = 0;
  for (const word of node.textContent.split(/(\\s+)/)) {
    if (word.trim()) {
      const range = document.createRange();
      range.setStart(node, start);
      range.setEnd(node, start + word.length);
      const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
      if (lines.size > 1) cut.push(word);
    }
    start += word.length;
  }
}
return cut;
"""


@pytest.mark.slow
def test_narrow_columns_wrap_between_words_not_inside_them(browser, server, tmp_path):
    texts = {
        "preference": "Prefer small focused commits with a message that says why.",
        "convention": "We run the tests with make check, never pytest alone.",
        "decision": "The dev database is PostgreSQL 16 on port 5433.",
    }
    for kind, text in texts.items():
        status, body = server.post(
            "v1/memory/remember", {"scope_id": SCOPE, "kind": kind, "text": text}
        )
        assert status == 200, body
    _log_in(browser, server, tmp_path, "/admin/memory/memoryentryversion/")
    for width in (1400, 800):
        browser.set_window_size(width, 1000)
        browser.get(server.url + "admin/memory/memoryentryversion/")
        _shot(browser, f"desk-memory-words-{width}.png")
        for column in ("td.field-kind", "td.field-scope_label", "td.field-state_badge"):
            assert browser.execute_script(CUT_WORDS, column) == [], (width, column)


@pytest.mark.slow
def test_the_pack_previews_headers_wrap_between_words(browser, server, tmp_path):
    from selenium.webdriver.common.by import By

    from tests.experience.test_browser import _click

    for text in ("Configure Celery's worker concurrency.", "The dev database is on 5433."):
        status, body = server.post(
            "v1/memory/remember", {"scope_id": SCOPE, "kind": "note", "text": text}
        )
        assert status == 200, body
    _log_in(browser, server, tmp_path, "/admin/contextpack/preview/")
    browser.set_window_size(1280, 1000)
    browser.get(server.url + "admin/contextpack/preview/")
    browser.find_element(By.NAME, "scope_id").send_keys(SCOPE)
    browser.find_element(By.NAME, "query").send_keys("How do I stitch GraphQL schemas?")
    _click(browser, By.ID, "preview-submit")
    assert browser.find_elements(By.CSS_SELECTOR, "tr.candidate-row")
    _shot(browser, "desk-preview-words.png")
    assert browser.execute_script(CUT_WORDS, "#why th") == []
