"""POST /v1/context/prepare through the HTTP stack (RFC 0028)."""

import json
import logging
import threading
from dataclasses import replace

import pytest
from django.db import connection
from django.test import Client

from contextpack import application
from memory import selectors
from powercontext.models import ArtifactRevision, SourceRecord
from tests.api_calls import prepare
from tests.conftest import ApiClient, error_code

SCOPE = "git:example.com/team/repo"
PERSISTENCE_RULES = (
    "database tables and indexes",
    "cache keys expire hourly",
    "queue messages are acked once",
    "uploaded files go to object storage",
    "logs rotate daily at midnight",
    "backups are encrypted at rest",
    "sessions live in redis",
    "metrics are scraped every minute",
)
BEGIN = "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1"
END = "END_POWERCONTEXT_PREPARED_CONTEXT_V1"


def items(content):
    block = content.split(BEGIN + "\n", 1)[1].rsplit("\n" + END, 1)[0]
    return json.loads(block)["items"]


@pytest.mark.django_db
class TestPrepare:
    def test_ready_pack_cites_exact_entries(self, api, remember):
        entry = remember(
            "Run the backend contract tests after changing persistence.", scope_id=SCOPE
        )
        remember("Frontend uses pnpm.", scope_id=SCOPE)
        pack = prepare(api, SCOPE, "Which validation is required after changing persistence?")
        assert set(pack) == {"schema", "status", "content", "content_bytes"}
        assert pack["schema"] == "powercontext.prepared-context.v1"
        assert pack["status"] == "ready"
        assert pack["content_bytes"] == len(pack["content"].encode("utf-8"))
        [item] = items(pack["content"])
        # Cited at the head that was searched (revision 2), not where the entry was born.
        citation = {**entry["entry"]["citation"], "memory_ref": {**entry["memory"], "revision": 2}}
        assert item == {
            "citation": citation,
            "content": "Run the backend contract tests after changing persistence.",
            "truncated": False,
        }

    def test_default_max_bytes_is_8000(self, api, remember):
        # Eight rules, each its own (two that said the same would take one slot).
        for index, rule in enumerate(PERSISTENCE_RULES):
            remember(f"persistence rule {index}: {rule}. " + "x" * 1860, scope_id=SCOPE)
        pack = api.ok("/v1/context/prepare", {"scope_id": SCOPE, "query": "persistence rule"})
        assert pack["status"] == "ready"
        assert 7000 < pack["content_bytes"] <= 8000

    @pytest.mark.parametrize("scope", [SCOPE, "never-written"])
    def test_empty_is_one_generic_answer(self, api, remember, scope):
        remember("Something about databases.", scope_id=SCOPE)
        pack = prepare(api, scope, "kubernetes helm chart")
        assert pack == {
            "schema": "powercontext.prepared-context.v1",
            "status": "empty",
            "content": None,
            "content_bytes": 0,
        }

    def test_retired_entries_never_appear(self, api, remember):
        entry = remember("The staging password rotates monthly.", scope_id=SCOPE)["entry"]
        api.ok("/v1/memory/entries/retire", {"scope_id": SCOPE, "citation": entry["citation"]})
        assert prepare(api, SCOPE, "staging password")["status"] == "empty"

    def test_other_scopes_never_leak(self, api, remember):
        remember("Scope B secret: the vault path is /srv/vault.", scope_id="scope-b")
        remember("Scope A knows nothing of vaults but has this vault word.", scope_id=SCOPE)
        pack = prepare(api, SCOPE, "vault path")
        assert all("Scope B" not in item["content"] for item in items(pack["content"]))

    def test_smallest_ready_budget_is_found_not_hard_coded(self, api, remember):
        remember("Always run `make lint` before pushing changes to the monorepo.", scope_id=SCOPE)

        def status(max_bytes):
            return prepare(api, SCOPE, "make lint before pushing", max_bytes)["status"]

        low, high = 512, 32768
        assert status(high) == "ready"
        while low < high:
            middle = (low + high) // 2
            if status(middle) == "ready":
                high = middle
            else:
                low = middle + 1
        smallest = low
        assert smallest > 512
        pack = prepare(api, SCOPE, "make lint before pushing", smallest)
        assert pack["status"] == "ready"
        assert pack["content_bytes"] == smallest
        assert status(smallest - 1) == "empty"

    def test_prepare_writes_nothing(self, api, remember):
        remember("Caching uses redis.", scope_id=SCOPE)
        before = (ArtifactRevision.objects.count(), SourceRecord.objects.count())
        prepare(api, SCOPE, "redis caching")
        assert (ArtifactRevision.objects.count(), SourceRecord.objects.count()) == before

    def test_logs_hold_no_query_scope_or_content(self, api, remember, caplog):
        remember("The payroll export runs nightly at 02:00.", scope_id=SCOPE)
        with caplog.at_level(logging.DEBUG):
            pack = prepare(api, SCOPE, "when does the payroll export run")
        assert pack["status"] == "ready"
        logged = caplog.text
        for secret in ("payroll", SCOPE, "mem_ent_", "mem_ver_"):
            assert secret not in logged
        assert "/v1/context/prepare" in logged

    def test_hit_from_another_revision_is_an_internal_error_without_output(
        self, api, remember, monkeypatch
    ):
        remember("Mismatch target entry.", scope_id=SCOPE)
        real = selectors.memory_search_at

        def stale(**kwargs):
            hits = real(**kwargs)
            return [type(hit)(hit.revision + 1, *list(vars(hit).values())[1:]) for hit in hits]

        monkeypatch.setattr(application, "memory_search_at", stale)
        response = api.post("/v1/context/prepare", {"scope_id": SCOPE, "query": "mismatch target"})
        assert response.status_code == 500
        assert response.json() == {
            "error": {"code": "internal_error", "message": "Internal error.", "details": None}
        }


