"""``artifact-candidates/list`` pages are bounded in bytes as well as in candidates, and
paging with ``next_cursor`` returns every candidate exactly once."""

import pytest

from experience import selectors as experience_selectors
from experience.values import PROPOSAL_FIELDS
from tests.experience.conftest import SCOPE

pytestmark = pytest.mark.django_db


def test_list_pages_of_large_candidates_are_bounded_in_bytes(api, propose, monkeypatch):
    monkeypatch.setattr(experience_selectors, "LIST_PAGE_BYTES", 20_000)
    created = []
    for index in range(12):  # 4 x 2,000 characters each: two or three fit a page
        fields = {name: f"{index} {name} " + "é" * 1990 for name in PROPOSAL_FIELDS}
        created.append(propose(proposal=fields)["candidate_id"])

    seen, cursor, pages = [], None, 0
    while True:
        body = {"scope_id": SCOPE, "limit": 100, **({"cursor": cursor} if cursor else {})}
        page = api.ok("/v1/artifact-candidates/list", body)
        pages += 1
        assert page["candidates"]
        text_bytes = sum(
            len(value.encode())
            for candidate in page["candidates"]
            for value in candidate["proposal"].values()
        )
        assert text_bytes <= 20_000
        seen += [candidate["candidate_id"] for candidate in page["candidates"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages >= 4
    assert seen == list(reversed(created))  # each exactly once, newest first


def test_the_default_list_page_budget_holds_the_largest_candidates(api, propose):
    largest = dict.fromkeys(PROPOSAL_FIELDS, "é" * 8000)  # 16,000 bytes a field
    created = [propose(proposal=largest)["candidate_id"] for _ in range(20)]
    first = api.ok("/v1/artifact-candidates/list", {"scope_id": SCOPE, "limit": 100})
    assert 0 < len(first["candidates"]) < 20
    assert len(first["candidates"]) * 4 * 16_000 <= experience_selectors.LIST_PAGE_BYTES
    rest = api.ok(
        "/v1/artifact-candidates/list",
        {"scope_id": SCOPE, "limit": 100, "cursor": first["next_cursor"]},
    )
    listed = [c["candidate_id"] for c in first["candidates"] + rest["candidates"]]
    assert listed == list(reversed(created))


def test_a_page_of_escaped_proposals_is_bounded_by_the_bytes_it_takes_in_json(
    api, propose, monkeypatch
):
    # Control characters take six bytes each in the response (\u0001): counted as one,
    # a page of them was six times its budget (issue 27).
    monkeypatch.setattr(experience_selectors, "LIST_PAGE_BYTES", 20_000)
    for index in range(8):
        fields = {name: f"{index} {name} " + "\x01" * 300 for name in PROPOSAL_FIELDS}
        propose(proposal=fields)
    cursor, listed = None, 0
    while True:
        body = {"scope_id": SCOPE, "limit": 100, **({"cursor": cursor} if cursor else {})}
        response = api.post("/v1/artifact-candidates/list", body)
        page = response.json()
        listed += len(page["candidates"])
        # Each candidate's envelope (ids, status, version, keys) on top of its fields.
        assert len(response.content) <= 20_000 + 600 * len(page["candidates"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert listed == 8
