"""The test client's responses are checked against openapi/powercontext.yaml
(tests/openapi_contract.py): a body or status the document does not allow fails the test
that received it."""

import json

import pytest
from rest_framework.response import Response

from server.system import HealthLiveView
from tests.openapi_contract import ContractViolation, Exchange, check

LIVE = {"status": "live", "checks": {}}


def exchange(path, status, body, method="GET", content_type="application/json"):
    return Exchange(method, path, status, content_type, json.dumps(body).encode())


def test_a_documented_response_passes():
    check(exchange("/health/live", 200, LIVE))
    check(
        exchange(
            "/v1/memory/search",
            200,
            {"memory": None, "mode": None, "hits": []},
            method="POST",
        )
    )


def test_a_field_of_the_wrong_type_fails_naming_it():
    body = {"memory": None, "mode": None, "hits": "none"}
    with pytest.raises(ContractViolation) as raised:
        check(exchange("/v1/memory/search", 200, body, method="POST"))
    message = str(raised.value)
    assert "POST /v1/memory/search -> 200" in message
    assert "at hits: 'none' is not of type 'array'" in message


def test_a_nested_wrong_type_and_a_missing_field_fail():
    hit = {
        "citation": {
            "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": "1"},
            "entry_id": "e",
            "entry_version_id": "v",
        },
        "text": "t",
        "matched_by": ["fts"],
    }
    body = {"memory": None, "mode": "fts", "hits": [hit]}
    with pytest.raises(ContractViolation) as raised:
        check(exchange("/v1/memory/search", 200, body, method="POST"))
    message = str(raised.value)
    assert "hits/0/citation/memory_ref/revision: '1' is not of type 'integer'" in message
    assert "'score' is a required property" in message


def test_null_is_refused_where_the_document_does_not_allow_it():
    body = {"memory": None, "mode": None, "hits": None}
    with pytest.raises(ContractViolation, match="None is not of type 'array'"):
        check(exchange("/v1/memory/search", 200, body, method="POST"))


def test_an_undocumented_status_fails():
    with pytest.raises(ContractViolation, match=r"status 418 is not documented \(documented: 200"):
        check(exchange("/health/live", 418, LIVE))


def test_an_undocumented_content_type_fails():
    with pytest.raises(ContractViolation, match="content type 'text/html' is not documented"):
        check(exchange("/health/live", 200, LIVE, content_type="text/html"))


def test_an_error_must_have_the_error_shape():
    with pytest.raises(ContractViolation, match="'error' is a required property"):
        check(exchange("/v1/capabilities", 401, {"detail": "no"}))


def test_unknown_paths_and_methods_answer_only_their_errors():
    not_found = {"error": {"code": "not_found", "message": "m", "details": None}}
    check(exchange("/v1/nothing-here", 404, not_found))
    check(exchange("/v1/memory/search", 405, not_found, method="PUT"))
    with pytest.raises(ContractViolation, match=r"the path is not in powercontext\.yaml"):
        check(exchange("/v1/nothing-here", 200, {}))
    with pytest.raises(ContractViolation, match=r"the method is not in powercontext\.yaml"):
        check(exchange("/v1/memory/search", 200, {}, method="PUT"))


def test_a_foreign_host_may_be_refused_on_any_route_and_only_then():
    refused = {"error": {"code": "permission_denied", "message": "m", "details": None}}
    for path in ("/v1/capabilities", "/health/live", "/no/such/route"):
        check(Exchange("GET", path, 403, "application/json", json.dumps(refused).encode(), True))
    with pytest.raises(ContractViolation, match="status 403 is not documented"):
        check(exchange("/health/live", 403, refused))


def test_the_pages_for_people_are_exempt_by_the_explicit_list():
    for path in ("/", "/admin/login/", "/metrics", "/api/schema/", "/static/x.css"):
        check(Exchange("GET", path, 200, "text/html", b"<html>"))


# -- through the test client -------------------------------------------------------------


def test_the_test_client_fails_on_a_wrong_body(client, monkeypatch):
    monkeypatch.setattr(
        HealthLiveView, "get", lambda self, request: Response({"status": "live", "checks": []})
    )
    with pytest.raises(ContractViolation, match=r"GET /health/live -> 200.*\n  at checks"):
        client.get("/health/live")


def test_the_test_client_fails_on_an_undocumented_status(client, monkeypatch):
    monkeypatch.setattr(HealthLiveView, "get", lambda self, request: Response(LIVE, status=202))
    with pytest.raises(ContractViolation, match="status 202 is not documented"):
        client.get("/health/live")


@pytest.mark.openapi_unchecked("proves the marker turns the check off")
def test_a_marked_test_is_not_checked(client, monkeypatch):
    monkeypatch.setattr(HealthLiveView, "get", lambda self, request: Response(LIVE, status=202))
    assert client.get("/health/live").status_code == 202


def test_a_member_the_document_does_not_list_fails():
    # A generated client refuses it (extra="forbid"), so the suite does too.
    body = {"memory": None, "mode": None, "hits": [], "redacted": {"count": 0, "kinds": {}}}
    with pytest.raises(ContractViolation) as raised:
        check(exchange("/v1/memory/search", 200, body, method="POST"))
    assert "Additional properties are not allowed ('redacted' was unexpected)" in str(raised.value)
