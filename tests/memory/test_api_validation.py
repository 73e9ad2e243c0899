"""Bad input gets a 422 ``invalid_request`` naming the field (or another documented
error), never a 500, and nothing is written."""

import json

import pytest

from tests.conftest import error_code, error_fields

pytestmark = pytest.mark.django_db

REMEMBER = "/v1/memory/remember"


def remember_body(**overrides):
    body = {"scope_id": "scope-a", "kind": "note", "text": "hello"}
    body.update(overrides)
    return {key: value for key, value in body.items() if value is not ...}


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"scope_id": ...}, "scope_id"),
        ({"scope_id": ""}, "scope_id"),
        ({"scope_id": "   "}, "scope_id"),
        ({"scope_id": "s" * 257}, "scope_id"),
        ({"scope_id": 123}, "scope_id"),
        ({"kind": ""}, "kind"),
        ({"kind": "k" * 129}, "kind"),
        ({"text": ...}, "text"),
        ({"text": "   \n\t "}, "text"),
        ({"text": 5}, "text"),
        ({"text": None}, "text"),
        ({"text": "€" * 2731}, "text"),  # 8193 UTF-8 bytes, only 2731 characters
        ({"reason": "r" * 513}, "reason"),
        ({"expected_revision": "1"}, "expected_revision"),
        ({"expected_revision": True}, "expected_revision"),
        ({"expected_revision": 1.0}, "expected_revision"),
        ({"expected_revision": -1}, "expected_revision"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_bad_remember_fields_are_named(api, overrides, field):
    response = api.post(REMEMBER, remember_body(**overrides))
    assert response.status_code == 422, response.content
    assert error_code(response) == "invalid_request"
    assert field in error_fields(response)
    assert api.ok("/v1/memory/entries/list", {"scope_id": "scope-a"})["entries"] == []


def test_limits_are_inclusive(api):
    assert api.post(REMEMBER, remember_body(scope_id="s" * 256)).status_code == 200
    assert api.post(REMEMBER, remember_body(kind="k" * 128)).status_code == 200
    assert api.post(REMEMBER, remember_body(text="€" * 2730 + "ab")).status_code == 200  # 8192 B


def test_text_is_nfc_normalised_and_stripped_but_inner_bytes_kept(api):
    text = "  e\u0301 tab\there\x00nul \n"
    entry = api.ok(REMEMBER, remember_body(text=text))["entry"]
    assert entry["text"] == "\u00e9 tab\there\x00nul"


@pytest.mark.parametrize(
    ("raw", "content_type"),
    [
        (b"{", "application/json"),
        (b'{"scope_id": NaN}', "application/json"),
        (b'{"scope_id": "a", "kind": "k", "text": Infinity}', "application/json"),
        (b'{"scope_id": "\\ud800", "kind": "k", "text": "t"}', "application/json"),
        (b'{"scope_id": "\xff", "kind": "k", "text": "t"}', "application/json"),
        (b'{"scope_id": "a", "scope_id": "b", "kind": "k", "text": "t"}', "application/json"),
    ],
)
def test_malformed_json_is_invalid_body(api, raw, content_type):
    response = api.post(REMEMBER, raw=raw, content_type=content_type)
    assert response.status_code == 422
    assert error_code(response) == "invalid_request"
    assert error_fields(response) == ["body"]


@pytest.mark.parametrize("body", [[], "text", 1, None])
def test_non_object_body_is_invalid(api, body):
    response = api.post(REMEMBER, raw=json.dumps(body))
    assert response.status_code == 422
    assert error_fields(response) == ["body"]


def test_wrong_media_type_is_415(api):
    response = api.post(
        REMEMBER, raw="scope_id=a", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 415
    assert error_code(response) == "unsupported_media_type"


def test_unknown_route_and_method(api, client):
    response = api.post("/v1/memory/nope", {})
    assert response.status_code == 404
    assert error_code(response) == "not_found"
    response = client.get(REMEMBER)
    assert response.status_code == 405
    assert error_code(response) == "method_not_allowed"


def test_oversized_body_is_413(api, settings):
    settings.POWERCONTEXT_MAX_BODY_BYTES = 1000
    response = api.post(REMEMBER, remember_body(text="x" * 2000))
    assert response.status_code == 413
    assert error_code(response) == "payload_too_large"


def test_every_response_carries_a_request_id(api, client):
    for response in (
        api.post(REMEMBER, remember_body()),
        api.post(REMEMBER, raw=b"{"),
        api.post("/v1/unknown", {}),
        client.get("/health/live"),
    ):
        assert len(response["X-PowerContext-Request-ID"]) >= 16
    echoed = api.post(
        REMEMBER, remember_body(), headers={"HTTP_X_POWERCONTEXT_REQUEST_ID": "abc-123"}
    )
    assert echoed["X-PowerContext-Request-ID"] == "abc-123"


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '"unbalanced',
        "*",
        "-x",
        "NEAR(a b)",
        "a NEAR b",
        "(",
        ")",
        ":",
        "col:term",
        "^x",
        "\x00",
        "😀",
        "AND",
        "OR NOT",
        "a AND OR b",
        "{x y}",
        "'",
        "\\",
        "tests*",
    ],
)
def test_fts_syntax_in_queries_is_just_text(api, query):
    api.ok(REMEMBER, remember_body(text=f"contains {query} and NEAR tests"))
    result = api.ok("/v1/memory/search", {"scope_id": "scope-a", "query": query})
    # hybrid once the vector index exists (on OceanBase its DDL waits for a write outside
    # a transaction, which this test never makes), fts before.
    assert result["mode"] in ("fts", "hybrid")
    prepared = api.ok("/v1/context/prepare", {"scope_id": "scope-a", "query": query})
    assert prepared["status"] in ("ready", "empty")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scope_id": "a", "query": ""}, "query"),
        ({"scope_id": "a", "query": "  "}, "query"),
        ({"scope_id": "a", "query": "q" * 8193}, "query"),
        ({"scope_id": "a", "query": "q", "limit": 0}, "limit"),
        ({"scope_id": "a", "query": "q", "limit": 51}, "limit"),
        ({"scope_id": "a", "query": "q", "limit": "5"}, "limit"),
        ({"scope_id": "a", "query": "q", "mode": "semantic"}, "mode"),
        ({"scope_id": "a", "query": "q", "mode": 1}, "mode"),
    ],
)
def test_bad_search_fields(api, body, field):
    response = api.post("/v1/memory/search", body)
    assert response.status_code == 422
    assert field in error_fields(response)


