"""Who may call what (each view's ``role``), on every ``/v1/`` route:
the agent token reads and writes, a person's token reads, and decides only with the
review permission; nobody else gets past 401. The route list is the URLconf's and the
OpenAPI document's, checked to agree, so a new route cannot be left out."""

from types import SimpleNamespace

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.urls import get_resolver

from experience import services as experience_services
from powercontext.api.auth import AGENT, Caller, IsCaller, Role
from powercontext.api.views import ApiView
from powercontext.exceptions import PermissionDenied
from tests.conftest import ApiClient, error_code
from tests.powercontext.api.roles import (
    AGENT_TOKEN,
    OPENAPI,
    OPERATION_ROLES,
    body,
    documented_routes,
    fingerprint,
    world,
)

ROUTES = documented_routes()
# caller -> the roles it holds
CALLERS = {
    "agent": {Role.READ, Role.WRITE},
    "decider": {Role.READ, Role.DECIDE},  # a personal token with the review permission
    "reader": {Role.READ},  # a personal token without it
    "nobody": set(),  # no token, while one is configured
}


def _url_routes(patterns=None, prefix=""):
    """(path, view class) of every ApiView in the URLconf."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(pattern.pattern)
        if hasattr(pattern, "url_patterns"):
            yield from _url_routes(pattern.url_patterns, route)
            continue
        view = getattr(pattern.callback, "view_class", None)
        if view is not None and issubclass(view, ApiView):
            yield "/" + route, view


def test_the_routes_tested_are_every_api_route_of_the_urlconf():
    views = dict(_url_routes())
    assert sorted(views) == sorted(path for path, _, _ in ROUTES)
    for path, _, operation in ROUTES:
        # Each view checks the role of the operation the document names for its route.
        assert views[path].operation == operation, path
        assert operation in OPERATION_ROLES, operation
        # ... and declares the role the operation needs.
        assert views[path].role is OPERATION_ROLES[operation], path


def test_every_operation_that_may_be_refused_documents_403():
    document = yaml.safe_load(OPENAPI.read_text())
    for path, method, operation in ROUTES:
        if path not in document["paths"]:
            continue
        responses = document["paths"][path][method]["responses"]
        assert ("403" in responses) is (OPERATION_ROLES[operation] is not Role.READ), path


@pytest.fixture
def tokens(db, settings):
    settings.POWERCONTEXT_API_TOKEN = AGENT_TOKEN
    decider = experience_services.reviewer_token_issue(username="dora", create=True)
    get_user_model().objects.create_user("ralf")
    reader = experience_services.reviewer_token_issue(username="ralf")
    assert decider.can_review
    assert not reader.can_review
    return {"agent": AGENT_TOKEN, "decider": decider.token, "reader": reader.token, "nobody": None}


def _call(client, token, path, method, operation, w):
    api = ApiClient(client, token)
    return api.get(path) if method == "get" else api.post(path, body(operation, w))


@pytest.mark.parametrize("caller", list(CALLERS))
@pytest.mark.parametrize(("path", "method", "operation"), ROUTES, ids=[r[0] for r in ROUTES])
def test_each_route_answers_each_caller_by_its_role(
    client, tokens, caller, path, method, operation
):
    w = world()
    before = fingerprint()
    response = _call(client, tokens[caller], path, method, operation, w)
    if caller == "nobody":
        assert response.status_code == 401, response.content
        assert error_code(response) == "unauthorized"
    elif OPERATION_ROLES[operation] in CALLERS[caller]:
        assert 200 <= response.status_code < 300, response.content
        return
    else:
        assert response.status_code == 403, response.content
        assert error_code(response) == "permission_denied"
    assert fingerprint() == before


@pytest.mark.parametrize("operation", ["remember_memory", "propose_experience"])
def test_without_an_agent_token_a_personal_token_still_only_reads(
    client, tokens, settings, operation
):
    # Served loopback-only without POWERCONTEXT_API_TOKEN, a request without a token is
    # the local agent; one that shows a personal token is that person, and reads only.
    settings.POWERCONTEXT_API_TOKEN = None
    w = world()
    path = next(path for path, _, op in ROUTES if op == operation)
    before = fingerprint()
    response = ApiClient(client, tokens["reader"]).post(path, body(operation, w))
    assert response.status_code == 403
    assert fingerprint() == before
    search = ApiClient(client, tokens["reader"]).post("/v1/memory/search", body("search_memory", w))
    assert search.status_code == 200
    assert ApiClient(client).post(path, body(operation, w)).status_code in (200, 201)


@pytest.mark.parametrize("caller", [AGENT, Caller("person", None, may_decide=True)])
def test_a_view_without_a_role_is_refused_to_every_caller(caller):
    class NewView(ApiView):
        operation = "new_operation"

    with pytest.raises(PermissionDenied, match="No role is defined for 'new_operation'"):
        IsCaller().has_permission(SimpleNamespace(user=caller), NewView())
