import pytest
from django.db import connection

from experience.search_index import EXPERIENCE_INDEX
from memory.search_index import MEMORY_INDEX
from powercontext.search import search_engine
from tests.conftest import engine, error_code

pytestmark = pytest.mark.django_db


def test_capabilities_tell_what_exists(api):
    caps = api.get("/v1/capabilities").json()
    assert caps["source_types"] == ["content"]
    assert caps["search_modes"] == ["auto", "fts", "vector", "hybrid"]
    assert caps["context_versions"] == ["powercontext.prepared-context.v1"]
    assert "memory" in caps["artifact_families"]
    assert caps["memory_extraction"] is False
    assert caps["experience_generation"] is False


def test_health_ready_reports_checks(client):
    response = client.get("/health/ready")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ready"
    assert set(body["checks"]) == {
        "database",
        "migrations",
        "fulltext_index",
        "storage",
        "vector_index",
    }


DROP_INDEX = {
    "sqlite": "DROP TABLE memory_activeentry_fts",
    "oceanbase": "DROP INDEX memory_activeentry_ft ON memory_memoryactiveentry",
}


@pytest.mark.django_db(transaction=True)
def test_health_ready_is_503_when_fulltext_index_is_missing(client):
    with connection.cursor() as cursor:
        cursor.execute(DROP_INDEX[engine()])
    try:
        response = client.get("/health/ready")
        assert response.status_code == 503
        assert response.json()["checks"]["fulltext_index"]["status"] == "failing"
    finally:
        search_engine().rebuild(MEMORY_INDEX)
    assert client.get("/health/ready").status_code == 200


DROP_EXPERIENCE_INDEX = {
    "sqlite": "DROP TABLE experience_head_fts",
    "oceanbase": "DROP INDEX artifact_head_searchable_ft ON powercontext_artifacthead",
}


@pytest.mark.django_db(transaction=True)
def test_health_ready_is_503_when_the_experience_index_is_missing(client):
    # Every prepare searches Experience too, so its index counts as much as Memory's.
    with connection.cursor() as cursor:
        cursor.execute(DROP_EXPERIENCE_INDEX[engine()])
    try:
        response = client.get("/health/ready")
        assert response.status_code == 503
        check = response.json()["checks"]["fulltext_index"]
        assert check["status"] == "failing"
        assert "experience" in check["detail"]
    finally:
        search_engine().rebuild(EXPERIENCE_INDEX)
    assert client.get("/health/ready").status_code == 200


class TestSources:
    def body(self, **overrides):
        return {"scope_id": "s", "source_id": "prompt-1", "content": "hello", **overrides}

    def test_positions_are_gapless_and_idempotent(self, api):
        first = api.ok("/v1/sources/content", self.body(), status=202)
        assert first == {
            "status": "accepted",
            "source": {"name": "content", "source_id": "prompt-1"},
            "position": 1,
        }
        assert api.redacted == "0"
        again = api.ok("/v1/sources/content", self.body(), status=202)
        assert again == first
        second = api.ok("/v1/sources/content", self.body(source_id="prompt-2"), status=202)
        assert second["position"] == 2
        other_scope = api.ok("/v1/sources/content", self.body(scope_id="t"), status=202)
        assert other_scope["position"] == 1

    def test_ids_differing_only_in_trailing_space_are_distinct(self, api):
        first = api.ok("/v1/sources/content", self.body(), status=202)
        spaced = api.ok("/v1/sources/content", self.body(source_id="prompt-1 "), status=202)
        assert (first["position"], spaced["position"]) == (1, 2)

    def test_same_id_other_payload_is_a_conflict(self, api):
        api.ok("/v1/sources/content", self.body(metadata={"agent": "codex"}), status=202)
        for changed in (self.body(content="other"), self.body(metadata={"agent": "claude"})):
            response = api.post("/v1/sources/content", changed)
            assert response.status_code == 409
            assert error_code(response) == "source_conflict"

    def test_metadata_key_order_does_not_change_the_payload(self, api):
        api.ok("/v1/sources/content", self.body(metadata={"a": 1, "b": 2}), status=202)
        api.ok("/v1/sources/content", self.body(metadata={"b": 2, "a": 1}), status=202)

    @pytest.mark.parametrize(
        ("overrides", "field"),
        [
            ({"source_id": ""}, "source_id"),
            ({"source_id": "x" * 257}, "source_id"),
            ({"content": ""}, "content"),
            ({"content": "x" * 200_001}, "content"),
            ({"metadata": []}, "metadata"),
            ({"metadata": {"big": "x" * 17_000}}, "metadata"),
        ],
    )
    def test_source_limits(self, api, overrides, field):
        response = api.post("/v1/sources/content", self.body(**overrides))
        assert response.status_code == 422
        assert field in [error["field"] for error in response.json()["error"]["details"]["errors"]]

    def test_largest_content_is_accepted(self, api):
        api.ok("/v1/sources/content", self.body(content="\x00" * 200_000), status=202)


@pytest.mark.parametrize("number", [2**53, -(2**53), 10**30])
def test_metadata_integer_without_a_canonical_form_is_422_not_500(api, number):
    # Found by the API fuzzer: RFC 8785 cannot canonicalise integers beyond
    # 2**53 - 1, and the payload hash raised (500 internal_error).
    body = {"scope_id": "s", "source_id": "p", "content": "c", "metadata": {"n": [number]}}
    response = api.post("/v1/sources/content", body)
    assert response.status_code == 422
    assert [error["field"] for error in response.json()["error"]["details"]["errors"]] == [
        "metadata"
    ]
    body["metadata"] = {"n": [2**53 - 1, -(2**53 - 1)]}
    api.ok("/v1/sources/content", body, status=202)
