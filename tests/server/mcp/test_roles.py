"""The MCP tools apply the HTTP API's roles (their views'): over ``/mcp`` a
personal token may call the reading tools and is refused the writing ones, exactly as on
``/v1/``; the agent token may call all of them."""

import asyncio

import httpx
import pytest
from django.contrib.auth import get_user_model

from experience import services as experience_services
from powercontext.api.auth import Role
from server.mcp.server import TOOL_NAMES
from tests.powercontext.api.roles import AGENT_TOKEN, OPERATION_ROLES, body, fingerprint, world

from .conftest import call, http_client


@pytest.fixture
def tokens(live_url, settings):
    settings.POWERCONTEXT_API_TOKEN = AGENT_TOKEN
    # A superuser: the reviewer group comes from a migration, which a transactional test
    # database does not keep.
    get_user_model().objects.create_superuser("dora", password=None)
    decider = experience_services.reviewer_token_issue(username="dora")
    get_user_model().objects.create_user("ralf")
    reader = experience_services.reviewer_token_issue(username="ralf")
    return {"decider": decider.token, "reader": reader.token, "agent": AGENT_TOKEN}


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_each_tool_answers_each_caller_by_its_role(live_url, tokens, tool):
    w = world()
    arguments = body(tool, w)

    async def as_caller(token):
        async with http_client(live_url, token) as mcp:
            return await call(mcp, tool, arguments)

    for person in ("reader", "decider"):
        before = fingerprint()
        failed, content = asyncio.run(as_caller(tokens[person]))
        if OPERATION_ROLES[tool] is Role.READ:
            assert not failed, (person, content)
        else:
            assert failed, (person, content)
            assert content["error"]["code"] == "permission_denied", (person, content)
            assert fingerprint() == before, person
    failed, content = asyncio.run(as_caller(tokens["agent"]))
    assert not failed, content


def test_a_wrong_personal_looking_token_is_refused_at_the_door(live_url, tokens):
    response = httpx.post(
        live_url + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={
            "Accept": "application/json, text/event-stream",
            "Authorization": "Bearer pcr_not-a-token",
        },
    )
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
