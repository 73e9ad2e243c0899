"""Swagger UI shows what the document teaches: an operation expanded in real headless
Chromium (offline) shows its description, its request example and its example answers.
The screenshot is kept in ``test-artifacts/``."""

import pytest

from powercontext.api.openapi_examples import ENTRY_ID
from tests.experience.servers import REPO_ROOT, Server
from tests.powercontext.api.test_api_docs import offline_browser  # noqa: F401 (a fixture)

ARTIFACTS = REPO_ROOT / "test-artifacts"


@pytest.mark.slow
def test_an_expanded_operation_shows_its_description_and_examples(
    offline_browser,  # noqa: F811
    tmp_path,
    transactional_db,
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    server = Server(tmp_path)
    try:
        offline_browser.set_window_size(1400, 2400)
        offline_browser.get(server.url + "api/docs/#/memory/remember_memory")
        wait = WebDriverWait(offline_browser, 30)
        block = wait.until(
            expected_conditions.presence_of_element_located(
                (By.ID, "operations-memory-remember_memory")
            )
        )
        if "is-open" not in block.get_attribute("class"):
            block.find_element(By.CSS_SELECTOR, ".opblock-summary").click()
        wait.until(
            expected_conditions.visibility_of_element_located(
                (By.CSS_SELECTOR, "#operations-memory-remember_memory .opblock-description")
            )
        )
        opened = offline_browser.find_element(By.ID, "operations-memory-remember_memory")
        text = opened.text
        # The operation's description, with the errors it answers.
        assert "Remember a new entry in the scope's Memory" in text
        assert "409 revision_conflict" in text
        # The request example and the example answers (an id of the right shape).
        assert "git:example.com/acme/widgets" in text
        assert ENTRY_ID in text
        assert "Already remembered" in opened.get_attribute("innerHTML")
        offline_browser.execute_script("arguments[0].scrollIntoView()", opened)
        ARTIFACTS.mkdir(exist_ok=True)
        offline_browser.save_screenshot(str(ARTIFACTS / "api-docs-remember-memory.png"))
    finally:
        server.stop()
