import pytest

from tests.conftest import error_code

pytestmark = pytest.mark.django_db


def test_remember_then_get_exact_entry(api, remember):
    result = remember("Run the backend contract tests after changing persistence.")
    entry = result["entry"]
    assert result["memory"] == {"family": "memory", "artifact_id": "memory", "revision": 1}
    assert entry["citation"]["memory_ref"]["revision"] == 1
    assert entry["citation"]["entry_id"].startswith("mem_ent_")
    assert entry["state"] == "active"
    fetched = api.ok(
        "/v1/memory/entries/get", {"scope_id": "scope-a", "citation": entry["citation"]}
    )
    assert fetched == entry


def test_search_finds_entry(api, remember):
    remember("Use pytest-django for the persistence tests.")
    remember("The deploy runs on Fridays.")
    result = api.ok(
        "/v1/memory/search", {"scope_id": "scope-a", "query": "persistence", "mode": "fts"}
    )
    assert result["mode"] == "fts"
    assert [hit["text"] for hit in result["hits"]] == [
        "Use pytest-django for the persistence tests."
    ]
    assert result["hits"][0]["score"] == 1.0
    assert result["hits"][0]["matched_by"] == ["fts"]


def test_vector_mode_is_refused_while_the_channel_is_off(api, remember, monkeypatch):
    remember("x y z")
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    response = api.post(
        "/v1/memory/search", {"scope_id": "scope-a", "query": "x", "mode": "vector"}
    )
    assert response.status_code == 422
    assert error_code(response) == "capability_not_supported"