@pytest.mark.parametrize(
    ("citation_patch", "field"),
    [
        ({"entry_id": ""}, "citation.entry_id"),
        ({"entry_version_id": 7}, "citation.entry_version_id"),
        (
            {"memory_ref": {"family": "memory", "artifact_id": "memory", "revision": 0}},
            "citation.memory_ref.revision",
        ),
        (
            {"memory_ref": {"family": "memory", "artifact_id": "memory"}},
            "citation.memory_ref.revision",
        ),
        ({"extra": True}, "citation.extra"),
    ],
)
def test_citation_errors_use_dotted_paths(api, remember, citation_patch, field):
    citation = remember("cite me")["entry"]["citation"]
    citation.update(citation_patch)
    response = api.post("/v1/memory/entries/get", {"scope_id": "scope-a", "citation": citation})
    assert response.status_code == 422
    assert field in error_fields(response)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scope_id": "a", "include_inactive": 1}, "include_inactive"),
        ({"scope_id": "a", "limit": 1001}, "limit"),
        ({"scope_id": "a", "cursor": "%%%"}, "cursor"),
        ({"scope_id": "a", "cursor": "eyJ4IjoxfQ"}, "cursor"),
    ],
)
def test_bad_list_fields(api, remember, body, field):
    remember("one", scope_id="a")
    response = api.post("/v1/memory/entries/list", body)
    assert response.status_code == 422
    assert field in error_fields(response)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scope_id": "a"}, "since_revision"),
        ({"scope_id": "a", "since_revision": -1}, "since_revision"),
        ({"scope_id": "a", "since_revision": 0, "limit": 0}, "limit"),
    ],
)
def test_bad_changes_fields(api, body, field):
    response = api.post("/v1/memory/changes", body)
    assert response.status_code == 422
    assert field in error_fields(response)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scope_id": "a", "query": "q", "max_bytes": 511}, "max_bytes"),
        ({"scope_id": "a", "query": "q", "max_bytes": 32769}, "max_bytes"),
        ({"scope_id": "a", "query": "q", "max_bytes": "8000"}, "max_bytes"),
        ({"scope_id": "a", "query": " "}, "query"),
        ({"scope_id": "a", "query": "q" * 8193}, "query"),
        ({"scope_id": "a", "query": "q", "profile": "x"}, "profile"),
    ],
)
def test_bad_prepare_fields(api, body, field):
    response = api.post("/v1/context/prepare", body)
    assert response.status_code == 422
    assert error_code(response) == "invalid_request"
    assert field in error_fields(response)


@pytest.mark.django_db
def test_prepare_query_limit_counts_characters_not_bytes(api):
    # 8,192 four-byte characters are 32 KiB of UTF-8 and still one valid query.
    ok = api.post("/v1/context/prepare", {"scope_id": "a", "query": "😀" * 8192})
    assert ok.status_code == 200
    refused = api.post("/v1/context/prepare", {"scope_id": "a", "query": "😀" * 8193})
    assert refused.status_code == 422
    assert error_fields(refused) == ["query"]


@pytest.mark.parametrize("path", [REMEMBER, "/v1/capabilities", "/health/live"])
def test_options_is_405_not_an_undocumented_description(client, path):
    # Found by the API fuzzer: OPTIONS answered 200 with DRF's view description, a
    # status and body the OpenAPI document does not have.
    response = client.options(path)
    assert response.status_code == 405
    assert error_code(response) == "method_not_allowed"
