"""A reviewer's session in a real browser (headless Debian Chromium via Selenium) against
a real ``manage.py serve``: log in, open the queue, approve one candidate, reject another
with a reason, then check over HTTP that only the approved lesson reaches a Context Pack.
The detail page's screenshot is kept in ``test-artifacts/``."""

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.experience.conftest import SOURCE, proposal
from tests.experience.servers import REPO_ROOT, Server, manage

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTIFACTS = REPO_ROOT / "test-artifacts"
SCOPE = "browser-scope"
PASSWORD = "a-long-test-password-9"
QUERY = "How should we handle flaky importer retries in the nightly job?"
APPROVED = "Approved: retry the flaky importer with backoff, never in a tight loop."
REJECTED = "Rejected: just rerun the flaky importer until it passes."

webdriver = pytest.importorskip("selenium.webdriver")


@pytest.fixture
def browser():
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail("Debian's chromium and chromium-driver must be installed")
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
        "--window-size=1400,1800",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(argument)
    # An explicit driver path: Selenium Manager is never asked to download anything.
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def server(tmp_path, transactional_db):
    started = Server(tmp_path)
    try:
        yield started
    finally:
        started.stop()


def _propose(server, lesson, **extra):
    status, candidate = server.post(
        "v1/experience/propose",
        {
            "scope_id": SCOPE,
            "proposal": proposal(
                lesson,
                situation="The nightly importer job was flaky.",
                action="Investigated the importer retries.",
                outcome="The nightly job passed again.",
            ),
            "source_refs": [SOURCE],
            **extra,
        },
    )
    assert status == 201, candidate
    return candidate


def _click(driver, by, value):
    """Click the element once the page has loaded, then wait until the next page has
    loaded too, so no lookup or click ever hits a page being left or still arriving."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    wait = WebDriverWait(driver, 20)
    loaded = lambda d: d.execute_script("return document.readyState") == "complete"  # noqa: E731
    wait.until(loaded)
    page = driver.find_element(By.TAG_NAME, "html")

    def clicked(d):
        # Chromium may re-attach the page's nodes between the lookup and the click
        # ("Node with given id does not belong to the document"): look again then.
        try:
            element = expected_conditions.element_to_be_clickable((by, value))(d)
            if not element:
                return False
            element.click()
        except (StaleElementReferenceException, WebDriverException) as error:
            if "does not belong to the document" in str(error) or isinstance(
                error, StaleElementReferenceException
            ):
                return False
            raise
        return True

    def left(_):
        # The page the click left is gone: Selenium says "stale", or Chromium that its
        # node "does not belong to the document" (seen once on OceanBase, at load).
        try:
            page.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as error:
            if "does not belong to the document" in str(error):
                return True
            raise
        return False

    wait.until(clicked)
    wait.until(left)
    wait.until(loaded)


def _open_candidate(driver, server, lesson):
    from selenium.webdriver.common.by import By

    driver.get(server.url + "admin/experience/candidate/")
    _click(driver, By.PARTIAL_LINK_TEXT, lesson[:40])
    assert lesson in driver.find_element(By.ID, "proposal").text


@pytest.mark.slow
def test_reviewer_approves_and_rejects_in_the_admin(browser, server, tmp_path):
    from selenium.webdriver.common.by import By

    manage(tmp_path, "reviewer_token", "rita", "--create")
    manage(
        tmp_path,
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; "
        "user = get_user_model().objects.get(username='rita'); "
        f"user.is_staff = True; user.set_password({PASSWORD!r}); user.save()",
    )
    # Evidence the detail page links: the captured prompt and a memory revision.
    assert (
        server.post(
            "v1/sources/content",
            {"scope_id": SCOPE, "source_id": "prompt-1", "content": "The importer flaked again."},
        )[0]
        == 202
    )
    status, memory = server.post(
        "v1/memory/remember",
        {"scope_id": SCOPE, "kind": "note", "text": "Importer retries live in jobs/nightly.py."},
    )
    assert status == 200, memory
    approved = _propose(server, APPROVED, artifact_refs=[memory["memory"]])
    rejected = _propose(server, REJECTED)

    browser.get(server.url + "admin/login/?next=/admin/experience/candidate/")
    browser.find_element(By.NAME, "username").send_keys("rita")
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    _click(browser, By.CSS_SELECTOR, "input[type=submit]")
    assert browser.find_element(By.ID, "count-pending").text == "2"
    queue = browser.page_source
    assert approved["candidate_id"] in queue
    assert rejected["candidate_id"] in queue

    _open_candidate(browser, server, APPROVED)
    evidence = browser.find_element(By.ID, "evidence").text
    assert "The importer flaked again." in evidence
    assert "Importer retries live in jobs/nightly.py." in evidence
    ARTIFACTS.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "experience-candidate-detail.png"))
    _click(browser, By.ID, "approve-link")
    _click(browser, By.ID, "confirm-approve")
    assert browser.find_element(By.ID, "candidate-status").text == "approved"

    _open_candidate(browser, server, REJECTED)
    _click(browser, By.ID, "reject-link")
    browser.find_element(By.NAME, "reason").send_keys("Rerunning hides the flakiness.")
    _click(browser, By.ID, "confirm-reject")
    assert browser.find_element(By.ID, "candidate-status").text == "rejected"
    assert browser.find_element(By.ID, "decision-reason").text == "Rerunning hides the flakiness."

    browser.get(server.url + "admin/experience/candidate/")
    assert browser.find_element(By.ID, "count-pending").text == "0"

    status, pack = server.post(
        "v1/context/prepare", {"scope_id": SCOPE, "query": QUERY, "max_bytes": 8000}
    )
    assert status == 200, pack
    assert pack["status"] == "ready"
    assert APPROVED in pack["content"]
    assert REJECTED not in pack["content"]
    body = pack["content"].split("BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\n", 1)[1]
    items = json.loads(body.rsplit("\nEND_POWERCONTEXT_PREPARED_CONTEXT_V1", 1)[0])["items"]
    status, candidate = server.post(
        "v1/artifact-candidates/get",
        {"scope_id": SCOPE, "candidate_id": approved["candidate_id"]},
    )
    assert [item["citation"] for item in items if item.get("kind") == "experience"] == [
        {"artifact_ref": candidate["result_artifact"]}
    ]
