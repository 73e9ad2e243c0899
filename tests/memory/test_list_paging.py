"""``entries/list`` pages are bounded in bytes as well as in entries, and paging with
``next_cursor`` returns every entry exactly once."""

import json

import pytest

from memory import selectors

pytestmark = pytest.mark.django_db

LIST = "/v1/memory/entries/list"
TEXT_BYTES = 8192  # the largest text remember takes


def _text(index, size=TEXT_BYTES):
    # Multi-byte characters: the budget is in UTF-8 bytes, not characters.
    head = f"entry {index:04d} é "
    return (head + "é" * size)[: size // 2 - len(head.encode()) + len(head)]


def _list_all(api, **body):
    pages, cursor = [], None
    while True:
        request = {"scope_id": "scope-a", "limit": 1000, **body}
        if cursor is not None:
            request["cursor"] = cursor
        page = api.ok(LIST, request)
        pages.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            return pages
        assert len(pages) < 100, "paging does not end"


def _entry_bytes(entry):
    return sum(
        len(part.encode())
        for part in (
            entry["text"],
            entry["kind"],
            json.dumps(entry["source_refs"]),
            json.dumps(entry["artifact_refs"]),
        )
    )


def test_a_list_of_large_entries_is_cut_into_pages_of_bounded_bytes(api, remember):
    count = 200  # 200 x 8 KiB = 1.6 MiB of text: more than one page's budget
    remembered = []
    for index in range(count):
        text = _text(index)
        assert len(text.encode()) <= TEXT_BYTES
        remembered.append(remember(text)["entry"]["citation"]["entry_id"])

    pages = _list_all(api)

    assert len(pages) >= 2
    for page in pages:
        assert sum(_entry_bytes(entry) for entry in page["entries"]) <= selectors.LIST_PAGE_BYTES
    listed = [entry["citation"]["entry_id"] for page in pages for entry in page["entries"]]
    assert listed == sorted(remembered)  # each exactly once, in entry id order
    # Every page is of the same revision, the one the first page was read at.
    assert {page["memory"]["revision"] for page in pages} == {count}


def test_an_entry_larger_than_the_budget_still_makes_progress(api, remember, monkeypatch):
    monkeypatch.setattr(selectors, "LIST_PAGE_BYTES", 3000)
    sizes = [4000, 100, 100, 2500, 600, 5000]
    for index, size in enumerate(sizes):
        remember(f"{index} " + "x" * size)

    pages = _list_all(api)

    per_page = [[len(entry["text"]) - 2 for entry in page["entries"]] for page in pages]
    # Entry ids are random: the order is the list's, not the order of remembering.
    assert sorted(size for page in per_page for size in page) == sorted(sizes)
    for page, entries in zip(pages, per_page, strict=True):
        assert entries  # never an empty page with a cursor
        if len(entries) > 1:
            assert sum(_entry_bytes(entry) for entry in page["entries"]) <= 3000


def test_the_limit_still_bounds_a_page_of_small_entries(api, remember):
    for index in range(5):
        remember(f"small {index}")
    pages = _list_all(api, limit=2)
    assert [len(page["entries"]) for page in pages] == [2, 2, 1]
    assert len(_list_all(api)) == 1  # 5 small entries fit one page at limit 1000


def test_a_page_of_escaped_text_is_bounded_by_the_bytes_it_takes_in_json(api, remember):
    # Control characters: 8 KiB of text, 48 KiB of JSON (\u0001 each). Counted in UTF-8
    # a page of 128 of them was 5.9 MB on the wire (issue 27).
    count = 60
    for index in range(count):
        marker = "".join(chr(1 + int(digit)) for digit in f"{index:02d}")
        remember((marker + "\x02\x03\x04") * (TEXT_BYTES // 5))

    responses, cursor = [], None
    while True:
        request = {"scope_id": "scope-a", "limit": 1000}
        if cursor is not None:
            request["cursor"] = cursor
        response = api.post(LIST, request)
        assert response.status_code == 200
        responses.append(response)
        cursor = response.json()["next_cursor"]
        if cursor is None:
            break

    assert len(responses) >= 2
    listed = [entry for response in responses for entry in response.json()["entries"]]
    assert len(listed) == count
    for response in responses:
        entries = len(response.json()["entries"])
        # The page's own bytes, plus the envelope of each entry (its citation, keys).
        assert len(response.content) <= selectors.LIST_PAGE_BYTES + 400 * entries
