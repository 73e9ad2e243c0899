"""Bearer auth for agents (DESIGN.md §4): checked before validation, constant-time.
The admin: a staff login to look, the review permission to decide."""

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission

from experience.models import Candidate
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
    "/v1/experience/propose",
    "/v1/experience/get",
    "/v1/artifact-candidates/list",
    "/v1/artifact-candidates/get",
    "/v1/artifact-candidates/approve",
    "/v1/artifact-candidates/reject",
    "/v1/artifact-candidates/revise",
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
@pytest.mark.parametrize("path", ["/v1/capabilities", "/metrics"])
@pytest.mark.parametrize("token", [None, "wrong", TOKEN + "x", ""])
def test_gets_need_the_token_too(client, path, token):
    response = ApiClient(client, token).get(path)
    assert response.status_code == 401
    assert error_code(response) == "unauthorized"
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert ApiClient(client, TOKEN).get(path).status_code == 200


@pytest.mark.usefixtures("token_required")
@pytest.mark.parametrize("scheme", ["Basic", "Token", "bearer"])
def test_the_token_in_another_scheme_or_malformed_is_refused(client, scheme):
    headers = {"HTTP_AUTHORIZATION": f"{scheme} {TOKEN} extra"}
    response = client.get("/v1/capabilities", **headers)
    assert response.status_code == 401
    if scheme != "bearer":
        headers = {"HTTP_AUTHORIZATION": f"{scheme} {TOKEN}"}
        assert client.get("/v1/capabilities", **headers).status_code == 401


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


@pytest.mark.parametrize("header", ["Bearer ", "Bearer", "bearer  "])
def test_an_empty_bearer_is_no_credential(client, settings, header):
    """What an agent's MCP entry sends when the token variable is unset: the same as no
    header, so it works without a configured token and stays a 401 with one."""
    assert client.get("/v1/capabilities", HTTP_AUTHORIZATION=header).status_code == 200
    settings.POWERCONTEXT_API_TOKEN = TOKEN
    response = client.get("/v1/capabilities", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert error_code(response) == "unauthorized"


# -- the admin ------------------------------------------------------------------------

QUEUE = "/admin/experience/candidate/"


@pytest.fixture
def candidate(api):
    body = {
        "scope_id": "scope-a",
        "proposal": {
            "situation": "The nightly import broke.",
            "action": "We added a migration test.",
            "outcome": "The next change was caught.",
            "lesson": "Test migrations.",
        },
        "source_refs": [],
        "artifact_refs": [{"family": "memory", "artifact_id": "memory", "revision": 1}],
    }
    api.ok("/v1/memory/remember", {"scope_id": "scope-a", "kind": "k", "text": "evidence"})
    return api.ok("/v1/experience/propose", body, status=201)


def _admin_urls(candidate):
    detail = f"{QUEUE}{quote(candidate['candidate_id'])}/"
    return [QUEUE, detail + "change/", detail + "approve/", detail + "reject/", detail + "revise/"]


def test_the_admin_needs_a_staff_login(client, candidate):
    for url in _admin_urls(candidate):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/admin/login/"), url
    approve = _admin_urls(candidate)[2]
    assert client.post(approve, {"expected_version": 1}).status_code == 302
    assert Candidate.objects.get(pk=candidate["candidate_id"]).status == "pending"


def test_the_agent_token_does_not_open_the_admin(client, settings, candidate):
    settings.POWERCONTEXT_API_TOKEN = TOKEN
    headers = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    for url in _admin_urls(candidate):
        assert client.get(url, **headers).status_code == 302, url


def test_a_user_with_the_review_permission_but_no_staff_flag_is_sent_to_login(
    client, django_user_model, candidate
):
    user = django_user_model.objects.create_user("nora", is_staff=False)
    user.user_permissions.set(Permission.objects.filter(codename="review_candidate"))
    client.force_login(user)
    approve = _admin_urls(candidate)[2]
    assert client.get(approve).status_code == 302
    assert client.post(approve, {"expected_version": 1}).status_code == 302
    assert Candidate.objects.get(pk=candidate["candidate_id"]).status == "pending"


def test_staff_without_the_review_permission_cannot_decide(client, django_user_model, candidate):
    user = django_user_model.objects.create_user("sam", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename="view_candidate"))
    client.force_login(user)
    assert client.get(QUEUE).status_code == 200
    for url in _admin_urls(candidate)[2:]:
        assert client.post(url, {"expected_version": 1, "reason": "no"}).status_code == 403, url
    assert Candidate.objects.get(pk=candidate["candidate_id"]).status == "pending"
