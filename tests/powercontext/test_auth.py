"""Bearer auth for agents (DESIGN.md §4): checked before validation, constant-time."""

import pytest

from tests.conftest import ApiClient, error_code

pytestmark = pytest.mark.django_db

TOKEN = "agent-secret-token"

OPERATIONS = [
    "/v1/sources/content",
    "/v1/memory/remember",
    "/v1/memory/search",
    "/v1/memory/entries/list",
    "/v1/memory/entries/get",
    "/v1/memory/entries/revise",
    "/v1/memory/entries/retire",
    "/v1/memory/entries/reactivate",
    "/v1/memory/changes",
    "/v1/context/prepare",
]


@pytest.fixture
def token_required(settings):
    settings.POWERCONTEXT_API_TOKEN = TOKEN


@pytest.mark.usefixtures("token_required")
@pytest.mark.parametrize("path", OPERATIONS)
@pytest.mark.parametrize("token", [None, "wrong", TOKEN + "x", ""])
def test_missing_or_wrong_token_is_401_before_validation(client, path, token):
    # The body is invalid too: 401 must win over 422.
    response = ApiClient(client, token).post(path, {"bogus": True})
    assert response.status_code == 401
    assert error_code(response) == "unauthorized"
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.usefixtures("token_required")
def test_capabilities_needs_the_token_too(client):
    assert ApiClient(client).get("/v1/capabilities").status_code == 401
    assert ApiClient(client, TOKEN).get("/v1/capabilities").status_code == 200


@pytest.mark.usefixtures("token_required")
def test_right_token_is_accepted(client):
    api = ApiClient(client, TOKEN)
    result = api.ok("/v1/memory/remember", {"scope_id": "s", "kind": "k", "text": "t"})
    assert result["memory"]["revision"] == 1


@pytest.mark.usefixtures("token_required")
def test_health_and_docs_need_no_token(client):
    assert client.get("/health/live").status_code == 200
    assert client.get("/health/ready").status_code == 200
    assert client.get("/api/docs/").status_code == 200


def test_without_configured_token_local_callers_are_agents(client):
    assert ApiClient(client).get("/v1/capabilities").status_code == 200