@pytest.mark.django_db(transaction=True)
def test_pack_stays_on_the_revision_it_searched_while_the_head_moves(monkeypatch):
    api = ApiClient(Client())
    original = api.ok(
        "/v1/memory/remember",
        {"scope_id": SCOPE, "kind": "note", "text": "Releases are cut on Tuesdays."},
    )["entry"]
    real = selectors.memory_search_at
    moved = {}

    def search_while_head_moves(**kwargs):
        # Another connection revises the entry after the head was read and before the
        # search runs; the pack must still describe the revision it resolved.
        def writer():
            try:
                moved["response"] = ApiClient(Client()).post(
                    "/v1/memory/entries/revise",
                    {
                        "scope_id": SCOPE,
                        "citation": original["citation"],
                        "kind": "note",
                        "text": "Releases are cut on Thursdays.",
                    },
                )
            finally:
                connection.close()

        thread = threading.Thread(target=writer)
        thread.start()
        thread.join()
        return real(**kwargs)

    monkeypatch.setattr(application, "memory_search_at", search_while_head_moves)
    pack = api.ok("/v1/context/prepare", {"scope_id": SCOPE, "query": "when are releases cut"})
    assert moved["response"].status_code == 200
    assert moved["response"].json()["memory"]["revision"] == 2

    [item] = items(pack["content"])
    assert item["citation"]["memory_ref"]["revision"] == 1
    assert item["content"] == "Releases are cut on Tuesdays."
    fetched = api.ok("/v1/memory/entries/get", {"scope_id": SCOPE, "citation": item["citation"]})
    assert fetched["text"] == item["content"]

    monkeypatch.setattr(application, "memory_search_at", real)
    later = api.ok("/v1/context/prepare", {"scope_id": SCOPE, "query": "when are releases cut"})
    [item] = items(later["content"])
    assert item["citation"]["memory_ref"]["revision"] == 2
    assert item["content"] == "Releases are cut on Thursdays."


@pytest.mark.django_db
def test_prepare_error_shape_for_bad_input(api):
    response = api.post("/v1/context/prepare", {"scope_id": SCOPE})
    assert response.status_code == 422
    assert error_code(response) == "invalid_request"


def test_a_hit_from_another_revision_is_the_one_search_inconsistency(db, remember, monkeypatch):
    # The builder refuses it; prepare reports it as the kernel's SearchInconsistent, the
    # same error the selectors raise when the index disagrees with the head.
    from powercontext.search import SearchInconsistent

    remember("The importer retries three times.")
    remember("The exporter writes CSV.")
    real = application.memory_search_at

    def stale(**kwargs):
        return [replace(hit, revision=1) for hit in real(**kwargs)]

    monkeypatch.setattr(application, "memory_search_at", stale)
    with pytest.raises(SearchInconsistent):
        application.prepare_context(scope_id="scope-a", query="importer", max_bytes=8000)
