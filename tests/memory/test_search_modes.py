"""`POST /v1/memory/search` modes: fts, vector, hybrid and auto, and what each hit says
found it (the semantic channel runs the real local model on the real vector index)."""

import pytest
from django.db import connection

from memory.search_index import MEMORY_INDEX
from powercontext.search import vectors
from tests.api_calls import search
from tests.conftest import error_code

POSTGRES = "The dev database is PostgreSQL 16 on port 5433; the test one on 5434."
DEPLOY = "Deploys go out on Fridays after the release train is cut."
BILLING = "Invoices are finalised by the billing worker at midnight UTC."


# transactional_db: on OceanBase the vector table's DDL (which commits) waits for the first
# write outside a transaction, so these tests write outside one on every engine.
@pytest.fixture
def entries(transactional_db, remember):
    for text in (POSTGRES, DEPLOY, BILLING):
        remember(text)


def texts(result):
    return [hit["text"] for hit in result["hits"]]


def test_vector_finds_what_the_words_miss(api, entries):
    # "postgres" is not a word of the entry (the analyzer keeps "postgresql" whole).
    assert search(api, "scope-a", "postgres", mode="fts")["hits"] == []
    result = search(api, "scope-a", "which postgres port do I use", mode="vector")
    assert result["mode"] == "vector"
    assert texts(result)[0] == POSTGRES
    assert all(hit["matched_by"] == ["vector"] for hit in result["hits"])


def test_hybrid_says_which_channels_found_each_hit(api, entries):
    result = search(api, "scope-a", "billing invoices", mode="hybrid")
    assert result["mode"] == "hybrid"
    assert texts(result)[0] == BILLING
    assert result["hits"][0]["matched_by"] == ["fts", "vector"]
    assert result["hits"][0]["score"] == 1.0


def test_auto_is_hybrid_when_the_vector_index_is_ready(api, entries):
    assert search(api, "scope-a", "billing", mode="auto")["mode"] == "hybrid"


def test_auto_is_fts_with_the_channel_off_and_the_words_still_match(api, entries, monkeypatch):
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    result = search(api, "scope-a", "billing", mode="auto")
    assert result["mode"] == "fts"
    assert texts(result) == [BILLING]


def test_an_unrelated_row_is_not_a_hit_because_it_is_nearest(api, entries):
    # Every row is someone's nearest neighbour; only a similar one is a semantic hit.
    result = search(api, "scope-a", "what colour is the office cat", mode="vector")
    assert result["hits"] == []


def test_an_entry_without_a_vector_is_still_found_by_its_words(
    transactional_db, api, remember, monkeypatch
):
    remember(BILLING)
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    remember(DEPLOY)  # written with the channel off: no vector
    monkeypatch.delenv("POWERCONTEXT_EMBEDDINGS")
    result = search(api, "scope-a", "deploys fridays", mode="hybrid")
    assert texts(result)[0] == DEPLOY
    assert result["hits"][0]["matched_by"] == ["fts"]


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_vector_modes_are_refused_when_the_channel_is_off(api, entries, monkeypatch, mode):
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    response = api.post("/v1/memory/search", {"scope_id": "scope-a", "query": "x", "mode": mode})
    assert response.status_code == 422
    assert error_code(response) == "capability_not_supported"
    assert "switched off" in response.json()["error"]["message"]


def test_a_ready_search_does_not_look_the_vector_table_up_in_the_catalogue(
    api, entries, monkeypatch
):
    # status() reads the catalogue (15 ms on OceanBase); a search needs only the record.
    def catalogue(*args, **kwargs):
        raise AssertionError("a search looked up the catalogue")

    monkeypatch.setattr(vectors, "status", catalogue)
    assert search(api, "scope-a", "billing", mode="auto")["mode"] == "hybrid"
    assert texts(search(api, "scope-a", "which postgres port", mode="vector"))[0] == POSTGRES


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_a_vector_table_dropped_behind_its_record_is_said_not_hidden(api, entries, mode):
    """Recorded as ready, the table gone: auto answers by the words and says fts; the
    vector modes are refused with the reason, never answered by the words as if by
    both."""
    _, reverse = vectors.vector_engine().ddl(MEMORY_INDEX, 384)
    with connection.cursor() as cursor:
        for statement in reverse:
            cursor.execute(statement)
    result = search(api, "scope-a", "billing", mode="auto")
    assert result["mode"] == "fts"
    assert texts(result) == [BILLING]
    response = api.post(
        "/v1/memory/search", {"scope_id": "scope-a", "query": "billing", "mode": mode}
    )
    assert response.status_code == 422
    assert error_code(response) == "capability_not_supported"
    assert "missing vector" in response.json()["error"]["message"]
