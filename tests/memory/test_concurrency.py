"""Concurrent writers in one scope, on the file-backed test database (WAL), through the
full HTTP stack: no acknowledged write is lost or duplicated, revisions stay contiguous,
and nothing answers 5xx."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from django.test import Client

from tests.conftest import ApiClient, sqlite_only

pytestmark = pytest.mark.django_db(transaction=True)

SCOPE = "busy-scope"


def run_in_threads(count, work):
    """Run ``work(index)`` in ``count`` threads released at the same moment."""
    barrier = threading.Barrier(count)

    def task(index):
        barrier.wait()
        try:
            return work(index)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(task, range(count)))


@sqlite_only("OceanBase has no journal mode; these tests use its real sessions")
def test_file_backed_wal_database():
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"
    assert connection.settings_dict["NAME"] != ":memory:"
    assert "mode=memory" not in connection.settings_dict["NAME"]


def test_concurrent_remembers_are_all_kept_exactly_once():
    writers, per_writer = 4, 15

    def work(index):
        api = ApiClient(Client())
        statuses, entry_ids = [], []
        for number in range(per_writer):
            response = api.post(
                "/v1/memory/remember",
                {"scope_id": SCOPE, "kind": "note", "text": f"writer {index} fact {number}"},
            )
            statuses.append(response.status_code)
            if response.status_code == 200:
                entry_ids.append(response.json()["entry"]["citation"]["entry_id"])
        return statuses, entry_ids

    results = run_in_threads(writers, work)
    statuses = [status for result in results for status in result[0]]
    acknowledged = [entry for result in results for entry in result[1]]
    assert statuses == [200] * writers * per_writer

    api = ApiClient(Client())
    listed = api.ok("/v1/memory/entries/list", {"scope_id": SCOPE})
    stored = [entry["citation"]["entry_id"] for entry in listed["entries"]]
    assert sorted(stored) == sorted(acknowledged)
    assert len(set(stored)) == writers * per_writer
    texts = sorted(entry["text"] for entry in listed["entries"])
    assert texts == sorted(
        f"writer {i} fact {n}" for i in range(writers) for n in range(per_writer)
    )

    changes = api.ok("/v1/memory/changes", {"scope_id": SCOPE, "since_revision": 0})
    revisions = [revision["memory_ref"]["revision"] for revision in changes["revisions"]]
    assert revisions == list(range(1, writers * per_writer + 1))


def test_concurrent_identical_remembers_create_one_entry():
    def work(index):
        return ApiClient(Client()).post(
            "/v1/memory/remember", {"scope_id": SCOPE, "kind": "note", "text": "only once"}
        )

    responses = run_in_threads(4, work)
    assert [response.status_code for response in responses] == [200] * 4
    created = [response.json()["entry"] for response in responses if response.json()["entry"]]
    assert len(created) == 1
    listed = ApiClient(Client()).ok("/v1/memory/entries/list", {"scope_id": SCOPE})
    assert len(listed["entries"]) == 1


def test_concurrent_revisions_of_one_citation_have_one_winner():
    api = ApiClient(Client())
    citation = api.ok("/v1/memory/remember", {"scope_id": SCOPE, "kind": "note", "text": "v1"})[
        "entry"
    ]["citation"]

    def work(index):
        return ApiClient(Client()).post(
            "/v1/memory/entries/revise",
            {"scope_id": SCOPE, "citation": citation, "kind": "note", "text": f"v2 by {index}"},
        )

    responses = run_in_threads(4, work)
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [200, 409, 409, 409]
    assert {r.json()["error"]["code"] for r in responses if r.status_code == 409} == {
        "revision_conflict"
    }
    listed = api.ok("/v1/memory/entries/list", {"scope_id": SCOPE})
    assert [entry["version"] for entry in listed["entries"]] == [2]


def test_concurrent_captures_get_gapless_positions():
    def work(index):
        api = ApiClient(Client())
        return [
            api.post(
                "/v1/sources/content",
                {"scope_id": SCOPE, "source_id": f"w{index}-{n}", "content": "prompt"},
            )
            for n in range(10)
        ]

    responses = [response for batch in run_in_threads(4, work) for response in batch]
    assert {response.status_code for response in responses} == {202}
    positions = sorted(response.json()["position"] for response in responses)
    assert positions == list(range(1, 41))
